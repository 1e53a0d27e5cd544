// SPDX-License-Identifier: GPL-2.0-or-later
#include "profile_report.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "ringsched/throughput.h"

namespace ringrun {

ProfileReporter::ProfileReporter(const std::string& profiles, double max_factor)
    : profiles_(profiles), max_factor_(max_factor) {
  if (!(max_factor > 1.0 && max_factor <= 100.0))
    throw ringsched::InputError("profile report factor " + std::to_string(max_factor) + " out of range (1, 100]");
}

ReportVerdict ProfileReporter::validate(const std::string& job_model, const std::string& job_type, int job_gpus,
                                        const ringsched::ProfilePoint& m) const {
  ReportVerdict v;
  const std::string type = ringsched::normalize_type(job_type);
  if (m.model != job_model || ringsched::normalize_type(m.gpu_type) != type || m.num_gpus != job_gpus) {
    v.reason = "report for " + m.model + "/" + m.gpu_type + "/" + std::to_string(m.num_gpus) +
               " does not match the job's own " + job_model + "/" + type + "/" + std::to_string(job_gpus);
    return v;
  }
  if (!std::isfinite(m.iters_per_s) || m.iters_per_s <= 0 || m.num_gpus < 1 || m.num_gpus > 4096) {
    v.reason = "measured " + std::to_string(m.iters_per_s) + " iterations/s is not a valid throughput";
    return v;
  }
  ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(profiles_));
  double predicted = tm.iters_per_s(job_model, type, job_gpus);
  if (!(predicted > 0)) {
    v.reason = "no prediction for " + job_model + " on " + type + " in " + profiles_ + " to bound the report";
    return v;
  }
  double ratio = m.iters_per_s / predicted;
  char buf[256];
  if (ratio > max_factor_ || ratio < 1.0 / max_factor_) {
    std::snprintf(buf, sizeof buf, "measured %.4g iterations/s is %.3gx the prediction %.4g (allowed factor %.3g)",
                  m.iters_per_s, ratio, predicted, max_factor_);
    v.reason = buf;
    return v;
  }
  std::snprintf(buf, sizeof buf, "%s on %d x %s: measured %.4g iterations/s, predicted %.4g", job_model.c_str(),
                job_gpus, type.c_str(), m.iters_per_s, predicted);
  v.accepted = true;
  v.reason = buf;
  return v;
}

ReportVerdict ProfileReporter::report(const std::string& report_csv, const std::string& job_model,
                                      const std::string& job_type, int job_gpus,
                                      const ringsched::ProfilePoint& m) const {
  ReportVerdict v = validate(job_model, job_type, job_gpus, m);
  if (!v.accepted) return v;
  // Several jobs may report into one file: append under an exclusive lock, header first.
  int fd = ::open(report_csv.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    v.accepted = false;
    v.reason = "cannot open report file " + report_csv;
    return v;
  }
  ::flock(fd, LOCK_EX);
  std::string text;
  if (::lseek(fd, 0, SEEK_END) == 0) text = "model,gpu_type,num_gpus,global_batch,iters_per_s\n";
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%d,%.9g,%.9g\n", job_model.c_str(),
                ringsched::normalize_type(job_type).c_str(), job_gpus, m.global_batch, m.iters_per_s);
  text += line;
  bool ok = ::write(fd, text.data(), text.size()) == ssize_t(text.size());
  ::flock(fd, LOCK_UN);
  ::close(fd);
  if (!ok) {
    v.accepted = false;
    v.reason = "cannot write report file " + report_csv;
  }
  return v;
}

}  // namespace ringrun
