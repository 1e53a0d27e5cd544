// SPDX-License-Identifier: GPL-2.0-or-later
// Prices per GPU type for the type-level search (placement_search.h), and the dive that turns
// prices into an assignment.
//
// With a price p_t per GPU of type t, each job alone takes the column that minimises its finish
// time plus the price of its GPUs (columns are sorted by finish time, so a scan stops at the
// first whose finish time alone reaches the best so far), and L(p) = sum over jobs of that minimum - sum_t p_t cap_t is
// a lower bound on the type-level optimum (Lagrangian relaxation of the per-type capacities; its
// maximum is the LP relaxation's value). price() raises the prices of over-asked types and lowers
// those of idle ones (projected subgradient steps, Polyak's step length towards the incumbent,
// halved when the bound stops rising): the prices at the best bound say which jobs should have
// the contested types. At most one job per type is torn between columns at the LP optimum, so
// when many jobs share few types the prices nearly decide the assignment (Gavel's allocation of
// GPU types by throughput is this LP without the integrality).
#include <algorithm>
#include <cmath>

#include "placement_search.h"

namespace ringsched {
namespace {

constexpr int kPriceRounds = 80;       // subgradient steps at most
constexpr int kStallRounds = 4;        // the step halves after this many without a better bound
constexpr double kMinStep = 1e-4;      // stop once the step factor falls below this

}  // namespace

// Jobs by regret, largest first: what a job loses at the current prices if it cannot have the
// types of its cheapest column (its cheapest column on another set of types).
std::vector<int> TypeLevelSearch::regret_order() const {
  size_t n = jobs_.size();
  std::vector<double> regret(n, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const Columns& cols = columns_[i];
    double best = INFINITY, other = INFINITY;
    unsigned best_set = 0;
    for (int k = 0; k < cols.size(); ++k) {
      unsigned set = cols.kept->sets[k];
      double r = reduced(static_cast<int>(i), k);
      if (r < best) {
        if (set != best_set) other = std::min(other, best);
        best = r;
        best_set = set;
      } else if (set != best_set) {
        other = std::min(other, r);
      }
    }
    regret[i] = std::isfinite(other) ? other - best : 1e300;
  }
  std::vector<int> order(n);
  for (size_t i = 0; i < n; ++i) order[i] = static_cast<int>(i);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return regret[a] > regret[b]; });
  return order;
}

void TypeLevelSearch::set_incumbent(const std::vector<int>& pick) {
  ++assignments_;
  double sum = 0;
  std::vector<int> free = topo_.cap_of_type;
  for (size_t i = 0; i < pick.size(); ++i) {
    sum += columns_[i].finish[pick[i]];
    const int* c = columns_[i].at(pick[i], T_);
    for (int t = 0; t < T_; ++t) free[t] -= c[t];
  }
  if (sum >= best_) return;
  best_ = sum;
  incumbent_ = pick;
  free_ = free;
}

bool TypeLevelSearch::dive() {
  size_t n = jobs_.size();
  std::vector<int> order = regret_order();
  // What the jobs after each one need at least (their smallest sizes), for Hall's condition.
  std::vector<int> counts(p_.jobs.size(), 0);
  for (int j : jobs_) counts[j] = sizes_[j].front();
  std::vector<long> need = fit_.within_of(fit_.need_of(counts));
  std::vector<int> room = topo_.cap_of_type, pick(n, -1);
  std::vector<int> after(T_);
  for (int i : order) {
    int j = jobs_[i];
    fit_.change_within(need, j, counts[j], 0);
    const Columns& cols = columns_[i];
    std::vector<char> tried(cols.size(), 0);
    for (;;) {
      int best = -1;
      double best_r = INFINITY;
      for (int k = 0; k < cols.size(); ++k) {
        ++work_;
        if (cols.finish[k] >= best_r) break;  // by finish time: the rest cost at least that
        if (tried[k] || !fits(cols.at(k, T_), room)) continue;
        double r = reduced(i, k);
        if (r < best_r) best_r = r, best = k;
      }
      if (best < 0) return false;
      const int* c = cols.at(best, T_);
      for (int t = 0; t < T_; ++t) after[t] = room[t] - c[t];
      if (fit_.holds_within(need, after)) {
        pick[i] = best;
        room = after;
        break;
      }
      tried[best] = 1;
    }
  }
  set_incumbent(pick);
  return true;
}

void TypeLevelSearch::price() {
  size_t n = jobs_.size();
  std::vector<int> pick(n);
  std::vector<double> demand(T_), g(T_), best_price = price_;
  double step = 1.0;
  int stall = 0;
  for (int round = 0; round < kPriceRounds && !out_of_work() && step >= kMinStep; ++round) {
    // Best responses at the current prices, and the bound they give.
    double L = 0;
    std::fill(demand.begin(), demand.end(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      const Columns& cols = columns_[i];
      double best = INFINITY;
      for (int k = 0; k < cols.size(); ++k) {
        ++work_;
        if (cols.finish[k] >= best) break;  // by finish time: the rest cost at least that
        double r = reduced(static_cast<int>(i), k);
        if (r < best) best = r, pick[i] = k;
      }
      L += best;
      const int* c = cols.at(pick[i], T_);
      for (int t = 0; t < T_; ++t) demand[t] += c[t];
    }
    for (int t = 0; t < T_; ++t) L -= price_[t] * topo_.cap_of_type[t];
    if (!std::isfinite(bound_) || L > bound_ + 1e-12 * std::fabs(bound_)) {
      bound_ = L;
      best_price = price_;
      stall = 0;
    } else if (++stall >= kStallRounds) {
      step /= 2;
      stall = 0;
    }
    // The step: projected subgradient (over-asked types get dearer, idle ones cheaper, not
    // below 0), Polyak's length towards the incumbent.
    double norm = 0;
    bool feasible = true;
    for (int t = 0; t < T_; ++t) {
      g[t] = demand[t] - topo_.cap_of_type[t];
      feasible = feasible && g[t] <= 0;
      if (price_[t] <= 0 && g[t] < 0) g[t] = 0;
      norm += g[t] * g[t];
    }
    if (feasible) {
      // The best responses fit: an assignment; with no price on idle GPUs it is optimal.
      set_incumbent(pick);
      if (norm == 0) {
        proven_ = true;
        bound_ = std::max(bound_, best_);
        break;
      }
    }
    if (norm == 0 || !std::isfinite(best_)) break;
    double length = step * std::max(best_ - L, 1e-9 * std::fabs(best_)) / norm;
    for (int t = 0; t < T_; ++t) price_[t] = std::max(0.0, price_[t] + length * g[t]);
  }
  price_ = best_price;
  if (bound_ >= best_ * (1 - kTypeLevelTolerance)) proven_ = true;
}

}  // namespace ringsched
