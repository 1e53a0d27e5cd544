// SPDX-License-Identifier: GPL-2.0-or-later
// The "ringrt" process group: see process_group.h.
// Python.h before any other header, as Python asks (it sets feature macros).
#include <Python.h>

#include "process_group.h"

#include <ATen/ATen.h>
#include <ATen/core/ivalue.h>

#include <atomic>
#include <cstring>
#include <exception>
#include <sstream>
#include <stdexcept>

namespace ringsched_torch {
namespace {

std::atomic<ProcessGroupRingrt*> g_current{nullptr};

// One checking macro for libringrt calls: a failure names the call, libringrt's code and
// detail, and the peer it blames. It throws on the worker thread; the Work carries it to the
// caller.
#define RINGRT_TORCH_CHECK(call)                                                               \
  do {                                                                                         \
    ringrt_result_t rc_ = (call);                                                              \
    if (rc_ != RINGRT_OK) throw std::runtime_error(ringrt_failure(#call, rc_));                \
  } while (0)

std::string ringrt_failure(const char* call, ringrt_result_t rc) {
  std::ostringstream s;
  s << "ringrt backend: " << call << " failed: " << ringrt_error_string(rc);
  const char* detail = ringrt_error_detail();
  if (detail && *detail) s << " (" << detail << ")";
  int peer = -1;
  if (ringrt_failed_rank(&peer) == RINGRT_OK && peer >= 0) s << " [peer rank " << peer << "]";
  return s.str();
}

ringrt_dtype_t dtype_of(const at::Tensor& t) {
  switch (t.scalar_type()) {
    case at::kFloat: return RINGRT_FLOAT32;
    case at::kDouble: return RINGRT_FLOAT64;
    case at::kHalf: return RINGRT_FLOAT16;
    case at::kBFloat16: return RINGRT_BFLOAT16;
    case at::kInt: return RINGRT_INT32;
    case at::kLong: return RINGRT_INT64;
    default:
      TORCH_CHECK(false, "ringrt backend: reductions support float32, float64, float16, bfloat16, int32 and int64, not ",
                  t.scalar_type());
  }
}

ringrt_op_t op_of(const c10d::ReduceOp& op) {
  switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
    case c10d::ReduceOp::SUM: return RINGRT_SUM;
    case c10d::ReduceOp::AVG: return RINGRT_AVG;
    case c10d::ReduceOp::MIN: return RINGRT_MIN;
    case c10d::ReduceOp::MAX: return RINGRT_MAX;
    default:
      TORCH_CHECK(false, "ringrt backend: reduce op ", int(static_cast<c10d::ReduceOp::RedOpType>(op)),
                  " is not supported (SUM, AVG, MIN and MAX are)");
  }
}

void check_cpu(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.device().is_cpu(), "ringrt backend: ", what, " must be a CPU tensor (this build of the backend "
              "passes host buffers to libringrt), got one on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, "ringrt backend: ", what, " must be a dense tensor");
}

// The single tensor of a one-device collective.
at::Tensor& single(std::vector<at::Tensor>& tensors, const char* op) {
  TORCH_CHECK(tensors.size() == 1, "ringrt backend: ", op, " takes one tensor per process (got ", tensors.size(), ")");
  check_cpu(tensors[0], op);
  return tensors[0];
}

// A contiguous tensor to work in: the tensor itself, or a copy that finish() writes back.
struct Contiguous {
  explicit Contiguous(at::Tensor t) : user(std::move(t)), work(user.is_contiguous() ? user : user.contiguous()) {}
  void finish() {
    if (!work.is_same(user)) user.copy_(work);
  }
  at::Tensor user, work;
};

}  // namespace

// A collective in flight: its future completes on the worker thread.
class ProcessGroupRingrt::RingrtWork : public c10d::Work {
 public:
  RingrtWork(c10d::OpType type, std::vector<at::Tensor> outputs)
      : c10d::Work(-1, type),
        outputs_(std::move(outputs)),
        future_(c10::make_intrusive<at::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }
  void complete(std::exception_ptr error) {
    if (error) future_->setError(error);
    else future_->markCompleted(c10::IValue(outputs_));
    finish(error);
  }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<at::ivalue::Future> future_;
};

ProcessGroupRingrt* ProcessGroupRingrt::current() { return g_current.load(); }

ProcessGroupRingrt::ProcessGroupRingrt(int rank, int size) : RingrtBase(rank, size) {
  ProcessGroupRingrt* none = nullptr;
  TORCH_CHECK(g_current.compare_exchange_strong(none, this),
              "ringrt backend: libringrt has one world per process and it is in use by another \"ringrt\" group "
              "(subgroups are not supported; destroy the first group before creating another)");
  worker_ = std::thread([this] { loop(); });
  try {
    run_sync([&] {
      RINGRT_TORCH_CHECK(ringrt_init());
      int r = -1, n = -1;
      RINGRT_TORCH_CHECK(ringrt_rank(&r));
      RINGRT_TORCH_CHECK(ringrt_world_size(&n));
      if (r != rank || n != size) {
        ringrt_finalize();
        std::ostringstream s;
        s << "ringrt backend: libringrt joined as rank " << r << " of " << n << " but torch asked for rank " << rank
          << " of " << size << " (RINGRT_RANK/RINGRT_WORLD_SIZE disagree with RANK/WORLD_SIZE)";
        throw std::runtime_error(s.str());
      }
    });
  } catch (...) {
    {
      std::lock_guard<std::mutex> l(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
    g_current.store(nullptr);
    throw;
  }
}

ProcessGroupRingrt::~ProcessGroupRingrt() {
  // Destroyed from Python (destroy_process_group(), or DDP's Reducer dropping the last
  // reference at exit), this thread may hold the GIL while it waits for the worker, and the
  // worker may need the GIL to free a tensor of the last collective: wait without it (torch's
  // own gloo group hangs at exit that way).
  PyThreadState* released = nullptr;
#if PY_VERSION_HEX >= 0x030D0000
  const bool finalizing = Py_IsFinalizing();  // public from Python 3.13, which drops the private one
#else
  const bool finalizing = _Py_IsFinalizing();
#endif
  if (Py_IsInitialized() && !finalizing && PyGILState_Check()) released = PyEval_SaveThread();
  try {
    run_sync([] { ringrt_finalize(); });
  } catch (...) {
    // Leaving a broken world cannot fail in a way the caller could act on.
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
  g_current.store(nullptr);
  if (released) PyEval_RestoreThread(released);
}

void ProcessGroupRingrt::loop() {
  while (true) {
    std::pair<c10::intrusive_ptr<RingrtWork>, Job> item;
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      item = std::move(queue_.front());
      queue_.pop_front();
    }
    std::exception_ptr error;
    try {
      item.second();
    } catch (...) {
      error = std::current_exception();
    }
    item.first->complete(error);
  }
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::enqueue(c10d::OpType type, std::vector<at::Tensor> outputs,
                                                           Job fn) {
  auto work = c10::make_intrusive<RingrtWork>(type, std::move(outputs));
  {
    std::lock_guard<std::mutex> l(mu_);
    queue_.emplace_back(work, std::move(fn));
  }
  cv_.notify_one();
  return work;
}

void ProcessGroupRingrt::run_sync(Job fn) { enqueue(c10d::OpType::UNKNOWN, {}, std::move(fn))->wait(); }

void ProcessGroupRingrt::broadcast_bytes(void* buf, size_t bytes, int root) {
  traffic_.broadcast_calls++;
  traffic_.broadcast_bytes += bytes;
  // Any dtype travels as 64- or 32-bit words; an odd tail goes through a padded copy.
  if (bytes % 8 == 0) {
    RINGRT_TORCH_CHECK(ringrt_broadcast(buf, bytes / 8, RINGRT_INT64, root));
  } else if (bytes % 4 == 0) {
    RINGRT_TORCH_CHECK(ringrt_broadcast(buf, bytes / 4, RINGRT_INT32, root));
  } else {
    std::vector<int32_t> padded((bytes + 3) / 4, 0);
    std::memcpy(padded.data(), buf, bytes);
    RINGRT_TORCH_CHECK(ringrt_broadcast(padded.data(), padded.size(), RINGRT_INT32, root));
    std::memcpy(buf, padded.data(), bytes);
  }
}

void ProcessGroupRingrt::broadcast_tensor(const at::Tensor& t, int root) {
  Contiguous c(t);
  broadcast_bytes(c.work.data_ptr(), c.work.nbytes(), root);
  c.finish();
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::broadcast(std::vector<at::Tensor>& tensors,
                                                             const c10d::BroadcastOptions& opts) {
  at::Tensor t = single(tensors, "broadcast");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < getSize(), "ringrt backend: broadcast root ", opts.rootRank,
              " is not a rank of ", getSize());
  const int root = int(opts.rootRank);
  return enqueue(c10d::OpType::BROADCAST, {t}, [this, t, root] { broadcast_tensor(t, root); });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::allreduce(std::vector<at::Tensor>& tensors,
                                                             const c10d::AllreduceOptions& opts) {
  at::Tensor t = single(tensors, "allreduce");
  const ringrt_dtype_t dt = dtype_of(t);
  const ringrt_op_t op = op_of(opts.reduceOp);
  return enqueue(c10d::OpType::ALLREDUCE, {t}, [this, t, dt, op] {
    Contiguous c(t);
    traffic_.allreduce_calls++;
    traffic_.allreduce_bytes += c.work.nbytes();
    RINGRT_TORCH_CHECK(ringrt_allreduce(nullptr, c.work.data_ptr(), size_t(c.work.numel()), dt, op));
    c.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::allreduce_coalesced(
    std::vector<at::Tensor>& tensors, const c10d::AllreduceCoalescedOptions& opts) {
  TORCH_CHECK(!tensors.empty(), "ringrt backend: allreduce_coalesced needs at least one tensor");
  for (auto& t : tensors) {
    check_cpu(t, "allreduce_coalesced");
    TORCH_CHECK(t.scalar_type() == tensors[0].scalar_type(), "ringrt backend: allreduce_coalesced needs one dtype");
  }
  const ringrt_dtype_t dt = dtype_of(tensors[0]);
  const ringrt_op_t op = op_of(opts.reduceOp);
  std::vector<at::Tensor> ts = tensors;
  return enqueue(c10d::OpType::ALLREDUCE_COALESCED, ts, [this, ts, dt, op] {
    std::vector<at::Tensor> flat;
    for (auto& t : ts) flat.push_back(t.reshape({-1}));
    at::Tensor packed = at::cat(flat);
    traffic_.allreduce_calls++;
    traffic_.allreduce_bytes += packed.nbytes();
    RINGRT_TORCH_CHECK(ringrt_allreduce(nullptr, packed.data_ptr(), size_t(packed.numel()), dt, op));
    int64_t at_ = 0;
    for (auto& t : ts) {
      t.copy_(packed.narrow(0, at_, t.numel()).view(t.sizes()));
      at_ += t.numel();
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::reduce(std::vector<at::Tensor>& tensors,
                                                          const c10d::ReduceOptions& opts) {
  at::Tensor t = single(tensors, "reduce");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < getSize(), "ringrt backend: reduce root ", opts.rootRank,
              " is not a rank of ", getSize());
  const ringrt_dtype_t dt = dtype_of(t);
  const ringrt_op_t op = op_of(opts.reduceOp);
  const bool root = opts.rootRank == getRank();
  // libringrt has no reduce: an allreduce whose result only the root keeps.
  return enqueue(c10d::OpType::REDUCE, {t}, [this, t, dt, op, root] {
    at::Tensor work = root ? t.contiguous() : t.clone(at::MemoryFormat::Contiguous);
    traffic_.allreduce_calls++;
    traffic_.allreduce_bytes += work.nbytes();
    RINGRT_TORCH_CHECK(ringrt_allreduce(nullptr, work.data_ptr(), size_t(work.numel()), dt, op));
    if (root && !work.is_same(t)) t.copy_(work);
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                                             std::vector<at::Tensor>& inputs,
                                                             const c10d::AllgatherOptions&) {
  at::Tensor in = single(inputs, "allgather");
  TORCH_CHECK(outputs.size() == 1 && int(outputs[0].size()) == getSize(),
              "ringrt backend: allgather needs one output list of ", getSize(), " tensors");
  std::vector<at::Tensor> outs = outputs[0];
  for (auto& o : outs) {
    check_cpu(o, "allgather output");
    TORCH_CHECK(o.scalar_type() == in.scalar_type() && o.numel() == in.numel(),
                "ringrt backend: allgather outputs must match the input's dtype and size");
  }
  const int me = getRank(), n = getSize();
  // Until libringrt has an allgather of its own: one broadcast from each rank in turn.
  return enqueue(c10d::OpType::ALLGATHER, outs, [this, in, outs, me, n] {
    for (int r = 0; r < n; ++r) {
      at::Tensor o = outs[size_t(r)];
      if (r == me) o.copy_(in);
      broadcast_tensor(o, r);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::_allgather_base(at::Tensor& output, at::Tensor& input,
                                                                   const c10d::AllgatherOptions&) {
  check_cpu(input, "allgather input");
  check_cpu(output, "allgather output");
  TORCH_CHECK(output.scalar_type() == input.scalar_type() && output.numel() == input.numel() * getSize(),
              "ringrt backend: _allgather_base output must hold world size x the input");
  const int me = getRank(), n = getSize();
  at::Tensor in = input, out = output;
  return enqueue(c10d::OpType::_ALLGATHER_BASE, {out}, [this, in, out, me, n] {
    Contiguous c(out);
    at::Tensor flat = c.work.view({-1});
    const int64_t each = in.numel();
    for (int r = 0; r < n; ++r) {
      at::Tensor slot = flat.narrow(0, r * each, each);
      if (r == me) slot.copy_(in.reshape({-1}));
      broadcast_bytes(slot.data_ptr(), slot.nbytes(), r);
    }
    c.finish();
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::gather(std::vector<std::vector<at::Tensor>>& outputs,
                                                          std::vector<at::Tensor>& inputs,
                                                          const c10d::GatherOptions& opts) {
  at::Tensor in = single(inputs, "gather");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < getSize(), "ringrt backend: gather root ", opts.rootRank,
              " is not a rank of ", getSize());
  const int me = getRank(), n = getSize(), root = int(opts.rootRank);
  std::vector<at::Tensor> outs;
  if (me == root) {
    TORCH_CHECK(outputs.size() == 1 && int(outputs[0].size()) == n, "ringrt backend: gather needs ", n,
                " output tensors on the root");
    outs = outputs[0];
  } else {
    TORCH_CHECK(outputs.empty() || (outputs.size() == 1 && outputs[0].empty()),
                "ringrt backend: gather takes outputs only on the root");
  }
  return enqueue(c10d::OpType::GATHER, outs, [this, in, outs, me, n, root] {
    for (int r = 0; r < n; ++r) {
      at::Tensor slot = me == root ? outs[size_t(r)] : at::empty_like(in, at::MemoryFormat::Contiguous);
      if (r == me) slot.copy_(in);
      broadcast_tensor(slot, r);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::scatter(std::vector<at::Tensor>& outputs,
                                                           std::vector<std::vector<at::Tensor>>& inputs,
                                                           const c10d::ScatterOptions& opts) {
  at::Tensor out = single(outputs, "scatter");
  TORCH_CHECK(opts.rootRank >= 0 && opts.rootRank < getSize(), "ringrt backend: scatter root ", opts.rootRank,
              " is not a rank of ", getSize());
  const int me = getRank(), n = getSize(), root = int(opts.rootRank);
  std::vector<at::Tensor> ins;
  if (me == root) {
    TORCH_CHECK(inputs.size() == 1 && int(inputs[0].size()) == n, "ringrt backend: scatter needs ", n,
                " input tensors on the root");
    ins = inputs[0];
  }
  return enqueue(c10d::OpType::SCATTER, {out}, [this, out, ins, me, n, root] {
    for (int r = 0; r < n; ++r) {
      at::Tensor slot = r == me ? out : at::empty_like(out, at::MemoryFormat::Contiguous);
      if (me == root) slot.copy_(ins[size_t(r)]);
      broadcast_tensor(slot, root);
    }
  });
}

c10::intrusive_ptr<c10d::Work> ProcessGroupRingrt::barrier(const c10d::BarrierOptions&) {
  return enqueue(c10d::OpType::BARRIER, {}, [] { RINGRT_TORCH_CHECK(ringrt_barrier()); });
}

void ProcessGroupRingrt::spb_allreduce(std::vector<at::Tensor>& buckets, const std::vector<int>& depth) {
  TORCH_CHECK(int(depth.size()) == getSize(), "ringrt backend: SPB needs one depth per rank (", getSize(), "), got ",
              depth.size());
  for (auto& b : buckets) {
    check_cpu(b, "SPB bucket");
    TORCH_CHECK(b.is_contiguous(), "ringrt backend: SPB buckets must be contiguous");
    TORCH_CHECK(b.scalar_type() == buckets[0].scalar_type(), "ringrt backend: SPB buckets need one dtype");
  }
  if (buckets.empty()) return;
  const ringrt_dtype_t dt = dtype_of(buckets[0]);
  run_sync([&] {
    std::vector<ringrt_bucket_t> rb;
    uint64_t bytes = 0;
    for (auto& b : buckets) {
      rb.push_back({b.data_ptr(), size_t(b.numel()), nullptr, 0});
      bytes += b.nbytes();
    }
    traffic_.spb_calls++;
    traffic_.spb_bytes += bytes;
    RINGRT_TORCH_CHECK(ringrt_allreduce_spb_depth(rb.data(), rb.size(), dt, depth.data()));
  });
}

Traffic ProcessGroupRingrt::traffic() {
  Traffic t;
  run_sync([&] { t = traffic_; });
  return t;
}

std::string ProcessGroupRingrt::backend_name() {
  ringrt_backend_t b = RINGRT_BACKEND_AUTO;
  run_sync([&] { RINGRT_TORCH_CHECK(ringrt_backend(&b)); });
  switch (b) {
    case RINGRT_BACKEND_TCP: return "tcp";
    case RINGRT_BACKEND_SHM: return "shm";
    case RINGRT_BACKEND_HIER: return "hier";
    case RINGRT_BACKEND_NCCL: return "nccl";
    default: return "auto";
  }
}

}  // namespace ringsched_torch
