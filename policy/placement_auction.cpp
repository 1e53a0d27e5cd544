// SPDX-License-Identifier: GPL-2.0-or-later
// The market's auction (see placement_market.cpp for the whole scheme). The market works on GPU
// types, not GPUs: the GPUs of one type are interchangeable for the speed model, so they are
// traded in lots (a count of one type at one price, free or held by one job). A job that lacks
// GPUs bids for the package (a count per type summing to its category size) that maximises value
// minus price, value = -(finish time with the locality the package cannot avoid); GPUs it still
// holds cost it nothing more. It takes the cheapest GPUs of each type; the holders of those that
// were held lose just them and bid again for what they lack. In a contested type, every GPU the
// bidder buys is priced at the dearest one plus a raise: its margin over its second-best package
// plus an increment, epsilon times its finish time, with epsilon doubling every few bids of the
// same job (levelled prices keep the losers from buying the package back piecemeal; the growing
// increment ends price wars in a number of rounds logarithmic in the value range). Mixed-type
// packages are only searched when they can beat the best single-type one: a mix is never faster
// than its fastest type alone, so at no lower price it cannot win. The auction has a bid cap
// linear in the jobs; past it the jobs still lacking GPUs take the best packages among the free
// ones (most constrained first), failing that the same from scratch, failing that an
// augmenting-path flow.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "placement_market.h"

namespace ringsched {
namespace {

constexpr double kBidEpsilon = 1e-3;  // first bid increment, relative to the bidder's finish
constexpr int kEscalateEvery = 4;     // a job's increment doubles every this many of its bids
constexpr long kBidsPerJob = 16, kBidsBase = 64;  // auction bid cap
constexpr long kSampleBidsPerChange = 8, kSampleBidsBase = 16;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

}  // namespace

Market::Market(const PlacementProblem& p, PlacementSpeeds& speeds, const PlacementTopology& topo,
               const CategoryFit& fit, const std::vector<std::vector<int>>& sizes,
               long work_budget)
    : p_(p), speeds_(speeds), topo_(topo), fit_(fit), sizes_(sizes), T_(speeds.num_types()),
      J_(static_cast<int>(p.jobs.size())), budget_(work_budget) {
  types_.assign(J_, {});
  for (int j = 0; j < J_; ++j)
    for (int t = 0; t < T_; ++t)
      if (speeds_.allowed(j, t)) types_[j].push_back(t);
  cost_.assign(T_, {});
  avail_.assign(T_, 0);
  pool_.assign(T_, 0);
  states_ = 1;
  for (int t = 0; t < T_ && states_ <= kMarketExactStates; ++t) {
    stride_.push_back(states_);
    states_ *= topo_.cap_of_type[t] + 1;
  }
  if (states_ > kMarketExactStates) stride_.clear();
  tables_.resize(J_);
  finish_memo_.resize(J_);
}

// The market from scratch on `counts`; false if the category cannot be matched.
bool Market::run(const std::vector<int>& counts) {
  if (!fit_.fits(counts)) return false;
  reset(counts);
  std::vector<int> order;
  for (int j = 0; j < J_; ++j)
    if (counts[j] > 0) order.push_back(j);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return counts[a] > counts[b]; });
  std::deque<int> queue(order.begin(), order.end());
  long cap = kBidsPerJob * static_cast<long>(order.size()) + kBidsBase;
  if (auction(queue, cap)) return true;
  // Bid cap (or work budget) reached: the jobs still without GPUs take their best packages
  // among the free ones, most constrained first; failing that, the same from scratch; failing
  // that, any feasible per-type assignment.
  ++fallbacks_;
  auto kinds = [&](int j) {
    return p_.jobs[j].allow_mixed ? static_cast<int>(types_[j].size()) : 0;
  };
  auto constrained_first = [&](std::vector<int>& jobs) {
    std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) {
      return kinds(a) != kinds(b) ? kinds(a) < kinds(b) : counts[a] > counts[b];
    });
  };
  auto greedy = [&](std::vector<int> jobs) {
    constrained_first(jobs);
    for (int j : jobs) {
      Bid bid;
      if (!best_package(j, /*free_only=*/true, bid)) return false;
      std::deque<int> none;
      take(j, bid, none, /*free_only=*/true);
    }
    return true;
  };
  std::vector<int> waiting;
  for (int j : order)
    if (!state_.assigned[j]) waiting.push_back(j);
  if (greedy(waiting)) return true;
  reset(counts);
  if (greedy(order)) return true;
  constrained_first(order);
  return feasible_flow(order);
}

