// Heterogeneity-aware multi-job placement (DESIGN 3.3; Liu, Wang, Huang, Pan, IEEE TPDS 35(6)
// 2024): proportional workload split inside a job, categories (worker counts per job), an
// ascending-price matching market that assigns concrete GPUs to jobs for a category, and
// sampling of categories. Plus exact MIP optima (GLPK) used to measure the gap.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/throughput.h"

namespace ringsched {

struct PlacementJob {
  std::string model;
  double remaining = 0;                    // iterations
  int min_gpus = 1;
  int max_gpus = 1;
  std::vector<std::string> allowed_types;  // empty: any
  bool allow_mixed = true;                 // may mix GPU types (proportional split)
  bool running = false;
  std::map<std::string, int> current;      // node -> GPUs it holds now (running jobs)
};

struct PlacementProblem {
  std::vector<PlacementJob> jobs;
  Cluster cluster;                 // Node::usable() GPUs are available
  const ThroughputModel* model = nullptr;
  ResizeCosts costs;
  bool power_of_two = true;        // job totals must be powers of two
};

struct JobPlacement {
  std::map<std::string, int> gpus_by_node;
  std::map<std::string, int> gpus_by_type;
  int total = 0;
  double iters_per_s = 0;
  double finish_s = 0;  // remaining / speed (+ restart cost when a running job moves)
};

struct PlacementResult {
  std::vector<JobPlacement> jobs;  // per job of the problem; total 0 = waits
  double objective_s = 0;          // sum of finish_s over jobs that run
  int categories_evaluated = 0;
  double solve_ms = 0;
  // Package valuations done (a job's finish time on a per-type count vector, priced or not):
  // the unit of work that placement_work_budget() bounds.
  long work = 0;
  // Markets that reached their bid cap and ended with the greedy / flow fallback.
  int auction_fallbacks = 0;
};

// The whole scheme: the market on `seed_counts` (per job, 0 = none; e.g. the doubling result),
// up to K sampled category changes evaluated incrementally, a local improvement, node packing.
// Deterministic for the same seed; its work stays within placement_work_budget().
PlacementResult place_hetero(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed);

// The market for one category: counts[j] GPUs for job j, matched to concrete GPUs.
PlacementResult market_match(const PlacementProblem& problem, const std::vector<int>& counts);

// Exact optima by MIP (GLPK) for small instances (tens of GPUs, a few types, few jobs): every job
// runs; minimise the sum of finish times. Aggregated by GPU type, without locality: over the
// per-type count vectors of each job (what placement_objective_without_locality() measures).
PlacementResult optimal_placement_mip(const PlacementProblem& problem, double time_limit_s = 60);
// Node-level, with locality: GPUs per job and node, the finish time of the per-type counts on the
// nodes they span (the locality model of place_hetero; objective_s is comparable with its own).
PlacementResult optimal_placement_node_mip(const PlacementProblem& problem,
                                           double time_limit_s = 60);

}  // namespace ringsched
