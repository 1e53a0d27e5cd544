// SPDX-License-Identifier: GPL-2.0-or-later
// backends.h -- where the ranks of a world run (Topology) and the one list of backends: which one
// serves host buffers for the requested RINGRT_BACKEND, and how each is made. A new backend is a
// Transport, a make_*_transport() below and a row in backends.cpp; world.cpp does not change.
#ifndef RINGRT_BACKENDS_H
#define RINGRT_BACKENDS_H

#include "configuration.h"
#include "rendezvous.h"
#include "transport.h"

#include <memory>
#include <vector>

namespace ringrt {

struct NodeInfo {
  int cpus = 1;        // processing units this process may run on
  int numa_nodes = 1;
  int cores = 1;
};
NodeInfo probe_node();

// Ranks sharing a hostname (or RINGRT_HOSTNAME) share a node; the lowest rank of each node
// leads it.
struct Topology {
  int rank = 0, world = 1;
  std::vector<int> local;      // the ranks on this node, ascending
  std::vector<int> leaders;    // every node's leader, ascending
  std::vector<int> leader_of;  // for each rank: the leader of its node
  NodeInfo node;
  int local_rank() const;
  int local_size() const { return static_cast<int>(local.size()); }
  bool is_leader() const { return local.front() == rank; }
  size_t nodes() const { return leaders.size(); }
  // more ranks here than CPUs to run them: waits yield rather than spin
  bool oversubscribed() const { return local_size() > node.cpus; }
};
Topology topology_of(const Table& table, int rank, const NodeInfo& node);

// What a backend is made from. `host` is set for device backends: the world's host transport,
// already formed (NCCL hands out its unique id through it).
struct BackendContext {
  const Config& cfg;
  const Table& table;
  const Topology& topo;
  int listen_fd;      // this rank's ring listener, from the rendezvous
  int64_t deadline;   // for forming the world
  Transport* host;
};
rr make_tcp_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out);
rr make_shm_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out);
rr make_hier_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out);
rr make_nccl_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out);

// A world's transports: one for host buffers, and one for device buffers where asked for.
struct Transports {
  ringrt_backend_t host_backend = RINGRT_BACKEND_TCP;  // tcp, shm or hier: auto resolved
  ringrt_backend_t requested = RINGRT_BACKEND_AUTO;
  std::unique_ptr<Transport> host;
  std::unique_ptr<Transport> device;
};
// Forms them for the backend every rank asked for (table.backend). Collective.
rr open_transports(const Config& cfg, const Table& table, const Topology& topo, int listen_fd, int64_t deadline,
                   Transports* out);

// The backends' names (RINGRT_BACKEND), and which values are backends at all.
rr parse_backend(const char* text, ringrt_backend_t* out);
const char* backend_name(ringrt_backend_t b);
bool backend_known(int id);

}  // namespace ringrt

#endif  // RINGRT_BACKENDS_H
