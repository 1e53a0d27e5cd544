// SPDX-License-Identifier: GPL-2.0-or-later
// The columns of the type-level search (placement_search.h): every (size, mix) a job may take,
// valued once. All of them when the job's mixes are few (every split of a size over its allowed
// types: what the MIPs enumerate); else every single type, every split between two types and the
// fill of the fastest types first. When the work budget cannot pay for every job's columns, each
// job keeps all of them for its smallest size and those from half to twice its seed count, with
// splits on a coarser grid, and only the single types and the fastest fill for its other sizes.
// Columns that another beats on both counts (no more GPUs of any type) and finish time are
// dropped: no optimum needs them.
// The count vectors and their time per iteration depend only on the job's model, allowed types,
// mixing rule and sizes, so jobs that share those (thousands of jobs of a few tens of models)
// share one valuation (ColumnShape); each job's finish times are its remaining work times
// those, plus its restart cost, and a job whose finish times sort as another's of its shape
// keeps the same columns without pruning afresh. The columns and their order are those a job
// valued alone would get.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "placement_search.h"

namespace ringsched {
namespace {

constexpr long kAllMixes = 200;     // enumerate every split of a size up to this many
constexpr long kPruneColumns = 8000;  // drop dominated columns of jobs with at most this many
constexpr size_t kPruningsTried = 8;  // a shape's last prunings a job may reuse

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

void TypeLevelSearch::add_columns(int i, int n, long allowance, ColumnBlock& out) {
  int j = jobs_[i];
  std::vector<int> types;
  for (int t = 0; t < T_; ++t)
    if (speeds_.allowed(j, t)) types.push_back(t);
  const std::vector<int>& room = topo_.cap_of_type;
  std::vector<int> c(T_, 0);
  auto add = [&](const std::vector<int>& v) {
    out.counts.insert(out.counts.end(), v.begin(), v.end());
    PlacementRing ring = placement_ring(speeds_, topo_, j, v);
    int nodes = topo_.type_level_nodes(v);
    double ratio = topo_.link_ratio(v);
    out.t_iter.push_back(placement_ring_time(ring, nodes, ratio));
    out.t_spread.push_back(placement_ring_time(ring, nodes + 1, ratio));
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
  out.complete = false;
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

int TypeLevelSearch::shape_of(int i, const std::vector<std::pair<int, long>>& calls) {
  int j = jobs_[i];
  std::vector<long> key = {speeds_.model_index(j), p_.jobs[j].allow_mixed ? 1 : 0};
  for (int t = 0; t < T_; ++t) key.push_back(speeds_.allowed(j, t) ? 1 : 0);
  size_t common = key.size();
  for (const auto& [n, allowance] : calls) {
    key.push_back(n);
    key.push_back(allowance);
  }
  auto [it, fresh] = shape_index_.emplace(key, static_cast<int>(shapes_.size()));
  if (!fresh) return it->second;
  ColumnShape s;
  key.resize(common + 2);
  std::vector<int> parts;  // its blocks, in the order of the calls
  size_t columns = 0;
  for (const auto& [n, allowance] : calls) {
    key[common] = n;
    key[common + 1] = allowance;
    auto [b, made] = block_index_.emplace(key, static_cast<int>(blocks_.size()));
    if (made) {
      blocks_.emplace_back();
      add_columns(i, n, allowance, blocks_.back());
    }
    parts.push_back(b->second);
    columns += blocks_[b->second].t_iter.size();
  }
  s.counts.reserve(columns * T_);  // no growth slack: a first pass's memory is fresh pages
  s.t_iter.reserve(columns);
  s.t_spread.reserve(columns);
  for (int b : parts) {
    const ColumnBlock& block = blocks_[b];
    s.counts.insert(s.counts.end(), block.counts.begin(), block.counts.end());
    s.t_iter.insert(s.t_iter.end(), block.t_iter.begin(), block.t_iter.end());
    s.t_spread.insert(s.t_spread.end(), block.t_spread.begin(), block.t_spread.end());
    s.complete = s.complete && block.complete;
  }
  s.made = static_cast<long>(s.t_iter.size());
  shapes_.push_back(std::move(s));
  return it->second;
}

// Job i's columns from its shape: finish times from its remaining work and restart cost, those
// that another beats on both counts (no more GPUs of any type) and finish time dropped, the rest
// sorted by finish time (ties in the order made).
void TypeLevelSearch::columns_from_shape(int i, int shape) {
  ColumnShape& s = shapes_[shape];
  int j = jobs_[i];
  const PlacementJob& job = p_.jobs[j];
  const std::vector<int>& now = topo_.current_types[j];
  int R = static_cast<int>(s.t_iter.size());
  std::vector<double>& f = scratch_finish_;
  std::vector<int>& finite = scratch_finite_;
  f.resize(R);
  finite.clear();
  for (int r = 0; r < R; ++r) {
    const int* c = s.counts.data() + static_cast<size_t>(r) * T_;
    f[r] = job.remaining * s.t_iter[r];
    if (job.running && !std::equal(c, c + T_, now.begin())) f[r] += p_.costs.restart_s;
    if (std::isfinite(f[r])) finite.push_back(r);
  }
  work_ += s.made;
  if (!s.complete) complete_ = false;
  // A pruning of the shape holds for this job if its columns sort the same way, ties alike.
  const Pruning* pruning = nullptr;
  size_t tried = std::min(s.prunings.size(), kPruningsTried);
  for (size_t k = s.prunings.size(); tried-- > 0 && k-- > 0 && !pruning;) {
    const Pruning& was = *s.prunings[k];
    bool same = was.order.size() == finite.size();
    for (size_t q = 0; same && q < was.order.size(); ++q) {
      double a = f[was.order[q]];
      same = std::isfinite(a);
      if (same && q + 1 < was.order.size())
        same = was.tied_next[q] ? a == f[was.order[q + 1]] : a < f[was.order[q + 1]];
    }
    if (same) pruning = &was;
  }
  if (!pruning) {
    auto fresh = std::make_unique<Pruning>();
    Pruning& pr = *fresh;
    int C = static_cast<int>(finite.size());
    pr.order = finite;
    std::sort(pr.order.begin(), pr.order.end(),  // stable: ties in the order made
              [&](int a, int b) { return f[a] < f[b] || (f[a] == f[b] && a < b); });
    pr.tied_next.assign(C, 0);
    for (int q = 0; q + 1 < C; ++q) pr.tied_next[q] = f[pr.order[q]] == f[pr.order[q + 1]];
    // Quick necessary conditions for a kept column d to dominate c: d's types are among c's (as
    // bits; not checked past 64 types) and d has no more GPUs in all.
    std::vector<uint64_t> kept_types;
    std::vector<long> kept_total;
    for (int r : pr.order) {
      const int* c = s.counts.data() + static_cast<size_t>(r) * T_;
      uint64_t types = 0;
      long total = 0;
      for (int t = 0; t < T_; ++t) {
        if (c[t] > 0 && t < 64) types |= uint64_t{1} << t;
        total += c[t];
      }
      bool dominated = false;
      if (C <= kPruneColumns)
        for (size_t m = 0; m < pr.kept.size() && !dominated; ++m) {
          if ((kept_types[m] & ~types) != 0 || kept_total[m] > total) continue;
          const int* d = pr.counts.data() + m * T_;
          bool within = true;
          for (int t = 0; t < T_ && within; ++t) within = d[t] <= c[t];
          dominated = within;  // kept ones are no slower (sorted), and use no more of any type
        }
      if (dominated) continue;
      pr.kept.push_back(r);
      pr.counts.insert(pr.counts.end(), c, c + T_);
      unsigned set = 0;
      for (int t = 0; t < T_; ++t) set |= c[t] > 0 ? 1u << (t % 32) : 0u;
      pr.sets.push_back(set);
      kept_types.push_back(types);
      kept_total.push_back(total);
    }
    pr.kept.shrink_to_fit();  // kept for the whole search: without growth slack
    pr.counts.shrink_to_fit();
    pr.sets.shrink_to_fit();
    s.prunings.push_back(std::move(fresh));
    pruning = s.prunings.back().get();
  }
  Columns& cols = columns_[i];
  cols.shape = shape;
  cols.kept = pruning;
  cols.finish.resize(pruning->kept.size());
  for (size_t k = 0; k < pruning->kept.size(); ++k) cols.finish[k] = f[pruning->kept[k]];
}

double TypeLevelSearch::spread_time(int i, int k) const {
  const Columns& cols = columns_[i];
  return shapes_[cols.shape].t_spread[cols.kept->kept[k]];
}

double TypeLevelSearch::spread_loss(int i, int k) const {
  double spread = p_.jobs[jobs_[i]].remaining * spread_time(i, k);
  return std::isfinite(spread) ? spread - columns_[i].finish[k] : 0.0;
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
    std::vector<std::pair<int, long>> calls;
    for (int n : kept) calls.push_back({n, allowance});
    // The sizes outside the window on one type each and the fastest fill (allowance 1: the
    // coarsest grid of splits): a job the seed made large may do better smaller, on fewer nodes.
    for (int n : rest) calls.push_back({n, 1});
    if (!rest.empty()) complete_ = false;
    columns_from_shape(static_cast<int>(i), shape_of(static_cast<int>(i), calls));
    if (columns_[i].size() == 0) return false;
    reserve_ += 2 * columns_[i].size();
  }
  // The blocks are copied into the shapes, and a pruning's order only serves to reuse it: done
  // with, so the later phases reuse their memory instead of touching fresh heap pages.
  blocks_ = {};
  block_index_.clear();
  for (ColumnShape& s : shapes_)
    for (std::unique_ptr<Pruning>& pr : s.prunings) {
      pr->order = {};
      pr->tied_next = {};
    }
  return true;
}

}  // namespace ringsched
