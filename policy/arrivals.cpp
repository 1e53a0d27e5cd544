// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/arrivals.h"

namespace ringsched {

double ArrivalClock::observe(const Snapshot& snap) {
  // Submit times are whole seconds in Slurm: a job submitted within the second of the previous
  // pass may not have been listed by it.
  const double since = last_pass_s_ - 1;
  for (const Job& j : snap.jobs)
    if (j.submit_s >= since && counted_.insert(j.id).second) arrivals_.push_back(snap.now_s);
  while (static_cast<int>(arrivals_.size()) > kWindow) arrivals_.pop_front();
  last_pass_s_ = snap.now_s;
  // Forget the jobs that are gone once they are most of the set: amortized, a few per job.
  if (counted_.size() > 2 * snap.jobs.size() + 64) {
    std::unordered_set<std::string> listed;
    listed.reserve(snap.jobs.size());
    for (const Job& j : snap.jobs)
      if (counted_.count(j.id)) listed.insert(j.id);
    counted_ = std::move(listed);
  }
  return gap_s();
}

double ArrivalClock::gap_s() const {
  if (arrivals_.size() < 2) return 0;
  return (arrivals_.back() - arrivals_.front()) / static_cast<double>(arrivals_.size() - 1);
}

}  // namespace ringsched
