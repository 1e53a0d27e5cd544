// SPDX-License-Identifier: GPL-2.0-or-later
// hierarchical.h -- the hier backend: shared memory inside each node and, between the node
// leaders, another transport (the TCP ring), chunk by chunk (hierarchical.cpp).
#ifndef RINGRT_HIERARCHICAL_H
#define RINGRT_HIERARCHICAL_H

#include "shm_group.h"
#include "transport.h"

#include <memory>
#include <vector>

namespace ringrt {

class HierTransport : public Transport {
 public:
  // local: this node's group (null when the rank is alone on its node); across: the leaders'
  // transport (null on ranks that do not lead their node); leader_of: each rank's node leader.
  HierTransport(int rank, int world, std::unique_ptr<ShmGroup> local, std::unique_ptr<Transport> across,
                std::vector<int> leader_of);
  int size() const override { return world_; }
  int index() const override { return rank_; }
  // Each chunk: reduced within the node, the node's result reduced across the leaders, and
  // handed back to the node by its leader.
  rr allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) override;
  rr broadcast(void* buf, size_t bytes, int root) override;
  rr barrier() override;
  void abort(rr code, int blamed, const std::string& why) override;
  void keep_alive() override;
  std::string describe() const override;

 private:
  // A leader's step across nodes failed: its node hears of it before it returns.
  rr across_failed(rr code);
  int rank_, world_;
  std::unique_ptr<ShmGroup> local_;
  std::unique_ptr<Transport> across_;
  std::vector<int> leader_of_;
};

}  // namespace ringrt

#endif  // RINGRT_HIERARCHICAL_H
