// SPDX-License-Identifier: GPL-2.0-or-later
// Private to the placement (policy/placement*.cpp; the tests and bench programs may include it):
// what its phases share. Problem validation, the memoised speed oracle, the sizes a job may take,
// the cluster's nodes as the placement sees them, the locality model and the type-level finish
// time, the feasibility of a category (Hall's condition over sets of GPU types), the doubling
// seed and the packing onto nodes.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ringsched/free_gpus.h"
#include "ringsched/placement.h"

namespace ringsched {

// Throws InputError naming the job (by index and model) or the field for: no throughput model,
// an invalid cluster, non-positive or non-finite remaining work, an impossible GPU range, a job
// no allowed GPU type of the cluster can run (unknown model or types), a running job holding
// GPUs on a node the cluster does not have.
void validate_placement_problem(const PlacementProblem& problem);

// Sizes job j may take, ascending: the powers of two inside [min, max] when the problem asks for
// them, plus min and max themselves (an inelastic job with min = max = 3 runs on 3), capped at
// the usable GPUs of its allowed types.
class PlacementSpeeds;
std::vector<int> placement_sizes(const PlacementProblem& problem, const PlacementSpeeds& speeds,
                                 int job);

// Speeds of jobs on per-type GPU counts, through ThroughputModel::iters_per_s_mixed, memoised per
// (model, counts).
class PlacementSpeeds {
 public:
  explicit PlacementSpeeds(const PlacementProblem& problem);
  const std::vector<std::string>& types() const { return types_; }
  int num_types() const { return static_cast<int>(types_.size()); }
  // Usable GPUs of each type (indexed like types()).
  const std::vector<int>& usable() const { return usable_; }
  // Whether job j may use type t (allowed and known to the throughput model).
  bool allowed(int job, int type) const { return allowed_[job][type]; }
  // Index of job j's model among the problem's distinct models: jobs of one model (and the same
  // allowed types) have the same speed and locality on the same counts.
  int model_index(int job) const { return model_index_[job]; }
  // iterations/s of job j on counts[t] GPUs of each type t; no locality; 0 if it cannot run.
  double speed(int job, const std::vector<int>& counts);
  double single(int job, int type, int n);
  // Servers the speed of job j on per-type counts was measured on (the locality model's
  // reference, placement_support.cpp): ceil(n / 8) for n GPUs, n capped at the largest count the
  // profile measured on each type used; 1 for a type with no measured point.
  int measured_nodes(int job, const std::vector<int>& counts) const;
  // Distinct throughput-model evaluations so far.
  long evaluations() const { return evaluations_; }

 private:
  struct CountsHash {
    size_t operator()(const std::vector<int>& v) const;
  };
  const PlacementProblem& problem_;
  std::vector<std::string> types_;
  std::vector<int> usable_;
  std::vector<std::vector<bool>> allowed_;
  std::vector<int> model_index_;                  // job -> distinct model
  std::vector<std::string> model_names_;
  std::vector<std::vector<int>> measured_max_;    // (distinct model, type) -> most GPUs measured
  std::vector<std::unordered_map<std::vector<int>, double, CountsHash>> cache_;
  // The same values keyed by the counts packed into 64 bits (when they fit): the hot path.
  std::vector<std::unordered_map<uint64_t, double>> packed_cache_;
  int pack_bits_ = 0;  // bits per type in a packed key; 0: never packed
  // Single-type speeds per (model, type), indexed by GPU count; < 0: not asked yet.
  std::vector<std::vector<std::vector<double>>> single_cache_;
  std::vector<ThroughputModel::MixedPart> parts_;  // scratch of speed()
  long evaluations_ = 0;
};

// The cluster as the placement sees it: the nodes with usable GPUs grouped by type (indexed like
// PlacementSpeeds::types()), their links, and what running jobs hold now.
struct PlacementTopology {
  struct TNode {
    std::string name;
    int cluster_index = 0;  // in PlacementProblem::cluster.nodes
    int type = 0;
    int cap = 0;  // usable GPUs
    double intra = 0, inter = 0;
  };
  std::vector<TNode> nodes;
  std::vector<std::vector<int>> nodes_of_type;
  std::vector<int> cap_of_type;
  std::vector<int> max_node_of_type;           // largest node of each type (at least 1)
  std::vector<double> min_intra, min_inter;    // per type
  // Per job: the (node, GPUs) it holds now, their total and per-type counts; empty when it is
  // not running or its GPUs are no longer all available to it (it must move).
  std::vector<std::vector<std::pair<int, int>>> current;
  std::vector<int> current_total;
  std::vector<std::vector<int>> current_types;
  // Per job: seconds per iteration of its fairness floor, PlacementJob::fair_gpus of its fastest
  // allowed type on their fewest nodes (infinity: no floor, no charge, or no type holds it).
  // Worked out once here: the node phase values every job's package on every trial.
  std::vector<double> fair_t_iter;

