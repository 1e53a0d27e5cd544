// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/arrivals.h"

namespace ringsched {

double ArrivalClock::observe(const Snapshot& snap) {
  std::unordered_set<std::string> now_listed;
  now_listed.reserve(snap.jobs.size());
  for (const Job& j : snap.jobs) {
    if (!listed_.count(j.id)) arrivals_.push_back(snap.now_s);
    now_listed.insert(j.id);
  }
  while (static_cast<int>(arrivals_.size()) > kWindow) arrivals_.pop_front();
  listed_ = std::move(now_listed);
  return gap_s();
}

double ArrivalClock::gap_s() const {
  if (arrivals_.size() < 2) return 0;
  return (arrivals_.back() - arrivals_.front()) / static_cast<double>(arrivals_.size() - 1);
}

}  // namespace ringsched
