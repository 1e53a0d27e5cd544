// nccl_backend.h -- the NCCL backend for device (GPU) buffers, behind the same C API. Built only
// when configure finds CUDA and NCCL (HAVE_NCCL); otherwise nccl_stub.cpp answers
// RINGRT_ERR_UNSUPPORTED. Selected with RINGRT_BACKEND=nccl; host buffers keep using the host
// backend of the world.
#ifndef RINGRT_NCCL_BACKEND_H
#define RINGRT_NCCL_BACKEND_H

#include "internal.h"

namespace ringrt {

struct NcclComm;
// Collective: rank 0 makes the NCCL unique id and bcast_from_root0 hands it to everyone.
rr nccl_create(NcclComm** out, int rank, int world, int local_rank, int timeout_ms,
               const std::function<rr(void*, size_t)>& bcast_from_root0);
void nccl_destroy(NcclComm* c);
bool nccl_is_device(NcclComm* c, const void* p);
rr nccl_allreduce(NcclComm* c, const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op);
rr nccl_broadcast(NcclComm* c, void* buf, size_t count, ringrt_dtype_t t, int root);

}  // namespace ringrt

#endif
