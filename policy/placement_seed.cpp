// SPDX-License-Identifier: GPL-2.0-or-later
// The built-in seed category (placement_seed_counts()): a simple doubling pass on the pooled
// cluster. place_market starts from it when called with an empty seed; place_hetero takes from
// it which jobs run.
#include <algorithm>
#include <queue>

#include "placement_internal.h"

namespace ringsched {

std::vector<int> placement_doubling_seed(const PlacementProblem& p, PlacementSpeeds& speeds,
                                         const PlacementTopology& topo,
                                         const std::vector<std::vector<int>>& sizes) {
  int J = static_cast<int>(p.jobs.size());
  int T = speeds.num_types();
  // Pooled speed estimate: the fastest single allowed type with room for n, else the mix that
  // fills the fastest types first.
  auto speed = [&](int j, int n) {
    double best = 0;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t) && speeds.usable()[t] >= n)
        best = std::max(best, speeds.single(j, t, n));
    if (best > 0 || !p.jobs[j].allow_mixed) return best;
    std::vector<int> allowed, c;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t)) allowed.push_back(t);
    bool fits = placement_fastest_fill(speeds, j, allowed, n, speeds.usable(), c) > 0;
    return fits ? speeds.speed(j, c) : 0.0;
  };
  // The pool is shared, but a category must also respect the types each job may use (Hall's
  // condition, checked incrementally). Counts only grow, so a job that cannot grow now never can.
  CategoryFit fit(p, speeds, topo);
  std::vector<int> counts(J, 0);
  std::vector<int> level(J, -1);
  std::vector<long> need = fit.need_of(counts);
  long pool = p.cluster.usable_gpus();
  for (int j = 0; j < J; ++j) {
    if (sizes[j].empty() || sizes[j][0] > pool || speed(j, sizes[j][0]) <= 0) continue;
    if (!fit.fits_changes(need, counts, {{j, sizes[j][0]}})) continue;
    fit.change(need, j, 0, sizes[j][0]);
    counts[j] = sizes[j][0];
    level[j] = 0;
    pool -= counts[j];
  }
  // Then the job that gains the most time per added GPU doubles, while one can.
  std::priority_queue<std::pair<double, int>> gains;  // (gain, -job): ties to the first job
  auto push_gain = [&](int j) {
    if (level[j] < 0 || level[j] + 1 >= static_cast<int>(sizes[j].size())) return;
    int next = sizes[j][level[j] + 1];
    double v0 = speed(j, counts[j]), v1 = speed(j, next);
    if (v1 <= 0) return;
    double gain = (p.jobs[j].remaining / v0 - p.jobs[j].remaining / v1) / (next - counts[j]);
    if (gain > 0) gains.push({gain, -j});
  };
  for (int j = 0; j < J; ++j) push_gain(j);
  while (!gains.empty()) {
    int j = -gains.top().second;
    gains.pop();
    int next = sizes[j][level[j] + 1];
    if (next - counts[j] > pool || !fit.fits_changes(need, counts, {{j, next}})) continue;
    fit.change(need, j, counts[j], next);
    pool -= next - counts[j];
    counts[j] = next;
    ++level[j];
    push_gain(j);
  }
  return counts;
}

namespace {

// The problem, once K is known to be valid (checked before anything else, as it is cheap).
const PlacementProblem& with_samples(const PlacementProblem& p, int samples) {
  if (samples < 1) throw InputError("placement: samples (K) must be at least 1");
  return p;
}

// The seed category given, or the doubling seed when none is; checked.
std::vector<int> seed_category(const PlacementProblem& p, PlacementSpeeds& speeds,
                               const PlacementTopology& topo,
                               const std::vector<std::vector<int>>& sizes,
                               const std::vector<int>& given) {
  std::vector<int> counts = given.empty() && !p.jobs.empty()
                                ? placement_doubling_seed(p, speeds, topo, sizes)
                                : given;
  check_placement_counts(p, counts, "the seed category");
  return counts;
}

}  // namespace

PlacementSetup::PlacementSetup(const PlacementProblem& p, const std::vector<int>& seed_counts,
                               int samples)
    : speeds(with_samples(p, samples)),
      sizes(placement_all_sizes(p, speeds)),
      topo(p, speeds),
      counts(seed_category(p, speeds, topo, sizes, seed_counts)),
      fit(p, speeds, topo) {}

std::vector<int> placement_seed_counts(const PlacementProblem& p) {
  PlacementSpeeds speeds(p);
  PlacementTopology topo(p, speeds);
  return placement_doubling_seed(p, speeds, topo, placement_all_sizes(p, speeds));
}

}  // namespace ringsched