// Incremental evaluation of a category change: the jobs in `changes` (job, new count) give up
// their packages and bid again at the current prices. False if the auction does not settle
// within its bid cap; the state is then partial and must be restored by the caller.
bool Market::rerun(const std::vector<std::pair<int, int>>& changes) {
  std::deque<int> queue;
  for (const auto& [j, n] : changes) {
    if (state_.assigned[j]) release(j);
    fit_.change(state_.need, j, state_.counts[j], n);
    state_.counts[j] = n;
    if (n > 0) queue.push_back(j);
  }
  return auction(queue, kSampleBidsPerChange * static_cast<long>(changes.size()) + kSampleBidsBase);
}

// Sum of the market's finish times (per-type counts, unavoidable locality) of the jobs that run.
double Market::objective() const {
  double s = 0;
  for (int j = 0; j < J_; ++j)
    if (state_.assigned[j]) s += state_.finish[j];
  return s;
}

void Market::reset(const std::vector<int>& counts) {
  state_.lots.assign(T_, {});
  for (int t = 0; t < T_; ++t)
    if (topo_.cap_of_type[t] > 0) state_.lots[t].push_back(Lot{0.0, -1, topo_.cap_of_type[t]});
  state_.holding.assign(static_cast<size_t>(J_) * T_, 0);
  state_.free = topo_.cap_of_type;
  state_.need = fit_.need_of(counts);
  state_.finish.assign(J_, 0.0);
  state_.assigned.assign(J_, 0);
  state_.counts = counts;
  state_.job_bids.assign(J_, 0);
}

bool Market::auction(std::deque<int>& queue, long bid_cap) {
  long bids = 0;
  while (!queue.empty()) {
    int j = queue.front();
    queue.pop_front();
    if (state_.assigned[j]) continue;
    if (bids++ >= bid_cap || out_of_work()) return false;
    ++state_.job_bids[j];
    Bid bid;
    if (!best_package(j, /*free_only=*/false, bid)) return false;
    take(j, bid, queue);
  }
  return true;
}

// Finish time of job j on per-type counts c with the locality it cannot avoid (each type on
// its fewest nodes), plus the restart cost when a running job's per-type counts change. One
// unit of work. Memoised by count vector on problems with exact moves (the auction asks for
// the same vectors again and again).
double Market::finish_time(int j, const std::vector<int>& c) {
  ++work_;
  double* memo = nullptr;
  if (exact_moves()) {
    std::vector<double>& row = finish_memo_[j];
    if (row.empty()) row.assign(states_, NAN);
    memo = &row[index_of(c.data())];
    if (!std::isnan(*memo)) return *memo;
  }
  double f = placement_type_level_finish(p_, speeds_, topo_, j, c);
  if (memo) *memo = f;
  return f;
}

