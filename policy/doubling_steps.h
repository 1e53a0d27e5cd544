// SPDX-License-Identifier: GPL-2.0-or-later
// Which steps the doubling heuristic runs. doubling_heuristic() in ringsched/doubling.h runs all of
// them; this overload lets the evaluation (bench/eval_doubling) and the tests run the paper's
// steps alone and measure what our extensions add. Private to the library, its tests and benches.
#pragma once

#include <vector>

#include "ringsched/doubling.h"

namespace ringsched {

struct DoublingSteps {
  // Ours, beyond Capes et al.: after the greedy doubling, repeatedly apply the best move among
  // "resize one job to any of its sizes within the free GPUs" and "shrink one job so that another
  // can grow" while it lowers the objective. Repairs the greedy's packing misses and its one-step
  // look-ahead, which stops at a dip in a speed curve.
  bool local_improvement = true;
  // Step 3 (hysteresis) needs, for every running job the plan resizes, what the plan would lose
  // if that job were held. Rounds of at most this many jobs find it by re-planning the whole
  // round with the job held, pinning one job per pass (up to n passes of n re-plans); larger
  // rounds repair the plan incrementally from its marginal doublings and pin in sweeps (see
  // doubling_hysteresis.cpp), which keeps a round of thousands of jobs within milliseconds.
  int exact_hysteresis_max_jobs = 16;
  // Ours: step 2 by the exact multiple-choice knapsack over the admitted jobs (their sizes at or
  // above the base admission gave them, within the GPUs left) wherever its table is small enough
  // to be faster than the greedy doubling and the local improvement. Same objective, so the
  // plan is never worse; off: always the greedy.
  bool exact_allocation = true;
  // >= 0: use the knapsack whenever its table has at most this many cells, instead of the
  // built-in rule (eval_doubling --crossover times both sides of it).
  double exact_max_cells = -1;

  // The paper's steps alone: greedy doubling, no local improvement, no exact step 2.
  static DoublingSteps paper() {
    DoublingSteps s;
    s.local_improvement = false;
    s.exact_allocation = false;
    return s;
  }
  // Our heuristic: greedy doubling and the local improvement, never the knapsack.
  static DoublingSteps heuristic() {
    DoublingSteps s;
    s.exact_allocation = false;
    return s;
  }
};

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s,
                                  const DoublingSteps& steps);

}  // namespace ringsched
