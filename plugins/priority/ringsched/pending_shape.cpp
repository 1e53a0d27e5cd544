// SPDX-License-Identifier: GPL-2.0-or-later
// A pending job's GPU request, read and changed through Slurm (pending_shape.h).
#include "pending_shape.h"

#include <algorithm>

namespace ringsched {
namespace priority_internal {

PendingShape pending_shape(const GpuShape& g) {
  PendingShape p;
  p.type = g.type;
  p.nodes = std::max(1, g.nodes);
  p.per_node = g.gpus / p.nodes;
  p.by_feature = g.type_by_feature;
  return p;
}

namespace {

// One update RPC for job `id`, with the fields `fill` sets on an otherwise empty description.
template <typename Fill>
int update_pending(uint32_t id, Fill fill) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  set_update_job_id(desc, id);
  fill(desc);
  return slurm_update_job(&desc) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
}

}  // namespace

int update_num_nodes(uint32_t id, int nodes) {
  return update_pending(id, [nodes](job_desc_msg_t& d) {
    d.min_nodes = d.max_nodes = static_cast<uint32_t>(nodes);  // NumNodes=N-N (DESIGN 4)
  });
}

int update_gres(uint32_t id, const PendingShape& shape) {
  const std::string tres = gpu_request(shape.type, shape.per_node, shape.by_feature).tres_per_node;
  return update_pending(id, [&tres](job_desc_msg_t& d) {
    d.tres_per_node = const_cast<char*>(tres.c_str());
  });
}

int update_features(uint32_t id, const std::string& type) {
  return update_pending(id, [&type](job_desc_msg_t& d) {
    d.features = const_cast<char*>(type.c_str());
  });
}

bool read_pending_shape(uint32_t id, PendingShape& shape, bool* bad_constraints) {
  const slurmctld_lock_t job_read = slurmctld_locks(NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK);
  lock_slurmctld(job_read);
  job_record_t* job = find_job_record(id);
  const bool ok = job && IS_JOB_PENDING(job);
  if (ok) {
    shape = pending_shape(job_gpu_shape(job));
    if (bad_constraints) *bad_constraints = job->state_reason == FAIL_BAD_CONSTRAINTS;
  }
  unlock_slurmctld(job_read);
  return ok;
}

void job_error(uint32_t id, const std::string& what) {
  const slurmctld_lock_t job_read = slurmctld_locks(NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK);
  lock_slurmctld(job_read);
  job_record_t* job = find_job_record(id);
  if (job)
    error("priority/ringsched: %pJ: %s", job, what.c_str());
  else
    error("priority/ringsched: JobId=%u: %s", id, what.c_str());
  unlock_slurmctld(job_read);
}

}  // namespace priority_internal
}  // namespace ringsched
