// Internals of the heterogeneity-aware placement (placement.h) shared by the market, the MIPs,
// the tests and the evaluation program: problem validation, the memoised speed oracle, the sizes
// a job may take, the cluster's nodes as the placement sees them, the locality model, the
// built-in seed category and the objective without locality (what the aggregated MIP optimises).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

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

// Upper bound on PlacementResult::work for place_hetero on `jobs` jobs, `types` GPU types and
// `samples` categories when its seed category (after the Hall's-condition shrinking) is matched
// by its first market: linear in the jobs and the samples, whatever the cluster size. (A seed
// that must shrink after a failed market adds one market's fallback, (2 types + 5) x jobs, per
// retry; that takes jobs that may not mix types.)
long placement_work_budget(int jobs, int types, int samples);

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
  // iterations/s of job j on counts[t] GPUs of each type t; no locality; 0 if it cannot run.
  double speed(int job, const std::vector<int>& counts);
  double single(int job, int type, int n);
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
  std::vector<std::unordered_map<std::vector<int>, double, CountsHash>> cache_;
  // The same values keyed by the counts packed into 64 bits (when they fit): the hot path.
  std::vector<std::unordered_map<uint64_t, double>> packed_cache_;
  int pack_bits_ = 0;  // bits per type in a packed key; 0: never packed
  // Single-type speeds per (model, type), indexed by GPU count; < 0: not asked yet.
  std::vector<std::vector<std::vector<double>>> single_cache_;
  long evaluations_ = 0;
};

// The cluster as the placement sees it: the nodes with usable GPUs grouped by type (indexed like
// PlacementSpeeds::types()), their links, and what running jobs hold now.
struct PlacementTopology {
  struct TNode {
    std::string name;
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

  PlacementTopology(const PlacementProblem& problem, const PlacementSpeeds& speeds);
  // Fewest nodes that can hold n GPUs for job j.
  int min_nodes(int j, int n) const;
  // Link ratio (min intra / min inter) of the nodes of the types with counts > 0.
  double link_ratio(const std::vector<int>& counts) const;

 private:
  std::vector<int> job_class_;                // job -> index of its allowed-type set
  std::vector<std::vector<int>> caps_desc_;  // per class: allowed nodes' caps, largest first
};

// The locality model (see placement.cpp): seconds per iteration of job j on per-type counts
// spread over `nodes` nodes whose links have the ratio intra / inter `link_ratio`. Infinity if
// the job cannot run on them.
double placement_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                                const std::vector<int>& counts, int nodes, double link_ratio);

// Job j on explicit (node index, GPUs) pairs of the topology: GPUs by node and type, speed with
// locality (the link ratio of the nodes used), and the finish time, plus the restart cost unless
// a running job keeps exactly the GPUs it holds.
JobPlacement placement_on_nodes(const PlacementProblem& problem, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package);

// A category (GPUs per job, 0 = waits) that a simple doubling pass on the pooled cluster gives:
// every job at its smallest size while GPUs last, then the job that gains the most time per added
// GPU doubles while it can. place_hetero uses it when called with an empty seed.
std::vector<int> placement_seed_counts(const PlacementProblem& problem);

// Sum of finish times of the jobs that run, from their per-type counts only: no locality, and a
// running job pays the restart cost when its per-type counts differ from those it holds now. This
// is the MIP's objective; optimal_placement_mip's objective_s equals it on its own result.
double placement_objective_without_locality(const PlacementProblem& problem,
                                            const PlacementResult& result);

}  // namespace ringsched
