// Free GPUs per node while a policy hands them out, and the one rule by which every policy of the
// project (the planner, the placement, ringsim's baselines) picks nodes for n GPUs: the smallest
// node that holds all n, else the nodes with the most free GPUs first, so that a ring spans as
// few nodes as it can. One way of counting: a node's free GPUs start at Node::usable() (the GPUs
// the planner may use: its free_gpus when set, else all of them).
#pragma once

#include <map>
#include <memory>
#include <string>
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
  // take() as node name -> GPUs.
  std::map<std::string, int> place(int n, const std::vector<std::string>& types);

 private:
  struct Layout {  // what does not change while GPUs are handed out: shared by copies
    std::vector<std::string> names;
    std::vector<int> type_of;                   // node -> type index
    std::vector<std::string> types;             // sorted
    std::vector<std::vector<int>> nodes_of_type;
    std::map<std::string, int> by_name;
  };
  int type_index(const std::string& type) const;  // -1: none

  std::shared_ptr<const Layout> layout_;
  std::vector<int> free_;
  std::vector<int> free_of_type_;
};

}  // namespace ringsched
