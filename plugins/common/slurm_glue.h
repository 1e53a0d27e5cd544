// SPDX-License-Identifier: GPL-2.0-or-later
// What the slurmctld plugins read from Slurm's own records, as policy-library values.
// Every function here must be called with the slurmctld locks named on it held by the caller.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "slurm_compat.h"

#include "ring_request.h"
#include "ringsched/model.h"

namespace ringsched {

// GPUs a job holds (running) or asks for (pending).
//
// Ring jobs ask for their GPU type as a node feature (--constraint=v100 with an untyped
// --gres=gpu:N): Slurm 22.05 can change a pending job's features but not the type of a typed gres
// request (DESIGN 4), so only this form lets the planner retype a pending or requeued job. Jobs
// with a typed gres request keep their type.
struct GpuShape {
  std::string type;                         // "" when untyped or none
  bool type_by_feature = false;             // type comes from the job's feature constraint
  int gpus = 0;                             // total
  int nodes = 0;
  std::map<std::string, int> gpus_by_node;  // running jobs only
};

// The GPU nodes, with free_gpus = GPUs not held by any running job (node read lock).
// Down, drained or not responding nodes have no free GPU.
Cluster snapshot_cluster();

// Whether every node with GPUs of `type` carries a node feature named like it (Feature=v100 on
// every v100 node), so that jobs can ask for the type as a constraint (node read lock).
bool type_is_node_feature(const std::string& type);

// The ring request a job carries in its SPANK environment (job read lock). Returns false when the
// job is not a ring job; sets `error` (and returns false) when its values are invalid.
bool job_ring_request(const job_record_t* job, RingRequest& request, std::string& error);

// GPUs held by a running job (from its allocated gres) or asked for by a pending job (job read lock).
GpuShape job_gpu_shape(const job_record_t* job);

// How `gpus` GPUs of one type are spread over nodes of that type: as few nodes as possible,
// the same count on each (ring jobs use powers of two, so this divides evenly).
struct NodeSpread {
  int nodes = 0;
  int per_node = 0;
};
NodeSpread spread_gpus(const Cluster& cluster, const std::string& type, int gpus);

// How a job asks for `per_node` GPUs of `type` on each of its nodes.
struct GpuRequest {
  std::string tres_per_node;  // "gres:gpu:4" (by feature) or "gres:gpu:v100:4"; gres/gpu by 24.11
  std::string features;       // "v100" (by feature) or ""
};
GpuRequest gpu_request(const std::string& type, int per_node, bool by_feature);

}  // namespace ringsched