  // `speeds` memoises the fairness floors' speeds.
  PlacementTopology(const PlacementProblem& problem, PlacementSpeeds& speeds);
  // Fewest nodes that can hold n GPUs for job j.
  int min_nodes(int j, int n) const;
  // Fewest nodes of type t that can hold n of its GPUs (the largest first).
  int fewest_nodes(int t, int n) const;
  // Their sum over the types of per-type counts (each type on its fewest nodes).
  int type_level_nodes(const std::vector<int>& counts) const;
  // Link ratio (min intra / min inter) of the nodes of the types with counts > 0.
  double link_ratio(const std::vector<int>& counts) const;

 private:
  std::vector<int> job_class_;                // job -> index of its allowed-type set
  std::vector<std::vector<int>> caps_desc_;  // per class: allowed nodes' caps, largest first
  std::vector<std::vector<int>> cap_sums_;   // per type: running sums of its caps, largest first
};

// The locality model (see placement.cpp): seconds per iteration of job j on per-type counts
// spread over `nodes` nodes whose links have the ratio intra / inter `link_ratio`. Infinity if
// the job cannot run on them.
double placement_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                                const std::vector<int>& counts, int nodes, double link_ratio);
// placement_iteration_time() in two steps, for callers that try one count vector on several
// numbers of nodes: what does not depend on the nodes (the speed as profiled, its compute part,
// the fewest nodes that could hold the job, the servers of the measurement), then the time.
struct PlacementRing {
  bool runs = false;  // false: the job cannot run on these counts (the time is infinite)
  double t_iter = 0, t_compute = 0;
  int min_nodes = 1, measured_nodes = 1;
};
PlacementRing placement_ring(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                             const std::vector<int>& counts);
double placement_ring_time(const PlacementRing& ring, int nodes, double link_ratio);

// Seconds per iteration of job j on per-type counts, each type on its fewest nodes
// (PlacementTopology::fewest_nodes()) plus `more_nodes`: the same for every job of j's model
// and allowed types.
double placement_type_level_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo,
                                           int j, const std::vector<int>& counts, int more_nodes);

// Finish time of job j on per-type counts with the locality it cannot avoid (each type on its
// fewest nodes, PlacementTopology::fewest_nodes()), plus the restart cost when a running job's
// per-type counts change: what the type-level stages value a count vector at; never above what
// any packing onto nodes gives. Infinity if the job cannot run on them.
double placement_type_level_finish(const PlacementProblem& problem, PlacementSpeeds& speeds,
                                   const PlacementTopology& topo, int j,
                                   const std::vector<int>& counts);

// Job j on explicit (node index, GPUs) pairs of the topology: GPUs by node and type, speed with
// locality (the link ratio of the nodes used), and the finish time, plus the restart cost unless
// a running job keeps exactly the GPUs it holds.
JobPlacement placement_on_nodes(const PlacementProblem& problem, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package);

// The finish time of placement_on_nodes() alone (0 for an empty package).
double placement_package_finish(const PlacementProblem& problem, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package);

// Sizes of every job (placement_sizes()).
std::vector<std::vector<int>> placement_all_sizes(const PlacementProblem& problem,
                                                  const PlacementSpeeds& speeds);

// Every split of n GPUs over `types` (indices into c, ascending) within room[t] per type: calls
// visit(c) with c[t] set for the listed types (the other entries of c untouched, left as they
// were). Lexicographic order, the first type's count growing slowest.
template <typename F>
void for_each_split(const std::vector<int>& types, int n, const std::vector<int>& room,
                    std::vector<int>& c, F&& visit, size_t i = 0) {
  int t = types[i];
  if (i + 1 == types.size()) {
    if (n <= room[t]) {
      c[t] = n;
      visit(c);
      c[t] = 0;
    }
    return;
  }
  for (int x = 0; x <= std::min(n, room[t]); ++x) {
    c[t] = x;
    for_each_split(types, n - x, room, c, visit, i + 1);
  }
  c[t] = 0;
}

// Job j's n GPUs filled from its fastest single-GPU types down (`types`: allowed ones, any order)
// within room[t] per type: c gets the counts (one per type). Returns how many types it used, 0
// when the n GPUs do not fit.
int placement_fastest_fill(PlacementSpeeds& speeds, int j, const std::vector<int>& types, int n,
                           const std::vector<int>& room, std::vector<int>& c);

// Number of ways to split n GPUs over k types (stops counting past `cap`).
long placement_compositions(int n, int k, long cap);

