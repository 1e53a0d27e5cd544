// SPDX-License-Identifier: GPL-2.0-or-later
// The market's local improvement (step 3 of place_market, see placement_market.cpp), repeated
// while it helps: one job's best size and mix in what is free plus what it holds; then, on small
// problems (<= 24 jobs, <= 4096 count vectors of the cluster), exact group moves: the best joint
// choice of every pair of jobs in what is free plus what they hold, then (<= 8 jobs) of every
// three, then (<= 6 jobs) of every four. Each job's (size, mix) columns are valued once, sorted
// by finish time and tabled: for every count vector of the cluster, its best column within it. A
// group search tries the columns of all but the last job fastest first, looks the last one up,
// and stops a branch once even the best columns in the whole pool cannot beat the group's best.
#include <algorithm>
#include <cmath>

#include "placement_market.h"

namespace ringsched {
namespace {

constexpr int kPairJobs = 24;   // exact pair moves with at most this many jobs,
constexpr int kTripleJobs = 8;  // triples with at most this many,
constexpr int kQuadJobs = 6;    // groups of four with at most this many

bool clearly_better(double candidate, double now) {
  return candidate < now - 1e-9 * std::max(1.0, std::fabs(now));
}

// Largest group of exact moves among `jobs` jobs.
size_t max_group(int jobs) {
  return jobs <= kQuadJobs ? 4 : jobs <= kTripleJobs ? 3 : 2;
}

}  // namespace

// Local improvement (step 3 at the top of this file), within the work budget: one job's best
// choice, then (exact moves) the best joint choice of groups of two, three, ... jobs, while it
// helps.
void Market::improve() {
  std::vector<int> jobs, group;
  for (int round = 0; round < 50 && !out_of_work(); ++round) {
    jobs.clear();
    for (int j = 0; j < J_; ++j)
      if (state_.assigned[j]) jobs.push_back(j);
    bool better = false;
    for (int j : jobs)
      if (!out_of_work()) better = improve_one(j) || better;
    for (size_t size = 2; !better && exact_moves() && size <= jobs.size() &&
                          size <= max_group(static_cast<int>(jobs.size()));
         ++size) {
      // Every subset of `size` jobs, in lexicographic order.
      std::vector<size_t> at(size);
      for (size_t i = 0; i < size; ++i) at[i] = i;
      for (;;) {
        group.clear();
        for (size_t i : at) group.push_back(jobs[i]);
        better = improve_group(group) || better;
        size_t i = size;
        while (i > 0 && at[i - 1] == jobs.size() - size + i - 1) --i;
        if (i == 0) break;
        ++at[i - 1];
        for (size_t k = i; k < size; ++k) at[k] = at[k - 1] + 1;
      }
    }
    if (!better) break;
  }
}

// Every (size, mix) job j may take inside `pool` GPUs per type, with its finish time. Mixes
// are enumerated when they are few, else only single types and the fastest-first fill.
void Market::value_columns(int j, const std::vector<int>& pool, Columns& out) {
  out.counts.clear();
  out.finish.clear();
  out.index.clear();
  const std::vector<int>& types = types_[j];
  auto add = [&](const std::vector<int>& c) {
    out.counts.insert(out.counts.end(), c.begin(), c.end());
    out.finish.push_back(finish_time(j, c));
    if (!stride_.empty()) out.index.push_back(index_of(c.data()));
  };
  std::vector<int> c(T_, 0);
  for (int n : sizes_[j]) {
    bool mixes = p_.jobs[j].allow_mixed && types.size() > 1;
    long mixes_of_n = placement_compositions(n, static_cast<int>(types.size()), kMarketLocalMixes);
    if (mixes && mixes_of_n <= kMarketLocalMixes) {
      c.assign(T_, 0);
      for_each_split(types, n, pool, c, add);
      continue;
    }
    for (int t : types)
      if (pool[t] >= n) {
        c.assign(T_, 0);
        c[t] = n;
        add(c);
      }
    if (mixes && placement_fastest_fill(speeds_, j, types, n, pool, c) > 1) add(c);
  }
}

// Exact moves (the best choice for one job, or the best joint choice for a group of two to four
// jobs, in what is free plus what they hold) on small problems: few jobs and few count vectors
// of the cluster. Each job's columns within the cluster are valued once, sorted by finish time,
// and tabled: for every count vector r of the cluster, the best column within r (a running
// minimum along each type).
bool Market::exact_moves() const { return !stride_.empty() && J_ <= kPairJobs; }

long Market::index_of(const int* c) const {
  long i = 0;
  for (int t = 0; t < T_; ++t) i += c[t] * stride_[t];
  return i;
}

const Market::JobTable& Market::table(int j) {
  JobTable& tb = tables_[j];
  if (!tb.best_within.empty()) return tb;
  Columns all;
  value_columns(j, topo_.cap_of_type, all);
  std::vector<int> order(all.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = static_cast<int>(k);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return all.finish[a] < all.finish[b]; });
  for (int k : order) {
    if (!std::isfinite(all.finish[k])) break;
    const int* c = all.at(k, T_);
    tb.columns.counts.insert(tb.columns.counts.end(), c, c + T_);
    tb.columns.finish.push_back(all.finish[k]);
    tb.columns.index.push_back(all.index[k]);
  }
  tb.best_within.assign(states_, {INFINITY, -1});
  for (size_t k = tb.columns.size(); k-- > 0;)  // the first (fastest) of equal ones wins
    tb.best_within[tb.columns.index[k]] = {tb.columns.finish[k], static_cast<int>(k)};
  for (int t = 0; t < T_; ++t)
    for (long i = 0; i < states_; ++i)
      if ((i / stride_[t]) % (topo_.cap_of_type[t] + 1) > 0 &&
          tb.best_within[i - stride_[t]].first < tb.best_within[i].first)
        tb.best_within[i] = tb.best_within[i - stride_[t]];
  return tb;
}

