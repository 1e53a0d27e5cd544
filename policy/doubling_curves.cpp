// SPDX-License-Identifier: GPL-2.0-or-later
// The doubling round's input: jobs checked once, speeds evaluated once per size a round asks for.
#include "doubling_round.h"

#include <cstdio>

namespace ringsched {
namespace doubling_internal {

std::string job_name(size_t j) { return "job " + std::to_string(j); }

std::string seconds(double s) {
  char buf[64];
  if (std::fabs(s) >= 100)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

JobCurves::JobCurves(const std::vector<DoublingJob>& jobs, int total_gpus)
    : jobs_(jobs), total_(total_gpus) {
  if (total_gpus < 0)
    throw InputError("doubling: total_gpus must be >= 0, got " + std::to_string(total_gpus));
  if (total_gpus > kMaxTotalGpus)
    throw InputError("doubling: total_gpus over " + std::to_string(kMaxTotalGpus));
  speeds_.resize(jobs.size());
  pow2_speeds_.resize(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    const DoublingJob& job = jobs[j];
    std::string who = job_name(j);
    if (!job.speed) throw InputError(who + ": no speed function");
    if (!(job.remaining >= 0) || !std::isfinite(job.remaining))
      throw InputError(who + ": remaining iterations must be finite and >= 0, got " +
                       number(job.remaining));
    if (job.min_gpus < 1)
      throw InputError(who + ": min_gpus must be >= 1, got " + std::to_string(job.min_gpus));
    if (job.max_gpus < job.min_gpus)
      throw InputError(who + ": min_gpus " + std::to_string(job.min_gpus) + " > max_gpus " +
                       std::to_string(job.max_gpus));
    if (job.elastic && !is_power_of_two(job.min_gpus))
      throw InputError(who + ": min_gpus " + std::to_string(job.min_gpus) +
                       " of an elastic job must be a power of two");
    if (!job.elastic && (job.requested < 1 || job.requested > kMaxTotalGpus))
      throw InputError(who + ": requested must be 1.." + std::to_string(kMaxTotalGpus) +
                       " for an inelastic job, got " + std::to_string(job.requested));
    if (job.running && (job.current_gpus < 1 || job.current_gpus > kMaxTotalGpus))
      throw InputError(who + ": a running job needs current_gpus 1.." +
                       std::to_string(kMaxTotalGpus) + ", got " +
                       std::to_string(job.current_gpus));
    if (!job.stoppable && !job.running)
      throw InputError(who + ": only a running job can be marked not stoppable");
    if (std::isnan(job.last_resize_s))
      throw InputError(who + ": last_resize_s is not a number");
    for (int n : choices(j)) eval(j, n);
    eval(j, base(j));
    if (job.running) eval(j, job.current_gpus);
  }
}

void JobCurves::eval(size_t j, int n) {
  if (speeds_[j].count(n)) return;
  double v = jobs_[j].speed(n);
  if (!(v >= 0) || !std::isfinite(v))
    throw InputError(job_name(j) + ": speed on " + std::to_string(n) + " GPUs is " + number(v) +
                     " iterations/s; must be finite and >= 0");
  speeds_[j][n] = v;
  // Powers of two, the sizes every round asks for most, also go to a flat table.
  if (n > 0 && is_power_of_two(n)) {
    size_t k = log2_of(n);
    if (pow2_speeds_[j].size() <= k) pow2_speeds_[j].resize(k + 1, 0.0);
    pow2_speeds_[j][k] = v;
  }
}

}  // namespace doubling_internal
}  // namespace ringsched
