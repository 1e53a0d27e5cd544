// SPDX-License-Identifier: GPL-2.0-or-later
// Scheduling policies ringsim compares: ours through the shared Planner, and four baselines.
//
// Baselines (each documented in ringsim(1) and docs/ringsim.md). Every policy, ours included,
// picks nodes with the policy library's free-GPU allocator (ringsched/free_gpus.h): the smallest
// node that holds the job, else the nodes with the most free GPUs first.
//  fifo      Stock Slurm: first come first served with EASY backfill, GPU type ignored. A job runs
//            at its requested size on any free GPUs; a ring spread over types runs at the
//            slowest type's speed. Backfill may start
//            a later job if it does not delay the head job's reservation, using exact run-time
//            estimates (kinder than real time limits). Never preempts or resizes.
//  tiresias  Tiresias 2D-LAS: jobs ordered by attained service (GPU-seconds) in discretised
//            queues (thresholds 1 and 10 GPU-hours), FIFO inside a queue; preemptive; requested
//            sizes; type-blind placement that keeps running jobs where they are.
//  optimus   Optimus-like: every job gets its minimum, then the free GPUs go one at a time to the
//            job with the best marginal gain R/v(n) - R/v(n+1) (speeds averaged over the
//            cluster's types); type-blind placement; a running job's size changes at most once per
//            --min-resize-interval.
//  besttype  Heterogeneity-aware greedy: FIFO order at requested sizes, each job on the fastest
//            type for its model that has room, otherwise the next fastest; jobs that do not fit
//            wait while later ones go (no reservation); never preempts or resizes.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine.h"
#include "ringsched/free_gpus.h"
#include "ringsched/planner.h"
#include "ringsched/similarity.h"

namespace ringsim {

std::unique_ptr<SchedulingPolicy> make_fifo();
std::unique_ptr<SchedulingPolicy> make_tiresias();
std::unique_ptr<SchedulingPolicy> make_optimus(double min_resize_interval_s);
std::unique_ptr<SchedulingPolicy> make_besttype();

// Ours: the Planner of the policy library. `window` bounds the pending jobs passed per round (the
// first ones in submit order; 0: all) so a huge queue does not make each round quadratic.
std::unique_ptr<SchedulingPolicy> make_planner_policy(const std::string& name, ringsched::PlannerConfig cfg,
                                                      const ringsched::ThroughputModel& model, int window,
                                                      std::shared_ptr<const ringsched::SimilarityModel> similarity);

struct PolicyOptions {
  ringsched::ResizeCosts costs;
  int samples = 64;
  unsigned seed = 1;
  int window = 0;
  double fairness = ringsched::PlannerConfig{}.fairness;  // the planner's finish-time fairness bound
  double late_factor = ringsched::PlannerConfig{}.late_factor;  // the planner's starvation bound
  double lend_horizon_s = ringsched::PlannerConfig{}.lend_horizon_s;  // combined's lend horizon
  double lend_arrivals = ringsched::PlannerConfig{}.lend_arrivals;    // ... in arrival gaps at least
  double replace_slower = ringsched::PlannerConfig{}.replace_slower;  // combined's re-placement
  double fair_placement = ringsched::PlannerConfig{}.fair_placement;  // ... its floors' charge
  // Model similarity for the planner's unseen models (null: none; the planner then treats them
  // as it does without similarity).
  std::shared_ptr<const ringsched::SimilarityModel> similarity;
};
// Names: fifo, tiresias, optimus, besttype (baselines); static, doubling, hetero, combined,
// combined+spb, combined-naive, combined-nopreempt, combined-noguard, combined-nohorizon (ours:
// the planner's policies; combined+spb turns on SPB packing; combined-naive turns off model
// similarity; combined-nopreempt never stops a running job nor moves a fixed-size one, as the
// plugin with Preempt=no; combined-noguard is combined with TailGuard=no, combined-nohorizon
// with PlacementHorizon=no).
// Throws InputError for an unknown name.
std::unique_ptr<SchedulingPolicy> make_policy(const std::string& name, const PolicyOptions& opt,
                                              const ringsched::ThroughputModel& model);
std::vector<std::string> policy_names();

}  // namespace ringsim
