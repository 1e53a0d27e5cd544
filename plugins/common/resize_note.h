// SPDX-License-Identifier: GPL-2.0-or-later
// The notes through which the planner (priority/ringsched in slurmctld) and ringrun (in the job)
// carry out a resize, in the two free-text fields of a Slurm job. One module writes and reads
// them, on both sides; no Slurm here. See ringsched(8), RESIZES.
//
// AdminComment, which only slurmctld, root and SlurmUser can write (users cannot), carries the
// planner's decisions, so ringrun and the planner can trust them:
//   ringsched:admitted                      job_submit/ringsched admitted a ring job: the
//                                           planner owns its shape
//   ringsched:resize=N,type=T,at=EPOCH      the planner asks the running job to restart on N
//                                           GPUs of type T (decided at EPOCH)
//   ringsched:resized=N,type=T,at=EPOCH     the planner has applied that shape to the requeued
//                                           job and released it
//   ringsched:stop,at=EPOCH                 the planner asks the running job to checkpoint and
//                                           wait (preemption: Preempt=yes in ringsched.conf)
//   ringsched:stopped,at=EPOCH              the planner has released the requeued job at its
//                                           shape: it waits, pending, until a plan starts it
// Each of the last four may end in ",done=ITERS,gpu_s=SECONDS": the job's earlier runs, as the
// planner estimated them when it released the job after each (absent while none is known).
// Comment, which the job's owner writes, carries ringrun's state. It is a hint only: it decides
// no size and touches no other job; forging it can at most restart the forger's own job.
//   ringsched:wrapper=ready[,signal]        ringrun runs the job; with ",signal" SIGUSR2 sent
//                                           to the batch shell reaches ringrun itself
//   ringsched:wrapper=requeued,at=EPOCH     ringrun checkpointed and requeued the job (held)
//                                           for the decision taken at EPOCH
// Anything malformed reads as no note.
#pragma once

#include <string>

namespace ringsched {

// The planner's note (AdminComment).
struct PlannerNote {
  enum class Kind { None, Admitted, Resize, Resized, Stop, Stopped };
  static constexpr long long kMaxEpoch = 1LL << 40;
  static constexpr long long kMaxCount = 1LL << 50;  // bound of done and gpu_s

  Kind kind = Kind::None;
  int gpus = 0;          // Resize, Resized: the GPU count
  std::string type;      // Resize, Resized: the GPU type (lower case; "" keeps the job's type)
  long long at = 0;      // all but Admitted: when the planner decided (epoch seconds, 0 unknown)
  // What the job did in its runs before this one: the iterations it completed and the GPU-seconds
  // it held, the planner's estimate (each run's seconds at its shape times the profile's speed,
  // added when it releases the job requeued after the run). A requeue restarts Slurm's start time,
  // so without these the planner would count a resized job's work from zero. Every note the
  // planner writes carries them on (with_progress_of); 0 when unknown.
  long long done = 0;
  long long gpu_s = 0;

  static PlannerNote admitted();
  static PlannerNote resize(int gpus, const std::string& type, long long at);
  static PlannerNote stop(long long at);
  // The same decision, carried out (Resize -> Resized, Stop -> Stopped).
  PlannerNote resized() const;
  // This note with the earlier runs that `earlier` (the job's previous note) records.
  PlannerNote with_progress_of(const PlannerNote& earlier) const;
  // This note with one more run added: `iterations` done in it, `gpu_s` held (negative or
  // non-finite values count as 0; the sums stop at kMaxCount).
  PlannerNote with_run(double iterations, double gpu_s) const;

  // A decision ringrun carries out by checkpointing and requeueing the job (held).
  bool is_request() const { return kind == Kind::Resize || kind == Kind::Stop; }
  bool is_stop() const { return kind == Kind::Stop; }
  // Resize and Resized notes of the same decision.
  bool same_decision(const PlannerNote& o) const {
    return gpus == o.gpus && type == o.type && at == o.at;
  }
  // The text for AdminComment.
  std::string str() const;
  // Reads the note at the start of an AdminComment (GPU counts in 1..max_gpus).
  static PlannerNote parse(const std::string& admin_comment, int max_gpus = 4096);
};

// ringrun's note (Comment).
struct WrapperNote {
  enum class State { None, Ready, Requeued };

  State state = State::None;
  bool signal = false;  // Ready: SIGUSR2 to the batch shell reaches ringrun
  long long at = 0;     // Requeued: the planner's decision (PlannerNote::at) it requeued for

  static WrapperNote ready(bool signal);
  static WrapperNote requeued(long long at);

  std::string str() const;
  // Reads the note wherever it stands in a Comment (users may have text of their own there).
  static WrapperNote parse(const std::string& comment);
  // `comment` with this note in place of any earlier ringsched note; the user's text is kept
  // after it.
  std::string merged_into(const std::string& comment) const;
};

}  // namespace ringsched
