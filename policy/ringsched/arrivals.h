// SPDX-License-Identifier: GPL-2.0-or-later
// How often ring jobs arrive, as the planning passes see them. GPUs lent above a job's request
// come back only when an arrival needs them, so the lend horizon grows with the gap between
// arrivals (PlannerConfig::lend_arrivals).
#pragma once

#include <deque>
#include <string>
#include <unordered_set>

#include "ringsched/planner.h"

namespace ringsched {

class ArrivalClock {
 public:
  // The arrivals the gap is taken over: fewer follow a change of pace sooner but vary more.
  static constexpr int kWindow = 16;

  // A job of `snap` not counted before arrived at snap.now_s (the pass that first lists it).
  // Only jobs submitted since the previous pass are looked up, so a pass costs a comparison per
  // job (a set of every listed id, rebuilt each pass, is 19 million string insertions over the
  // 9,649 passes of bench/ringsim_burst.sh). Slurm resets submit_time when it requeues a job: a
  // job resized by requeue is looked up again and found. Jobs listed by the first pass count as arrivals too: after a
  // restart of slurmctld the gap is short (the horizon is LendHorizon) until the window has
  // turned over. Returns gap_s().
  double observe(const Snapshot& snap);
  // The mean gap between the latest kWindow arrivals; 0 while fewer than two are known. It does
  // not lengthen while nothing arrives: counted up to now, it grew after the last arrival of
  // each trace, and the long horizon then cost up to 11% avg JCT at twice the load (phillyd on
  // K80s and V100s; docs/combined-lend-arrivals.md).
  double gap_s() const;

 private:
  std::unordered_set<std::string> counted_;  // jobs counted, pruned to the listed ones now and then
  std::deque<double> arrivals_;              // the latest arrival times, oldest first
  double last_pass_s_ = -1e300;
};

}  // namespace ringsched
