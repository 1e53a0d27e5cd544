// SPDX-License-Identifier: GPL-2.0-or-later
// The plan file (PlanFile in ringsched.conf): what priority/ringsched decided in its last round,
// written by the planning thread in slurmctld and read by the ringsched command (ringsched(8)).
// One module owns the format on both sides: it builds the JSON object from the structs below,
// writes it atomically, and reads it back into the same structs. No Slurm here.
//
//   { "generated_at": EPOCH, "config": "ringsched.conf path",
//     "cluster": [ {"node", "gpu_type", "gpus", "free_gpus"}... ],   GPUs the planner may hand out
//     "jobs":    [ {"job_id", "state": "running"|"pending", "model", "min_gpus", "max_gpus",
//                   "elastic", "current_type", "current_gpus", ["iterations", "remaining"],
//                   "admin_comment"}... ],                             the ring jobs it saw
//     "plan":    { "policy", "objective_s", "decision_ms",
//                  "jobs": [ {"job_id", "order", "runs", "gpus", "gpus_by_type": {TYPE: N},
//                             "placement": [ {"node", "gpu_type", "gpus"}... ], "resize",
//                             "spb_depth", "predicted_iters_per_s", "predicted_finish_s",
//                             "reason"}... ] } }                       the planner's Plan
#pragma once

#include <string>
#include <vector>

#include "ringsched/planner.h"

namespace ringsched {

// One GPU node as the planner saw it.
struct PlanFileNode {
  std::string name;
  std::string gpu_type;
  int gpus = 0;
  int free_gpus = 0;  // free, plus those held by ring jobs (the planner's to hand out)
  bool operator==(const PlanFileNode& o) const {
    return name == o.name && gpu_type == o.gpu_type && gpus == o.gpus && free_gpus == o.free_gpus;
  }
};

// One ring job as slurmctld held it when the round began.
struct PlanFileJob {
  std::string job_id;
  bool running = false;        // else pending
  std::string model;
  int min_gpus = 0;
  int max_gpus = 0;
  bool elastic = false;
  std::string current_type;    // running: what it holds; pending: what it asks for
  int current_gpus = 0;
  bool has_progress = false;   // iterations and remaining are known (the policy knows the model)
  double iterations = 0;
  double remaining = 0;        // estimated iterations left
  std::string admin_comment;   // the planner's note (resize_note.h)
};

struct PlanFile {
  long long generated_at = 0;  // epoch seconds of the round
  std::string config;          // the ringsched.conf it ran with
  std::vector<PlanFileNode> cluster;
  std::vector<PlanFileJob> jobs;
  Plan plan;

  const PlanFileJob* job(const std::string& job_id) const;
};

// Writes `plan` to `path`: `path`.tmp (made afresh, mode 0644: every user may read the plan
// with ringsched(8); only its writer may change it), flushed to disk, then renamed over `path`,
// so a reader sees the previous plan or this one, never part of one. Throws InputError(path, 0,
// what failed) and leaves no temporary file behind.
void write_plan_file(const std::string& path, const PlanFile& plan);

// Reads a plan file. Throws InputError(path, line, what) when it cannot be read, is not JSON
// (a truncated file says where it ends), or a field is missing, of the wrong kind or out of
// bounds (named by its place, e.g. "jobs[2].min_gpus").
PlanFile read_plan_file(const std::string& path);

}  // namespace ringsched
