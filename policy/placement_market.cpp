// SPDX-License-Identifier: GPL-2.0-or-later
// The seed paper's placement (Liu, Wang, Huang, Pan, IEEE TPDS 35(6) 2024; DESIGN 3.3), kept as
// a measured option (place_market; the product is place_hetero, placement.cpp): categories, the
// ascending-price matching market, the sampling of categories and a local improvement.
//  1. Market on the seed category (GPUs per job, e.g. the doubling result): the auction of
//     placement_auction.cpp.
//  2. Sampling: up to K category changes around the best so far (one job one size up or down,
//     GPUs moved from one job to another, a few jobs at once), each checked against Hall's
//     condition and evaluated incrementally: only the changed jobs give up their packages and
//     bid again at the current prices, with a bid cap proportional to the jobs changed. The
//     state is kept when the sum of finish times falls, else restored. Sampling stops early
//     when 32 draws find no change not yet tried around the best (a small neighbourhood).
//  3. Local improvement on the per-type counts (placement_market_improve.cpp).
//  4. Packing onto nodes (NodePacker: the free-GPU allocator's rule inside each type).
// Every phase counts package valuations and stops at its share of a work budget that is linear
// in the jobs and K and independent of the cluster size (placement_market_work_budget()), so a
// 10,000-GPU, 2,000-job round costs tens of milliseconds. Deterministic for the seed.
#include <algorithm>
#include <chrono>
#include <random>
#include <set>

#include "placement_market.h"

