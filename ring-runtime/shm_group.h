// SPDX-License-Identifier: GPL-2.0-or-later
// shm_group.h -- the ranks of one node, through a POSIX shared-memory segment (shm_group.cpp).
// A Transport of its own (the shm backend), and the node's half of the hierarchical one, which
// builds on the chunk steps below.
#ifndef RINGRT_SHM_GROUP_H
#define RINGRT_SHM_GROUP_H

#include "configuration.h"
#include "rendezvous.h"
#include "transport.h"

#include <functional>
#include <string>
#include <vector>

namespace ringrt {

struct ShmSegment;
class ShmGroup : public Transport {
 public:
  ShmGroup() = default;
  ~ShmGroup() override;
  // members: global ranks on this node, ascending; the first creates the segment.
  rr attach(const Config& cfg, const Table& table, const std::vector<int>& members, int64_t deadline_ns);
  int size() const override { return static_cast<int>(members_.size()); }
  int index() const override { return index_; }
  // A rank's index in the group, -1 when it is on another node.
  int index_of(int rank) const;
  rr allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) override;
  rr broadcast(void* buf, size_t bytes, int root) override;
  rr barrier() override;
  rr allgather(const void* send, void* recv, size_t bytes) override;
  // Raise the segment's abort flag: every member's wait ends with this error.
  void abort(rr code, int blamed, const std::string& why) override;
  // Stamp our heartbeat, so that members waiting on us know we are busy elsewhere, not stalled.
  void keep_alive() override;
  void on_wait(std::function<void()> f) override { tick_ = std::move(f); }
  std::string describe() const override { return ""; }

  // ---- the chunk steps (every member takes each in the same order) ----
  // The buffer a chunk goes through (two, used in turn, so that a chunk's slots are not
  // overwritten while a slower member still reads the previous chunk's).
  int next_buffer() { return static_cast<int>(chunk_counter_++ & 1); }
  // Put `mine` (n elements, at most slot_bytes) in our slot of buffer b, then, once every member
  // has, reduce our share of the n elements over all slots into ours (div > 1: and divide);
  // returns once every member has reduced its share.
  rr reduce_scatter(const char* mine, size_t n, ringrt_dtype_t t, ringrt_op_t op, int div, int b);
  // Copy every member's reduced share of buffer b into `mine`.
  void gather_shares(char* mine, size_t n, size_t esz, int b);
  // Leader (index 0) publishes `bytes` of data in its slot of buffer b; the others wait for it
  // and copy it to `dst` (nullptr: only wait). Either way the step ends with our next phase.
  void publish(const char* data, size_t bytes, int b);
  rr receive_published(char* dst, size_t bytes, int b);
  // Our phase, then the wait for every member's.
  rr arrive_all();
  char* slot(int idx, int buf);

  size_t chunk_bytes = 512 * 1024;       // pure-shm pipelining unit (<= slot)
  size_t slot_bytes = 4 * 1024 * 1024;   // per rank per buffer; the hierarchical chunk
  int spin_us = 50;
  bool yield_spin = false;               // oversubscribed: yield instead of pause while spinning
  int timeout_ms = 5000;

 private:
  rr signal_phase();                      // bump own phase counter
  rr wait_all(uint64_t phase);            // every member reached phase
  rr wait_one(int idx, uint64_t phase);   // member idx reached phase
  rr wait_cond(int only_idx, uint64_t phase);
  rr check_abort();
  rr blame_laggard(int only_idx, uint64_t phase, int64_t now, bool final_check);
  void wake();

  std::vector<int> members_;
  int index_ = 0, rank_ = -1;
  ShmSegment* seg_ = nullptr;
  size_t map_bytes_ = 0;
  std::string name_;
  uint64_t phase_ = 0;
  uint64_t chunk_counter_ = 0;
  int64_t last_tick_ns_ = 0, last_pidcheck_ns_ = 0, last_hb_ns_ = 0;
  uint64_t my_pidns_ = 0;
  std::function<void()> tick_;
};

}  // namespace ringrt

#endif  // RINGRT_SHM_GROUP_H
