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

  // A job of `snap` that the previous pass did not list arrived at snap.now_s (not at its
  // submit time: Slurm resets that on every requeue, so a resized job would count again).
  // Jobs listed by the first pass count as arrivals too: after a restart of slurmctld the gap
  // is short (the horizon is LendHorizon) until the window has turned over. Returns gap_s().
  double observe(const Snapshot& snap);
  // The mean gap between the latest kWindow arrivals; 0 while fewer than two are known. It does
  // not lengthen while nothing arrives: counted up to now, it grew after the last arrival of
  // each trace, and the long horizon then cost up to 11% avg JCT at twice the load (phillyd on
  // K80s and V100s; docs/combined-robustness.md).
  double gap_s() const;

 private:
  std::unordered_set<std::string> listed_;  // the job ids of the previous pass
  std::deque<double> arrivals_;             // the latest arrival times, oldest first
};

}  // namespace ringsched
