// SPDX-License-Identifier: GPL-2.0-or-later
// The multiple-choice knapsack of the doubling round: the exact static optimum (optimal_static)
// and step 2 of a round where its table is small enough to be faster than the greedy doubling
// with our local improvement (DoublingSteps::exact_allocation; crossover measured by
// bench/eval_doubling and bench/bench_planner, see ringsched-policies(7)).
#include "doubling_round.h"

#include <algorithm>
#include <cstdint>

namespace ringsched {
namespace doubling_internal {

double knapsack_cells(const std::vector<std::vector<std::pair<int, double>>>& items, int capacity) {
  double options = 0;
  for (const auto& item : items) options += static_cast<double>(item.size());
  return options * (static_cast<double>(capacity) + 1);
}

// best[g]: least value of the items so far with weights summing to exactly g.
std::vector<int> choose_options(const std::vector<std::vector<std::pair<int, double>>>& items,
                                int capacity) {
  size_t n = items.size();
  if (capacity < 0) return {};
  std::vector<double> best(capacity + 1, kInf), next(capacity + 1);
  best[0] = 0;
  // pick[j][g]: the option item j takes when the first j+1 items weigh g (-1: unreachable).
  std::vector<std::vector<int8_t>> pick(n, std::vector<int8_t>(capacity + 1, -1));
  for (size_t j = 0; j < n; ++j) {
    std::fill(next.begin(), next.end(), kInf);
    for (size_t k = 0; k < items[j].size() && k < 127; ++k) {
      auto [w, value] = items[j][k];
      if (w < 0 || w > capacity || value == kInf) continue;
      int8_t* pj = pick[j].data();
      for (int g = w; g <= capacity; ++g) {
        double v = best[g - w] + value;
        if (v < next[g]) {
          next[g] = v;
          pj[g] = static_cast<int8_t>(k);
        }
      }
    }
    best.swap(next);
  }
  int g = static_cast<int>(std::min_element(best.begin(), best.end()) - best.begin());
  if (best[g] == kInf) return {};
  std::vector<int> choice(n);
  for (size_t j = n; j-- > 0;) {
    choice[j] = pick[j][g];
    g -= items[j][choice[j]].first;
  }
  return choice;
}

// The greedy's cost grows with the options it scans (a heap of doublings, then improvement scans
// of options x log(options) each, a few of them per round); the knapsack's with its cells. Per
// option the greedy spends about what the knapsack spends on kCellsPerOption cells (measured in
// eval_doubling and bench_planner: ringsched-policies(7) gives the crossover).
constexpr double kCellsPerOption = 128;
constexpr double kCellsAlways = 4096;  // tables this small always pay

bool DoublingRound::allocate_exactly(Assignment& a, const std::vector<char>& pinned) const {
  std::vector<int> jobs;
  std::vector<std::vector<std::pair<int, double>>> items;
  long reach = 0;
  double options = 0;
  for (size_t j = 0; j < curves_.size(); ++j) {
    int base = a.gpus[j];
    if (base <= 0 || !may_resize(j, pinned)) continue;
    std::vector<std::pair<int, double>> item;
    for (int s : curves_.choices(j)) {
      if (s < base || s - base > a.free || curves_.speed(j, s) <= 0) continue;
      item.emplace_back(s - base, cost(j, s));
    }
    if (item.size() <= 1) continue;  // nothing to decide
    reach += item.back().first;
    options += static_cast<double>(item.size());
    jobs.push_back(static_cast<int>(j));
    items.push_back(std::move(item));
  }
  if (items.empty()) return true;
  int capacity = static_cast<int>(std::min<long>(a.free, reach));
  double cells = knapsack_cells(items, capacity);
  if (steps_.exact_max_cells >= 0 ? cells > steps_.exact_max_cells
                                   : cells > kCellsAlways &&
                                         cells > kCellsPerOption * options * (1 + std::log2(1 + options)))
    return false;
  std::vector<int> choice = choose_options(items, capacity);
  if (choice.empty()) return false;  // cannot happen: every item's first option weighs 0
  for (size_t k = 0; k < jobs.size(); ++k) {
    int extra = items[k][choice[k]].first;
    a.gpus[jobs[k]] += extra;
    a.free -= extra;
  }
  return true;
}

}  // namespace doubling_internal

// Restart costs are not part of the static problem: every job's sizes weigh what they add to its
// smallest size that runs, within the GPUs left after all the smallest sizes.
DoublingResult optimal_static(const std::vector<DoublingJob>& jobs, int total_gpus) {
  using namespace doubling_internal;
  JobCurves curves(jobs, total_gpus);
  size_t n = curves.size();
  std::vector<std::vector<std::pair<int, double>>> items(n);
  std::vector<int> smallest(n);
  long need = 0;
  for (size_t j = 0; j < n; ++j) {
    for (int s : curves.choices(j))
      if (s <= total_gpus && curves.speed(j, s) > 0) {
        if (items[j].empty()) smallest[j] = s;
        items[j].emplace_back(s - smallest[j], curves.run_time(j, s));
      }
    if (items[j].empty())
      throw InputError(job_name(j) + ": cannot run on any allowed size within " +
                       std::to_string(total_gpus) + " GPUs (no size with a known speed fits)");
    need += smallest[j];
  }
  if (need > total_gpus)
    throw InputError("doubling: the jobs' minimum sizes need " + std::to_string(need) +
                     " GPUs, only " + std::to_string(total_gpus) + " available");
  long reach = 0;
  for (const auto& item : items) reach += item.back().first;
  std::vector<int> choice =
      choose_options(items, static_cast<int>(std::min<long>(total_gpus - need, reach)));
  DoublingResult r;
  r.gpus.assign(n, 0);
  r.reasons.resize(n);
  for (size_t j = 0; j < n; ++j) {
    int s = smallest[j] + items[j][choice[j]].first;
    r.gpus[j] = s;
    r.objective_s += items[j][choice[j]].second;
    r.reasons[j] = "runs at " + std::to_string(s) + " GPUs in the exact optimum";
  }
  return r;
}

}  // namespace ringsched