// The job's best package at current prices, and the utility of its second best.
bool Market::best_package(int j, bool free_only, Bid& bid) {
  const PlacementJob& job = p_.jobs[j];
  int n = state_.counts[j];
  const std::vector<int>& types = types_[j];
  // Per allowed type: the price of its cheapest k GPUs (lots are kept in buying order); GPUs
  // the job still holds (it lost some of its package) cost it nothing more.
  for (int t : types) {
    std::vector<double>& cost = cost_[t];
    cost.assign(1, 0.0);
    for (int k = 0; k < hold(j, t) && static_cast<int>(cost.size()) <= n; ++k) cost.push_back(0.0);
    for (const Lot& l : state_.lots[t]) {
      if (static_cast<int>(cost.size()) > n) break;
      if (l.holder == j || (free_only && l.holder >= 0)) continue;
      for (int k = 0; k < l.count && static_cast<int>(cost.size()) <= n; ++k)
        cost.push_back(cost.back() + l.price);
    }
    avail_[t] = static_cast<int>(cost.size()) - 1;
  }
  double best_u = kNegInf, second_u = kNegInf, best_finish = 0;
  std::vector<int> best_c;
  auto consider = [&](const std::vector<int>& c) -> double {
    double finish = finish_time(j, c);
    double price = 0;
    for (int t : types) price += cost_[t][c[t]];
    double u = std::isfinite(finish) ? -finish - price : kNegInf;
    if (u > best_u) {
      second_u = best_u;
      best_u = u;
      best_c = c;
      best_finish = finish;
    } else if (u > second_u) {
      second_u = u;
    }
    return u;
  };
  std::vector<int> c(T_, 0);
  // Fastest single type regardless of room or price: an upper bound on any mix's value.
  double single_best = kNegInf;
  for (int t : types) {
    c.assign(T_, 0);
    c[t] = n;
    double v = speeds_.speed(j, c);
    if (v > 0) single_best = std::max(single_best, -job.remaining / v);
    if (avail_[t] >= n) consider(c);
  }
  const std::vector<int>& now = topo_.current_types[j];
  bool current_is_single = std::count_if(now.begin(), now.end(), [](int x) { return x > 0; }) <= 1;
  if (job.running && topo_.current_total[j] == n && !current_is_single) {
    bool fits = true;
    for (int t = 0; t < T_; ++t) fits = fits && now[t] <= (speeds_.allowed(j, t) ? avail_[t] : 0);
    if (fits) consider(now);
  }
  if (job.allow_mixed && types.size() > 1 && free_only) {
    // The fallback's pass: the fastest single-GPU types first, no search (bounded work).
    if (placement_fastest_fill(speeds_, j, types, n, avail_, c) > 1 && c != now) consider(c);
  } else if (job.allow_mixed && types.size() > 1) {
    // A mix is never faster than its fastest type alone (proportional split: compute time at
    // least that of n GPUs of the fastest, communication at least its ring's), and it pays at
    // least the n cheapest GPUs of the allowed types.
    std::vector<size_t> at(T_, 0);
    double cheapest = 0;
    for (int k = 0; k < n; ++k) {
      double m = INFINITY;
      int pick = -1;
      for (int t : types)
        if (static_cast<int>(at[t]) < avail_[t]) {
          double d = cost_[t][at[t] + 1] - cost_[t][at[t]];
          if (d < m) m = d, pick = t;
        }
      if (pick < 0) break;
      ++at[pick];
      cheapest += m;
    }
    double restart = job.running ? p_.costs.restart_s : 0.0;
    double bound = single_best - restart - cheapest;
    if (bound > best_u + 1e-12 * std::fabs(best_u) || best_c.empty()) {
      int k = static_cast<int>(types.size());
      if (placement_compositions(n, k, kMarketExhaustiveVectors) <= kMarketExhaustiveVectors) {
        c.assign(T_, 0);
        for_each_split(types, n, avail_, c, [&](const std::vector<int>& m) {
          int kinds = 0;
          for (int t : types) kinds += m[t] > 0 ? 1 : 0;
          if (kinds > 1 && m != now) consider(m);  // singles and the current mix done above
        });
      } else {
        local_search(j, types, n, best_c, best_u, consider);
      }
    }
  }
  if (best_c.empty() || best_u == kNegInf) return false;
  bid.counts = best_c;
  bid.utility = best_u;
  bid.second = second_u;
  bid.finish = best_finish;
  return true;
}

