// SPDX-License-Identifier: GPL-2.0-or-later
// The local search and the branch and bound of the type-level search (placement_search.h).
//
// Local search: one job takes its best column within what is free plus what it holds; then every
// pair of jobs takes the best pair of columns within what is free plus what both hold (the
// columns are sorted by finish time, so a scan stops once even the faster of the rest cannot
// beat the pair's best); repeated while it helps. A pair move is what the market's sampling
// lacked: two jobs trading GPU types (a short job on the fast type, a long one on the slow).
//
// Branch and bound: jobs by regret at the final prices, each job's columns by finish plus price.
// At depth i, with `room` GPUs per type left, no completion costs less than
//   partial + sum over the jobs from i on of their cheapest reduced cost - prices . room
// (the Lagrangian bound of the rest, valid for any prices >= 0), so a branch stops as soon as
// that reaches the incumbent (less a tolerance of 0.01%), and a job's columns are tried cheapest
// reduced cost first, stopping at the first one whose bound does. Hall's condition prunes
// branches the rest cannot fit. It runs within the work left; when it ends first, the incumbent
// is within the tolerance of the optimum for the columns.
#include <algorithm>
#include <cmath>

#include "placement_search.h"

namespace ringsched {
namespace {

bool clearly_better(double candidate, double now) {
  return candidate < now - 1e-9 * std::max(1.0, std::fabs(now));
}

}  // namespace

std::vector<int> TypeLevelSearch::counts_of(int j) const {
  for (size_t i = 0; i < jobs_.size(); ++i)
    if (jobs_[i] == j && has_incumbent()) {
      const int* c = columns_[i].at(incumbent_[i], T_);
      return std::vector<int>(c, c + T_);
    }
  return {};
}

double TypeLevelSearch::bound() const {
  if (!complete_) return -std::numeric_limits<double>::infinity();
  return proven_ ? best_ : bound_;
}

void TypeLevelSearch::apply(int i, int k) {
  const int* old = columns_[i].at(incumbent_[i], T_);
  const int* c = columns_[i].at(k, T_);
  for (int t = 0; t < T_; ++t) free_[t] += old[t] - c[t];
  best_ += columns_[i].finish[k] - columns_[i].finish[incumbent_[i]];
  incumbent_[i] = k;
}

bool TypeLevelSearch::improve_one(int i) {
  const Columns& cols = columns_[i];
  const int* now = cols.at(incumbent_[i], T_);
  std::vector<int>& pool = pool_;
  for (int t = 0; t < T_; ++t) pool[t] = free_[t] + now[t];
  for (int k = 0; k < cols.size(); ++k) {  // fastest first: the first that fits is the best
    ++work_;
    if (!clearly_better(cols.finish[k], cols.finish[incumbent_[i]])) return false;
    if (fits(cols.at(k, T_), pool)) {
      apply(i, k);
      return true;
    }
  }
  return false;
}

bool TypeLevelSearch::improve_pair(int a, int b) {
  const Columns& ca = columns_[a];
  const Columns& cb = columns_[b];
  std::vector<int>& pool = pool_;
  std::vector<int>& rest = rest_;
  const int* na = ca.at(incumbent_[a], T_);
  const int* nb = cb.at(incumbent_[b], T_);
  for (int t = 0; t < T_; ++t) pool[t] = free_[t] + na[t] + nb[t];
  double now = ca.finish[incumbent_[a]] + cb.finish[incumbent_[b]];
  double best = now;
  int pick_a = -1, pick_b = -1;
  for (int x = 0; x < ca.size(); ++x) {
    ++work_;
    if (!clearly_better(ca.finish[x] + cb.finish[0], best)) break;
    const int* c = ca.at(x, T_);
    if (!fits(c, pool)) continue;
    for (int t = 0; t < T_; ++t) rest[t] = pool[t] - c[t];
    for (int y = 0; y < cb.size(); ++y) {
      ++work_;
      if (!clearly_better(ca.finish[x] + cb.finish[y], best)) break;
      if (fits(cb.at(y, T_), rest)) {
        best = ca.finish[x] + cb.finish[y];
        pick_a = x;
        pick_b = y;
        break;
      }
    }
    if (out_of_work()) break;
  }
  if (pick_a < 0) return false;
  // Give both back first, then take the new pair (the pool holds both).
  const int* c = ca.at(pick_a, T_);
  const int* d = cb.at(pick_b, T_);
  for (int t = 0; t < T_; ++t) free_[t] = pool[t] - c[t] - d[t];
  best_ += best - now;
  incumbent_[a] = pick_a;
  incumbent_[b] = pick_b;
  return true;
}

void TypeLevelSearch::improve() {
  if (!has_incumbent()) return;
  pool_.resize(T_);
  rest_.resize(T_);
  int n = static_cast<int>(jobs_.size());
  for (int round = 0; round < 100 && !out_of_work(); ++round) {
    bool better = false;
    for (int i = 0; i < n && !out_of_work(); ++i) better = improve_one(i) || better;
    for (int a = 0; a < n && !out_of_work(); ++a)
      for (int b = a + 1; b < n && !out_of_work(); ++b) better = improve_pair(a, b) || better;
    if (!better) break;
  }
}

bool TypeLevelSearch::rest_fits(size_t depth, const std::vector<int>& room) const {
  for (const auto& [set, need] : bb_.need_sets[depth]) {
    long have = 0;
    for (int t = 0; t < T_; ++t)
      if (set & (1u << t)) have += room[t];
    if (need > have) return false;
  }
  return true;
}

void TypeLevelSearch::search(size_t depth, double partial) {
  Node& s = bb_;
  size_t n = s.order.size();
  if (depth == n) {
    if (clearly_better(partial, best_)) set_incumbent(s.pick);
    return;
  }
  int i = s.order[depth];
  const std::vector<int>& room = s.rooms[depth];
  std::vector<int>& after = s.rooms[depth + 1];
  double priced_room = 0;
  for (int t = 0; t < T_; ++t) priced_room += price_[t] * room[t];
  double base = partial + s.floor_after[depth + 1] - priced_room;
  const std::vector<int>& ranked = s.ranked[i];
  const std::vector<double>& cost = s.ranked_cost[i];
  for (size_t r = 0; r < ranked.size(); ++r) {
    if (++work_ >= s.stop) {  // out_of_work()
      s.aborted = true;
      return;
    }
    if (base + cost[r] >= best_ * (1 - kTypeLevelTolerance)) return;  // ranked: none later does
    int k = ranked[r];
    const int* c = columns_[i].at(k, T_);
    if (!fits(c, room)) continue;
    for (int t = 0; t < T_; ++t) after[t] = room[t] - c[t];
    if (depth + 1 < n && !rest_fits(depth + 1, after)) continue;
    s.pick[i] = k;
    search(depth + 1, partial + columns_[i].finish[k]);
    if (s.aborted) return;
  }
}

void TypeLevelSearch::branch_and_bound() {
  if (!has_incumbent() || proven_ || out_of_work()) return;
  size_t n = jobs_.size();
  Node& s = bb_;
  s.order = regret_order();
  s.ranked.assign(n, {});
  s.ranked_cost.assign(n, {});
  std::vector<double> key;
  for (size_t i = 0; i < n; ++i) {
    int C = columns_[i].size();
    std::vector<int>& r = s.ranked[i];
    r.resize(C);
    key.resize(C);
    for (int k = 0; k < C; ++k) {
      r[k] = k;
      key[k] = reduced(static_cast<int>(i), k);
    }
    std::sort(r.begin(), r.end(),  // stable: ties by column
              [&](int a, int b) { return key[a] < key[b] || (key[a] == key[b] && a < b); });
    s.ranked_cost[i].resize(C);
    for (int q = 0; q < C; ++q) s.ranked_cost[i][q] = key[r[q]];
    work_ += C;
  }
  s.floor_after.assign(n + 1, 0.0);
  for (size_t d = n; d-- > 0;)
    s.floor_after[d] = s.floor_after[d + 1] + s.ranked_cost[s.order[d]].front();
  // Hall's condition for the jobs from each depth on, at their smallest sizes: for every set of
  // types S, what the jobs allowed only types of S need at least must fit S's room. Only the sets
  // whose need exceeds that of every set one type smaller are kept: the others follow from them.
  s.need_sets.assign(n + 1, {});
  if (T_ > 1 && T_ <= 12) {
    // The need of the jobs from depth d on, one job added per depth (not summed afresh: that
    // is jobs x depths at thousands of jobs).
    std::vector<long> need = fit_.need_of(std::vector<int>(p_.jobs.size(), 0));
    std::vector<long> within(size_t{1} << T_);
    for (size_t d = n; d-- > 0;) {
      int j = jobs_[s.order[d]];
      fit_.change(need, j, 0, std::max(0, sizes_[j].front()));
      std::fill(within.begin(), within.end(), 0);
      for (unsigned set = 0; set < within.size(); ++set)
        for (unsigned m = set;; m = (m - 1) & set) {  // every subset m of the set
          within[set] += need[m];
          if (m == 0) break;
        }
      for (unsigned set = 1; set < within.size(); ++set) {
        bool binding = within[set] > 0;
        for (int t = 0; t < T_ && binding; ++t)
          if (set & (1u << t)) binding = within[set & ~(1u << t)] < within[set];
        if (binding) s.need_sets[d].push_back({set, within[set]});
      }
    }
  }
  s.rooms.assign(n + 1, std::vector<int>(T_, 0));
  s.rooms[0] = topo_.cap_of_type;
  s.pick.assign(n, -1);
  s.aborted = false;
  s.stop = std::min(limit_, budget_ - reserve_);
  search(0, 0.0);
  if (!s.aborted) {  // no assignment is below best_ by more than the tolerance
    proven_ = true;
    bound_ = std::max(bound_, best_ * (1 - kTypeLevelTolerance));
  }
  // Its rankings (a vector per job) are done with: the node phase's buffers reuse the memory
  // (a pass's first touch of fresh heap pages is a good part of a first pass's cost).
  bb_ = Node{};
}

}  // namespace ringsched
