// nccl.cpp -- the NCCL backend (device buffers). Compiled when configure finds CUDA + NCCL.
// Not exercised on machines without a GPU: see libringrt(3), BACKENDS.
#include "nccl_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

namespace ringrt {

struct NcclComm {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int device = 0;
  int timeout_ms = 5000;
  bool aborted = false;
};

namespace {
bool map_dtype(ringrt_dtype_t t, ncclDataType_t* out) {
  switch (t) {
    case RINGRT_FLOAT32: *out = ncclFloat32; return true;
    case RINGRT_FLOAT64: *out = ncclFloat64; return true;
    case RINGRT_FLOAT16: *out = ncclFloat16; return true;
    case RINGRT_BFLOAT16:
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 21000
      *out = ncclBfloat16; return true;
#else
      return false;
#endif
    case RINGRT_INT32: *out = ncclInt32; return true;
    case RINGRT_INT64: *out = ncclInt64; return true;
  }
  return false;
}
ncclRedOp_t map_op(ringrt_op_t op) {
  switch (op) {
    case RINGRT_AVG: return ncclAvg;
    case RINGRT_MIN: return ncclMin;
    case RINGRT_MAX: return ncclMax;
    default: return ncclSum;
  }
}
// Waits for the stream with a deadline; aborts the communicator on a peer failure or timeout.
rr finish(NcclComm* c, const char* what) {
  const int64_t deadline = now_ns() + ms_to_ns(c->timeout_ms);
  while (true) {
    cudaError_t q = cudaStreamQuery(c->stream);
    if (q == cudaSuccess) return RINGRT_OK;
    if (q != cudaErrorNotReady)
      return fail(RINGRT_ERR_SYSTEM, -1, "CUDA error during NCCL %s: %s", what, cudaGetErrorString(q));
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(c->comm, &async);
    if (async != ncclSuccess && async != ncclInProgress) {
      ncclCommAbort(c->comm);
      c->aborted = true;
      return fail(RINGRT_ERR_PEER, -1, "NCCL %s failed: %s (NCCL does not say which rank)", what,
                  ncclGetErrorString(async));
    }
    if (now_ns() > deadline) {
      ncclCommAbort(c->comm);
      c->aborted = true;
      return fail(RINGRT_ERR_PEER, -1, "NCCL %s did not finish within %d ms: a peer died or stalled", what,
                  c->timeout_ms);
    }
    usleep(50);
  }
}
}  // namespace

rr nccl_create(NcclComm** out, int rank, int world, int local_rank, int timeout_ms,
               const std::function<rr(void*, size_t)>& bcast) {
  *out = nullptr;
  int ndev = 0;
  cudaError_t ce = cudaGetDeviceCount(&ndev);
  // every rank takes part in the id broadcast, even one without a device, so nobody hangs
  ncclUniqueId id{};
  bool ok = ce == cudaSuccess && ndev > 0;
  if (rank == 0 && ok && ncclGetUniqueId(&id) != ncclSuccess) ok = false;
  RINGRT_CHECK(bcast(&id, sizeof id));
  if (ce != cudaSuccess || ndev == 0)
    return fail(RINGRT_ERR_UNSUPPORTED, -1, "RINGRT_BACKEND=nccl but no CUDA device is usable: %s",
                ce == cudaSuccess ? "no device" : cudaGetErrorString(ce));
  NcclComm* c = new NcclComm;
  c->device = local_rank % ndev;
  c->timeout_ms = timeout_ms;
  cudaSetDevice(c->device);
  if (cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking) != cudaSuccess) {
    delete c;
    return fail(RINGRT_ERR_SYSTEM, -1, "cudaStreamCreate failed");
  }
  ncclResult_t nr = ncclCommInitRank(&c->comm, world, id, rank);
  if (nr != ncclSuccess) {
    cudaStreamDestroy(c->stream);
    delete c;
    return fail(RINGRT_ERR_PEER, -1, "ncclCommInitRank: %s", ncclGetErrorString(nr));
  }
  *out = c;
  return RINGRT_OK;
}

void nccl_destroy(NcclComm* c) {
  if (!c) return;
  if (c->comm) {
    if (c->aborted) {
      // already torn down by ncclCommAbort
    } else {
      ncclCommDestroy(c->comm);
    }
  }
  if (c->stream) cudaStreamDestroy(c->stream);
  delete c;
}

bool nccl_is_device(NcclComm* c, const void* p) {
  if (!c || !p) return false;
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

rr nccl_allreduce(NcclComm* c, const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op) {
  ncclDataType_t dt;
  if (!map_dtype(t, &dt)) return fail(RINGRT_ERR_UNSUPPORTED, -1, "dtype not supported by this NCCL");
  ncclResult_t r = ncclAllReduce(send, recv, count, dt, map_op(op), c->comm, c->stream);
  if (r != ncclSuccess) return fail(RINGRT_ERR_PEER, -1, "ncclAllReduce: %s", ncclGetErrorString(r));
  return finish(c, "allreduce");
}

rr nccl_broadcast(NcclComm* c, void* buf, size_t count, ringrt_dtype_t t, int root) {
  ncclDataType_t dt;
  if (!map_dtype(t, &dt)) return fail(RINGRT_ERR_UNSUPPORTED, -1, "dtype not supported by this NCCL");
  ncclResult_t r = ncclBroadcast(buf, buf, count, dt, root, c->comm, c->stream);
  if (r != ncclSuccess) return fail(RINGRT_ERR_PEER, -1, "ncclBroadcast: %s", ncclGetErrorString(r));
  return finish(c, "broadcast");
}

}  // namespace ringrt
