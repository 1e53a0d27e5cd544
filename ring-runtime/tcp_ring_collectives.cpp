// SPDX-License-Identifier: GPL-2.0-or-later
// tcp_ring_collectives.cpp -- the TCP ring's collectives: each plans the sends and receives of
// its algorithm (ring reduce-scatter + allgather with chunked pipelining, halving and doubling on
// four, allgather-then-reduce for small buffers, pipelined chain broadcast, ring allgather) and
// lets the engine (tcp_ring.cpp) stream them.
#include "tcp_ring.h"

#include "reduce.h"

#include <algorithm>
#include <cstring>

namespace ringrt {

// ---- collectives ---------------------------------------------------------------------------
rr TcpRing::allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const uint32_t seq = ++last_seq_;
  copy_in(send, recv, count * dtype_size(t));
  void* buf = recv;
  const int m = size();
  if (m == 1) {
    if (div > 1) divide(buf, count, t, div);
    return RINGRT_OK;
  }
  const size_t esz = dtype_size(t);
  if (count * esz <= small_bytes) return allgather_reduce(buf, count, t, op, div, seq, kCollAllreduce);
  recvs_.clear();
  sends_.clear();
  const bool halving = m == 4 && algorithm != TcpAlgorithm::kRing;
  if (halving) plan_halving_allreduce(static_cast<char*>(buf), count, esz, div);
  else plan_ring_allreduce(static_cast<char*>(buf), count, esz, div);
  one_way_ = !halving;
  return run(halving ? kCollAllreduceHalving : kCollAllreduce, t, op, div, seq);
}

// Block b of m (the first count % m blocks one element longer), cut into nseg segments; the
// staging buffer is sized for the largest segment.
namespace {
struct Blocks {
  char* base;
  size_t esz, per, rem, nseg;
  Blocks(char* b, size_t count, size_t e, int m, size_t segment_bytes) : base(b), esz(e) {
    per = count / m;
    rem = count % m;
    size_t seg_elems = std::max<size_t>(1, segment_bytes / esz);
    nseg = std::max<size_t>(1, (per + (rem ? 1 : 0) + seg_elems - 1) / seg_elems);
  }
  size_t size(int b) const { return per + (static_cast<size_t>(b) < rem ? 1 : 0); }
  size_t offset(int b) const { return static_cast<size_t>(b) * per + std::min(static_cast<size_t>(b), rem); }
  void segment(int b, size_t j, char** p, uint32_t* len) const {
    size_t bs = size(b);
    size_t lo = j * bs / nseg, hi = (j + 1) * bs / nseg;
    *p = base + (offset(b) + lo) * esz;
    *len = static_cast<uint32_t>((hi - lo) * esz);
  }
  size_t max_segment_bytes() const { return ((per + (rem ? 1 : 0)) + nseg - 1) / nseg * esz + esz; }
};
}  // namespace

// Ring: 2(m-1) steps; in reduce-scatter step s member i sends block i-s and reduces block
// i-s-1 into its buffer, then the allgather passes the reduced blocks on.
void TcpRing::plan_ring_allreduce(char* base, size_t count, size_t esz, int div) {
  const int m = size(), i = index_;
  const Blocks bl(base, count, esz, m, segment_bytes);
  const size_t nseg = bl.nseg;
  for (int s = 0; s < 2 * (m - 1); ++s) {
    bool rs = s < m - 1;
    int sb = rs ? ((i - s) % m + m) % m : ((i + 1 - (s - (m - 1))) % m + m) % m;
    int rb = rs ? ((i - s - 1) % m + m) % m : ((i - (s - (m - 1))) % m + m) % m;
    for (size_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      bl.segment(sb, j, &p, &len);
      sends_.push_back({p, len, s == 0 ? -1 : static_cast<int32_t>((s - 1) * nseg + j), kNext});
      bl.segment(rb, j, &p, &len);
      uint8_t action = rs ? (s == m - 2 && div > 1 ? 2 : 1) : 0;
      recvs_.push_back({p, len, action, kPrev});
    }
  }
  if (staging_.size() < bl.max_segment_bytes()) staging_.resize(bl.max_segment_bytes());
}

