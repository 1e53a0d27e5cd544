// SPDX-License-Identifier: GPL-2.0-or-later
// Packing per-type counts onto nodes (NodePacker, placement_internal.h), shared by place_hetero
// and the market: the free-GPU allocator's rule inside each type, so that a job spans as few
// nodes as the free GPUs allow. Jobs with the largest demand of a type go first (they need whole
// nodes, which smaller demands would otherwise break up); among equal demands, the job that
// loses most when spread.
#include <algorithm>

#include "placement_internal.h"

namespace ringsched {

NodePacker::NodePacker(const PlacementProblem& p, const PlacementTopology& topo)
    : p_(p), topo_(topo), free_(p.cluster), topo_node_(p.cluster.nodes.size(), -1) {
  for (size_t n = 0; n < topo.nodes.size(); ++n)
    topo_node_[topo.nodes[n].cluster_index] = static_cast<int>(n);
}

bool NodePacker::pack(const std::vector<std::vector<int>>& counts,
                      const std::vector<double>& spread_loss,
                      std::vector<std::vector<std::pair<int, int>>>& package) const {
  int J = static_cast<int>(counts.size());
  int T = static_cast<int>(topo_.nodes_of_type.size());
  package.resize(J);
  for (std::vector<std::pair<int, int>>& p : package) p.clear();  // capacity kept for the next
  FreeGpus free = free_;
  std::vector<std::vector<int>> need = counts;
  for (std::vector<int>& c : need) c.resize(T, 0);
  // Running jobs that keep their per-type counts stay on the nodes they hold, if still free.
  for (int j = 0; j < J; ++j) {
    if (!p_.jobs[j].running || topo_.current[j].empty() || counts[j] != topo_.current_types[j])
      continue;
    bool free_still = true;
    for (const auto& [n, g] : topo_.current[j])
      free_still = free_still && free.free(topo_.nodes[n].cluster_index) >= g;
    if (!free_still) continue;
    for (const auto& [n, g] : topo_.current[j]) {
      free.take_at(topo_.nodes[n].cluster_index, g);
      package[j].push_back({n, g});
      need[j][topo_.nodes[n].type] -= g;
    }
  }
  auto loss = [&](int j) {
    return j < static_cast<int>(spread_loss.size()) ? spread_loss[j] : 0.0;
  };
  std::vector<int> jobs;
  for (int t = 0; t < T; ++t) {
    jobs.clear();
    for (int j = 0; j < J; ++j)
      if (need[j][t] > 0) jobs.push_back(j);
    std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) {
      return need[a][t] != need[b][t] ? need[a][t] > need[b][t] : loss(a) > loss(b);
    });
    for (int j : jobs) {
      // Type t of the placement is type t of FreeGpus: both index the cluster's sorted types.
      std::vector<std::pair<int, int>> got = free.take_of_type(need[j][t], t);
      if (got.empty()) return false;
      for (const auto& [node, g] : got) package[j].push_back({topo_node_[node], g});
    }
  }
  return true;
}

}  // namespace ringsched
