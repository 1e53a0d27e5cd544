// Heterogeneity-aware multi-job placement (DESIGN 3.3): categories, the ascending-price matching
// market, the sampling of categories and a local improvement. The exact MIPs are in
// placement_mip.cpp.
//
// Algorithm (place_hetero):
//  1. Market on the seed category (GPUs per job, e.g. the doubling result). The market works on
//     GPU types, not GPUs: the GPUs of one type are interchangeable for the speed model, so they
//     are traded in lots (a count of one type at one price, free or held by one job). A job that
//     lacks GPUs bids for the package (a count per type summing to its category size) that
//     maximises value minus price, value = -(finish time with the locality the package cannot
//     avoid); GPUs it still holds cost it nothing more. It takes the cheapest GPUs of each type;
//     the holders of those that were held lose just them and bid again for what they lack. In a
//     contested type, every GPU the bidder buys is priced at the dearest one plus a raise: its
//     margin over its second-best package plus an increment, epsilon times its finish time, with
//     epsilon doubling every few bids of the same job (levelled prices keep the losers from
//     buying the package back piecemeal; the growing increment ends price wars in a number of
//     rounds logarithmic in the value range). Mixed-type packages are only searched when they
//     can beat the best single-type one: a mix is never faster than its fastest type alone, so at
//     no lower price it cannot win. The auction has a bid cap linear in the jobs; past it the
//     jobs still lacking GPUs take the best packages among the free ones (most constrained
//     first), failing that the same from scratch, failing that an augmenting-path flow.
//  2. Sampling: up to K category changes around the best so far (one job one size up or down,
//     GPUs moved from one job to another, a few jobs at once), each checked against Hall's
//     condition and evaluated incrementally: only the changed jobs give up their packages and
//     bid again at the current prices, with a bid cap proportional to the jobs changed. The
//     state is kept when the sum of finish times falls, else restored. Sampling stops early
//     when 32 draws find no change not yet tried around the best (a small neighbourhood).
//  3. Local improvement on the per-type counts, repeated while it helps: one job's best size and
//     mix in what is free plus what it holds; then, on small problems (<= 24 jobs, <= 4096 count
//     vectors of the cluster), exact group moves: the best joint choice of every pair of jobs in
//     what is free plus what they hold, then (<= 8 jobs) of every three, then (<= 6 jobs) of
//     every four. Each job's (size, mix) columns are valued once, sorted by finish time and
//     tabled: for every count vector of the cluster, its best column within it. A group search
//     tries the columns of all but the last job fastest first, looks the last one up, and stops
//     a branch once even the best columns in the whole pool cannot beat the group's best.
//  4. Packing: each type's GPUs onto nodes, running jobs that keep their types first on the nodes
//     they hold, then largest demands first, best fit.
// Every phase counts package valuations and stops at its share of a work budget that is linear
// in the jobs and K and independent of the cluster size (placement_work_budget()), so a
// 10,000-GPU, 2,000-job round costs tens of milliseconds. Deterministic for the seed.
//
// Locality model (a value term of the market, reported in iters_per_s and finish_s): the ring
// model's communication term (1/speed minus the compute time 1/sum(c_t v_t(1)) of the
// proportional split) was measured inside one server. When a job's ring crosses nodes, its
// slowest link is the inter-node one, so the communication term grows by the factor
// min(intra_gbps)/min(inter_gbps) of the nodes it uses; every node beyond the fewest that could
// hold the job adds 5% of that extra, standing for the extra hops and the NIC bandwidth taken from
// the nodes' other jobs. With intra_gbps = inter_gbps locality costs nothing.
#include "ringsched/placement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <random>
#include <queue>
#include <set>

#include "ringsched/placement_support.h"