// Recursive halving and doubling on a ring of four, pairs along its edges: (0,1) and (2,3) swap
// halves, then (1,2) and (3,0) swap quarters of what they kept; the allgather retraces the two
// steps backwards. Member i ends the reduction owning quarter mine[i]; other[i] is the rest of
// its half, which its second partner owns. Each member reduces only its own quarter's final
// value, so all members hold bitwise the same result. Items are ordered so that what the next
// step sends first arrives first.
void TcpRing::plan_halving_allreduce(char* base, size_t count, size_t esz, int div) {
  static const int mine[4] = {0, 2, 3, 1};
  static const int other[4] = {1, 3, 2, 0};
  const int i = index_;
  const int p1 = i ^ 1;                                 // step-1 partner: 0-1, 2-3
  const uint8_t l1 = i % 2 == 0 ? kNext : kPrev;
  const uint8_t l2 = i % 2 == 0 ? kPrev : kNext;        // step-2 partner: 1-2, 3-0
  const Blocks q(base, count, esz, 4, segment_bytes);
  const int32_t nseg = static_cast<int32_t>(q.nseg);
  auto sends = [&](int quarter, uint8_t link, int32_t dep_base) {
    for (int32_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      q.segment(quarter, static_cast<size_t>(j), &p, &len);
      sends_.push_back({p, len, dep_base < 0 ? -1 : dep_base + j, link});
    }
  };
  auto recvs = [&](int quarter, uint8_t link, uint8_t action) {
    for (int32_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      q.segment(quarter, static_cast<size_t>(j), &p, &len);
      recvs_.push_back({p, len, action, link});
    }
  };
  const int f = mine[i], g = other[i], fp = mine[p1], gp = other[p1];
  // step 1: give the partner its half (what it passes on first, first); reduce ours
  sends(gp, l1, -1);
  sends(fp, l1, -1);
  recvs(g, l1, 1);  // recv items 0 .. nseg-1
  recvs(f, l1, 1);  // nseg .. 2nseg-1
  // step 2: give the second partner its quarter of our half; reduce ours to its final value
  sends(g, l2, 0);
  recvs(f, l2, div > 1 ? 2 : 1);  // 2nseg .. 3nseg-1
  // step 3: swap the final quarters back
  sends(f, l2, 2 * nseg);
  recvs(g, l2, 0);  // 3nseg .. 4nseg-1
  // step 4: swap the final halves back
  sends(f, l1, 2 * nseg);
  sends(g, l1, 3 * nseg);
  recvs(fp, l1, 0);
  recvs(gp, l1, 0);
  if (staging_.size() < q.max_segment_bytes()) staging_.resize(q.max_segment_bytes());
}

rr TcpRing::allgather_reduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq,
                             uint8_t kind) {
  const int m = size();
  const size_t esz = dtype_size(t);
  const size_t bytes = count * esz;
  if (gather_.size() < (m - 1) * bytes) gather_.resize((m - 1) * bytes);
  recvs_.clear();
  sends_.clear();
  for (int s = 0; s < m - 1; ++s) {
    const char* src = s == 0 ? static_cast<const char*>(buf) : gather_.data() + (s - 1) * bytes;
    sends_.push_back({src, static_cast<uint32_t>(bytes), s == 0 ? -1 : s - 1, kNext});
    recvs_.push_back({gather_.data() + s * bytes, static_cast<uint32_t>(bytes), 0, kPrev});
  }
  one_way_ = true;
  RINGRT_CHECK(run(kind == kCollBarrier ? kCollBarrier : kCollAllgatherReduce, t, op, div, seq));
  // combine in member order so that every rank computes bitwise the same result
  auto contrib = [&](int k) -> const char* {
    if (k == index_) return static_cast<const char*>(buf);
    int d = ((index_ - k) % m + m) % m;  // received at step d-1
    return gather_.data() + (d - 1) * bytes;
  };
  if (staging_.size() < bytes) staging_.resize(bytes);
  std::memcpy(staging_.data(), contrib(0), bytes);
  for (int k = 1; k < m; ++k) {
    if (k == m - 1 && div > 1) reduce_into_div(staging_.data(), contrib(k), count, t, op, div);
    else reduce_into(staging_.data(), contrib(k), count, t, op);
  }
  std::memcpy(buf, staging_.data(), bytes);
  return RINGRT_OK;
}

