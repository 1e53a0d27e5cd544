// SPDX-License-Identifier: GPL-2.0-or-later
// Doubling heuristic for elastic ring jobs (DESIGN 3.2; Capes et al., arXiv 1908.08082) and the
// exact dynamic programme for the static one-round problem it approximates.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ringsched/model.h"

namespace ringsched {

// One job as the doubling heuristic sees it: a speed curve on one pool of GPUs.
struct DoublingJob {
  double remaining = 0;        // R_j, iterations
  int min_gpus = 1;            // a power of two for elastic jobs
  int max_gpus = 1;
  bool elastic = true;         // inelastic jobs get exactly `requested`
  int requested = 1;
  bool running = false;        // running jobs pay the restart cost when resized
  // False for a running job that whoever carries out the plan cannot stop (Slurm's plugin
  // resizes elastic jobs through ringrun but never preempts): step 1 admits such jobs at their
  // base before any waiting job, so the round never plans them to wait.
  bool stoppable = true;
  int current_gpus = 0;        // size it runs at now (running only)
  double last_resize_s = -1e18;
  std::function<double(int)> speed;  // iterations/s on n GPUs; 0: cannot run on n
  // Ours, beyond the paper: finish-time fairness. fair_time_s is the run time left within which
  // the job still finishes by its fair deadline (bound x its run time alone at its requested
  // size, counted from submission; <= 0: already late; infinite: no deadline). After admission
  // and before the doubling, GPUs left over go first to the jobs that would miss it, the
  // furthest behind first, one faster power of two at a time up to fair_max_gpus (its
  // requested size).
  double fair_time_s = std::numeric_limits<double>::infinity();
  int fair_max_gpus = 0;
  // A job past that deadline at its base size (it cannot finish within the bound even if it
  // started now), or one that a hold for the minimum interval would make late by more than half
  // its time alone (the planner sets it, for running jobs as if they waited). Hysteresis does not
  // hold a running job at its size for a small gain when that hold would keep a starving job
  // waiting or stop a starving running one; only the interval rule does.
  bool starving = false;
  // Within the minimum interval, the interval rule holds this running job only where the hold
  // keeps no starving job waiting (starves()) and squeezes no running job within its own request
  // on its set of types (type_set; squeezes_within_request()). The planner sets it for a job it
  // grew above its requested size, with min_gpus at that size and max_gpus at its current one:
  // lent GPUs come back for a starving arrival or for a job that asked for them, and nothing
  // else moves within the interval.
  bool interval_yields = false;
  // Within the minimum interval but past the grace after its restart, a running elastic job
  // below its requested size (request()) that the interval rule holds only against a shrink or
  // a stop: it may grow towards its request. The planner sets it (combined), with min_gpus at
  // its current size and max_gpus at the request.
  bool interval_grows = false;
  // A running job that the planner's starvation bound admitted at a raised size (it would finish
  // too late at its minimum). Step 1 admits it before the waiting jobs that are not starving,
  // wherever the policy order puts them: an arrival that is not late does not stop a late job.
  // A starving waiting job still comes first where the order says so. Without it, a late 4-GPU
  // yolov3 job of 33,600 s on 4-GPU T4 nodes was stopped four times by shorter arrivals.
  bool admitted_late = false;
  // Ours (combined): which set of GPU types a running job runs on, numbered by the caller; -1:
  // none (waiting, or a caller that lends nothing back). GPUs a job holds above its requested
  // size are lent: step 3 takes them back (lets the job shrink) before it stops a running job
  // within its own request on the same set of types. Without it a 4-GPU job of 12.6 hours was
  // stopped six times by arrivals of minutes while jobs that asked for 1 GPU held 4-8 for their
  // gains (p99 JCT 1.053x Tiresias's, phillyd v100x4 L0.5 s5). Only within one set: the count
  // does not see types, and on K80 + V100 nodes GPUs given back across types let a late job
  // start on K80s instead of waiting 52 s for V100s; it ran there 13 hours (avg JCT +28% on that
  // run; docs/combined-fairness.md).
  int type_set = -1;
  // Ours (combined; PlannerConfig::lend_horizon_s): GPUs above fair_max_gpus are lent, and the
  // next arrival that needs them takes them back, so a size above it is valued as kept for this
  // many seconds and then run at fair_max_gpus after one more restart (DoublingRound::cost()).
  // 0: kept to the end (the paper's doubling).
  double lend_horizon_s = 0;
  // Ours (combined, with lend_horizon_s): seconds from now until the job would have finished had
  // it run alone at its requested size from its submission (infinite: not set). A lender that,
  // shrunk to fair_max_gpus now and restarted, still finishes within it gives its lent GPUs back
  // to a waiting job rather than be held for its gain (DoublingRound::lends_with_lead()).
  double alone_left_s = std::numeric_limits<double>::infinity();
  // Ours (combined, with lend_horizon_s): its run time alone at its requested size (infinite:
  // not set). Within a lender's grace after its restart, a starving job that the grace would
  // make late by more than a small part of it takes lent GPUs back (DoublingRound::starves_short).
  double alone_s = std::numeric_limits<double>::infinity();

  // The size the job asked for as lending counts it: its requested size as the fairness pass
  // counts it, or the base it runs at if that is more (a late job's raised base). GPUs above it
  // are lent (the lend-back, the interval's yield, the lend horizon).
  int request() const { return std::max(fair_max_gpus, requested); }
};

struct DoublingResult {
  std::vector<int> gpus;             // per job, 0 = waits
  std::vector<std::string> reasons;  // per job, one sentence
  std::vector<int> fair_gpus;        // per job, the size the fairness pass raised it to (0: none)
  double objective_s = 0;            // sum over jobs that run of R_j / v_j(n_j) (+ C if resized)
};

// Step 1 gives jobs their minimum in `order` (indices into jobs, first = highest priority) while
// GPUs last; then the fairness pass (DoublingJob::fair_time_s); step 2 doubles the job with the
// largest time improvement per added GPU; step 3 applies hysteresis to running jobs
// (costs.min_gain_multiple, costs.min_interval_s at now_s).
DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s);

// Exact optimum of the static problem: minimise sum R_j / v_j(n_j) with n_j a power of two in
// [min, max] (exactly `requested` for inelastic jobs) and sum n_j <= total_gpus; every job must
// run. Multiple-choice knapsack by dynamic programming, O(jobs * total_gpus * log(max)).
// Throws InputError if the minimums do not fit.
DoublingResult optimal_static(const std::vector<DoublingJob>& jobs, int total_gpus);

}  // namespace ringsched