namespace ringsched {
namespace {

constexpr double kExtraNodeShare = 0.05;   // see the locality model above
constexpr double kBidEpsilon = 1e-3;       // first bid increment, relative to the bidder's finish
constexpr int kEscalateEvery = 4;          // a job's increment doubles every this many of its bids
constexpr long kExhaustiveVectors = 64;    // enumerate mixes up to this many, else local search
constexpr long kLocalMixes = 256;          // local improvement enumerates mixes up to this many
constexpr int kPairJobs = 24;              // exact pair moves with at most this many jobs,
constexpr int kTripleJobs = 8;             // triples with at most this many,
constexpr int kQuadJobs = 6;               // groups of four with at most this many,
constexpr long kExactStates = 4096;        // and clusters of at most this many count vectors
// Work budget (package valuations), see placement_work_budget() and work_for_phases().
constexpr long kWorkPerJob = 96;
constexpr long kWorkPerSample = 400;
constexpr long kWorkBase = 30000;
constexpr long kBidsPerJob = 16, kBidsBase = 64;            // auction bid cap
constexpr long kSampleBidsPerChange = 8, kSampleBidsBase = 16;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// The work the phases of place_hetero may start: the auction, the samples, the improvement.
long work_for_phases(int jobs, int samples) {
  return kWorkBase + kWorkPerJob * std::max(0, jobs) + kWorkPerSample * std::max(0, samples);
}

std::string job_name(const PlacementProblem& p, int j) {
  return "placement job " + std::to_string(j) + " (" + p.jobs[j].model + ")";
}

// Normalised names of the types a job lists (empty: any).
std::vector<std::string> listed_types(const PlacementJob& job) {
  std::vector<std::string> out;
  for (const std::string& t : job.allowed_types) out.push_back(normalize_type(t));
  return out;
}

bool type_listed(const std::vector<std::string>& listed, const std::string& type) {
  return listed.empty() || std::find(listed.begin(), listed.end(), type) != listed.end();
}

// Number of ways to split n GPUs over k types (stops counting past `cap`).
long compositions(int n, int k, long cap) {
  long c = 1;
  for (int i = 1; i < k; ++i) {
    c = c * (n + i) / i;
    if (c > cap) return cap + 1;
  }
  return c;
}

// Per-iteration time with the locality model (see the top of this file).
double iteration_time_with_locality(double t_iter, double t_compute, int nodes_used, int min_nodes,
                                    double link_ratio) {
  if (nodes_used <= 1 || link_ratio <= 1.0) return t_iter;
  double comm = std::max(0.0, t_iter - t_compute);
  int extra = std::max(0, nodes_used - std::max(1, min_nodes));
  return t_iter + comm * (link_ratio - 1.0) * (1.0 + kExtraNodeShare * extra);
}

// The market and the local improvement on one problem (see the top of this file). Its state --
// lots per type, per-type counts and finish time per job -- can be saved and restored, so that a
// category change is evaluated in place and undone when it does not help.
struct Lot {
  double price;
  int holder;  // -1: free
  int count;
};

class Market {
 public:
  Market(const PlacementProblem& p, PlacementSpeeds& speeds, const PlacementTopology& topo,
         const std::vector<std::vector<int>>& sizes, long work_budget)
      : p_(p), speeds_(speeds), topo_(topo), sizes_(sizes), T_(speeds.num_types()),
        J_(static_cast<int>(p.jobs.size())), budget_(work_budget) {
    types_.assign(J_, {});
    v1_.assign(static_cast<size_t>(J_) * T_, 0.0);
    for (int j = 0; j < J_; ++j)
      for (int t = 0; t < T_; ++t)
        if (speeds_.allowed(j, t)) {
          types_[j].push_back(t);
          v1_[static_cast<size_t>(j) * T_ + t] = speeds_.single(j, t, 1);
        }
    // Hall's condition is checked per set of types; jobs are grouped by their allowed set.
    hall_ = T_ <= 12;
    mask_.assign(J_, 0);
    if (hall_)
      for (int j = 0; j < J_; ++j)
        for (int t : types_[j]) mask_[j] |= 1u << t;
    cost_.assign(T_, {});
    avail_.assign(T_, 0);
    pool_.assign(T_, 0);
    states_ = 1;
    for (int t = 0; t < T_ && states_ <= kExactStates; ++t) {
      stride_.push_back(states_);
      states_ *= topo_.cap_of_type[t] + 1;
    }
    if (states_ > kExactStates) stride_.clear();
    tables_.resize(J_);
    finish_memo_.resize(J_);
  }

  long work() const { return work_; }
  bool out_of_work() const { return work_ >= std::min(budget_, limit_); }
  // Work allowed to the phase that starts now (on top of what is done), within the budget.
  void allow_phase(long work) {
    limit_ = work >= budget_ - work_ ? budget_ : work_ + work;
  }
  int fallbacks() const { return fallbacks_; }
  const std::vector<int>& counts() const { return state_.counts; }

  // Whether a category can be matched at all: per-job bounds and Hall's condition over sets of
  // types (necessary and sufficient for jobs that may mix types).
  bool may_fit(const std::vector<int>& counts) const {
    std::vector<long> need_by_mask(hall_ ? (1u << T_) : 1, 0);
    long need = 0;
    for (int j = 0; j < J_; ++j) {
      if (counts[j] <= 0) continue;
      if (!job_fits(j, counts[j])) return false;
      need += counts[j];
      if (hall_) need_by_mask[mask_[j]] += counts[j];
    }
    if (!hall_) {
      long have = 0;
      for (int c : topo_.cap_of_type) have += c;
      return need <= have;
    }
    return hall_holds(need_by_mask);
  }

  // may_fit() for the current category with `changes` (job, new count) applied.
  bool may_fit_changes(const std::vector<std::pair<int, int>>& changes) const {
    if (!hall_) {
      std::vector<int> c = state_.counts;
      for (const auto& [j, n] : changes) c[j] = n;
      return may_fit(c);
    }
    std::vector<long> need = state_.need_by_mask;
    for (const auto& [j, n] : changes) {
      if (n > 0 && !job_fits(j, n)) return false;
      need[mask_[j]] += n - state_.counts[j];
    }
    return hall_holds(need);
  }

  // Starts a category with no packages held (bookkeeping for may_fit_changes()).
  void set_category(const std::vector<int>& counts) { reset(counts); }
  // Changes one job's count in a category with no packages held.
  void set_count(int j, int n) {
    if (hall_) state_.need_by_mask[mask_[j]] += n - state_.counts[j];
    state_.counts[j] = n;
  }

