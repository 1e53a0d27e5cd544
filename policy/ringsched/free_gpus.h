// SPDX-License-Identifier: GPL-2.0-or-later
// Free GPUs per node while a policy hands them out, and the one rule by which every policy of the
// project (the planner, the placement, ringsim's baselines) picks nodes for n GPUs: the smallest
// node that holds all n, else the nodes with the most free GPUs first, so that a ring spans as
// few nodes as it can. One way of counting: a node's free GPUs start at Node::usable() (the GPUs
// the planner may use: its free_gpus when set, else all of them).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringsched/model.h"

namespace ringsched {

class FreeGpus {
 public:
  // Node indices are those of the cluster's nodes. The cluster is read here and not kept.
  explicit FreeGpus(const Cluster& cluster);

  int nodes() const { return static_cast<int>(free_.size()); }
  int free(int node) const { return free_[node]; }
  // Index of the node of that name; -1 if the cluster has none.
  int node_index(const std::string& name) const;
  const std::string& node_name(int node) const;
  const std::string& node_type(int node) const;
  // Free GPUs of one type (0 for a type the cluster does not have), or of any of `types`
  // (empty: of every type).
  int free_of_type(const std::string& type) const;
  int free_of(const std::vector<std::string>& types) const;
  // The most GPUs free on one node of any of `types` (empty: of every type); from the index by
  // free count where the type has one (a few steps), else by looking at the type's nodes.
  int most_on_one_node(const std::vector<std::string>& types) const;

  // Index of a type in the cluster's sorted types (Cluster::types()); -1 if it has none.
  int type_index(const std::string& type) const;

  // Takes n GPUs on one node (a negative n gives them back).
  void take_at(int node, int n);
  // Takes what an allocation (node name -> GPUs) holds; names of other clusters are ignored.
  void take(const std::map<std::string, int>& allocation);

  // Takes n GPUs of `types` (empty: any type) by the rule above: (node, GPUs) pairs in the order
  // taken. Takes nothing and returns nothing when fewer than n are free.
  std::vector<std::pair<int, int>> take(int n, const std::vector<std::string>& types);
  // The same rule among the given nodes only (ties go to the one listed first). In full: the
  // smallest node that holds all n; else the node with the most free GPUs, whole, and again for
  // what is left.
  std::vector<std::pair<int, int>> take_among(int n, const std::vector<int>& candidates);
  // take_among() over every node of type index t (type_index()), in the cluster's order, without
  // looking at every node: what the planner and the placement's packing call thousands of times
  // a pass on clusters of thousands of nodes.
  std::vector<std::pair<int, int>> take_of_type(int n, int t);
  // take() as node name -> GPUs.
  std::map<std::string, int> place(int n, const std::vector<std::string>& types);

 private:
  struct Layout {  // what does not change while GPUs are handed out: shared by copies
    std::vector<std::string> names;
    std::vector<int> gpus;                      // node -> GPUs it has
    std::vector<int> type_of;                   // node -> type index
    std::vector<int> place_in_type;             // node -> its position in nodes_of_type
    std::vector<std::string> types;             // sorted
    std::vector<std::vector<int>> nodes_of_type;
    std::unordered_map<std::string, int> by_name;
    // The index by free count (see below), per type: the largest count it holds (its largest
    // node's GPUs), the 64-bit words of one count's set of nodes, where the type's sets and
    // counters start.
    std::vector<int> most;
    std::vector<int> words;
    std::vector<size_t> set_start, count_start;
    size_t sets = 0, counts = 0;  // words of every set, counters of every type
  };
  // Index by free count: per type t and count v in 1..most[t], the set of its nodes with v free
  // GPUs (a bit per position in nodes_of_type[t], the first set bit the node listed first) and
  // its size. A type whose node gets more free GPUs than most[t] (given back more than it had)
  // leaves the index: take_of_type() then looks at every node.
  void index_move(int node, int from, int to);
  // The layout of these nodes: the last one built on this thread when the nodes are the same
  // (names, types, GPUs), else a new one. The planner, the placement's packing and ringsim build
  // several FreeGpus per pass on one cluster; a build copies and hashes every node's name (about
  // 1.2 M instructions at 1,360 nodes), a comparison with the last costs a tenth of that.
  static std::shared_ptr<const Layout> layout_of(const Cluster& cluster);

  std::shared_ptr<const Layout> layout_;
  std::vector<int> free_;
  std::vector<int> free_of_type_;
  std::vector<uint64_t> node_sets_;
  std::vector<int> set_size_;
  std::vector<char> indexed_;  // per type
};

}  // namespace ringsched
