// SPDX-License-Identifier: GPL-2.0-or-later
// The doubling round's protocol and its first two steps (see doubling_round.h).
#include "doubling_round.h"

#include <algorithm>
#include <queue>

namespace ringsched {
namespace doubling_internal {

DoublingRound::DoublingRound(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                             int total_gpus, const ResizeCosts& costs, double now_s,
                             const DoublingSteps& steps)
    : curves_(jobs, total_gpus), costs_(costs), now_s_(now_s), steps_(steps) {
  if (!(costs.restart_s >= 0) || !std::isfinite(costs.restart_s))
    throw InputError("doubling: restart cost must be finite and >= 0, got " +
                     number(costs.restart_s));
  if (!(costs.min_gain_multiple >= 0) || !std::isfinite(costs.min_gain_multiple))
    throw InputError("doubling: min_gain_multiple must be finite and >= 0");
  if (!(costs.min_interval_s >= 0) || std::isnan(costs.min_interval_s))
    throw InputError("doubling: min_interval_s must be >= 0");
  if (std::isnan(now_s)) throw InputError("doubling: now_s is not a number");
  if (order.size() != jobs.size())
    throw InputError("doubling: order lists " + std::to_string(order.size()) +
                     " jobs, expected every one of the " + std::to_string(jobs.size()));
  std::vector<char> seen(jobs.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    int j = order[k];
    if (j < 0 || static_cast<size_t>(j) >= jobs.size())
      throw InputError("doubling: order[" + std::to_string(k) + "] = " + std::to_string(j) +
                       " is not a job index");
    if (seen[j]) throw InputError("doubling: order lists " + job_name(j) + " twice");
    seen[j] = 1;
  }
  // Admission order (DoublingJob::admitted_late): a running late job moves ahead of the waiting
  // jobs that are not starving and come before it; everyone else keeps the policy order.
  std::vector<int> deferred;  // waiting, not starving, not yet placed in order_
  order_.clear();
  for (int j : order) {
    const DoublingJob& job = jobs[j];
    if (!job.running && !job.starving) {
      deferred.push_back(j);
      continue;
    }
    if (!(job.running && job.admitted_late)) {
      order_.insert(order_.end(), deferred.begin(), deferred.end());
      deferred.clear();
    }
    order_.push_back(j);
  }
  order_.insert(order_.end(), deferred.begin(), deferred.end());
  scratch_.assign(jobs.size(), -1);
  rank_.assign(jobs.size(), 0);
  for (size_t k = 0; k < order.size(); ++k) rank_[order[k]] = static_cast<int>(k);
  // planning_cost() walks every waiting job for each plan it values (thousands per round on a
  // long queue): their constant terms side by side, not spread over the job records
  base_.resize(jobs.size());
  wait_run_.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    base_[j] = curves_.base(j);
    double run = curves_.run_time(j, base_[j]);
    if (curves_.job(j).running) run += costs_.restart_s;  // it resumes later
    wait_run_[j] = run;
  }
}

DoublingResult DoublingRound::run() {
  if (curves_.size() <= static_cast<size_t>(std::max(0, steps_.exact_hysteresis_max_jobs)))
    return run_exact();
  return run_incremental();
}

// Steps 1 and 2 with `pinned` jobs held at their current size.
Assignment DoublingRound::plan_round(const std::vector<char>& pinned) const {
  size_t n = curves_.size();
  Assignment a;
  a.gpus.assign(n, 0);
  a.wait_why.assign(n, WaitWhy::None);
  a.free_at_turn.assign(n, 0);
  a.free = curves_.total();
  auto admit = [&](size_t j, int size) {
    a.free_at_turn[j] = a.free;
    if (curves_.speed(j, size) <= 0) {
      a.wait_why[j] = WaitWhy::NoSpeed;
    } else if (size > curves_.total()) {
      a.wait_why[j] = WaitWhy::TooBig;
    } else if (size > a.free) {
      a.wait_why[j] = WaitWhy::NoRoom;
    } else {
      a.gpus[j] = size;
      a.free -= size;
      ++a.admitted;
    }
  };
  // Step 1: held jobs first, then running jobs that cannot be stopped at their base size, then
  // everyone else at its base size, in policy order.
  for (int j : order_)
    if (pinned[j]) admit(j, curves_.job(j).current_gpus);
  for (int j : order_)
    if (!pinned[j] && !curves_.job(j).stoppable) admit(j, curves_.base(j));
  for (int j : order_)
    if (!pinned[j] && curves_.job(j).stoppable) admit(j, curves_.base(j));

  grant_fair_shares(a, pinned);
  a.low = a.gpus;

  // Step 2: the exact allocation where its table is small, else greedy doubling by time
  // improvement per added GPU and our local improvement.
  if (steps_.exact_allocation && allocate_exactly(a, pinned)) return a;
  using Candidate = std::tuple<double, int, int, int>;  // TI, -rank, job, size when pushed
  std::priority_queue<Candidate> heap;
  auto push = [&](size_t j) {
    int cur = a.gpus[j];
    if (cur <= 0 || !may_resize(j, pinned)) return;
    long next = 2L * cur;
    if (next > curves_.cap(j) || curves_.speed(j, static_cast<int>(next)) <= 0) return;
    double ti = (cost(j, cur) - cost(j, static_cast<int>(next))) / cur;
    if (ti > 0) heap.emplace(ti, -rank_[j], static_cast<int>(j), cur);
  };
  for (size_t j = 0; j < n; ++j) push(j);
  while (!heap.empty()) {
    auto [ti, neg_rank, j, size] = heap.top();
    heap.pop();
    (void)ti;
    (void)neg_rank;
    if (a.gpus[j] != size || size > a.free) continue;  // stale, or no longer fits (free only falls)
    a.gpus[j] = 2 * size;
    a.free -= size;
    push(j);
  }

  if (steps_.local_improvement) improve_locally(a, pinned);
  return a;
}

void DoublingRound::grant_fair_shares(Assignment& a, const std::vector<char>& pinned) const {
  size_t n = curves_.size();
  a.fair.assign(n, 0);
  using Behind = std::tuple<double, int, int, int>;  // run time / fair time, -rank, job, size
  std::priority_queue<Behind> heap;
  auto push = [&](size_t j) {
    const DoublingJob& job = curves_.job(j);
    int cur = a.gpus[j];
    if (cur <= 0 || !may_resize(j, pinned) || !(job.fair_time_s < kInf)) return;
    // The next power of two that runs it faster, stepping over those that do not: an ncf job
    // asked for 4 on T4s, where 2 GPUs run it slower than 1, stayed on 1 (max finish-time
    // fairness 1.010x Tiresias's, efd t4x4 L0.5 s14; docs/combined-fairness.md).
    const long top = std::min(job.fair_max_gpus, curves_.cap(j));
    long next = 2L * cur;
    while (next <= top && !(curves_.speed(j, static_cast<int>(next)) > curves_.speed(j, cur)))
      next *= 2;
    if (next > top || next - cur > a.free) return;
    double t = cost(j, cur);
    double behind = job.fair_time_s > 0 ? t / job.fair_time_s : kInf;
    if (behind > 1) heap.emplace(behind, -rank_[j], static_cast<int>(j), static_cast<int>(next));
  };
  for (size_t j = 0; j < n; ++j) push(j);
  while (!heap.empty()) {
    const int j = std::get<2>(heap.top()), next = std::get<3>(heap.top());
    heap.pop();
    const int cur = a.gpus[j];
    if (next - cur > a.free) continue;  // free only falls: it cannot grow in this pass
    a.gpus[j] = next;
    a.free -= next - cur;
    a.fair[j] = a.gpus[j];
    push(j);
  }
}

}  // namespace doubling_internal
}  // namespace ringsched
