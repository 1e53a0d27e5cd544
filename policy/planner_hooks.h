// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the planner: the steps that call the model-similarity and SPB parts, and the rules
// for running jobs when the plan may not stop them (PlannerConfig::preempt off).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ringsched/free_gpus.h"
#include "ringsched/placement.h"
#include "ringsched/planner.h"

namespace ringsched {

// Registers speed predictions for (model, type) pairs that have no measurements, for the models
// of `jobs`, from the most similar known models.
// Returns the number of (model, type) pairs predicted.
int predict_unseen_models(ThroughputModel& model, const SimilarityModel& similarity,
                          const std::vector<Job>& jobs, const std::vector<std::string>& types);

// Under contention (jobs wait for GPUs), an SPB-capable job that runs on one GPU type switches
// to the rotating partial-depth pattern when that makes its useful iterations faster: it then
// finishes sooner and hands its GPUs on. Sets jp.spb_depth and jp.predicted_iters_per_s.
void apply_spb(const ThroughputModel& model, const Job& job, bool contention, JobPlan& jp);

// The types of `types` on which fixed-size `job` may start on n GPUs when it will not be moved
// once started: those where its run time exceeds its fastest type's by no more than it has
// waited (ski rental: it waits at most as long as a slower type would cost it). Without this, a
// 1-GPU job started on a K80 five minutes into a 2,000-job burst ran 35.8 hours where it takes
// 5.7 alone (bench/ringsim_burst.sh).
std::vector<std::string> types_worth_starting_on(const ThroughputModel& model, const Job& job,
                                                 const std::vector<std::string>& types, int n,
                                                 double waited_s);

// A running job that the placement `pr` left out (no room for its new size) and that the plan may
// not stop (PlannerConfig::preempt off, or Job::stoppable false) goes on running where it is, as
// it would under Slurm. Clears in `pr`, on each
// node it holds until its GPUs there are free again, the placements of pending jobs put there,
// then of running jobs moved there (those go back to the GPUs they hold, in turn). `placed[k]`
// is the index in `jobs` of the placement's job k; `free` holds the GPUs before `pr` is applied.
// Returns, per k, whether job k's placement was cleared so.
std::vector<char> hold_back_for_running(const std::vector<Job>& jobs, const std::vector<int>& placed,
                                        const FreeGpus& free, bool preempt, PlacementResult& pr);

// Two running jobs that the placement gave each other's GPUs per type (one 8 K80s -> 4, the
// other 4 -> 8) get their placements exchanged back, where the count step counted them alike (or,
// two jobs of one model counted apart, the exchange takes neither closer to its count) and each
// may hold the other's: both keep the shape they run at. The placement's sum of finish times
// gives the larger share to the job with more work left, and that flips as the larger share
// works it down: on Gavel's Philly trace two transformer jobs of weeks swapped every 600 s (682
// restarts each in one run), with the cluster's throughput the same either way. Only the
// allocations (nodes, types, totals) are exchanged; speeds and finish times in `pr` stay as the
// placement valued them (the planner reads the allocations). `now[k]`: GPUs per type job k holds
// (empty: not running). Returns the number of pairs exchanged.
int undo_placement_swaps(const PlacementProblem& pp, const std::vector<int>& seed_counts,
                         const std::vector<std::map<std::string, int>>& now, PlacementResult& pr);

}  // namespace ringsched
