// SPDX-License-Identifier: GPL-2.0-or-later
// Where a running job's resize requests come from, for ringrun's watch loop: the request file
// (DIR/resize-request, or --resize-file) and, under Slurm, the planner's note in the job's
// AdminComment (plugins/common/resize_note.h). See ringrun(1), RESIZE REQUESTS.
#pragma once

#include <string>

#include "slurm_job.h"

namespace ringrun {

struct ResizeDecision {
  int gpus = 0;              // 0: nothing to do
  std::string type;          // "" keeps the job's GPU type
  std::string reason;        // for the log
  bool by_planner = false;   // the planner decided it: it applies the shape itself (ringsched(8))
  bool stop = false;         // the planner preempts the job: checkpoint, requeue, wait (gpus = world)
  long long decided_at = 0;  // the planner's decision time (epoch seconds), 0 if unknown
};

// A request file holds one GPU count and a newline. Writers create it under another name and
// rename it into place; a file without its newline yet is being written and is left for the
// next look. It is consumed (removed) when read; a malformed one is reported and removed too, so
// a bad request cannot wedge the job. A file that is not a regular file owned by this user, or
// that others may write, is refused and removed: another user cannot plant a request. Returns
// the count, or 0 with `complaint` set when something was refused.
int read_request_file(const std::string& path, int max_gpus, std::string* complaint);

class ResizeWatch {
 public:
  // `job` may be null (outside Slurm). `handled_file` remembers the planner's last request that
  // was carried out, across restarts (the note outlives the restart it caused).
  ResizeWatch(std::string request_file, std::string handled_file, int max_gpus, SlurmJob* job)
      : request_file_(std::move(request_file)), handled_file_(std::move(handled_file)), max_gpus_(max_gpus),
        job_(job) {}

  // The request to carry out now, if any. The file is looked at on every call, the job's notes
  // only when `read_job` (each read is a request to slurmctld). `world` and `gpu_type` are the
  // current shape; a request for the same shape is no request. Messages go to `log`.
  ResizeDecision poll(int world, const std::string& gpu_type, bool read_job, void (*log)(const char*, ...));

  // Remembers the planner's request as carried out (see handled_file above).
  void mark_handled(const ResizeDecision& d);

 private:
  std::string request_file_, handled_file_;
  int max_gpus_;
  SlurmJob* job_;
};

}  // namespace ringrun