rr TcpRing::broadcast(void* buf, size_t bytes, int root) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const int m = size();
  const int root_index = static_cast<int>(std::find(members_.begin(), members_.end(), root) - members_.begin());
  if (root_index == m) return fail(RINGRT_ERR_ARG, -1, "broadcast root %d is not a member of the ring", root);
  const uint32_t seq = ++last_seq_;
  if (m == 1) return RINGRT_OK;
  char* base = static_cast<char*>(buf);
  const size_t nseg = std::max<size_t>(1, (bytes + segment_bytes - 1) / segment_bytes);
  recvs_.clear();
  sends_.clear();
  const bool first = index_ == root_index;
  const bool last = (index_ + 1) % m == root_index;
  for (size_t j = 0; j < nseg; ++j) {
    size_t lo = j * bytes / nseg, hi = (j + 1) * bytes / nseg;
    uint32_t len = static_cast<uint32_t>(hi - lo);
    if (!first) recvs_.push_back({base + lo, len, 0, kPrev});
    if (first) sends_.push_back({base + lo, len, -1, kNext});
    else if (!last) sends_.push_back({base + lo, len, static_cast<int32_t>(j), kNext});
  }
  one_way_ = true;
  return run(kCollBroadcast, RINGRT_INT32, RINGRT_SUM, 0, seq);
}

rr TcpRing::barrier() {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const uint32_t seq = ++last_seq_;
  if (size() == 1) return RINGRT_OK;
  int32_t token = 0;
  return allgather_reduce(&token, 1, RINGRT_INT32, RINGRT_SUM, 0, seq, kCollBarrier);
}

// Ring allgather: in step s member i sends block i-s (its own first, then each one it has just
// received) and receives block i-s-1.
void TcpRing::plan_ring_allgather(char* base, size_t bytes) {
  const int m = size(), i = index_;
  const size_t nseg = std::max<size_t>(1, (bytes + segment_bytes - 1) / segment_bytes);
  auto segment = [&](int block, size_t j, char** p, uint32_t* len) {
    const size_t lo = j * bytes / nseg, hi = (j + 1) * bytes / nseg;
    *p = base + static_cast<size_t>(block) * bytes + lo;
    *len = static_cast<uint32_t>(hi - lo);
  };
  for (int s = 0; s < m - 1; ++s) {
    const int sb = ((i - s) % m + m) % m, rb = ((i - s - 1) % m + m) % m;
    for (size_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      segment(sb, j, &p, &len);
      sends_.push_back({p, len, s == 0 ? -1 : static_cast<int32_t>((s - 1) * nseg + j), kNext});
      segment(rb, j, &p, &len);
      recvs_.push_back({p, len, 0, kPrev});
    }
  }
}

rr TcpRing::allgather(const void* send, void* recv, size_t bytes) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const uint32_t seq = ++last_seq_;
  char* base = static_cast<char*>(recv);
  copy_in(send, base + static_cast<size_t>(index_) * bytes, bytes);
  if (size() == 1 || bytes == 0) return RINGRT_OK;
  recvs_.clear();
  sends_.clear();
  plan_ring_allgather(base, bytes);
  one_way_ = true;
  return run(kCollAllgather, RINGRT_INT32, RINGRT_SUM, 0, seq);
}

}  // namespace ringrt