// Gives job j column k of `cols` in place of what it holds: lots follow (price 0 for what it
// newly takes; prices no longer matter once the market has ended).
void Market::reassign(int j, const Columns& cols, int k) {
  if (state_.assigned[j]) release(j);
  const int* c = cols.at(k, T_);
  int n = 0;
  for (int t = 0; t < T_; ++t) {
    n += c[t];
    if (c[t] <= 0) continue;
    std::vector<Lot>& lots = state_.lots[t];
    int need = c[t];
    for (size_t i = 0; i < lots.size() && need > 0;) {
      if (lots[i].holder >= 0) {
        ++i;
        continue;
      }
      int x = std::min(need, lots[i].count);
      lots[i].count -= x;
      need -= x;
      if (lots[i].count == 0) lots.erase(lots.begin() + static_cast<long>(i));
      else ++i;
    }
    insert_lot(t, Lot{0.0, j, c[t]});
    hold(j, t) = c[t];
    state_.free[t] -= c[t];
  }
  fit_.change(state_.need, j, state_.counts[j], n);
  state_.counts[j] = n;
  state_.assigned[j] = 1;
  state_.finish[j] = cols.finish[k];
}

bool Market::improve_one(int j) {
  std::vector<int>& pool = pool_;
  for (int t = 0; t < T_; ++t) pool[t] = state_.free[t] + hold(j, t);
  if (exact_moves()) {
    const JobTable& tb = table(j);
    const auto& [f, k] = tb.best_within[index_of(pool.data())];
    if (k < 0 || !clearly_better(f, state_.finish[j])) return false;
    reassign(j, tb.columns, k);
    return true;
  }
  value_columns(j, pool, columns_);
  int best = -1;
  double best_f = state_.finish[j];
  for (size_t k = 0; k < columns_.size(); ++k)
    if (clearly_better(columns_.finish[k], best_f)) {
      best = static_cast<int>(k);
      best_f = columns_.finish[k];
    }
  if (best < 0) return false;
  reassign(j, columns_, best);
  return true;
}

// The best joint columns of a group of jobs in what is free plus what they hold: the last
// job's best column within what the others leave comes from its table; the others' columns
// are tried fastest first and stop once they cannot beat the best found.
bool Market::improve_group(const std::vector<int>& group) {
  Group& g = group_;
  g.jobs = group;
  size_t m = group.size();
  g.rest.assign(m * T_, 0);
  double now = 0;
  for (int t = 0; t < T_; ++t) g.rest[t] = state_.free[t];
  for (int j : group) {
    now += state_.finish[j];
    for (int t = 0; t < T_; ++t) g.rest[t] += hold(j, t);
  }
  long whole = index_of(g.rest.data());
  g.tables.resize(m);
  g.floor_after.assign(m + 1, 0.0);
  for (size_t i = 0; i < m; ++i) g.tables[i] = &table(group[i]);
  for (size_t i = m; i-- > 0;)  // the best each job can do in the whole pool, summed from i on
    g.floor_after[i] = g.floor_after[i + 1] + g.tables[i]->best_within[whole].first;
  if (!clearly_better(g.floor_after[0], now)) return false;
  g.best = now;
  g.pick.assign(m, -1);
  g.chosen.assign(m, -1);
  search_group(0, whole, 0.0);
  if (g.chosen[0] < 0) return false;
  for (int j : group) release(j);
  for (size_t i = 0; i < m; ++i) reassign(group[i], g.tables[i]->columns, g.chosen[i]);
  return true;
}

void Market::search_group(size_t i, long left, double sum) {
  Group& g = group_;
  size_t m = g.jobs.size();
  if (i + 1 == m) {
    const auto& [f, k] = g.tables[i]->best_within[left];
    if (k < 0 || !clearly_better(sum + f, g.best)) return;
    g.best = sum + f;
    g.chosen = g.pick;
    g.chosen[i] = k;
    return;
  }
  const Columns& cols = g.tables[i]->columns;
  const int* room = g.rest.data() + i * T_;
  for (size_t k = 0; k < cols.size(); ++k) {
    double f = sum + cols.finish[k];
    if (!clearly_better(f + g.floor_after[i + 1], g.best)) break;  // sorted: none later does
    const int* c = cols.at(static_cast<int>(k), T_);
    bool fit = true;
    for (int t = 0; t < T_ && fit; ++t) fit = c[t] <= room[t];
    if (!fit) continue;
    for (int t = 0; t < T_; ++t) g.rest[(i + 1) * T_ + t] = room[t] - c[t];
    g.pick[i] = static_cast<int>(k);
    search_group(i + 1, left - cols.index[k], f);
  }
}

}  // namespace ringsched
