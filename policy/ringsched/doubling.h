// Doubling heuristic for elastic ring jobs (DESIGN 3.2; Capes et al., arXiv 1908.08082) and the
// exact dynamic programme for the static one-round problem it approximates.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ringsched/model.h"

namespace ringsched {

// One job as the doubling heuristic sees it: a speed curve on one pool of GPUs.
struct DoublingJob {
  double remaining = 0;        // R_j, iterations
  int min_gpus = 1;            // a power of two for elastic jobs
  int max_gpus = 1;
  bool elastic = true;         // inelastic jobs get exactly `requested`
  int requested = 1;
  bool running = false;        // running jobs pay the restart cost when resized
  int current_gpus = 0;        // size it runs at now (running only)
  double last_resize_s = -1e18;
  std::function<double(int)> speed;  // iterations/s on n GPUs; 0: cannot run on n
};

struct DoublingResult {
  std::vector<int> gpus;             // per job, 0 = waits
  std::vector<std::string> reasons;  // per job, one sentence
  double objective_s = 0;            // sum over jobs that run of R_j / v_j(n_j) (+ C if resized)
};

// Step 1 gives jobs their minimum in `order` (indices into jobs, first = highest priority) while
// GPUs last; step 2 doubles the job with the largest time improvement per added GPU; step 3
// applies hysteresis to running jobs (costs.min_gain_multiple, costs.min_interval_s at now_s).
DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s);

// Exact optimum of the static problem: minimise sum R_j / v_j(n_j) with n_j a power of two in
// [min, max] (exactly `requested` for inelastic jobs) and sum n_j <= total_gpus; every job must
// run. Multiple-choice knapsack by dynamic programming, O(jobs * total_gpus * log(max)).
// Throws InputError if the minimums do not fit.
DoublingResult optimal_static(const std::vector<DoublingJob>& jobs, int total_gpus);

}  // namespace ringsched
