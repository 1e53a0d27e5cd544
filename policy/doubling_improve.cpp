// SPDX-License-Identifier: GPL-2.0-or-later
// Ours, after step 2 of the doubling round: best-improvement local search (see doubling_round.h).
#include "doubling_round.h"

#include <algorithm>

namespace ringsched {
namespace doubling_internal {

// Ours: best-improvement local search while the objective falls. A move changes one job to
// any of its sizes within the free GPUs, or shrinks one job to let another grow. Jumping
// several doublings at once gets past dips in a speed curve (a measured 2-GPU point slower
// than 1 GPU), where the greedy's one-step look-ahead stops.
void DoublingRound::improve_locally(Assignment& a, const std::vector<char>& pinned) const {
  size_t n = curves_.size();
  std::vector<std::vector<int>> sizes(n);
  double scale = 0;
  for (size_t j = 0; j < n; ++j) {
    if (a.gpus[j] <= 0) continue;
    scale += cost(j, a.gpus[j]);
    if (!may_resize(j, pinned)) continue;
    for (int s : curves_.choices(j))
      if (s >= a.low[j] && curves_.speed(j, s) > 0) sizes[j].push_back(s);
  }
  const double eps = 1e-9 * std::max(1.0, scale);
  struct Change {
    double delta;  // change of the objective
    int job, size;
    int release;   // GPUs it frees (> 0: a shrink)
  };
  // Each move strictly lowers the objective over a finite set of plans; the cap is a guard.
  // The work budget (moves looked at plus knapsack cells) grows with the number of jobs, so
  // that a round of thousands of jobs stops improving after a bounded time instead of applying
  // one best move per full scan for as long as moves help; small rounds never reach it.
  double budget = kImproveWorkBase + kImproveWorkPerJob * static_cast<double>(n);
  size_t options = 0;
  for (const auto& s : sizes) options += s.size();
  // Per-scan tables, kept across scans so that a scan allocates nothing per job.
  std::vector<Change> shrinks, grows;
  std::vector<std::vector<const Change*>> options_of(n);
  std::vector<std::vector<int>> grows_of(n);  // indices into grows, per growing job
  std::vector<long> need_of(n, 0);            // most GPUs a grow of the job needs freed
  std::vector<int> donors;                    // jobs with a shrink, in job order
  std::vector<int> growers;                   // jobs with a grow, in job order
  std::vector<char> growers_mark(n, 0);
  struct Step {
    int from = -1;
    const Change* change = nullptr;
  };
  std::vector<double> knapsack_least, knapsack_next;  // many-donor tables, kept across scans
  std::vector<Step> knapsack_steps;
  std::vector<int> knapsack_arg;
  for (int iter = 0; iter < 100000; ++iter) {
    // One scan costs about options * log(options) (the sort of the shrinks).
    double scan = static_cast<double>(options) * (1 + std::log2(1.0 + options));
    if (scan > budget) break;
    budget -= scan;
    Change best_single{-eps, -1, 0, 0};
    shrinks.clear();
    grows.clear();
    for (size_t j = 0; j < n; ++j) {
      int g = a.gpus[j];
      for (int s : sizes[j]) {
        if (s == g) continue;
        Change c{cost(j, s) - cost(j, g), static_cast<int>(j), s, g - s};
        if (s - g <= a.free && c.delta < best_single.delta) best_single = c;
        if (s < g) shrinks.push_back(c);
        else if (s - g > a.free) grows.push_back(c);
      }
    }
    // Pair moves: the best shrink that frees enough for each grow. Shrinks sorted by GPUs freed,
    // most first; prefix holds the best two of different jobs among those freeing at least that.
    std::sort(shrinks.begin(), shrinks.end(),
              [](const Change& x, const Change& y) { return x.release > y.release; });
    std::vector<std::pair<int, int>> prefix(shrinks.size(), {-1, -1});  // indices into shrinks
    int b1 = -1, b2 = -1;
    for (size_t k = 0; k < shrinks.size(); ++k) {
      const Change& c = shrinks[k];
      if (b1 < 0 || c.delta < shrinks[b1].delta) {
        if (b1 >= 0 && shrinks[b1].job != c.job) b2 = b1;
        b1 = static_cast<int>(k);
      } else if (c.job != shrinks[b1].job && (b2 < 0 || c.delta < shrinks[b2].delta)) {
        b2 = static_cast<int>(k);
      }
      prefix[k] = {b1, b2};
    }
    double best_pair = best_single.delta;
    int pair_shrink = -1, pair_grow = -1;
    for (size_t k = 0; k < grows.size(); ++k) {
      const Change& g = grows[k];
      int need = -g.release - a.free;  // GPUs some other job must give up
      // Last shrink freeing at least `need` (shrinks are sorted by release, descending).
      auto end = std::partition_point(shrinks.begin(), shrinks.end(),
                                      [need](const Change& c) { return c.release >= need; });
      if (end == shrinks.begin()) continue;
      auto [x, y] = prefix[(end - shrinks.begin()) - 1];
      int donor = shrinks[x].job != g.job ? x : y;
      if (donor < 0) continue;
      double d = g.delta + shrinks[donor].delta;
      if (d < best_pair) {
        best_pair = d;
        pair_shrink = donor;
        pair_grow = static_cast<int>(k);
      }
    }
    // Many-donor moves: one job grows with GPUs from several shrinks, the donors chosen exactly
    // (least total loss freeing enough GPUs; a small knapsack per growing job). Skipped when the
    // table would be too large (thousands of jobs and GPUs), leaving the pair moves.
    for (int d : donors) options_of[d].clear();
    donors.clear();
    for (const Change& c : shrinks) {
      if (options_of[c.job].empty()) donors.push_back(c.job);
      options_of[c.job].push_back(&c);
    }
    std::sort(donors.begin(), donors.end());
    growers.clear();
    for (const Change& g : grows) {
      if (growers_mark[g.job]) continue;
      growers_mark[g.job] = 1;
      grows_of[g.job].clear();
      need_of[g.job] = 0;
      growers.push_back(g.job);
    }
    std::sort(growers.begin(), growers.end());
    for (int j : growers) growers_mark[j] = 0;
    for (size_t k = 0; k < grows.size(); ++k) {
      const Change& g = grows[k];
      grows_of[g.job].push_back(static_cast<int>(k));
      need_of[g.job] = std::max<long>(need_of[g.job], -g.release - a.free);
    }
    std::vector<std::pair<int, int>> many_moves;  // (job, size) of each donor of the best move
    int many_grow = -1;
    double work_left = 2e7;  // knapsack cells per round of moves, so large rounds stay fast
    for (int grower : growers) {
      size_t j = static_cast<size_t>(grower);
      long need_max = need_of[j];
      if (need_max <= 0) continue;
      double work = static_cast<double>(shrinks.size() + donors.size()) * (need_max + 1);
      if (work > work_left || work > budget) continue;
      work_left -= work;
      budget -= work;
      int cap_n = static_cast<int>(need_max);
      const size_t width = static_cast<size_t>(cap_n) + 1;
      // least[x]: least loss freeing x GPUs (x = cap_n: at least cap_n), over the donors so far.
      // The tables live across scans (knapsack_*): a large round fills millions of cells per
      // scan, and fresh allocations of that size cost more in page faults than the fill.
      std::vector<double>& least = knapsack_least;
      std::vector<double>& next = knapsack_next;
      least.assign(width, kInf);
      least[0] = 0;
      // steps[t * width + x]: how the t-th donor considered reached state x
      std::vector<Step>& steps = knapsack_steps;
      steps.clear();
      size_t considered = 0;
      for (int d : donors) {
        if (d == static_cast<int>(j)) continue;
        next = least;
        steps.resize((considered + 1) * width, Step{});
        Step* step = steps.data() + considered * width;
        ++considered;
        for (const Change* c : options_of[d])
          for (int x = 0; x <= cap_n; ++x) {
            if (least[x] == kInf) continue;
            int y = static_cast<int>(std::min<long>(cap_n, static_cast<long>(x) + c->release));
            double v = least[x] + c->delta;
            if (v < next[y]) {
              next[y] = v;
              step[y] = {x, c};
            }
          }
        least.swap(next);
      }
      // at_least[x]: least loss freeing x or more, and the state that achieves it.
      std::vector<int>& arg = knapsack_arg;
      arg.resize(width);
      for (int x = cap_n, b = cap_n; x >= 0; --x) {
        if (least[x] < least[b]) b = x;
        arg[x] = b;
      }
      for (int k : grows_of[j]) {
        const Change& g = grows[k];
        int need = -g.release - a.free;
        int state = arg[need];
        if (least[state] == kInf) continue;
        double d = g.delta + least[state];
        if (d < best_pair) {
          best_pair = d;
          many_grow = k;
          many_moves.clear();
          for (size_t t = considered; t-- > 0;) {
            const Step& st = steps[t * width + state];
            if (st.change == nullptr) continue;  // this donor job gave nothing at this state
            many_moves.emplace_back(st.change->job, st.change->size);
            state = st.from;
          }
        }
      }
    }
    if (many_grow >= 0) {
      const Change& g = grows[many_grow];
      for (auto [job, size] : many_moves) {
        a.free += a.gpus[job] - size;
        a.gpus[job] = size;
      }
      a.free -= g.size - a.gpus[g.job];
      a.gpus[g.job] = g.size;
    } else if (pair_grow >= 0) {
      const Change& s = shrinks[pair_shrink];
      const Change& g = grows[pair_grow];
      a.free += a.gpus[s.job] - s.size;
      a.gpus[s.job] = s.size;
      a.free -= g.size - a.gpus[g.job];
      a.gpus[g.job] = g.size;
    } else if (best_single.job >= 0) {
      a.free -= best_single.size - a.gpus[best_single.job];
      a.gpus[best_single.job] = best_single.size;
    } else {
      break;
    }
  }
}


}  // namespace doubling_internal
}  // namespace ringsched
