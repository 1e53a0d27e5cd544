// SPDX-License-Identifier: GPL-2.0-or-later
// Private to the placement: the type-level search of place_hetero (see placement.cpp for the
// scheme), split by phase -- the columns (placement_columns.cpp), the prices and the dive
// (placement_prices.cpp), the local search and the branch and bound (placement_search.cpp), the
// packing onto nodes and its repair (placement_nodes.cpp).
//
// The type-level problem: every job that runs takes one column, a GPU count per type whose total
// is one of its sizes, on its allowed types (one type when it may not mix); the GPUs of each type
// taken stay within its usable GPUs; minimise the sum of the columns' type-level finish times
// (placement_type_level_finish(): the locality each type's fewest nodes cannot avoid, the restart
// cost of a running job whose per-type counts change).
#pragma once

#include <limits>
#include <map>
#include <memory>
#include <vector>

#include "placement_internal.h"

namespace ringsched {

// The search stops proving once no assignment can beat the incumbent by more than this share: a
// hundredth of a percent, far below the goals and the model's accuracy, for far fewer branches.
constexpr double kTypeLevelTolerance = 1e-4;

class TypeLevelSearch {
 public:
  // `runs`: the jobs that must run (others wait). `seed`: a count per job (0: none) around which
  // the columns are kept when there is no work for all of them. `budget`: the work (columns
  // valued or visited) that all phases together may do.
  TypeLevelSearch(const PlacementProblem& p, PlacementSpeeds& speeds, const PlacementTopology& topo,
                  const CategoryFit& fit, const std::vector<std::vector<int>>& sizes,
                  const std::vector<int>& runs, const std::vector<int>& seed, long budget);

  // --- phases, in the order place_hetero runs them ---
  // Every job's columns (placement_columns.cpp); false if some job has none.
  bool make_columns();
  // A first assignment (placement_prices.cpp): jobs by regret at the current prices take their
  // cheapest column (finish + prices) that fits what is left while the jobs after them can still
  // fit. False if it ends with a job that fits nowhere.
  bool dive();
  // Prices per type (placement_prices.cpp) maximising the Lagrangian bound (projected
  // subgradient ascent); best responses that fit become the incumbent.
  void price();
  // Local search on the incumbent (placement_search.cpp): one job's best column in what is free
  // plus what it holds, then the best joint columns of every pair of jobs, while they help.
  void improve();
  // Branch and bound on the incumbent with the Lagrangian bound (placement_search.cpp): proves
  // it optimal within kTypeLevelTolerance (proven()) or finds a better one, within the work left.
  void branch_and_bound();
  // The incumbent onto nodes (placement_nodes.cpp), then moves of the jobs that lose on the
  // nodes (other columns of one, pairs with another), each re-packed, while they help.
  void improve_on_nodes(const NodePacker& packer);

  // --- the outcome ---
  bool has_incumbent() const { return !incumbent_.empty(); }
  // Job j's per-type counts in the incumbent (empty: it waits).
  std::vector<int> counts_of(int j) const;
  // After improve_on_nodes(): per job of the problem, (topology node, GPUs).
  const std::vector<std::vector<std::pair<int, int>>>& package() const { return package_; }
  double objective() const { return best_; }
  // A lower bound on the type-level optimum; -infinity when the columns are not all the count
  // vectors the jobs may take (then none is known).
  double bound() const;
  bool proven() const { return proven_ && complete_; }
  long work() const { return work_; }
  // Complete assignments the phases built (dives, best responses that fit, search leaves).
  int assignments() const { return assignments_; }
  // The optional phases (price, improve, branch and bound, the node moves) stop at the end of
  // their share (allow()) or of the budget less a reserve for the second dive and the node
  // phase's look at every column, so that the whole stays within the budget.
  bool out_of_work() const { return work_ >= std::min(limit_, budget_ - reserve_); }
  // The phase that starts now may do `share` of the budget's work (on top of what is done).
  void allow(double share) {
    limit_ = work_ + static_cast<long>(share * static_cast<double>(budget_));
  }