// Pattern search over mixes: move s GPUs from one type to another while it helps, s halving.
// `start` is the best single-type mix (empty when no single type can hold the job).
template <typename F>
void Market::local_search(int j, const std::vector<int>& types, int n, std::vector<int> start,
                  double start_u, F& evaluate) {
  std::map<std::vector<int>, double> seen;
  if (!start.empty()) seen.emplace(start, start_u);  // valued already
  auto value = [&](const std::vector<int>& c) {
    auto it = seen.find(c);
    if (it != seen.end()) return it->second;
    double u = evaluate(c);
    seen.emplace(c, u);
    return u;
  };
  // No single type holds the job: start from the fill of its fastest types.
  if (start.empty() && placement_fastest_fill(speeds_, j, types, n, avail_, start) == 0) return;
  std::vector<int> cur = start;
  double cur_u = value(cur);
  int step = 1;
  while (step * 2 <= n / 2) step *= 2;
  for (int guard = 0; step >= 1 && guard < 200; ++guard) {
    std::vector<int> best_move;
    double best_move_u = cur_u;
    for (int a : types)
      for (int b : types) {
        if (a == b || cur[a] < step || cur[b] + step > avail_[b]) continue;
        std::vector<int> c = cur;
        c[a] -= step;
        c[b] += step;
        double u = value(c);
        if (u > best_move_u) {
          best_move_u = u;
          best_move = c;
        }
      }
    if (!best_move.empty()) {
      cur = best_move;
      cur_u = best_move_u;
    } else {
      step /= 2;
    }
  }
}

// Last resort: any assignment of GPU counts per type (augmenting paths, jobs -> types, several
// GPUs per path), which exists when Hall's condition holds; a job that may not mix must land
// on one type.
bool Market::feasible_flow(const std::vector<int>& order) {
  std::vector<int> counts = state_.counts;
  reset(counts);
  std::vector<int> left = topo_.cap_of_type;
  std::function<int(int, int, std::vector<bool>&)> augment = [&](int j, int want,
                                                                 std::vector<bool>& seen) {
    for (int t : types_[j]) {
      if (seen[t]) continue;
      seen[t] = true;
      if (left[t] > 0) {
        int x = std::min(want, left[t]);
        left[t] -= x;
        hold(j, t) += x;
        return x;
      }
      for (int k = 0; k < J_; ++k) {
        if (k == j || hold(k, t) == 0) continue;
        int x = augment(k, std::min(want, hold(k, t)), seen);
        if (x > 0) {  // k took x GPUs elsewhere: it gives x of type t to j
          hold(k, t) -= x;
          hold(j, t) += x;
          return x;
        }
      }
    }
    return 0;
  };
  for (int j : order)
    for (int need = counts[j]; need > 0;) {
      std::vector<bool> seen(T_, false);
      int x = augment(j, need, seen);
      if (x == 0) return false;
      need -= x;
    }
  // Lots: each job holds its counts at price 0; what is left is free.
  state_.free = left;
  state_.lots.assign(T_, {});
  for (int t = 0; t < T_; ++t) {
    if (left[t] > 0) state_.lots[t].push_back(Lot{0.0, -1, left[t]});
    for (int j : order)
      if (hold(j, t) > 0) state_.lots[t].push_back(Lot{0.0, j, hold(j, t)});
    std::sort(state_.lots[t].begin(), state_.lots[t].end(), lot_before);
  }
  std::vector<int> c(T_);
  for (int j : order) {
    int kinds = 0;
    for (int t = 0; t < T_; ++t) {
      c[t] = hold(j, t);
      kinds += c[t] > 0 ? 1 : 0;
    }
    if (kinds > 1 && !p_.jobs[j].allow_mixed) return false;
    state_.assigned[j] = 1;
    state_.finish[j] = finish_time(j, c);
  }
  return true;
}

bool Market::lot_before(const Lot& a, const Lot& b) {
  return a.price != b.price ? a.price < b.price : a.holder < b.holder;
}

// Adds a lot in buying order, merged with an equal one (same price and holder).
void Market::insert_lot(int t, const Lot& lot) {
  std::vector<Lot>& lots = state_.lots[t];
  auto it = std::lower_bound(lots.begin(), lots.end(), lot, lot_before);
  if (it != lots.end() && it->price == lot.price && it->holder == lot.holder) {
    it->count += lot.count;
  } else {
    lots.insert(it, lot);
  }
}