namespace ringsched {

long market_work_for_phases(int jobs, int samples) {
  return kMarketWorkBase + kMarketWorkPerJob * std::max(0, jobs) +
         kMarketWorkPerSample * std::max(0, samples);
}

bool Market::finish_result(PlacementResult& out) {
  std::vector<std::vector<int>> counts(J_);
  for (int j = 0; j < J_; ++j)
    if (state_.assigned[j])
      counts[j].assign(state_.holding.begin() + static_cast<long>(j) * T_,
                       state_.holding.begin() + static_cast<long>(j + 1) * T_);
  std::vector<std::vector<std::pair<int, int>>> package;
  if (!NodePacker(p_, topo_).pack(counts, {}, package)) return false;
  fill_placement_result(p_, speeds_, topo_, package, out);
  return true;
}

long placement_market_work_budget(int jobs, int types, int samples) {
  long J = std::max(0, jobs), T = std::max(0, types);
  // What the phases may start (each stops once it is reached; see Market::allow_phase) ...
  long phases = market_work_for_phases(jobs, samples);
  // ... plus the fallback of a market that reaches its bid cap (two greedy passes of at most
  // T + 2 valuations per job, one valuation per job in the flow) ...
  long fallback = (2 * (T + 2) + 1) * J;
  // ... plus the step under way when a phase reaches its end: one package search (the types,
  // the current mix, the mixes enumerated or searched), the columns of one job, or the tables of
  // a group move (at most four jobs, at most kMarketExactStates columns each).
  static_assert(4 * kMarketExactStates <= 2 * 64 * (kMarketLocalMixes + 1),
                "a group move's tables");
  long step = std::max(T + 2 + std::max(kMarketExhaustiveVectors, 200 * T * T),
                       2 * 64 * (kMarketLocalMixes + T + 1));
  return phases + fallback + step;
}

PlacementResult market_match(const PlacementProblem& problem, const std::vector<int>& counts) {
  auto t0 = std::chrono::steady_clock::now();
  PlacementSpeeds speeds(problem);
  check_placement_counts(problem, counts, "the category");
  int J = static_cast<int>(problem.jobs.size());
  std::vector<std::vector<int>> sizes = placement_all_sizes(problem, speeds);
  PlacementTopology topo(problem, speeds);
  CategoryFit fit(problem, speeds, topo);
  Market market(problem, speeds, topo, fit, sizes, market_work_for_phases(J, 0));
  PlacementResult r;
  if (!market.run(counts) || !market.finish_result(r))
    throw InputError("placement: the category does not fit the cluster's usable GPUs of the "
                     "jobs' allowed types");
  r.categories_evaluated = 1;
  r.work = market.work();
  r.auction_fallbacks = market.fallbacks();
  r.solve_ms = placement_elapsed_ms(t0);
  return r;
}

PlacementResult place_market(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed) {
  auto t0 = std::chrono::steady_clock::now();
  PlacementSetup setup(problem, seed_counts, samples);
  PlacementSpeeds& speeds = setup.speeds;
  const std::vector<std::vector<int>>& sizes = setup.sizes;
  const PlacementTopology& topo = setup.topo;
  std::vector<int>& counts = setup.counts;
  const CategoryFit& fit = setup.fit;
  int J = static_cast<int>(problem.jobs.size());
  Market market(problem, speeds, topo, fit, sizes, market_work_for_phases(J, samples));

  // The seed itself; while it cannot be matched, shrink its largest job one size (else let the
  // last running job wait). Hall's condition is checked first: it costs no market.
  auto shrink_one = [&]() {
    int shrink = -1;
    for (int j = 0; j < J; ++j) {
      if (counts[j] <= 0) continue;
      bool smaller = !sizes[j].empty() && sizes[j].front() < counts[j];
      if (smaller && (shrink < 0 || counts[j] > counts[shrink])) shrink = j;
    }
    if (shrink >= 0) {
      auto it = std::lower_bound(sizes[shrink].begin(), sizes[shrink].end(), counts[shrink]);
      counts[shrink] = *(it - 1);
      return;
    }
    for (int j = J - 1; j >= 0; --j)
      if (counts[j] > 0) {
        counts[j] = 0;
        return;
      }
  };
  int evaluated = 0;
  bool matched = false;
  int running = 0;
  for (int c : counts) running += c > 0 ? 1 : 0;
  // The rest is for the sampling and the improvement.
  market.allow_phase(kMarketWorkPerJob * running + kMarketWorkBase / 4);
  for (;;) {
    bool any = false;
    for (int c : counts) any = any || c > 0;
    if (!any) break;
    if (!fit.fits(counts)) {
      shrink_one();
      continue;
    }
    ++evaluated;
    if (market.run(counts)) {
      matched = true;
      break;
    }
    shrink_one();
  }
  PlacementResult best;
  best.jobs.assign(J, JobPlacement{});
  if (matched) {
    // Sampling around the best category so far: halve or double one job, move GPUs from one
    // job to another (one shrinks, one grows), or change a few jobs at once.
    std::vector<int> movable;
    for (int j = 0; j < J; ++j)
      if (counts[j] > 0 && sizes[j].size() > 1) movable.push_back(j);
    Market::State best_state = market.state();
    double best_obj = market.objective();
    std::set<std::vector<std::pair<int, int>>> visited;  // changes tried from the current best
    std::mt19937 rng(seed);
    market.allow_phase(kMarketWorkPerSample * static_cast<long>(samples));
    auto step = [&](std::vector<std::pair<int, int>>& changes, int j, int dir) {
      int now = market.counts()[j];
      for (const auto& [k, n] : changes)
        if (k == j) now = n;
      auto it = std::lower_bound(sizes[j].begin(), sizes[j].end(), now);
      long i = it - sizes[j].begin();
      if (it == sizes[j].end() || *it != now) i = dir > 0 ? i - 1 : i;  // a size off the list
      long k = i + dir;
      if (k < 0 || k >= static_cast<long>(sizes[j].size())) return false;
      for (auto& [job, n] : changes)
        if (job == j) {
          n = sizes[j][k];
          return true;
        }
      changes.push_back({j, sizes[j][k]});
      return true;
    };
    for (int s = 1; s < samples && !movable.empty() && !market.out_of_work(); ++s) {
      std::vector<std::pair<int, int>> changes;
      bool found = false;
      for (int attempt = 0; attempt < 32 && !found; ++attempt) {
        changes.clear();
        std::uniform_int_distribution<size_t> pick(0, movable.size() - 1);
        double r = std::uniform_real_distribution<double>(0, 1)(rng);
        bool changed = false;
        if (r < 0.35 || movable.size() == 1) {
          changed = step(changes, movable[pick(rng)], rng() % 2 ? 1 : -1);
        } else if (r < 0.7) {
          int a = movable[pick(rng)], b = movable[pick(rng)];
          if (a != b) changed = step(changes, a, -1) && step(changes, b, 1);
        } else {
          int k = 2 + static_cast<int>(rng() % 2);
          for (int i = 0; i < k; ++i)
            changed = step(changes, movable[pick(rng)], rng() % 2 ? 1 : -1) || changed;
        }
        std::sort(changes.begin(), changes.end());
        for (const auto& [j, n] : changes) changed = changed && n != market.counts()[j];
        found = changed && !visited.count(changes) && market.may_fit_changes(changes);
        if (changed) visited.insert(changes);
      }
      if (!found) break;  // 32 draws found nothing new around the best: the neighbourhood is spent
      ++evaluated;
      if (market.rerun(changes)) {
        double obj = market.objective();
        if (obj < best_obj) {
          best_obj = obj;
          best_state = market.state();
          visited.clear();
          continue;
        }
      }
      market.restore(best_state);
    }
    market.allow_phase(std::numeric_limits<long>::max());
    market.improve();
    if (!market.finish_result(best)) best.jobs.assign(J, JobPlacement{});
  }
  best.categories_evaluated = evaluated;
  best.work = market.work();
  best.auction_fallbacks = market.fallbacks();
  best.solve_ms = placement_elapsed_ms(t0);
  return best;
}

}  // namespace ringsched