  // The market from scratch on `counts`; false if the category cannot be matched.
  bool run(const std::vector<int>& counts) {
    if (!may_fit(counts)) return false;
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
  bool rerun(const std::vector<std::pair<int, int>>& changes) {
    std::deque<int> queue;
    for (const auto& [j, n] : changes) {
      if (state_.assigned[j]) release(j);
      if (hall_) state_.need_by_mask[mask_[j]] += n - state_.counts[j];
      state_.counts[j] = n;
      if (n > 0) queue.push_back(j);
    }
    return auction(queue, kSampleBidsPerChange * static_cast<long>(changes.size()) + kSampleBidsBase);
  }

  // Sum of the market's finish times (per-type counts, unavoidable locality) of the jobs that run.
  double objective() const {
    double s = 0;
    for (int j = 0; j < J_; ++j)
      if (state_.assigned[j]) s += state_.finish[j];
    return s;
  }

  struct State {
    std::vector<std::vector<Lot>> lots;  // per type, by (price, holder), free first
    std::vector<int> holding;            // J x T
    std::vector<int> free;               // per type: GPUs no job holds
    std::vector<long> need_by_mask;      // GPUs the category gives jobs of each allowed-type set
    std::vector<double> finish;                 // per job
    std::vector<char> assigned;
    std::vector<int> counts;
    std::vector<int> job_bids;
  };
  const State& state() const { return state_; }
  void restore(const State& s) { state_ = s; }

  // Local improvement (step 3 at the top of this file), within the work budget: one job's best
  // choice, then (exact moves) the best joint choice of groups of two, three, ... jobs, while it
  // helps.
  void improve() {
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

  // Node packing and the result rows; false if the GPUs do not fit the nodes.
  bool finish_result(PlacementResult& out) {
    if (!pack_nodes()) return false;
    fill_result(out);
    return true;
  }

 private:
  struct Bid {
    std::vector<int> counts;  // per type
    double utility = kNegInf;
    double second = kNegInf;
    double finish = 0;
  };

  int hold(int j, int t) const { return state_.holding[static_cast<size_t>(j) * T_ + t]; }
  int& hold(int j, int t) { return state_.holding[static_cast<size_t>(j) * T_ + t]; }
  double v1(int j, int t) const { return v1_[static_cast<size_t>(j) * T_ + t]; }

  bool job_fits(int j, int n) const {
    int best_single = 0, sum = 0;
    for (int t : types_[j]) {
      best_single = std::max(best_single, topo_.cap_of_type[t]);
      sum += topo_.cap_of_type[t];
    }
    return n <= (p_.jobs[j].allow_mixed ? sum : best_single);
  }

  bool hall_holds(const std::vector<long>& need_by_mask) const {
    unsigned full = 1u << T_;
    for (unsigned s = 1; s < full; ++s) {
      long have = 0, need = 0;
      for (int t = 0; t < T_; ++t)
        if (s & (1u << t)) have += topo_.cap_of_type[t];
      for (unsigned m = s;; m = (m - 1) & s) {  // every subset m of s
        need += need_by_mask[m];
        if (m == 0) break;
      }
      if (need > have) return false;
    }
    return true;
  }

  void reset(const std::vector<int>& counts) {
    state_.lots.assign(T_, {});
    for (int t = 0; t < T_; ++t)
      if (topo_.cap_of_type[t] > 0) state_.lots[t].push_back(Lot{0.0, -1, topo_.cap_of_type[t]});
    state_.holding.assign(static_cast<size_t>(J_) * T_, 0);
    state_.free = topo_.cap_of_type;
    state_.need_by_mask.assign(hall_ ? (1u << T_) : 1, 0);
    if (hall_)
      for (int j = 0; j < J_; ++j)
        if (counts[j] > 0) state_.need_by_mask[mask_[j]] += counts[j];
    state_.finish.assign(J_, 0.0);
    state_.assigned.assign(J_, 0);
    state_.counts = counts;
    state_.job_bids.assign(J_, 0);
  }

  bool auction(std::deque<int>& queue, long bid_cap) {
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
  double finish_time(int j, const std::vector<int>& c) {
    ++work_;
    double* memo = nullptr;
    if (exact_moves()) {
      std::vector<double>& row = finish_memo_[j];
      if (row.empty()) row.assign(states_, NAN);
      memo = &row[index_of(c.data())];
      if (!std::isnan(*memo)) return *memo;
    }
    int nodes = 0;
    for (int t = 0; t < T_; ++t)
      if (c[t] > 0) nodes += (c[t] + topo_.max_node_of_type[t] - 1) / topo_.max_node_of_type[t];
    double f = p_.jobs[j].remaining *
               placement_iteration_time(speeds_, topo_, j, c, nodes, topo_.link_ratio(c));
    if (p_.jobs[j].running && c != topo_.current_types[j]) f += p_.costs.restart_s;
    if (memo) *memo = f;
    return f;
  }

  // The job's best package at current prices, and the utility of its second best.
  bool best_package(int j, bool free_only, Bid& bid) {
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
      std::vector<int> order = types;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v1(j, a) > v1(j, b); });
      c.assign(T_, 0);
      int left = n;
      for (int t : order) {
        c[t] = std::min(left, avail_[t]);
        left -= c[t];
      }
      int kinds = 0;
      for (int t : types) kinds += c[t] > 0 ? 1 : 0;
      if (left == 0 && kinds > 1 && c != now) consider(c);
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
        if (compositions(n, static_cast<int>(types.size()), kExhaustiveVectors) <= kExhaustiveVectors) {
          c.assign(T_, 0);
          enumerate(types, 0, n, avail_, c, [&](const std::vector<int>& m) {
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

  // Every split of `left` GPUs over types[i..] within `room` per type.
  template <typename F>
  void enumerate(const std::vector<int>& types, size_t i, int left, const std::vector<int>& room,
                 std::vector<int>& c, F&& visit) {
    int t = types[i];
    if (i + 1 == types.size()) {
      if (left <= room[t]) {
        c[t] = left;
        visit(c);
        c[t] = 0;
      }
      return;
    }
    for (int x = 0; x <= std::min(left, room[t]); ++x) {
      c[t] = x;
      enumerate(types, i + 1, left - x, room, c, visit);
    }
    c[t] = 0;
  }

  // Pattern search over mixes: move s GPUs from one type to another while it helps, s halving.
  // `start` is the best single-type mix (empty when no single type can hold the job).
  template <typename F>
  void local_search(int j, const std::vector<int>& types, int n, std::vector<int> start,
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
    if (start.empty()) {  // fill the types fastest first until the job is held
      std::vector<int> order = types;
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v1(j, a) > v1(j, b); });
      start.assign(T_, 0);
      int left = n;
      for (int t : order) {
        start[t] = std::min(left, avail_[t]);
        left -= start[t];
      }
      if (left > 0) return;
    }
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
  bool feasible_flow(const std::vector<int>& order) {
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

  static bool lot_before(const Lot& a, const Lot& b) {
    return a.price != b.price ? a.price < b.price : a.holder < b.holder;
  }

  // Adds a lot in buying order, merged with an equal one (same price and holder).
  void insert_lot(int t, const Lot& lot) {
    std::vector<Lot>& lots = state_.lots[t];
    auto it = std::lower_bound(lots.begin(), lots.end(), lot, lot_before);
    if (it != lots.end() && it->price == lot.price && it->holder == lot.holder) {
      it->count += lot.count;
    } else {
      lots.insert(it, lot);
    }
  }

  // Job j's GPUs become free at the prices they were bought at.
  void release(int j) {
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
  void take(int j, const Bid& bid, std::deque<int>& queue, bool free_only = false) {
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

  // --- local improvement ---

  // (size, mix) choices of one job with their finish times, flat: T counts per column.
  struct Columns {
    std::vector<int> counts;
    std::vector<double> finish;
    std::vector<long> index;  // position in the cluster's count space (exact moves only)
    size_t size() const { return finish.size(); }
    const int* at(int k, int T) const { return counts.data() + static_cast<size_t>(k) * T; }
  };

  // Every (size, mix) job j may take inside `pool` GPUs per type, with its finish time. Mixes
  // are enumerated when they are few, else only single types and the fastest-first fill.
  void value_columns(int j, const std::vector<int>& pool, Columns& out) {
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
      if (mixes && compositions(n, static_cast<int>(types.size()), kLocalMixes) <= kLocalMixes) {
        c.assign(T_, 0);
        enumerate(types, 0, n, pool, c, add);
        continue;
      }
      for (int t : types)
        if (pool[t] >= n) {
          c.assign(T_, 0);
          c[t] = n;
          add(c);
        }
      if (mixes && fastest_first(j, n, pool, c)) add(c);
    }
  }

  // Fills n GPUs from the fastest single-GPU types down within `room`; false if they do not fit
  // or one type holds them all.
  bool fastest_first(int j, int n, const std::vector<int>& room, std::vector<int>& c) const {
    std::vector<int> order = types_[j];
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return v1(j, a) > v1(j, b); });
    c.assign(T_, 0);
    int left = n, kinds = 0;
    for (int t : order) {
      c[t] = std::min(left, room[t]);
      left -= c[t];
      kinds += c[t] > 0 ? 1 : 0;
    }
    return left == 0 && kinds > 1;
  }

  // Exact moves (the best choice for one job, or the best joint choice for a group of two to
  // four jobs, in what is free plus what they hold) on small problems: few jobs and few count
  // vectors of the cluster. Each job's columns within the cluster are valued once, sorted by
  // finish time, and tabled: for every count vector r of the cluster, the best column within r
  // (a running minimum along each type).
  bool exact_moves() const { return !stride_.empty() && J_ <= kPairJobs; }

  long index_of(const int* c) const {
    long i = 0;
    for (int t = 0; t < T_; ++t) i += c[t] * stride_[t];
    return i;
  }

  struct JobTable {
    Columns columns;
    std::vector<std::pair<double, int>> best_within;  // per count vector: (finish, column)
  };

  const JobTable& table(int j) {
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
  void reassign(int j, const Columns& cols, int k) {
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
    if (hall_) state_.need_by_mask[mask_[j]] += n - state_.counts[j];
    state_.counts[j] = n;
    state_.assigned[j] = 1;
    state_.finish[j] = cols.finish[k];
  }

  static bool clearly_better(double candidate, double now) {
    return candidate < now - 1e-9 * std::max(1.0, std::fabs(now));
  }

  // Largest group of exact moves among `jobs` jobs.
  static size_t max_group(int jobs) {
    return jobs <= kQuadJobs ? 4 : jobs <= kTripleJobs ? 3 : 2;
  }

  bool improve_one(int j) {
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
  bool improve_group(const std::vector<int>& group) {
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

  void search_group(size_t i, long left, double sum) {
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

  // --- packing ---

  // Each type's GPUs onto nodes. Running jobs that keep their per-type counts go first, on the
  // nodes they hold; then by demand, largest first: the smallest node that holds all of it, else
  // the emptiest node, until the demand is met.
  bool pack_nodes() {
    package_.assign(J_, {});
    std::vector<int> left(topo_.nodes.size());
    for (size_t n = 0; n < topo_.nodes.size(); ++n) left[n] = topo_.nodes[n].cap;
    std::vector<int> need = state_.holding;
    auto holding_of = [&](int j) {
      return std::vector<int>(state_.holding.begin() + static_cast<long>(j) * T_,
                              state_.holding.begin() + static_cast<long>(j + 1) * T_);
    };
    for (int j = 0; j < J_; ++j) {
      if (!state_.assigned[j] || !p_.jobs[j].running || holding_of(j) != topo_.current_types[j])
        continue;
      bool ok = true;
      for (const auto& [n, g] : topo_.current[j]) ok = ok && left[n] >= g;
      if (!ok) continue;
      for (const auto& [n, g] : topo_.current[j]) {
        left[n] -= g;
        package_[j].push_back({n, g});
        need[static_cast<size_t>(j) * T_ + topo_.nodes[n].type] -= g;
      }
    }
    for (int t = 0; t < T_; ++t) {
      std::vector<int> jobs;
      for (int j = 0; j < J_; ++j)
        if (state_.assigned[j] && need[static_cast<size_t>(j) * T_ + t] > 0) jobs.push_back(j);
      auto need_of = [&](int j) { return need[static_cast<size_t>(j) * T_ + t]; };
      std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) { return need_of(a) > need_of(b); });
      std::set<std::pair<int, int>> room;  // (GPUs left, node)
      for (int n : topo_.nodes_of_type[t])
        if (left[n] > 0) room.insert({left[n], n});
      for (int j : jobs) {
        int k = need_of(j);
        while (k > 0) {
          if (room.empty()) return false;
          auto fit = room.lower_bound({k, -1});
          auto it = fit != room.end() ? fit : std::prev(room.end());
          int n = it->second;
          room.erase(it);
          int x = std::min(k, left[n]);
          left[n] -= x;
          k -= x;
          if (left[n] > 0) room.insert({left[n], n});
          package_[j].push_back({n, x});
        }
      }
    }
    return true;
  }

  void fill_result(PlacementResult& out) {
    out.jobs.assign(J_, JobPlacement{});
    out.objective_s = 0;
    for (int j = 0; j < J_; ++j) {
      if (!state_.assigned[j]) continue;
      out.jobs[j] = placement_on_nodes(p_, speeds_, topo_, j, package_[j]);
      out.objective_s += out.jobs[j].finish_s;
    }
  }

  const PlacementProblem& p_;
  PlacementSpeeds& speeds_;
  const PlacementTopology& topo_;
  const std::vector<std::vector<int>>& sizes_;
  int T_, J_;
  long budget_;
  long work_ = 0;
  long limit_ = std::numeric_limits<long>::max();  // end of the current phase's work
  int fallbacks_ = 0;
  bool hall_ = true;
  std::vector<std::vector<int>> types_;  // per job: allowed types
  std::vector<double> v1_;               // J x T single-GPU speeds
  std::vector<unsigned> mask_;           // per job: allowed types as bits
  State state_;
  std::vector<std::vector<double>> cost_;  // scratch of best_package
  std::vector<int> avail_;
  // Local improvement: scratch, and for exact moves the strides of the cluster's count space
  // (empty: too many count vectors) and each job's table.
  Columns columns_;
  std::vector<int> pool_;
  struct Group {  // improve_group's search
    std::vector<int> jobs, pick, chosen;
    std::vector<int> rest;  // per depth: GPUs per type left for the jobs from that depth on
    std::vector<const JobTable*> tables;
    std::vector<double> floor_after;
    double best = 0;
  } group_;
  std::vector<long> stride_;
  long states_ = 0;
  std::vector<JobTable> tables_;
  std::vector<std::vector<double>> finish_memo_;  // per job, by count vector (exact moves only)
  std::vector<std::vector<std::pair<int, int>>> package_;  // per job: (node, GPUs) after packing
};

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_counts(const PlacementProblem& p, const std::vector<int>& counts, const char* what) {
  if (counts.size() != p.jobs.size())
    throw InputError(std::string("placement: ") + what + " has " + std::to_string(counts.size()) +
                     " entries for " + std::to_string(p.jobs.size()) + " jobs");
  for (size_t j = 0; j < counts.size(); ++j) {
    int c = counts[j];
    if (c == 0) continue;
    const PlacementJob& job = p.jobs[j];
    if (c < 0 || c < job.min_gpus || c > job.max_gpus)
      throw InputError(job_name(p, static_cast<int>(j)) + ": " + what + " gives it " +
                       std::to_string(c) + " GPUs, outside its range [" +
                       std::to_string(job.min_gpus) + ", " + std::to_string(job.max_gpus) + "]");
  }
}

// Whether each (model, type) of the problem is known to the throughput model, asked once per
// distinct model (the planner passes thousands of jobs of a few tens of models).
class KnownTypes {
 public:
  KnownTypes(const PlacementProblem& p, const std::vector<std::string>& types) {
    for (const PlacementJob& job : p.jobs) {
      auto [it, fresh] = known_.emplace(job.model, std::vector<bool>());
      if (!fresh) continue;
      for (const std::string& t : types) it->second.push_back(p.model->iters_per_s(job.model, t, 1) > 0);
    }
  }
  const std::vector<bool>& of(const std::string& model) const { return known_.at(model); }

 private:
  std::map<std::string, std::vector<bool>> known_;
};

}  // namespace

// --- support ------------------------------------------------------------------------------------

PlacementTopology::PlacementTopology(const PlacementProblem& p, const PlacementSpeeds& speeds) {
  int T = speeds.num_types();
  nodes_of_type.assign(T, {});
  cap_of_type.assign(T, 0);
  max_node_of_type.assign(T, 1);
  min_intra.assign(T, std::numeric_limits<double>::infinity());
  min_inter.assign(T, std::numeric_limits<double>::infinity());
  std::map<std::string, int> index;
  for (const Node& n : p.cluster.nodes) {
    if (n.usable() <= 0) continue;
    int t = static_cast<int>(std::lower_bound(speeds.types().begin(), speeds.types().end(),
                                              n.gpu_type) - speeds.types().begin());
    index[n.name] = static_cast<int>(nodes.size());
    nodes_of_type[t].push_back(static_cast<int>(nodes.size()));
    cap_of_type[t] += n.usable();
    max_node_of_type[t] = std::max(max_node_of_type[t], n.usable());
    min_intra[t] = std::min(min_intra[t], n.intra_gbps);
    min_inter[t] = std::min(min_inter[t], n.inter_gbps);
    nodes.push_back(TNode{n.name, t, n.usable(), n.intra_gbps, n.inter_gbps});
  }
  int J = static_cast<int>(p.jobs.size());
  job_class_.assign(J, 0);
  current.assign(J, {});
  current_total.assign(J, 0);
  current_types.assign(J, std::vector<int>(T, 0));
  // Jobs with the same allowed types share their node capacities (a few classes, many jobs).
  std::map<std::vector<bool>, int> classes;
  for (int j = 0; j < J; ++j) {
    std::vector<bool> allowed(T);
    for (int t = 0; t < T; ++t) allowed[t] = speeds.allowed(j, t);
    auto [it, fresh] = classes.emplace(allowed, static_cast<int>(caps_desc_.size()));
    if (fresh) {
      caps_desc_.emplace_back();
      for (const TNode& n : nodes)
        if (allowed[n.type]) caps_desc_.back().push_back(n.cap);
      std::sort(caps_desc_.back().rbegin(), caps_desc_.back().rend());
    }
    job_class_[j] = it->second;
    const PlacementJob& job = p.jobs[j];
    if (!job.running) continue;
    bool usable = true;
    for (const auto& [name, g] : job.current) {
      if (g <= 0) continue;
      auto found = index.find(name);
      if (found == index.end() || nodes[found->second].cap < g ||
          !speeds.allowed(j, nodes[found->second].type)) {
        usable = false;  // its GPUs are no longer all available to it: it must move
        break;
      }
      current[j].push_back({found->second, g});
      current_total[j] += g;
      current_types[j][nodes[found->second].type] += g;
    }
    if (!usable) {
      current[j].clear();
      current_total[j] = 0;
      current_types[j].assign(T, 0);
    }
  }
}

int PlacementTopology::min_nodes(int j, int n) const {
  int k = 0, sum = 0;
  for (int c : caps_desc_[job_class_[j]]) {
    if (sum >= n) break;
    sum += c;
    ++k;
  }
  return std::max(1, k);
}

double PlacementTopology::link_ratio(const std::vector<int>& counts) const {
  double intra = INFINITY, inter = INFINITY;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) {
      intra = std::min(intra, min_intra[t]);
      inter = std::min(inter, min_inter[t]);
    }
  return intra / inter;
}

double placement_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                                const std::vector<int>& counts, int nodes, double link_ratio) {
  double v = speeds.speed(j, counts);
  if (v <= 0) return INFINITY;
  double sum_v1 = 0;
  int n = 0;
  for (int t = 0; t < speeds.num_types(); ++t)
    if (counts[t] > 0) {
      sum_v1 += counts[t] * speeds.single(j, t, 1);
      n += counts[t];
    }
  return iteration_time_with_locality(1.0 / v, 1.0 / sum_v1, nodes, topo.min_nodes(j, n),
                                      link_ratio);
}

JobPlacement placement_on_nodes(const PlacementProblem& p, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package) {
  JobPlacement jp;
  std::vector<int> counts(speeds.num_types(), 0);
  double min_intra = INFINITY, min_inter = INFINITY;
  for (const auto& [n, g] : package) {
    if (g <= 0) continue;
    const PlacementTopology::TNode& node = topo.nodes[n];
    jp.gpus_by_node[node.name] += g;
    jp.gpus_by_type[speeds.types()[node.type]] += g;
    counts[node.type] += g;
    jp.total += g;
    min_intra = std::min(min_intra, node.intra);
    min_inter = std::min(min_inter, node.inter);
  }
  if (jp.total <= 0) return jp;
  double t_iter = placement_iteration_time(speeds, topo, j, counts,
                                           static_cast<int>(jp.gpus_by_node.size()),
                                           min_intra / min_inter);
  jp.iters_per_s = std::isfinite(t_iter) ? 1.0 / t_iter : 0.0;
  jp.finish_s = p.jobs[j].remaining * t_iter;
  const PlacementJob& job = p.jobs[j];
  if (job.running) {
    std::map<std::string, int> now;
    for (const auto& [name, g] : job.current)
      if (g > 0) now[name] = g;
    if (now != jp.gpus_by_node) jp.finish_s += p.costs.restart_s;
  }
  return jp;
}

void validate_placement_problem(const PlacementProblem& p) {
  if (!p.model) throw InputError("placement: no throughput model");
  p.cluster.validate();
  std::vector<std::string> types = p.cluster.types();
  KnownTypes known(p, types);
  for (size_t i = 0; i < p.jobs.size(); ++i) {
    int j = static_cast<int>(i);
    const PlacementJob& job = p.jobs[i];
    if (job.model.empty()) throw InputError(job_name(p, j) + ": no model name");
    if (!(job.remaining > 0) || !std::isfinite(job.remaining))
      throw InputError(job_name(p, j) + ": remaining iterations must be positive and finite");
    if (job.min_gpus < 1) throw InputError(job_name(p, j) + ": min_gpus must be at least 1");
    if (job.max_gpus < job.min_gpus)
      throw InputError(job_name(p, j) + ": max_gpus " + std::to_string(job.max_gpus) +
                       " is below min_gpus " + std::to_string(job.min_gpus));
    std::vector<std::string> listed = listed_types(job);
    bool runnable = false;
    for (size_t t = 0; t < types.size(); ++t)
      runnable = runnable || (type_listed(listed, types[t]) && known.of(job.model)[t]);
    if (!runnable)
      throw InputError(job_name(p, j) +
                       ": no GPU type of the cluster is both allowed and known for its model");
    if (job.running)
      for (const auto& [node, g] : job.current) {
        if (g < 0) throw InputError(job_name(p, j) + ": negative GPU count on node " + node);
        if (g > 0 && !p.cluster.find(node))
          throw InputError(job_name(p, j) + ": holds GPUs on unknown node '" + node + "'");
      }
  }
}

std::vector<int> placement_sizes(const PlacementProblem& p, const PlacementSpeeds& speeds, int j) {
  const PlacementJob& job = p.jobs[j];
  long usable = 0;
  for (int t = 0; t < speeds.num_types(); ++t)
    if (speeds.allowed(j, t)) usable += speeds.usable()[t];
  std::set<int> sizes;
  auto add = [&](long s) {
    if (s >= job.min_gpus && s <= job.max_gpus && s <= usable) sizes.insert(static_cast<int>(s));
  };
  add(job.min_gpus);
  add(job.max_gpus);
  if (p.power_of_two) {
    for (long s = 1; s <= job.max_gpus && s <= usable; s *= 2) add(s);
  } else {
    for (int s = job.min_gpus; s <= job.max_gpus && s <= usable; ++s) add(s);
  }
  return std::vector<int>(sizes.begin(), sizes.end());
}

long placement_work_budget(int jobs, int types, int samples) {
  long J = std::max(0, jobs), T = std::max(0, types);
  // What the phases may start (each stops once it is reached; see Market::allow_phase) ...
  long phases = work_for_phases(jobs, samples);
  // ... plus the fallback of a market that reaches its bid cap (two greedy passes of at most
  // T + 2 valuations per job, one valuation per job in the flow) ...
  long fallback = (2 * (T + 2) + 1) * J;
  // ... plus the step under way when a phase reaches its end: one package search (the types,
  // the current mix, the mixes enumerated or searched), the columns of one job, or the tables of
  // a group move (at most four jobs, at most kExactStates columns each).
  static_assert(4 * kExactStates <= 2 * 64 * (kLocalMixes + 1), "a group move's tables");
  long step = std::max(T + 2 + std::max(kExhaustiveVectors, 200 * T * T),
                       2 * 64 * (kLocalMixes + T + 1));
  return phases + fallback + step;
}

size_t PlacementSpeeds::CountsHash::operator()(const std::vector<int>& v) const {
  size_t h = 1469598103934665603ull;
  for (int x : v) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
  return h;
}

PlacementSpeeds::PlacementSpeeds(const PlacementProblem& p) : problem_(p) {
  validate_placement_problem(p);
  types_ = p.cluster.types();
  usable_.assign(types_.size(), 0);
  for (size_t t = 0; t < types_.size(); ++t) usable_[t] = p.cluster.usable_of_type(types_[t]);
  std::map<std::string, int> index;
  for (const PlacementJob& job : p.jobs) {
    auto [it, fresh] = index.emplace(job.model, static_cast<int>(model_names_.size()));
    model_index_.push_back(it->second);
    if (fresh) model_names_.push_back(job.model);
  }
  cache_.resize(model_names_.size());
  packed_cache_.resize(model_names_.size());
  single_cache_.assign(model_names_.size(), std::vector<std::vector<double>>(types_.size()));
  pack_bits_ = types_.empty() ? 0 : static_cast<int>(std::min<size_t>(21, 64 / types_.size()));
  KnownTypes known(p, types_);
  allowed_.assign(p.jobs.size(), std::vector<bool>(types_.size(), false));
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    std::vector<std::string> listed = listed_types(p.jobs[j]);
    for (size_t t = 0; t < types_.size(); ++t)
      allowed_[j][t] = type_listed(listed, types_[t]) && known.of(p.jobs[j].model)[t];
  }
}

double PlacementSpeeds::speed(int job, const std::vector<int>& counts) {
  int m = model_index_[job];
  // Packed key: every count below 2^pack_bits_ (12 bits each for five types).
  uint64_t key = 0;
  bool packed = pack_bits_ > 0;
  for (size_t t = 0; t < counts.size() && packed; ++t) {
    if (counts[t] < 0 || counts[t] >= (1 << pack_bits_)) packed = false;
    key |= static_cast<uint64_t>(counts[t]) << (pack_bits_ * t);
  }
  if (packed) {
    auto it = packed_cache_[m].find(key);
    if (it != packed_cache_[m].end()) return it->second;
  } else {
    auto it = cache_[m].find(counts);
    if (it != cache_[m].end()) return it->second;
  }
  std::map<std::string, int> by_type;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) by_type[types_[t]] = counts[t];
  ++evaluations_;
  double v = by_type.empty() ? 0.0 : problem_.model->iters_per_s_mixed(model_names_[m], by_type);
  if (packed) {
    packed_cache_[m].emplace(key, v);
  } else {
    cache_[m].emplace(counts, v);
  }
  return v;
}

double PlacementSpeeds::single(int job, int type, int n) {
  std::vector<double>& row = single_cache_[model_index_[job]][type];
  if (n >= 0 && n < static_cast<int>(row.size()) && row[n] >= 0) return row[n];
  std::vector<int> c(types_.size(), 0);
  c[type] = n;
  double v = speed(job, c);
  if (n >= 0 && n <= 4096) {
    if (n >= static_cast<int>(row.size())) row.resize(n + 1, -1.0);
    row[n] = v;
  }
  return v;
}

namespace {

std::vector<std::vector<int>> all_sizes(const PlacementProblem& p, const PlacementSpeeds& speeds) {
  std::vector<std::vector<int>> sizes(p.jobs.size());
  for (size_t j = 0; j < sizes.size(); ++j)
    sizes[j] = placement_sizes(p, speeds, static_cast<int>(j));
  return sizes;
}

// placement_seed_counts() on the speeds, topology and sizes place_hetero made already.
std::vector<int> doubling_seed(const PlacementProblem& p, PlacementSpeeds& speeds,
                               const PlacementTopology& topo,
                               const std::vector<std::vector<int>>& sizes) {
  int J = static_cast<int>(p.jobs.size());
  int T = speeds.num_types();
  // Pooled speed estimate: the fastest single allowed type with room for n, else the mix that
  // fills the fastest types first.
  auto speed = [&](int j, int n) {
    double best = 0;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t) && speeds.usable()[t] >= n) best = std::max(best, speeds.single(j, t, n));
    if (best > 0 || !p.jobs[j].allow_mixed) return best;
    std::vector<int> order;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t)) order.push_back(t);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return speeds.single(j, a, 1) > speeds.single(j, b, 1); });
    std::vector<int> c(T, 0);
    int left = n;
    for (int t : order) {
      c[t] = std::min(left, speeds.usable()[t]);
      left -= c[t];
    }
    return left > 0 ? 0.0 : speeds.speed(j, c);
  };
  // The pool is shared, but a category must also respect the types each job may use (Hall's
  // condition, checked incrementally). Counts only grow, so a job that cannot grow now never can.
  Market market(p, speeds, topo, sizes, work_for_phases(J, 0));
  std::vector<int> counts(J, 0);
  std::vector<int> level(J, -1);
  market.set_category(counts);
  long pool = p.cluster.usable_gpus();
  for (int j = 0; j < J; ++j) {
    if (sizes[j].empty() || sizes[j][0] > pool || speed(j, sizes[j][0]) <= 0) continue;
    if (!market.may_fit_changes({{j, sizes[j][0]}})) continue;
    counts[j] = sizes[j][0];
    market.set_count(j, counts[j]);
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
    if (next - counts[j] > pool || !market.may_fit_changes({{j, next}})) continue;
    pool -= next - counts[j];
    counts[j] = next;
    ++level[j];
    market.set_count(j, next);
    push_gain(j);
  }
  return counts;
}

}  // namespace

