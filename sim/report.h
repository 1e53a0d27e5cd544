// SPDX-License-Identifier: GPL-2.0-or-later
// ringsim output: the JSON report of DESIGN 5, a terse terminal table, and gnuplot plots.
#pragma once

#include <string>
#include <vector>

#include "engine.h"
#include "policies.h"

namespace ringsim {

struct RunInfo {
  std::string trace, cluster, profiles;
  int gpus = 0;
  long jobs = 0;
  double round_s = 0, plan_gap_s = 0;
  // The policies' settings: the restart cost, the seed and combined's own (fairness, late
  // factor, lend horizon), so that runs with other settings can be told apart.
  PolicyOptions options;
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
