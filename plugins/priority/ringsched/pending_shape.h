// SPDX-License-Identifier: GPL-2.0-or-later
// priority/ringsched's view of a pending job's GPU request, and the Slurm calls that read and
// change it (private to the plugin: priority_ringsched.cpp reshapes pending ring jobs with them).
#pragma once

#include <cstdint>
#include <string>

#include "slurm_compat.h"
#include "slurm_glue.h"

namespace ringsched {
namespace priority_internal {

// A pending job's GPU request as Slurm holds it: `nodes` nodes with `per_node` GPUs of `type`,
// the type as a node feature (retypable) or in a typed gres request (fixed; see slurm_glue.h).
struct PendingShape {
  std::string type;
  int per_node = 0;
  int nodes = 0;
  bool by_feature = false;
  int gpus() const { return per_node * nodes; }
  bool operator==(const PendingShape& o) const {
    return type == o.type && per_node == o.per_node && nodes == o.nodes;
  }
  std::string str() const {
    return std::to_string(nodes) + "x" + std::to_string(per_node) + " " + (type.empty() ? "gpu" : type);
  }
};

PendingShape pending_shape(const GpuShape& g);

// One field of a pending job through Slurm's update RPC (Slurm validates it as for an admin):
// SLURM_SUCCESS or Slurm's errno.
int update_num_nodes(uint32_t id, int nodes);
int update_gres(uint32_t id, const PendingShape& shape);
int update_features(uint32_t id, const std::string& type);

// The job's pending shape now, read back under the job read lock; false when it is gone or no
// longer pending.
bool read_pending_shape(uint32_t id, PendingShape& shape, bool* bad_constraints = nullptr);

// Errors name the job the way slurmctld does (%pJ).
void job_error(uint32_t id, const std::string& what);

}  // namespace priority_internal
}  // namespace ringsched
