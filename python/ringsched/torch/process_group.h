// SPDX-License-Identifier: GPL-2.0-or-later
// The "ringrt" torch.distributed backend: a c10d process group whose collectives run on
// libringrt's C API (ring-runtime/ringrt.h). libringrt's world is process-global and its calls
// are not thread-safe, so one worker thread per group drives every ringrt_* call, in the order
// the collectives were issued; the callers get a Work whose future completes when it is done
// (DDP overlaps its allreduces with the rest of the backward pass that way).
//
// Torch API: torch 1.x creates a backend as a c10d::ProcessGroup (what Debian 12's 1.13 has);
// torch 2.x wraps a c10d::Backend in a ProcessGroup. RingrtBase picks the class; the virtual
// methods used exist with the same signatures in both. See ringsched-torch(3).
#pragma once

#include <torch/version.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#endif
#include <torch/csrc/distributed/c10d/Work.hpp>

#include "ringrt.h"

namespace ringsched_torch {

#if TORCH_VERSION_MAJOR >= 2
using RingrtBase = c10d::Backend;
#else
using RingrtBase = c10d::ProcessGroup;
#endif

// Bytes handed to libringrt, by kind of call (what the traffic figures of ringsched-torch(3)
// are measured from; a ring moves 2(n-1)/n of an allreduce's bytes per rank).
struct Traffic {
  uint64_t allreduce_calls = 0, allreduce_bytes = 0;
  uint64_t spb_calls = 0, spb_bytes = 0;
  uint64_t broadcast_calls = 0, broadcast_bytes = 0;
};

class ProcessGroupRingrt : public RingrtBase {
 public:
  // Joins libringrt's world (ringrt_init(): RINGRT_* from the environment, which the Python
  // creator completes from the store where ringrun did not set it). Throws, naming the cause,
  // when the rendezvous fails or libringrt's rank/size differ from torch's.
  ProcessGroupRingrt(int rank, int size);
  ~ProcessGroupRingrt() override;

  const std::string getBackendName() const override { return "ringrt"; }

  c10::intrusive_ptr<c10d::Work> broadcast(std::vector<at::Tensor>& tensors,
                                           const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(std::vector<at::Tensor>& tensors,
                                           const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(std::vector<at::Tensor>& tensors,
                                                     const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>& tensors, const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(std::vector<std::vector<at::Tensor>>& outputs,
                                           std::vector<at::Tensor>& inputs,
                                           const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(std::vector<std::vector<at::Tensor>>& outputs,
                                        std::vector<at::Tensor>& inputs, const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(std::vector<at::Tensor>& outputs,
                                         std::vector<std::vector<at::Tensor>>& inputs,
                                         const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override;

  // SPB: buckets in backprop order (bucket 0 nearest the loss), rank r computed buckets
  // 0 .. depth[r]-1; each bucket is averaged over the ranks that computed it
  // (ringrt_allreduce_spb_depth). Synchronous.
  void spb_allreduce(std::vector<at::Tensor>& buckets, const std::vector<int>& depth);

  Traffic traffic();
  std::string backend_name();  // libringrt's backend for host buffers: "tcp", "shm" or "hier"

  // The live group of this process (libringrt has one world per process), or nullptr.
  static ProcessGroupRingrt* current();

 private:
  class RingrtWork;
  using Job = std::function<void()>;  // runs on the worker thread; throws on failure

  // Queues fn for the worker thread; the returned work completes with `outputs` when fn returns
  // (with fn's exception when it throws).
  c10::intrusive_ptr<c10d::Work> enqueue(c10d::OpType type, std::vector<at::Tensor> outputs, Job fn);
  // Runs fn on the worker thread and waits for it.
  void run_sync(Job fn);
  void loop();

  // Data movement of any dtype: the bytes of buf (contiguous) from root to every rank.
  void broadcast_bytes(void* buf, size_t bytes, int root);
  // The same for a tensor (through a contiguous copy when it is not contiguous).
  void broadcast_tensor(const at::Tensor& t, int root);

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::pair<c10::intrusive_ptr<RingrtWork>, Job>> queue_;
  bool stopping_ = false;
  std::thread worker_;
  Traffic traffic_;  // touched on the worker thread only (read through run_sync)
};

}  // namespace ringsched_torch
