// SPDX-License-Identifier: GPL-2.0-or-later
// The handover of a resize or stop (ringsched(8), RESIZES): a job that ringrun checkpointed and
// requeued, held, for a decision of the planner, and what the run it ended did (private to the
// plugin: step 0 of priority_ringsched.cpp applies the shape and notes the run).
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <string>
#include <vector>

#include "configured_policy.h"
#include "resize_note.h"
#include "slurm_compat.h"
#include "slurm_glue.h"

namespace ringsched {
namespace priority_internal {

// A job that ringrun requeued with a hold for the planner's resize: step 0 applies the shape.
struct Handover {
  uint32_t id = 0;
  GpuShape shape;
  PlannerNote note;
  time_t start = 0, end = 0;  // the run that ended, as the planning thread saw it (0: unknown)
};

// The running ring jobs' runs: each one's start and the last round that saw it. Slurm clears a
// requeued job's start and end times, so a handover's run is known only from here (lost with a
// restart of slurmctld between the requeue and the handover: that run then counts nothing).
class RunMemory {
 public:
  // Gives each handover the run last seen of its job (once: the next run is another), then
  // notes `running` (job -> its start, 0 unknown) as seen at `now` and forgets the rest.
  void observe(std::vector<Handover>& handovers, const std::map<uint32_t, time_t>& running, time_t now);

 private:
  struct SeenRun {
    time_t start = 0, last_seen = 0;
  };
  std::map<uint32_t, SeenRun> runs_;
};

// Whether a pending job is one ringrun requeued, held, for a resize of ours.
bool is_handover(const job_record_t* job, const PlannerNote& note);

// `note` with the work of the run the handover ended added: its seconds at its shape, from its
// start to the last round that saw it running (a little short of its true end, never beyond),
// times the profile's speed for `model`. Without a policy (neutral) or a known model, only the
// GPU-seconds; a start and end that are not a past run add nothing.
PlannerNote with_ended_run(const PlannerNote& note, ConfiguredPolicy* policy, const std::string& model,
                           const Handover& h, time_t now);

}  // namespace priority_internal
}  // namespace ringsched