// Whether a category (GPUs per job, 0 = waits) can be matched at all: each job's count within
// what its allowed types hold (one type when it may not mix), and Hall's condition over sets of
// types on the GPUs the category gives the jobs of each allowed-type set ("need", indexed by the
// set as a bit mask): necessary, and sufficient for jobs that may mix. With more than 12 types
// only the total is checked (need has one entry).
class CategoryFit {
 public:
  CategoryFit(const PlacementProblem& problem, const PlacementSpeeds& speeds,
              const PlacementTopology& topo);
  bool job_fits(int j, int n) const;
  std::vector<long> need_of(const std::vector<int>& counts) const;
  // Job j's count goes from `from` to `to`.
  void change(std::vector<long>& need, int j, int from, int to) const {
    need[mask_[j]] += to - from;
  }
  bool holds(const std::vector<long>& need) const { return holds(need, cap_); }
  // The same against other per-type capacities.
  bool holds(const std::vector<long>& need, const std::vector<int>& cap) const;
  bool fits(const std::vector<int>& counts) const;
  // Hall's condition kept per set of types, updated one job at a time (what a dive does): for
  // each set, the GPUs the jobs allowed only types of that set need (`within`, from need_of());
  // holds_within() is then one comparison per set.
  std::vector<long> within_of(const std::vector<long>& need) const;
  void change_within(std::vector<long>& within, int j, int from, int to) const;
  bool holds_within(const std::vector<long>& within, const std::vector<int>& cap) const;
  // fits() for `counts` (whose need is `need`) with (job, new count) changes applied.
  bool fits_changes(const std::vector<long>& need, const std::vector<int>& counts,
                    const std::vector<std::pair<int, int>>& changes) const;
  unsigned mask(int j) const { return mask_[j]; }

 private:
  const PlacementProblem& p_;
  int T_;
  bool by_sets_;
  std::vector<int> cap_;
  std::vector<unsigned> mask_;       // per job: allowed types as bits (0 without sets)
  std::vector<int> single_cap_, mixed_cap_;  // per job: most GPUs of one allowed type / of all
};

// What both schemes start from: the speeds, each job's sizes, the topology, the seed category
// (`seed_counts`, or the doubling seed when it is empty; checked) and Hall's condition. Throws
// InputError for a bad problem, seed category or K (`samples`).
struct PlacementSetup {
  PlacementSetup(const PlacementProblem& problem, const std::vector<int>& seed_counts, int samples);
  PlacementSpeeds speeds;
  std::vector<std::vector<int>> sizes;
  PlacementTopology topo;
  std::vector<int> counts;
  CategoryFit fit;
};

// A category that a simple doubling pass on the pooled cluster gives (placement_seed_counts()),
// on the speeds, topology and sizes the caller made already.
std::vector<int> placement_doubling_seed(const PlacementProblem& problem, PlacementSpeeds& speeds,
                                         const PlacementTopology& topo,
                                         const std::vector<std::vector<int>>& sizes);

// Each job's per-type counts (counts[j][t]; empty or all 0: it waits) onto the topology's nodes,
// with the free-GPU allocator's rule (ringsched/free_gpus.h) inside each type: running jobs that
// keep their per-type counts stay on the nodes they hold; then by demand, largest first, and
// among equal demands by spread_loss[j] (what job j loses when spread; may be empty), largest
// first. Fills package[j] with (topology node, GPUs); false if the GPUs do not fit the nodes.
class NodePacker {
 public:
  NodePacker(const PlacementProblem& problem, const PlacementTopology& topo);
  bool pack(const std::vector<std::vector<int>>& counts, const std::vector<double>& spread_loss,
            std::vector<std::vector<std::pair<int, int>>>& package) const;

 private:
  const PlacementProblem& p_;
  const PlacementTopology& topo_;
  FreeGpus free_;                             // the cluster before anything is packed
  std::vector<int> topo_node_;                // cluster node -> topology node (-1: none)
};

// The rows of a result from each job's (node, GPUs) package; objective_s their sum.
void fill_placement_result(const PlacementProblem& problem, PlacementSpeeds& speeds,
                           const PlacementTopology& topo,
                           const std::vector<std::vector<std::pair<int, int>>>& package,
                           PlacementResult& out);

// Throws InputError unless `counts` has one entry per job, each 0 or within the job's range.
void check_placement_counts(const PlacementProblem& problem, const std::vector<int>& counts,
                            const char* what);
// "placement job J (model)", for error messages.
std::string placement_job_name(const PlacementProblem& problem, int j);
double placement_elapsed_ms(std::chrono::steady_clock::time_point t0);

}  // namespace ringsched
