// SPDX-License-Identifier: GPL-2.0-or-later
// Doubling heuristic (DESIGN 3.2; Capes et al., arXiv 1908.08082): the library's entry points.
// How a round works, and which file holds each phase: doubling_round.h.
#include "ringsched/doubling.h"

#include "doubling_round.h"

namespace ringsched {

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s,
                                  const DoublingSteps& steps) {
  return doubling_internal::DoublingRound(jobs, order, total_gpus, costs, now_s, steps).run();
}

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s) {
  return doubling_heuristic(jobs, order, total_gpus, costs, now_s, DoublingSteps{});
}

}  // namespace ringsched
