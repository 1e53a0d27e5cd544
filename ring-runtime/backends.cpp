// SPDX-License-Identifier: GPL-2.0-or-later
// backends.cpp -- the one list of backends (names, what they are made by, whether they serve
// device buffers beside a host transport), the node probe and the topology, and the choice of
// the host backend for RINGRT_BACKEND=auto.
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "backends.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

namespace ringrt {

namespace {

struct Backend {
  ringrt_backend_t id;
  const char* name;
  // device: serves device buffers only, beside the host transport auto chooses
  bool device;
  rr (*make)(const BackendContext&, std::unique_ptr<Transport>*);  // nullptr for auto
};

const Backend kBackends[] = {
    {RINGRT_BACKEND_AUTO, "auto", false, nullptr},
    {RINGRT_BACKEND_TCP, "tcp", false, make_tcp_transport},
    {RINGRT_BACKEND_SHM, "shm", false, make_shm_transport},
    {RINGRT_BACKEND_NCCL, "nccl", true, make_nccl_transport},
    {RINGRT_BACKEND_HIER, "hier", false, make_hier_transport},
};

const Backend* find_backend(int id) {
  for (const Backend& b : kBackends)
    if (b.id == id) return &b;
  return nullptr;
}

// auto: shared memory on one node, TCP when every node has one rank, both stacked otherwise
ringrt_backend_t auto_host_backend(const Topology& topo) {
  if (topo.nodes() == 1) return RINGRT_BACKEND_SHM;
  if (topo.nodes() == static_cast<size_t>(topo.world)) return RINGRT_BACKEND_TCP;
  return RINGRT_BACKEND_HIER;
}

}  // namespace

rr parse_backend(const char* text, ringrt_backend_t* out) {
  if (!text) text = "auto";
  std::string names;
  for (const Backend& b : kBackends) {
    if (!std::strcmp(text, b.name)) {
      *out = b.id;
      return RINGRT_OK;
    }
    names += (names.empty() ? "" : ", ") + std::string(b.name);
  }
  return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_BACKEND=\"%s\": expected one of %s", text, names.c_str());
}

const char* backend_name(ringrt_backend_t id) {
  const Backend* b = find_backend(id);
  return b ? b->name : "?";
}

bool backend_known(int id) { return find_backend(id) != nullptr; }

NodeInfo probe_node() {
  NodeInfo ni;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) ni.cpus = CPU_COUNT(&set);
  else ni.cpus = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  ni.cores = ni.cpus;
#ifdef HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) == 0) {
    if (hwloc_topology_load(topo) == 0) {
      int c = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
      int nn = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
      if (c > 0) ni.cores = std::min(c, ni.cpus);
      if (nn > 0) ni.numa_nodes = nn;
    }
    hwloc_topology_destroy(topo);
  }
#endif
  if (ni.cpus < 1) ni.cpus = 1;
  return ni;
}

int Topology::local_rank() const {
  return static_cast<int>(std::find(local.begin(), local.end(), rank) - local.begin());
}

Topology topology_of(const Table& table, int rank, const NodeInfo& node) {
  Topology t;
  t.rank = rank;
  t.world = static_cast<int>(table.peers.size());
  t.node = node;
  std::map<std::string, std::vector<int>> nodes;  // ranks come in ascending order
  for (int r = 0; r < t.world; ++r) nodes[table.peers[r].host].push_back(r);
  t.local = nodes[table.peers[rank].host];
  for (const auto& kv : nodes) t.leaders.push_back(kv.second.front());
  std::sort(t.leaders.begin(), t.leaders.end());
  t.leader_of.assign(t.world, 0);
  for (const auto& kv : nodes)
    for (int r : kv.second) t.leader_of[r] = kv.second.front();
  return t;
}

rr open_transports(const Config& cfg, const Table& table, const Topology& topo, int listen_fd, int64_t deadline,
                   Transports* out) {
  const Backend* asked = find_backend(table.backend);
  if (!asked) return fail(RINGRT_ERR_CONFIG, -1, "unknown backend %d", static_cast<int>(table.backend));
  out->requested = asked->id;
  out->host_backend = asked->make && !asked->device ? asked->id : auto_host_backend(topo);
  if (out->host_backend == RINGRT_BACKEND_SHM && topo.nodes() != 1)
    return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_BACKEND=shm but the ranks span %zu nodes", topo.nodes());
  BackendContext ctx{cfg, table, topo, listen_fd, deadline, nullptr};
  RINGRT_CHECK(find_backend(out->host_backend)->make(ctx, &out->host));
  if (asked->device) {
    ctx.host = out->host.get();
    RINGRT_CHECK(asked->make(ctx, &out->device));
  }
  return RINGRT_OK;
}

}  // namespace ringrt
