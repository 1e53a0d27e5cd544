// SPDX-License-Identifier: GPL-2.0-or-later
// Measured iteration times flow back to the policy engine's profiles, bounded: a report is
// accepted only for the job's own (model, type, count) and only within a factor of what the
// profiles currently predict, so no job can make a model look much faster or slower than
// plausible. The accepted point is appended to a profile CSV (DESIGN 5) that the policy engine
// merges (ProfileFiles= in ringsched.conf).
#pragma once

#include <string>

#include "ringsched/model.h"

namespace ringrun {

struct ReportVerdict {
  bool accepted = false;
  std::string reason;  // why it was refused, or what was accepted
};

class ProfileReporter {
 public:
  // profiles: the CSV the predictions come from; max_factor: accepted range is
  // [prediction / max_factor, prediction * max_factor] (1 < max_factor <= 100).
  ProfileReporter(const std::string& profiles, double max_factor);

  // job_model/job_type/job_gpus: what the job is known to run (from its submission and its
  // allocation, not from the worker); measured: what the worker measured.
  ReportVerdict validate(const std::string& job_model, const std::string& job_type, int job_gpus,
                         const ringsched::ProfilePoint& measured) const;

  // Validates, then appends the point to report_csv (header written when the file is new).
  ReportVerdict report(const std::string& report_csv, const std::string& job_model, const std::string& job_type,
                       int job_gpus, const ringsched::ProfilePoint& measured) const;

 private:
  std::string profiles_;
  double max_factor_;
};

}  // namespace ringrun
