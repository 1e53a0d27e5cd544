// SPDX-License-Identifier: GPL-2.0-or-later
// Handovers of resizes and stops (handover.h).
#include "handover.h"

namespace ringsched {
namespace priority_internal {

void RunMemory::observe(std::vector<Handover>& handovers, const std::map<uint32_t, time_t>& running, time_t now) {
  for (Handover& h : handovers) {
    auto seen = runs_.find(h.id);
    if (seen == runs_.end()) continue;
    h.start = seen->second.start;
    h.end = seen->second.last_seen;
    runs_.erase(seen);
  }
  runs_.clear();
  for (const auto& [id, start] : running)
    if (start > 0) runs_[id] = SeenRun{start, now};
}

// Its note may name an earlier decision than AdminComment holds: the planner can decide again
// while ringrun checkpoints. The latest decision is the one applied (seen in a burst: matching
// only the same decision left such jobs held for good).
bool is_handover(const job_record_t* job, const PlannerNote& note) {
  if (!note.is_request() || job->priority != 0 || job->state_reason != WAIT_HELD_USER) return false;
  const WrapperNote w = WrapperNote::parse(job->comment ? job->comment : "");
  return w.state == WrapperNote::State::Requeued && w.at <= note.at;
}

PlannerNote with_ended_run(const PlannerNote& note, ConfiguredPolicy* policy, const std::string& model,
                           const Handover& h, time_t now) {
  if (h.start <= 0 || h.end <= h.start || h.end > now || h.shape.gpus <= 0) return note;
  const double ran_s = static_cast<double>(h.end - h.start);
  double iterations = 0;
  std::string why;
  if (policy && !model.empty() && !h.shape.type.empty() && policy->prepare_model(model, {h.shape.type}, why))
    iterations = policy->model().iters_per_s(model, h.shape.type, h.shape.gpus) * ran_s;
  return note.with_run(iterations, ran_s * h.shape.gpus);
}

}  // namespace priority_internal
}  // namespace ringsched
