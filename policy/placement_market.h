// SPDX-License-Identifier: GPL-2.0-or-later
// Private to the placement: the seed paper's market (place_market, market_match), split by phase
// -- the auction (placement_auction.cpp), the local improvement (placement_market_improve.cpp),
// the sampling scheme and the result (placement_market.cpp). See placement_market.cpp for the
// algorithm.
#pragma once

#include <deque>
#include <limits>
#include <vector>

#include "placement_internal.h"

namespace ringsched {

// Work budget of the market's phases (package valuations), see placement_market_work_budget().
constexpr long kMarketWorkPerJob = 96;
constexpr long kMarketWorkPerSample = 400;
constexpr long kMarketWorkBase = 30000;
// Exact group moves only on clusters of at most this many count vectors.
constexpr long kMarketExactStates = 4096;
// Mixes enumerated by a package search / by the local improvement, at most.
constexpr long kMarketExhaustiveVectors = 64;
constexpr long kMarketLocalMixes = 256;

// The work the phases of place_market may start: the auction, the samples, the improvement.
long market_work_for_phases(int jobs, int samples);

// GPUs of one type at one price, free (holder -1) or held by one job.
struct Lot {
  double price;
  int holder;
  int count;
};

// The market and the local improvement on one problem. Its state -- lots per type, per-type
// counts and finish time per job -- can be saved and restored, so that a category change is
// evaluated in place and undone when it does not help.
class Market {
 public:
  Market(const PlacementProblem& p, PlacementSpeeds& speeds, const PlacementTopology& topo,
         const CategoryFit& fit, const std::vector<std::vector<int>>& sizes, long work_budget);

  long work() const { return work_; }
  bool out_of_work() const { return work_ >= std::min(budget_, limit_); }
  // Work allowed to the phase that starts now (on top of what is done), within the budget.
  void allow_phase(long work) { limit_ = work >= budget_ - work_ ? budget_ : work_ + work; }
  int fallbacks() const { return fallbacks_; }
  const std::vector<int>& counts() const { return state_.counts; }
  // Whether the current category with `changes` (job, new count) applied may be matched.
  bool may_fit_changes(const std::vector<std::pair<int, int>>& changes) const {
    return fit_.fits_changes(state_.need, state_.counts, changes);
  }

  // --- the auction (placement_auction.cpp) ---
  // The market from scratch on `counts`; false if the category cannot be matched.
  bool run(const std::vector<int>& counts);
  // Incremental evaluation of a category change: the jobs in `changes` (job, new count) give up
  // their packages and bid again at the current prices. False if the auction does not settle
  // within its bid cap; the state is then partial and must be restored by the caller.
  bool rerun(const std::vector<std::pair<int, int>>& changes);
  // Sum of the finish times (per-type counts, unavoidable locality) of the jobs that run.
  double objective() const;

  struct State {
    std::vector<std::vector<Lot>> lots;  // per type, by (price, holder), free first
    std::vector<int> holding;            // J x T
    std::vector<int> free;               // per type: GPUs no job holds
    std::vector<long> need;              // CategoryFit's need of the category
    std::vector<double> finish;          // per job
    std::vector<char> assigned;
    std::vector<int> counts;
    std::vector<int> job_bids;
  };
  const State& state() const { return state_; }
  void restore(const State& s) { state_ = s; }

  // --- the local improvement (placement_market_improve.cpp) ---
  // One job's best choice, then (exact moves) the best joint choice of groups of two, three, ...
  // jobs, while it helps, within the work budget.
  void improve();

  // --- the result (placement_market.cpp) ---
  // Node packing and the result rows; false if the GPUs do not fit the nodes.
  bool finish_result(PlacementResult& out);

 private:
  struct Bid {
    std::vector<int> counts;  // per type
    double utility = -std::numeric_limits<double>::infinity();
    double second = -std::numeric_limits<double>::infinity();
    double finish = 0;
  };
  // (size, mix) choices of one job with their finish times, flat: T counts per column.
  struct Columns {
    std::vector<int> counts;
    std::vector<double> finish;
    std::vector<long> index;  // position in the cluster's count space (exact moves only)
    size_t size() const { return finish.size(); }
    const int* at(int k, int T) const { return counts.data() + static_cast<size_t>(k) * T; }
  };
  struct JobTable {
    Columns columns;
    std::vector<std::pair<double, int>> best_within;  // per count vector: (finish, column)
  };

  int hold(int j, int t) const { return state_.holding[static_cast<size_t>(j) * T_ + t]; }
  int& hold(int j, int t) { return state_.holding[static_cast<size_t>(j) * T_ + t]; }

  // auction
  void reset(const std::vector<int>& counts);
  bool auction(std::deque<int>& queue, long bid_cap);
  double finish_time(int j, const std::vector<int>& c);
  bool best_package(int j, bool free_only, Bid& bid);
  template <typename F>
  void local_search(int j, const std::vector<int>& types, int n, std::vector<int> start,
                    double start_u, F& evaluate);
  bool feasible_flow(const std::vector<int>& order);
  static bool lot_before(const Lot& a, const Lot& b);
  void insert_lot(int t, const Lot& lot);
  void release(int j);
  void take(int j, const Bid& bid, std::deque<int>& queue, bool free_only = false);

  // local improvement
  void value_columns(int j, const std::vector<int>& pool, Columns& out);
  bool exact_moves() const;
  long index_of(const int* c) const;
  const JobTable& table(int j);
  void reassign(int j, const Columns& cols, int k);
  bool improve_one(int j);
  bool improve_group(const std::vector<int>& group);
  void search_group(size_t i, long left, double sum);

  const PlacementProblem& p_;
  PlacementSpeeds& speeds_;
  const PlacementTopology& topo_;
  const CategoryFit& fit_;
  const std::vector<std::vector<int>>& sizes_;
  int T_, J_;
  long budget_;
  long work_ = 0;
  long limit_ = std::numeric_limits<long>::max();  // end of the current phase's work
  int fallbacks_ = 0;
  std::vector<std::vector<int>> types_;  // per job: allowed types
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
};

}  // namespace ringsched