std::vector<int> placement_seed_counts(const PlacementProblem& p) {
  PlacementSpeeds speeds(p);
  PlacementTopology topo(p, speeds);
  return doubling_seed(p, speeds, topo, all_sizes(p, speeds));
}

double placement_objective_without_locality(const PlacementProblem& p, const PlacementResult& r) {
  PlacementSpeeds speeds(p);
  PlacementTopology topo(p, speeds);
  double total = 0;
  for (size_t j = 0; j < r.jobs.size() && j < p.jobs.size(); ++j) {
    const JobPlacement& jp = r.jobs[j];
    if (jp.total <= 0) continue;
    std::vector<int> c(speeds.num_types(), 0);
    for (const auto& [t, g] : jp.gpus_by_type) {
      auto it = std::lower_bound(speeds.types().begin(), speeds.types().end(), t);
      if (it == speeds.types().end() || *it != t)
        throw InputError("placement result: job " + std::to_string(j) + " uses unknown type " + t);
      c[it - speeds.types().begin()] += g;
    }
    double v = speeds.speed(static_cast<int>(j), c);
    if (v <= 0) return std::numeric_limits<double>::infinity();
    double f = p.jobs[j].remaining / v;
    if (p.jobs[j].running && c != topo.current_types[j]) f += p.costs.restart_s;
    total += f;
  }
  return total;
}