 private:
  // Columns that add_columns() makes: count vectors and their seconds per iteration each type
  // on its fewest nodes, for one model, allowed types and mixing rule. The same for every job
  // that shares those (thousands of jobs, a few tens of models), so valued once: one block per
  // (size, allowance), a shape per list of them (a job's sizes and window).
  struct ColumnBlock {
    std::vector<int> counts;     // T per column, in the order made
    std::vector<double> t_iter;    // per column
    std::vector<double> t_spread;  // on one node more (the node phase's spread loss)
    bool complete = true;          // every count vector of the size
  };
  // A job's columns kept from its shape's (those no other beats on both counts and finish
  // time), sorted by finish time: the shape's columns in that order, whether each ties with the
  // next on finish time, those kept and their counts. Another job of the shape whose finish
  // times sort the same way (ties alike) keeps the same columns.
  struct Pruning {
    std::vector<int> order;
    std::vector<char> tied_next;
    std::vector<int> kept;       // shape columns
    std::vector<int> counts;     // T per kept column
    std::vector<unsigned> sets;  // per kept column: the types it uses, as bits (t % 32)
  };
  struct ColumnShape {
    std::vector<int> counts;        // T per column, the blocks' one after the other
    std::vector<double> t_iter, t_spread;
    long made = 0;                  // columns valued (work), as if made for this job alone
    bool complete = true;
    std::vector<std::unique_ptr<Pruning>> prunings;  // the last is tried first
  };
  struct Columns {  // one job's columns, sorted by finish time
    const Pruning* kept = nullptr;  // which of its shape's and their counts
    std::vector<double> finish;
    int shape = -1;  // in shapes_
    int size() const { return static_cast<int>(finish.size()); }
    const int* at(int k, int T) const { return kept->counts.data() + static_cast<size_t>(k) * T; }
  };

  // columns
  void add_columns(int job, int n, long allowance, ColumnBlock& out);
  int shape_of(int i, const std::vector<std::pair<int, long>>& calls);
  void columns_from_shape(int i, int shape);
  double spread_time(int i, int k) const;  // column k of job i on one node more
  double spread_loss(int i, int k) const;  // what that costs it over its finish time (0: no way)
  // prices
  double reduced(int i, int k) const {  // finish + prices . counts of column k of job i
    const int* c = columns_[i].at(k, T_);
    double r = columns_[i].finish[k];
    for (int t = 0; t < T_; ++t) r += price_[t] * c[t];
    return r;
  }
  std::vector<int> regret_order() const;
  void set_incumbent(const std::vector<int>& pick);
  // search
  bool fits(const int* c, const std::vector<int>& room) const {
    for (int t = 0; t < T_; ++t)
      if (c[t] > room[t]) return false;
    return true;
  }
  bool rest_fits(size_t depth, const std::vector<int>& room) const;
  bool improve_one(int i);
  bool improve_pair(int a, int b);
  void apply(int i, int k);
  void search(size_t depth, double partial);
  // nodes
  // The incumbent packed; its node-level objective. A trial (not the result) counts as work;
  // `base`: for a trial, the finish times of package_ (jobs packed as there keep them).
  double pack(std::vector<std::vector<std::pair<int, int>>>& package, std::vector<double>& finish,
              const std::vector<double>* base);

  const PlacementProblem& p_;
  PlacementSpeeds& speeds_;
  const PlacementTopology& topo_;
  const CategoryFit& fit_;
  const std::vector<std::vector<int>>& sizes_;
  std::vector<int> jobs_;  // the jobs that run; index i below is into this list
  std::vector<int> seed_;
  int T_;
  long budget_;
  long work_ = 0;
  long reserve_ = 0;  // every job's columns, twice
  long limit_ = std::numeric_limits<long>::max();
  int assignments_ = 0;
  bool complete_ = true;  // every count vector of every job is a column
  std::vector<Columns> columns_;
  std::vector<ColumnShape> shapes_;
  std::map<std::vector<long>, int> shape_index_;  // key: model, mixing, allowed types, calls
  std::vector<ColumnBlock> blocks_;
  std::map<std::vector<long>, int> block_index_;  // key: model, mixing, allowed types, call
  std::vector<double> scratch_finish_;
  std::vector<int> scratch_finite_;
  std::vector<double> price_;  // per type
  double bound_ = -std::numeric_limits<double>::infinity();
  bool proven_ = false;
  // The incumbent: a column per job, its objective, the GPUs per type it leaves free.
  std::vector<int> incumbent_;
  double best_ = std::numeric_limits<double>::infinity();
  std::vector<int> free_;
  std::vector<int> pool_, rest_;  // scratch of the moves
  // The node phase.
  const NodePacker* packer_ = nullptr;
  std::vector<std::vector<std::pair<int, int>>> package_;
  std::vector<std::vector<int>> pack_counts_;  // scratch of pack()
  std::vector<double> pack_loss_;
  double node_objective_ = std::numeric_limits<double>::infinity();
  // Branch and bound state.
  struct Node {
    std::vector<int> order;                   // jobs by depth
    std::vector<std::vector<int>> ranked;     // per job: columns by reduced cost
    std::vector<std::vector<double>> ranked_cost;  // their reduced costs
    std::vector<double> floor_after;          // per depth: sum of the best reduced costs from there
    // Per depth: Hall's condition for the jobs from there on at their smallest sizes, as (set of
    // types, GPUs the jobs allowed only those types need), the sets that bind.
    std::vector<std::vector<std::pair<unsigned, long>>> need_sets;
    std::vector<std::vector<int>> rooms;      // per depth: GPUs per type left
    std::vector<int> pick;
    long stop = 0;  // work at which out_of_work() becomes true (fixed while it searches)
    bool aborted = false;
  } bb_;
};

}  // namespace ringsched
