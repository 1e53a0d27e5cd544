// SPDX-License-Identifier: GPL-2.0-or-later
// Heterogeneity-aware multi-job placement (DESIGN 3.3): which GPUs each job runs on, its batch
// split over GPU types in proportion to their speeds. place_hetero, the product: a type-level
// search (GPU counts per type per job: prices per type, local search, branch and bound) and then
// the nodes. place_market: the seed paper's scheme (Liu, Wang, Huang, Pan, IEEE TPDS 35(6) 2024;
// categories, an ascending-price matching market, sampling), kept as a measured option. Plus
// the exact MIP optima (GLPK) that measure the gap.
#pragma once

#include <map>
#include <memory>
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
  // A fairness floor (0: none): on nodes where it runs slower than this many GPUs of its fastest
  // allowed type on their fewest nodes, its finish time is charged PlacementProblem::fair_weight
  // times the time it loses there.
  int fair_gpus = 0;
};

struct PlacementProblem {
  std::vector<PlacementJob> jobs;
  Cluster cluster;                 // Node::usable() GPUs are available
  const ThroughputModel* model = nullptr;
  ResizeCosts costs;
  bool power_of_two = true;        // job totals must be powers of two
  double fair_weight = 0;          // see PlacementJob::fair_gpus
};

struct JobPlacement {
  std::map<std::string, int> gpus_by_node;
  std::map<std::string, int> gpus_by_type;
  int total = 0;
  double iters_per_s = 0;
  // remaining / speed (+ restart cost when a running job moves, + the charge of a fairness floor,
  // PlacementJob::fair_gpus)
  double finish_s = 0;
};

struct PlacementResult {
  std::vector<JobPlacement> jobs;  // per job of the problem; total 0 = waits
  double objective_s = 0;          // sum of finish_s over jobs that run
  // place_hetero: complete assignments built; the market: categories matched; a MIP: columns.
  int categories_evaluated = 0;
  double solve_ms = 0;
  // The unit of work that placement_work_budget() (place_hetero: columns valued or visited) and
  // placement_market_work_budget() (the market: package valuations) bound.
  long work = 0;
  // Markets that reached their bid cap and ended with the greedy / flow fallback.
  int auction_fallbacks = 0;
  // A proven lower bound on the optimum of the problem the solver solves (-infinity: none
  // known). The MIPs: GLPK's best bound. place_hetero: its bound on the type-level optimum
  // (each type on its fewest nodes; a lower bound on the node-level one too), known when it
  // considered every count vector of every job (not when it thinned them to its budget).
  double bound_s = 0;
  // Whether the result is proven optimal for that problem (a MIP that finished in time).
  bool optimal = false;
};

// The product. The jobs of `seed_counts` (per job, 0 = waits; e.g. the doubling result; empty:
// placement_seed_counts()) run, at any of their sizes (the seed count guides which sizes are
// considered when the budget is short): GPU counts per type by a type-level search (columns,
// prices per type, local search, branch and bound), then packed onto nodes and repaired where
// the packing spreads a job. Jobs whose smallest sizes the cluster's types cannot hold wait, the
// last ones first. Deterministic (`seed` is not used); its work stays within
// placement_work_budget(), which K (`samples`) raises. See ringsched-policies(7).
PlacementResult place_hetero(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed);

// The seed paper's scheme, kept as a measured option: the market on `seed_counts`, up to K
// sampled category changes evaluated incrementally, a local improvement, node packing.
// Deterministic for the same seed; its work stays within placement_market_work_budget().
PlacementResult place_market(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed);

// The market for one category: counts[j] GPUs for job j, matched to concrete GPUs.
PlacementResult market_match(const PlacementProblem& problem, const std::vector<int>& counts);

// Exact optima by MIP (GLPK): every job runs; minimise the sum of finish times. Each stops at
// its time limit with the best solution found (objective_s infinite and every job waiting when
// there is none), reports GLPK's best bound in bound_s and whether it proved optimality.
// Aggregated by GPU type, over the per-type count vectors of each job: without locality (what
// placement_objective_without_locality() measures; exact with uniform links), or with the
// locality each type's fewest nodes cannot avoid (a lower bound on the node-level optimum).
enum class TypeLevelCosts { WithoutLocality, UnavoidableLocality };
PlacementResult optimal_placement_mip(const PlacementProblem& problem, double time_limit_s = 60,
                                      TypeLevelCosts costs = TypeLevelCosts::WithoutLocality);
// Node-level, with locality: GPUs per job and node, the finish time of the per-type counts on the
// nodes they span (the locality model of place_hetero; objective_s is comparable with its own).
PlacementResult optimal_placement_node_mip(const PlacementProblem& problem,
                                           double time_limit_s = 60);

// Upper bound on PlacementResult::work for place_hetero on `jobs` jobs, `types` GPU types and K =
// `samples`: linear in the jobs and K, whatever the cluster size.
long placement_work_budget(int jobs, int types, int samples);
// The same for place_market and market_match, when its seed category (after the Hall's-condition
// shrinking) is matched by its first market. (A seed that must shrink after a failed market adds
// one market's fallback, (2 types + 5) x jobs, per retry; that takes jobs that may not mix types.)
long placement_market_work_budget(int jobs, int types, int samples);

// A category (GPUs per job, 0 = waits) that a simple doubling pass on the pooled cluster gives:
// every job at its smallest size while GPUs last, then the job that gains the most time per added
// GPU doubles while it can. place_hetero and place_market use it when called with an empty seed.
std::vector<int> placement_seed_counts(const PlacementProblem& problem);

// Sum of finish times of the jobs that run, from their per-type counts only: no locality, and a
// running job pays the restart cost when its per-type counts differ from those it holds now. This
// is the MIP's objective; optimal_placement_mip's objective_s equals it on its own result.
double placement_objective_without_locality(const PlacementProblem& problem,
                                            const PlacementResult& result);

// The locality model above (what place_hetero, the market and the node-level MIP charge), for
// GPUs that anyone picked: ringsim's engine charges every policy's allocations through it, so
// that a policy that spreads a ring over nodes is not credited a speed it would not get. Jobs
// are named by their index in the list given; the fewest nodes that could hold a job are those
// of the whole cluster (Node::free_gpus is ignored).
class PlacementLocality {
 public:
  struct Job {
    std::string model;
    std::vector<std::string> allowed_types;  // empty: any
  };
  // Throws InputError as place_hetero does for a job no allowed type of the cluster can run.
  PlacementLocality(const Cluster& cluster, const ThroughputModel& model, const std::vector<Job>& jobs);
  ~PlacementLocality();
  PlacementLocality(const PlacementLocality&) = delete;
  PlacementLocality& operator=(const PlacementLocality&) = delete;
  // Job `job`'s speed on `gpus_by_node` (proportional batch split) with the locality of those
  // nodes, over its speed on the same GPUs per type without it: 1 inside one node or with equal
  // links, below 1 for a ring measured inside one server and spread over nodes, or spread over
  // more nodes than both the fewest that hold it and those of its measurement. 0 if the job
  // cannot run there. Throws InputError for an unknown job or node.
  double factor(int job, const std::map<std::string, int>& gpus_by_node);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace ringsched
