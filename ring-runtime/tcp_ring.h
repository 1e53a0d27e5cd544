// SPDX-License-Identifier: GPL-2.0-or-later
// tcp_ring.h -- the TCP ring: authenticated connections to the next and from the previous
// member, and one nonblocking engine driven by the calling thread (tcp_ring.cpp).
#ifndef RINGRT_TCP_RING_H
#define RINGRT_TCP_RING_H

#include "configuration.h"
#include "frames.h"
#include "rendezvous.h"
#include "sockets.h"
#include "transport.h"

#include <functional>
#include <string>
#include <vector>

namespace ringrt {

class TcpRing : public Transport {
 public:
  TcpRing() = default;
  ~TcpRing() override;
  // Connect the ring formed by members (global ranks, ascending; contains cfg.rank).
  rr connect(const Config& cfg, const Table& table, const std::vector<int>& members, int listen_fd,
             int64_t deadline_ns);
  int size() const override { return static_cast<int>(members_.size()); }
  int index() const override { return index_; }
  // Large buffers: the ring (reduce-scatter + allgather), or halving/doubling on four members;
  // small ones: allgather of the whole buffers, then a local reduction in member order.
  rr allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) override;
  // A pipelined chain from the root around the ring.
  rr broadcast(void* buf, size_t bytes, int root) override;
  rr barrier() override;
  // The ring allgather: m-1 steps, each passing on the block received in the step before.
  rr allgather(const void* send, void* recv, size_t bytes) override;
  // Best effort: tell both neighbours that `blamed` failed (they pass it on).
  void abort(rr code, int blamed, const std::string& why) override;
  // Send a keepalive to the next member if that stream is at a frame boundary and quiet for a
  // while.
  void keep_alive() override;
  void on_wait(std::function<void()> f) override { tick_ = std::move(f); }
  std::string describe() const override;
  int in_fd() const { return in_.fd; }
  int out_fd() const { return out_.fd; }
  int prev_rank() const { return prev_; }
  // the congestion control of the connections to the next and from the previous member
  const std::string& congestion() const { return congestion_; }
  int next_rank() const { return next_; }
  TcpAlgorithm algorithm = TcpAlgorithm::kAuto;
  size_t segment_bytes = 256 * 1024;     // pipelining unit; sets the framing, so equal on all members
  size_t small_bytes = 16 * 1024;        // at or below: allgather-then-reduce (n-1 hops)
  // Busy-poll this long after the last progress before sleeping in poll(). The busy-poll yields
  // the CPU on every turn: a peer or a compute thread waiting for this CPU runs at once (ranks
  // counted against CPUs do not say whether a CPU is free: a torch rank's own backward pass
  // wants it), and when nothing else is runnable sched_yield() is one more system call.
  int spin_us = 0;
  int timeout_ms = 5000;

 private:
  // The two connections: to/from the previous member and to/from the next one. The ring sends
  // on kNext and receives on kPrev; halving/doubling uses both ways of both.
  enum Link : uint8_t { kPrev = 0, kNext = 1 };
  int fd_of(int link) const { return link == kNext ? out_.fd : in_.fd; }
  int peer_of(int link) const { return link == kNext ? next_ : prev_; }
  ssize_t send_pending_frame(int link);
  bool out_partial(int link) const {
    return out_hdr_sent_[link] < 32 || out_payload_sent_[link] < out_payload_len_[link];
  }
  void send_keepalive(int link);
  // action: 0 copy, 1 reduce, 2 reduce+div
  struct RecvItem { char* dst; uint32_t len; uint8_t action; uint8_t link; };
  struct SendItem { const char* src; uint32_t len; int32_t dep; uint8_t link; };
  rr run(uint8_t kind, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq);
  rr on_error(rr code);
  rr check_backward();
  rr allgather_reduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div,
                      uint32_t seq, uint8_t kind);
  void plan_ring_allreduce(char* base, size_t count, size_t esz, int div);
  void plan_halving_allreduce(char* base, size_t count, size_t esz, int div);
  void plan_ring_allgather(char* base, size_t bytes);

  std::vector<int> members_;
  int index_ = 0, rank_ = -1, prev_ = -1, next_ = -1;
  std::string congestion_;
  Fd in_, out_;  // the connection from the previous member and the one to the next
  std::vector<RecvItem> recvs_;
  std::vector<SendItem> sends_;
  // Which links the current collective keeps alive while it waits: one-way ones only the next
  // member (and watch it for abort notices coming back); halving/doubling both, also where all
  // it owes has gone: that partner may be a collective ahead, waiting for what we will owe it
  // next, and must not take our wait on a stalled third rank for a stall of ours. A keepalive
  // to a partner that has exited fails quietly (send_keepalive ignores the error).
  bool one_way_ = true;  // data flows prev -> us -> next only (all but halving/doubling)
  std::vector<char> staging_;
  std::vector<char> gather_;
  // persistent receive state per link (a header may be prefetched across operations)
  FrameHeader in_hdr_[2] = {};
  size_t in_got_[2] = {0, 0};
  // outgoing frame state per link
  FrameHeader out_hdr_[2] = {};
  size_t out_hdr_sent_[2] = {32, 32}, out_payload_sent_[2] = {0, 0}, out_payload_len_[2] = {0, 0};
  const char* out_payload_[2] = {nullptr, nullptr};
  int64_t last_out_ns_[2] = {0, 0};
  std::function<void()> tick_;
  uint8_t kind_ = 0;
  uint32_t seq_ = 0;
  ringrt_dtype_t dtype_ = RINGRT_FLOAT32;
  ringrt_op_t op_ = RINGRT_SUM;
  uint32_t last_seq_ = 0;  // sequence number of the last collective (every member counts alike)
  bool broken_ = false;
};

}  // namespace ringrt

#endif  // RINGRT_TCP_RING_H
