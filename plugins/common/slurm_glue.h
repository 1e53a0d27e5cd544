// What the slurmctld plugins read from Slurm's own records, as policy-library values.
// Every function here must be called with the slurmctld locks named on it held by the caller.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

extern "C" {
#include "src/slurmctld/slurmctld.h"
}

#include "ring_request.h"
#include "ringsched/model.h"

namespace ringsched {

// GPUs a job holds (running) or asks for (pending).
struct GpuShape {
  std::string type;                         // "" when untyped or none
  int gpus = 0;                             // total
  int nodes = 0;
  std::map<std::string, int> gpus_by_node;  // running jobs only
};

// The GPU nodes, with free_gpus = GPUs not held by any running job (node read lock).
// Down, drained or not responding nodes have no free GPU.
Cluster snapshot_cluster();

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

// "gres:gpu:v100:4": a tres_per_node request.
std::string gpu_tres_per_node(const std::string& type, int per_node);

}  // namespace ringsched