// Job j's GPUs become free at the prices they were bought at.
void Market::release(int j) {
  for (int t = 0; t < T_; ++t) {
    if (hold(j, t) == 0) continue;
    std::vector<Lot>& lots = state_.lots[t];
    std::vector<Lot> freed;
    for (size_t i = 0; i < lots.size();)
      if (lots[i].holder == j) {
        freed.push_back(Lot{lots[i].price, -1, lots[i].count});
        lots.erase(lots.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    for (const Lot& l : freed) insert_lot(t, l);
    state_.free[t] += hold(j, t);
    hold(j, t) = 0;
  }
  state_.assigned[j] = 0;
}

// Job j buys its package: the cheapest GPUs of each type (only free ones with free_only).
void Market::take(int j, const Bid& bid, std::deque<int>& queue, bool free_only) {
  // What it holds already (it lost part of its package) counts first; what it no longer wants
  // becomes free at its price, dearest first.
  std::vector<int> buy(T_, 0);
  for (int t = 0; t < T_; ++t) {
    int keep = std::min(hold(j, t), bid.counts[t]);
    int surplus = hold(j, t) - keep;
    std::vector<Lot>& lots = state_.lots[t];
    for (size_t i = lots.size(); i-- > 0 && surplus > 0;) {
      if (lots[i].holder != j) continue;
      int x = std::min(surplus, lots[i].count);
      Lot freed{lots[i].price, -1, x};
      lots[i].count -= x;
      if (lots[i].count == 0) lots.erase(lots.begin() + static_cast<long>(i));
      insert_lot(t, freed);
      surplus -= x;
      hold(j, t) -= x;
      state_.free[t] += x;
    }
    buy[t] = bid.counts[t] - keep;
  }
  // Then the cheapest GPUs of others: the held ones among them are contested; their holders
  // lose just those GPUs and bid again for what they lack.
  int contested = 0;
  std::vector<int> held_taken(T_, 0);
  std::vector<std::vector<Lot>> bought(T_);
  for (int t = 0; t < T_; ++t) {
    int need = buy[t];
    std::vector<Lot>& lots = state_.lots[t];
    size_t i = 0;
    while (need > 0 && i < lots.size()) {
      Lot& l = lots[i];
      if (l.holder == j || (free_only && l.holder >= 0)) {
        ++i;
        continue;
      }
      int x = std::min(need, l.count);
      if (l.holder >= 0) {
        int loser = l.holder;
        held_taken[t] += x;
        contested += x;
        hold(loser, t) -= x;
        if (state_.assigned[loser]) {
          state_.assigned[loser] = 0;
          queue.push_back(loser);
        }
      } else {
        state_.free[t] -= x;
      }
      bought[t].push_back(Lot{l.price, j, x});
      l.count -= x;
      need -= x;
      if (l.count == 0) {
        lots.erase(lots.begin() + static_cast<long>(i));
      } else {
        ++i;
      }
    }
  }
  double raise = 0;
  if (contested > 0) {
    double margin = bid.second == kNegInf ? 0.0 : bid.utility - bid.second;
    int level = std::min(60, state_.job_bids[j] / kEscalateEvery);
    double epsilon = std::ldexp(kBidEpsilon, level);
    raise = (margin + epsilon * std::max(bid.finish, 1e-9)) / contested;
  }
  for (int t = 0; t < T_; ++t) {
    if (held_taken[t] > 0) {
      // A contested type: every GPU the bidder buys of it is priced at the dearest one plus
      // the raise (with interchangeable GPUs, prices inside a type must level for the auction
      // to settle: else the loser buys the bidder's cheap ones back).
      double level = 0;
      int total = 0;
      for (const Lot& l : bought[t]) {
        level = std::max(level, l.price);
        total += l.count;
      }
      bought[t].assign(1, Lot{level + raise, j, total});
    }
    for (const Lot& l : bought[t]) insert_lot(t, l);
    hold(j, t) = bid.counts[t];
  }
  state_.assigned[j] = 1;
  state_.finish[j] = bid.finish;
}

}  // namespace ringsched
