// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun's view of its own Slurm job, through libslurm: what it was given, and the resize
// sequence of DESIGN 4 (requeue with hold, update the pending job, release).
#pragma once

#include <cstdint>
#include <string>

namespace ringrun {

struct JobShape {
  uint32_t job_id = 0;
  int nodes = 0;              // allocated (or requested, when pending) node count
  int gpus_per_node = 0;      // from the job's gres request
  std::string gpu_type;       // from the typed gres request, or from the feature constraint
  bool type_by_feature = false;  // the type is the job's feature constraint (ringsched's form)
  std::string first_node_addr;// address of the first allocated node (the ring's master)
  std::string node_gpu_type;  // GPU type of that node's gres (what an untyped request got)
  std::string admin_comment;  // the planner's note (resize_note.h); users cannot write it
  std::string comment;        // the job's Comment: ringrun's note, and the user's own text
  int total_gpus() const { return nodes * gpus_per_node; }
};

class SlurmJob {
 public:
  // Throws std::runtime_error when libslurm is not available or the job cannot be read.
  explicit SlurmJob(uint32_t job_id);
  const JobShape& shape() const { return shape_; }
  // Re-reads the job (e.g. for a new admin comment).
  void refresh();

  // Largest GPU count per node of a type ("" any type), from the node table; 0 if unknown.
  int node_gpus(const std::string& type) const;

  // Sets the job's Comment (the owner may). Returns "" or what failed.
  std::string set_comment(const std::string& comment);

  // Requeues the job with a hold and changes nothing else: the planner applies the shape it
  // decided and releases the job (ringsched(8), RESIZES). Returns "" or what failed.
  std::string requeue_held();

  // requeue-hold -> one update per field (NumNodes=N-N, gres count, Features) -> release, each
  // step checked. A failed update puts the fields already changed back before releasing, so the
  // job never stays in a shape that cannot run. Returns "" on success, else what failed.
  // timings (seconds) filled in. new_type: "" keeps the job's GPU type; another type needs the
  // type as a feature constraint (a typed gres request cannot change type, DESIGN 4). `requeued`
  // says whether the job was requeued (it then restarts, at the new shape or, after a failed
  // update, at the old one); when not, it still runs here.
  std::string requeue_resized(int total_gpus, const std::string& new_type, double* requeue_s, double* update_s,
                              bool* requeued);

 private:
  uint32_t id_;
  JobShape shape_;
};

bool libslurm_available();

}  // namespace ringrun
