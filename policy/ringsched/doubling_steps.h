// Which steps the doubling heuristic runs. doubling_heuristic() in doubling.h runs all of them;
// this overload lets the evaluation (bench/eval_doubling) run the paper's steps alone and measure
// what our extension adds.
#pragma once

#include <vector>

#include "ringsched/doubling.h"

namespace ringsched {

struct DoublingSteps {
  // Ours, beyond Capes et al.: after the greedy doubling, repeatedly apply the best move among
  // "double one job with free GPUs", "halve one job" and "halve one job to double another" while
  // it lowers the objective. Repairs the greedy's packing and look-ahead misses.
  bool local_improvement = true;
};

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s,
                                  const DoublingSteps& steps);

}  // namespace ringsched
