// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the planner: the steps that call the model-similarity and SPB parts.
#pragma once

#include <string>
#include <vector>

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

}  // namespace ringsched
