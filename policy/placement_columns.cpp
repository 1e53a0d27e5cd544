// SPDX-License-Identifier: GPL-2.0-or-later
// The columns of the type-level search (placement_search.h): every (size, mix) a job may take,
// valued once. All of them when the job's mixes are few (every split of a size over its allowed
// types: what the MIPs enumerate); else every single type, every split between two types and the
// fill of the fastest types first. When the work budget cannot pay for every job's columns, each
// job keeps all of them for its smallest size and those from half to twice its seed count, with
// splits on a coarser grid, and only the single types and the fastest fill for its other sizes.
// Columns that another beats on both counts (no more GPUs of any type) and finish time are
// dropped: no optimum needs them.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "placement_search.h"

namespace ringsched {
namespace {

constexpr long kAllMixes = 200;     // enumerate every split of a size up to this many
constexpr long kPruneColumns = 8000;  // drop dominated columns of jobs with at most this many

}  // namespace

TypeLevelSearch::TypeLevelSearch(const PlacementProblem& p, PlacementSpeeds& speeds,
                                 const PlacementTopology& topo, const CategoryFit& fit,
                                 const std::vector<std::vector<int>>& sizes,
                                 const std::vector<int>& runs, const std::vector<int>& seed,
                                 long budget)
    : p_(p), speeds_(speeds), topo_(topo), fit_(fit), sizes_(sizes), jobs_(runs), seed_(seed),
      T_(speeds.num_types()), budget_(budget) {
  price_.assign(T_, 0.0);
}

void TypeLevelSearch::add_columns(int i, int n, long allowance, Columns& out) {
  int j = jobs_[i];
  std::vector<int> types;
  for (int t = 0; t < T_; ++t)
    if (speeds_.allowed(j, t)) types.push_back(t);
  const std::vector<int>& room = topo_.cap_of_type;
  std::vector<int> c(T_, 0);
  auto add = [&](const std::vector<int>& v) {
    ++work_;
    double f = placement_type_level_finish(p_, speeds_, topo_, j, v);
    if (!std::isfinite(f)) return;
    out.counts.insert(out.counts.end(), v.begin(), v.end());
    out.finish.push_back(f);
  };
  int k = static_cast<int>(types.size());
  if (!p_.jobs[j].allow_mixed || k == 1) {
    for (int t : types)
      if (room[t] >= n) {
        c.assign(T_, 0);
        c[t] = n;
        add(c);
      }
    return;
  }
  long all = std::min(kAllMixes, allowance);
  if (placement_compositions(n, k, all) <= all) {
    for_each_split(types, n, room, c, add);
    return;
  }
  complete_ = false;
  // Singles, splits between two types (every x, or a coarser grid when the job's share of the
  // budget, `allowance` columns for this size, is short), the fill of the fastest types first.
  long pairs = static_cast<long>(k) * (k - 1) / 2;
  long wanted = pairs * (n - 1);
  int step = static_cast<int>(std::max<long>(1, (wanted + allowance - 1) / allowance));
  for (int t : types)
    if (room[t] >= n) {
      c.assign(T_, 0);
      c[t] = n;
      add(c);
    }
  for (size_t a = 0; a < types.size(); ++a)
    for (size_t b = a + 1; b < types.size(); ++b)
      for (int x = step; x < n; x += step) {
        if (x > room[types[a]] || n - x > room[types[b]]) continue;
        c.assign(T_, 0);
        c[types[a]] = x;
        c[types[b]] = n - x;
        add(c);
      }
  if (placement_fastest_fill(speeds_, j, types, n, room, c) > 2) add(c);
}

void TypeLevelSearch::prune_dominated(Columns& cols) const {
  int C = cols.size();
  std::vector<int> order(C);
  for (int k = 0; k < C; ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return cols.finish[a] < cols.finish[b]; });
  Columns kept;
  kept.counts.reserve(cols.counts.size());
  kept.finish.reserve(C);
  // Quick necessary conditions for a kept column d to dominate c: d's types are among c's (as
  // bits; not checked past 64 types) and d has no more GPUs in all.
  std::vector<uint64_t> kept_types;
  std::vector<long> kept_total;
  for (int k : order) {
    const int* c = cols.at(k, T_);
    uint64_t types = 0;
    long total = 0;
    for (int t = 0; t < T_; ++t) {
      if (c[t] > 0 && t < 64) types |= uint64_t{1} << t;
      total += c[t];
    }
    bool dominated = false;
    if (C <= kPruneColumns)
      for (int m = 0; m < kept.size() && !dominated; ++m) {
        if ((kept_types[m] & ~types) != 0 || kept_total[m] > total) continue;
        const int* d = kept.at(m, T_);
        bool within = true;
        for (int t = 0; t < T_ && within; ++t) within = d[t] <= c[t];
        dominated = within;  // kept ones are no slower (sorted), and use no more of any type
      }
    if (dominated) continue;
    kept.counts.insert(kept.counts.end(), c, c + T_);
    kept.finish.push_back(cols.finish[k]);
    kept_types.push_back(types);
    kept_total.push_back(total);
  }
  cols = std::move(kept);
}

bool TypeLevelSearch::make_columns() {
  columns_.assign(jobs_.size(), Columns{});
  // Every size's mixes, unless an eighth of the budget cannot pay for all of them: then those of
  // the smallest size and of the sizes from half to twice the seed count, the other sizes on one
  // type each. (Valuing the columns, two dives and the node phase's look at every column then
  // take about half of the budget.)
  long all = 0;
  for (int j : jobs_)
    for (int n : sizes_[j]) {
      int k = 0;
      for (int t = 0; t < T_; ++t) k += speeds_.allowed(j, t) ? 1 : 0;
      all += p_.jobs[j].allow_mixed ? std::min(kAllMixes, placement_compositions(n, k, kAllMixes))
                                    : k;
    }
  long share = budget_ / 8 / std::max<long>(1, static_cast<long>(jobs_.size()));
  bool windowed = all > budget_ / 8;
  for (size_t i = 0; i < jobs_.size(); ++i) {
    int j = jobs_[i];
    int around = seed_[j] > 0 ? seed_[j] : sizes_[j].front();
    std::vector<int> kept, rest;
    for (int n : sizes_[j])  // the smallest size always: the others may need the room
      (!windowed || n == sizes_[j].front() || (2 * n >= around && n <= 2 * around) ? kept : rest)
          .push_back(n);
    long allowance =
        windowed ? std::max<long>(8, share / static_cast<long>(kept.size())) : kAllMixes;
    for (int n : kept) add_columns(static_cast<int>(i), n, allowance, columns_[i]);
    // The sizes outside the window on one type each and the fastest fill (allowance 1: the
    // coarsest grid of splits): a job the seed made large may do better smaller, on fewer nodes.
    for (int n : rest) add_columns(static_cast<int>(i), n, 1, columns_[i]);
    if (!rest.empty()) complete_ = false;
    prune_dominated(columns_[i]);
    if (columns_[i].size() == 0) return false;
    reserve_ += 2 * columns_[i].size();
  }
  return true;
}

}  // namespace ringsched
