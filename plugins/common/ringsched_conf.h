// SPDX-License-Identifier: GPL-2.0-or-later
// ringsched.conf (see ringsched.conf(5)): Slurm-style key=value lines, '#' comments, keys
// case-insensitive. Every bad line is reported with file:line; the plugins then run neutral
// and slurmctld keeps running. No Slurm here, so the tests link it directly. What the plugins
// plan with, built from it, is ConfiguredPolicy (configured_policy.h).
#pragma once

#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/planner.h"

namespace ringsched {

struct RingschedConf {
  std::string path;                    // the file read
  PlannerConfig planner;               // Policy, RestartCost, MinGainMultiple, MinResizeInterval, Samples, Seed,
                                       // Preempt, ...
  int replan_interval_s = 30;          // ReplanInterval
  int min_replan_gap_s = 2;            // MinReplanGap: no two rounds closer, events included
  int reshape_interval_s = 60;         // ReshapeInterval: at most one reshape per pending job
  int resize_hold_s = 90;              // ResizeHold: a job ringrun requeued at a requested size is its own
  std::vector<std::string> profile_files;  // ProfileFiles (comma separated; relative to the file)
  std::string feature_file;            // FeatureFile (optional; enables similarity)
  std::string reference_type = "k80";  // ReferenceType (similarity's reference)
  int similarity_k = 0;                // SimilarityK; 0: auto (fit_similarity on the profiles)
  std::string plan_file;               // PlanFile ("" : the plugin picks a default)
  int max_gpus_per_job = 64;           // MaxGpusPerJob
  double default_runtime_s = 3600;     // DefaultRuntime: for jobs without --ring-iters nor limit
  bool resize_running = true;          // ResizeRunning: record + signal resizes of running jobs

  // Throws InputError(path, line, what) for the first bad line (unknown key, bad value, value out
  // of bounds) and InputError(path, 0, ...) when the file cannot be read or lacks ProfileFiles.
  static RingschedConf load(const std::string& path);
  static RingschedConf parse(const std::string& text, const std::string& path);
};

}  // namespace ringsched
