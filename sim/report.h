// SPDX-License-Identifier: GPL-2.0-or-later
// ringsim output: the JSON report of DESIGN 5, a terse terminal table, and gnuplot plots.
#pragma once

#include <string>
#include <vector>

#include "engine.h"

namespace ringsim {

struct RunInfo {
  std::string trace, cluster, profiles;
  int gpus = 0;
  long jobs = 0;
  double round_s = 0, restart_s = 0, plan_gap_s = 0;
  // combined's settings (PolicyOptions), so that runs with other settings can be told apart
  double fairness = 0, late_factor = 0, lend_horizon_s = 0, lend_arrivals = 0;
  unsigned seed = 0;
};

// One JSON object: {"ringsim": {run info}, "policies": {name: {metrics..., "jobs": [rows]}}}.
// Written with jansson; throws InputError if the file cannot be written.
void write_json_report(const std::string& path, const RunInfo& info, const std::vector<SimResult>& results,
                       bool job_rows);

// Fixed-width table, one line per policy, plus ratios against the first policy.
std::string format_table(const std::vector<SimResult>& results);

// Writes DIR/jct_cdf, DIR/gpu_util and DIR/job_gpus_<policy> as .png and .svg (gnuplot), with the
// .dat files and the .gp script beside them. Returns false (and says why in *error) if gnuplot
// is missing or fails; the data files are still there.
bool write_plots(const std::string& dir, const std::vector<SimResult>& results, std::string* error);

}  // namespace ringsim
