// SPDX-License-Identifier: GPL-2.0-or-later
// The node phase of the type-level search (placement_search.h): the incumbent packed onto nodes,
// then repaired where the packing costs more than the type-level finish times promised.
//
// A type-level finish time assumes each type on its fewest nodes. When several jobs want whole
// nodes of a type that has fewer of them free (partial nodes, GPUs held by others), the packing
// must spread one of them, and the node-level optimum may instead give that job another size or
// type, or trade with another job. Each round takes the jobs that lose on the nodes, largest loss
// first, and tries the columns of such a job, and the pairs of columns of it and another job, in
// type-level order, each re-packed and valued on its nodes; a move is only tried while its
// type-level objective (a lower bound of its node-level one) is below the node-level objective
// now. The best move of a round is kept; rounds go on while one helps.
#include <algorithm>
#include <cmath>

#include "placement_search.h"

namespace ringsched {
namespace {

constexpr int kNodeRounds = 16;
constexpr int kTriesPerMove = 6;  // columns (or pairs, per partner) re-packed per losing job

bool clearly_below(double candidate, double now) {
  return candidate < now - 1e-9 * std::max(1.0, std::fabs(now));
}

}  // namespace

double TypeLevelSearch::pack(std::vector<std::vector<std::pair<int, int>>>& package,
                             std::vector<double>& finish, const std::vector<double>* base) {
  size_t n = jobs_.size();
  std::vector<std::vector<int>>& counts = pack_counts_;  // reused: no allocation per trial
  counts.resize(p_.jobs.size());
  pack_loss_.assign(p_.jobs.size(), 0.0);
  for (size_t i = 0; i < n; ++i) {
    int j = jobs_[i];
    const int* c = columns_[i].at(incumbent_[i], T_);
    counts[j].assign(c, c + T_);
    pack_loss_[j] = spread_loss(static_cast<int>(i), incumbent_[i]);
  }
  if (base) work_ += static_cast<long>(n + topo_.nodes.size());
  if (!packer_->pack(counts, pack_loss_, package)) return INFINITY;
  finish.resize(n);
  double total = 0;
  for (size_t i = 0; i < n; ++i) {
    int j = jobs_[i];
    // A job the trial left where the incumbent's packing put it finishes as it did there.
    finish[i] = base && package[j] == package_[j]
                    ? (*base)[i]
                    : placement_package_finish(p_, speeds_, topo_, j, package[j]);
    total += finish[i];
  }
  return total;
}

void TypeLevelSearch::improve_on_nodes(const NodePacker& packer) {
  if (!has_incumbent()) return;
  packer_ = &packer;
  size_t n = jobs_.size();
  // What a column loses when spread over one node more than its fewest (the packer's order) is
  // worked out when packed (spread_loss), not kept for every column; the work counted is as if.
  for (size_t i = 0; i < n; ++i) work_ += columns_[i].size();
  std::vector<double> finish, trial_finish;
  std::vector<std::vector<std::pair<int, int>>> trial;
  double now = pack(package_, finish, nullptr);
  for (int round = 0; round < kNodeRounds && !out_of_work(); ++round) {
    std::vector<int> losers;
    auto lost = [&](int i) { return finish[i] - columns_[i].finish[incumbent_[i]]; };
    for (size_t i = 0; i < n; ++i)
      if (clearly_below(columns_[i].finish[incumbent_[i]], finish[i]))
        losers.push_back(static_cast<int>(i));
    if (losers.empty()) break;
    std::stable_sort(losers.begin(), losers.end(), [&](int a, int b) { return lost(a) > lost(b); });
    double best = now;
    std::vector<std::pair<int, int>> best_move;  // (job index, column)
    // Values a move (job index, column) pairs on the nodes; restores the incumbent after.
    auto trial_move = [&](const std::vector<std::pair<int, int>>& move) {
      std::vector<int> before;
      for (const auto& [i, k] : move) {
        before.push_back(incumbent_[i]);
        incumbent_[i] = k;
      }
      double total = pack(trial, trial_finish, &finish);
      for (size_t m = move.size(); m-- > 0;) incumbent_[move[m].first] = before[m];
      if (clearly_below(total, best)) {
        best = total;
        best_move = move;
      }
    };
    std::vector<int> pool(T_), rest(T_);
    for (int i : losers) {
      if (out_of_work()) break;
      const Columns& ci = columns_[i];
      const int* own = ci.at(incumbent_[i], T_);
      double others = best_ - ci.finish[incumbent_[i]];  // type-level objective of the rest
      for (int t = 0; t < T_; ++t) pool[t] = free_[t] + own[t];
      int tries = 0;
      for (int k = 0; k < ci.size() && tries < kTriesPerMove; ++k) {
        if (!clearly_below(others + ci.finish[k], best)) break;
        if (k == incumbent_[i] || !fits(ci.at(k, T_), pool)) continue;
        ++tries;
        trial_move({{i, k}});
      }
      for (size_t b = 0; b < n && !out_of_work(); ++b) {
        if (static_cast<int>(b) == i) continue;
        const Columns& cb = columns_[b];
        const int* hers = cb.at(incumbent_[b], T_);
        double rest_obj = others - cb.finish[incumbent_[b]];
        for (int t = 0; t < T_; ++t) pool[t] = free_[t] + own[t] + hers[t];
        tries = 0;
        for (int x = 0; x < ci.size() && tries < kTriesPerMove; ++x) {
          ++work_;
          if (!clearly_below(rest_obj + ci.finish[x] + cb.finish[0], best)) break;
          const int* c = ci.at(x, T_);
          if (!fits(c, pool)) continue;
          for (int t = 0; t < T_; ++t) rest[t] = pool[t] - c[t];
          for (int y = 0; y < cb.size(); ++y) {
            ++work_;
            if (!clearly_below(rest_obj + ci.finish[x] + cb.finish[y], best)) break;
            if (!fits(cb.at(y, T_), rest)) continue;
            if (x == incumbent_[i] && y == incumbent_[static_cast<int>(b)]) continue;
            ++tries;
            trial_move({{i, x}, {static_cast<int>(b), y}});
            break;  // the fastest partner column for this x
          }
        }
      }
    }
    if (best_move.empty()) break;
    for (const auto& [i, k] : best_move) apply(i, k);
    now = pack(package_, finish, nullptr);
  }
  node_objective_ = now;
}

}  // namespace ringsched