// --- the scheme ---------------------------------------------------------------------------------

PlacementResult market_match(const PlacementProblem& problem, const std::vector<int>& counts) {
  auto t0 = std::chrono::steady_clock::now();
  PlacementSpeeds speeds(problem);
  check_counts(problem, counts, "the category");
  int J = static_cast<int>(problem.jobs.size());
  std::vector<std::vector<int>> sizes = all_sizes(problem, speeds);
  PlacementTopology topo(problem, speeds);
  Market market(problem, speeds, topo, sizes, work_for_phases(J, 0));
  PlacementResult r;
  if (!market.run(counts) || !market.finish_result(r))
    throw InputError("placement: the category does not fit the cluster's usable GPUs of the "
                     "jobs' allowed types");
  r.categories_evaluated = 1;
  r.work = market.work();
  r.auction_fallbacks = market.fallbacks();
  r.solve_ms = elapsed_ms(t0);
  return r;
}

PlacementResult place_hetero(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed) {
  auto t0 = std::chrono::steady_clock::now();
  if (samples < 1) throw InputError("placement: samples (K) must be at least 1");
  PlacementSpeeds speeds(problem);
  int J = static_cast<int>(problem.jobs.size());
  std::vector<std::vector<int>> sizes = all_sizes(problem, speeds);
  PlacementTopology topo(problem, speeds);
  std::vector<int> counts = seed_counts.empty() && J > 0
                                ? doubling_seed(problem, speeds, topo, sizes)
                                : seed_counts;
  check_counts(problem, counts, "the seed category");
  Market market(problem, speeds, topo, sizes, work_for_phases(J, samples));

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
  market.allow_phase(kWorkPerJob * running + kWorkBase / 4);  // the rest: sampling, improvement
  for (;;) {
    bool any = false;
    for (int c : counts) any = any || c > 0;
    if (!any) break;
    if (!market.may_fit(counts)) {
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
    market.allow_phase(kWorkPerSample * static_cast<long>(samples));
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
  best.solve_ms = elapsed_ms(t0);
  return best;
}

}  // namespace ringsched
