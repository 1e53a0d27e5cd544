// nccl_stub.cpp -- stands in for nccl.cpp when configure found no CUDA/NCCL.
#include "nccl_backend.h"

namespace ringrt {

rr nccl_create(NcclComm** out, int, int, int, int, const std::function<rr(void*, size_t)>&) {
  *out = nullptr;
  return fail(RINGRT_ERR_UNSUPPORTED, -1, "RINGRT_BACKEND=nccl, but this libringrt was built without CUDA/NCCL");
}
void nccl_destroy(NcclComm*) {}
bool nccl_is_device(NcclComm*, const void*) { return false; }
rr nccl_allreduce(NcclComm*, const void*, void*, size_t, ringrt_dtype_t, ringrt_op_t) {
  return fail(RINGRT_ERR_UNSUPPORTED, -1, "built without NCCL");
}
rr nccl_broadcast(NcclComm*, void*, size_t, ringrt_dtype_t, int) {
  return fail(RINGRT_ERR_UNSUPPORTED, -1, "built without NCCL");
}

}  // namespace ringrt
