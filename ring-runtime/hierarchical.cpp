// SPDX-License-Identifier: GPL-2.0-or-later
// hierarchical.cpp -- the hier backend (hierarchical.h). Within a node every chunk is reduced
// through shared memory, each rank reducing its share; the leader gathers the node's result,
// runs the leaders' allreduce on it and publishes the total for the node's other ranks.
#include "hierarchical.h"

#include "backends.h"
#include "reduce.h"
#include "tcp_ring.h"

#include <algorithm>
#include <cstring>

namespace ringrt {

HierTransport::HierTransport(int rank, int world, std::unique_ptr<ShmGroup> local, std::unique_ptr<Transport> across,
                             std::vector<int> leader_of)
    : rank_(rank), world_(world), local_(std::move(local)), across_(std::move(across)),
      leader_of_(std::move(leader_of)) {
  if (local_ && across_) {
    // waiting on one side, keep the other side's peers from taking us for stalled
    ShmGroup* node = local_.get();
    Transport* leaders = across_.get();
    leaders->on_wait([node] { node->keep_alive(); });
    node->on_wait([leaders] { leaders->keep_alive(); });
  }
}

rr HierTransport::across_failed(rr code) {
  if (local_) local_->abort(code, last_blamed(), last_detail());
  return code;
}

rr HierTransport::allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) {
  if (!local_) return across_->allreduce(send, recv, count, t, op, div);
  const size_t esz = dtype_size(t);
  copy_in(send, recv, count * esz);
  char* base = static_cast<char*>(recv);
  const size_t ce = std::max<size_t>(1, local_->slot_bytes / esz);
  for (size_t off = 0; off < count; off += ce) {
    const size_t n = std::min(ce, count - off);
    const int b = local_->next_buffer();
    char* mine = base + off * esz;
    RINGRT_CHECK(local_->reduce_scatter(mine, n, t, op, 0, b));
    if (across_) {
      local_->gather_shares(mine, n, esz, b);
      rr rc = across_->allreduce(mine, mine, n, t, op, div);
      if (rc != RINGRT_OK) return across_failed(rc);
      local_->publish(mine, n * esz, b);
    } else {
      RINGRT_CHECK(local_->receive_published(mine, n * esz, b));
    }
  }
  return RINGRT_OK;
}

rr HierTransport::broadcast(void* buf, size_t bytes, int root) {
  const int root_leader = leader_of_[root];
  if (!local_) return across_->broadcast(buf, bytes, root_leader);
  const int r = local_->index_of(root);  // -1: the root is on another node
  const int me = local_->index();
  char* base = static_cast<char*>(buf);
  size_t off = 0;
  do {
    const size_t nb = std::min(local_->slot_bytes, bytes - off);
    const int b = local_->next_buffer();
    char* mine = base + off;
    // a root that does not lead its node hands the chunk to the leader through its slot
    if (me == r && r != 0) std::memcpy(local_->slot(r, b), mine, nb);
    RINGRT_CHECK(local_->arrive_all());
    if (across_) {
      if (r > 0) std::memcpy(mine, local_->slot(r, b), nb);
      rr rc = across_->broadcast(mine, nb, root_leader);
      if (rc != RINGRT_OK) return across_failed(rc);
      local_->publish(mine, nb, b);
    } else {
      RINGRT_CHECK(local_->receive_published(me == r ? nullptr : mine, nb, b));
    }
    off += nb;
  } while (off < bytes);
  return RINGRT_OK;
}

rr HierTransport::barrier() {
  if (!local_) return across_->barrier();
  RINGRT_CHECK(local_->arrive_all());
  if (across_) {
    rr rc = across_->barrier();
    if (rc != RINGRT_OK) return across_failed(rc);
    local_->publish(nullptr, 0, 0);
    return RINGRT_OK;
  }
  return local_->receive_published(nullptr, 0, 0);
}

void HierTransport::abort(rr code, int blamed, const std::string& why) {
  if (across_) across_->abort(code, blamed, why);
  if (local_) local_->abort(code, blamed, why);
}

void HierTransport::keep_alive() {
  if (local_) local_->keep_alive();
  if (across_) across_->keep_alive();
}

std::string HierTransport::describe() const { return across_ ? across_->describe() : ""; }

rr make_hier_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out) {
  const Topology& topo = ctx.topo;
  std::unique_ptr<ShmGroup> local;
  if (topo.local_size() > 1) {
    std::unique_ptr<Transport> t;
    RINGRT_CHECK(make_shm_transport(ctx, &t));
    local.reset(static_cast<ShmGroup*>(t.release()));
  }
  std::unique_ptr<Transport> across;
  if (topo.is_leader()) {
    std::unique_ptr<TcpRing> ring(new TcpRing);
    ring->spin_us = topo.oversubscribed() ? 1000 : 2000;
    RINGRT_CHECK(ring->connect(ctx.cfg, ctx.table, topo.leaders, ctx.listen_fd, ctx.deadline));
    across = std::move(ring);
  }
  out->reset(new HierTransport(topo.rank, topo.world, std::move(local), std::move(across), topo.leader_of));
  return RINGRT_OK;
}

}  // namespace ringrt
