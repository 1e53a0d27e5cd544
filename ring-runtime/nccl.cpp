// SPDX-License-Identifier: GPL-2.0-or-later
// nccl.cpp -- the NCCL backend for device (GPU) buffers, beside the world's host transport.
// Compiled when configure finds CUDA + NCCL; nccl_stub.cpp stands in otherwise. Not exercised on
// machines without a GPU: see libringrt(3), BACKENDS.
//
// The communicator is nonblocking (ncclConfig_t.blocking = 0), so that neither its creation nor a
// collective can wait on a missing peer for longer than a deadline: creation gets the world's
// formation deadline, a collective RINGRT_TIMEOUT_MS; past it the communicator is aborted.
#include "backends.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

namespace ringrt {

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
    case RINGRT_AVG: return ncclAvg;  // NCCL divides by its world, which is ours
    case RINGRT_MIN: return ncclMin;
    case RINGRT_MAX: return ncclMax;
    default: return ncclSum;
  }
}

class NcclTransport : public Transport {
 public:
  NcclTransport(int rank, int world, int timeout_ms) : rank_(rank), world_(world), timeout_ms_(timeout_ms) {}
  ~NcclTransport() override {
    if (comm_ && !aborted_) ncclCommDestroy(comm_);
    if (scratch_) cudaFree(scratch_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Collective: rank 0 makes the NCCL unique id and the host transport hands it to everyone.
  rr create(Transport& host, int local_rank, int64_t deadline) {
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    // every rank takes part in the id broadcast, even one without a device, so nobody hangs
    ncclUniqueId id{};
    bool ok = ce == cudaSuccess && ndev > 0;
    if (rank_ == 0 && ok && ncclGetUniqueId(&id) != ncclSuccess) ok = false;
    RINGRT_CHECK(host.broadcast(&id, sizeof id, 0));
    if (!ok)
      return fail(RINGRT_ERR_UNSUPPORTED, -1, "RINGRT_BACKEND=nccl but no CUDA device is usable: %s",
                  ce != cudaSuccess ? cudaGetErrorString(ce) : ndev == 0 ? "no device" : "no NCCL unique id");
    device_ = local_rank % ndev;
    cudaSetDevice(device_);
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      return fail(RINGRT_ERR_SYSTEM, -1, "cudaStreamCreate failed");
    if (cudaMalloc(&scratch_, sizeof(int32_t)) != cudaSuccess)
      return fail(RINGRT_ERR_SYSTEM, -1, "cudaMalloc of the barrier's word failed");
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t nr = ncclCommInitRankConfig(&comm_, world_, id, rank_, &config);
    if (nr != ncclSuccess && nr != ncclInProgress) {
      comm_ = nullptr;
      return fail(RINGRT_ERR_PEER, -1, "ncclCommInitRankConfig: %s", ncclGetErrorString(nr));
    }
    return settle("communicator creation", deadline);
  }

  int size() const override { return world_; }
  int index() const override { return rank_; }
  bool takes(const void* p) const override {
    if (!p) return false;
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();
      return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
  }
  rr allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int) override {
    ncclDataType_t dt;
    if (!map_dtype(t, &dt)) return fail(RINGRT_ERR_UNSUPPORTED, -1, "dtype not supported by this NCCL");
    return finish("allreduce", ncclAllReduce(send ? send : recv, recv, count, dt, map_op(op), comm_, stream_));
  }
  rr broadcast(void* buf, size_t bytes, int root) override {
    return finish("broadcast", ncclBroadcast(buf, buf, bytes, ncclInt8, root, comm_, stream_));
  }
  rr barrier() override {
    return finish("barrier", ncclAllReduce(scratch_, scratch_, 1, ncclInt32, ncclSum, comm_, stream_));
  }
  rr allgather(const void* send, void* recv, size_t bytes) override {
    const void* mine = send ? send : static_cast<const char*>(recv) + static_cast<size_t>(rank_) * bytes;
    return finish("allgather", ncclAllGather(mine, recv, bytes, ncclInt8, comm_, stream_));
  }
  void abort(rr, int, const std::string&) override {
    if (comm_ && !aborted_) ncclCommAbort(comm_);
    aborted_ = true;
  }
  std::string describe() const override { return "NCCL on device " + std::to_string(device_); }

 private:
  // Waits, until the deadline, for a nonblocking call to leave ncclInProgress; aborts the
  // communicator on an error or at the deadline.
  rr settle(const char* what, int64_t deadline) {
    while (true) {
      ncclResult_t state = ncclSuccess;
      ncclResult_t q = ncclCommGetAsyncError(comm_, &state);
      if (q != ncclSuccess) state = q;
      if (state == ncclSuccess) return RINGRT_OK;
      if (state != ncclInProgress) {
        abort(RINGRT_ERR_PEER, -1, "");
        return fail(RINGRT_ERR_PEER, -1, "NCCL %s failed: %s (NCCL does not say which rank)", what,
                    ncclGetErrorString(state));
      }
      if (now_ns() > deadline) {
        abort(RINGRT_ERR_PEER, -1, "");
        return fail(RINGRT_ERR_PEER, -1, "NCCL %s did not finish in time: a peer died or stalled", what);
      }
      usleep(50);
    }
  }

  // A collective was issued (returned `issued`): wait until it is enqueued, then for the stream,
  // within RINGRT_TIMEOUT_MS.
  rr finish(const char* what, ncclResult_t issued) {
    if (aborted_) return fail(RINGRT_ERR_STATE, -1, "the NCCL communicator was aborted by an earlier error");
    if (issued != ncclSuccess && issued != ncclInProgress)
      return fail(RINGRT_ERR_PEER, -1, "NCCL %s: %s", what, ncclGetErrorString(issued));
    const int64_t deadline = now_ns() + ms_to_ns(timeout_ms_);
    RINGRT_CHECK(settle(what, deadline));
    while (true) {
      cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return RINGRT_OK;
      if (q != cudaErrorNotReady)
        return fail(RINGRT_ERR_SYSTEM, -1, "CUDA error during NCCL %s: %s", what, cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress) {
        abort(RINGRT_ERR_PEER, -1, "");
        return fail(RINGRT_ERR_PEER, -1, "NCCL %s failed: %s (NCCL does not say which rank)", what,
                    ncclGetErrorString(async));
      }
      if (now_ns() > deadline) {
        abort(RINGRT_ERR_PEER, -1, "");
        return fail(RINGRT_ERR_PEER, -1, "NCCL %s did not finish within %d ms: a peer died or stalled", what,
                    timeout_ms_);
      }
      usleep(50);
    }
  }

  int rank_, world_, timeout_ms_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;
  bool aborted_ = false;
};

}  // namespace

rr make_nccl_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out) {
  std::unique_ptr<NcclTransport> t(new NcclTransport(ctx.topo.rank, ctx.topo.world, ctx.cfg.timeout_ms));
  RINGRT_CHECK(t->create(*ctx.host, ctx.topo.local_rank(), ctx.deadline));
  *out = std::move(t);
  return RINGRT_OK;
}

}  // namespace ringrt
