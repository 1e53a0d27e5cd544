// world.cpp -- the C API: the process-global world, backend selection from the topology, the
// sticky error after a failed collective, and structured partial backprop on top of allreduce.
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "internal.h"
#include "nccl_backend.h"

#ifdef HAVE_HWLOC
#include <hwloc.h>
#endif
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <new>

namespace ringrt {
namespace {

struct NodeInfo {
  int cpus = 1;        // processing units this process may run on
  int numa_nodes = 1;
  int cores = 1;
};

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

struct World {
  Config cfg;
  Table table;
  ringrt_backend_t backend = RINGRT_BACKEND_TCP;  // resolved host backend
  bool nccl_requested = false;
  int local_rank = 0, local_size = 1;
  std::vector<int> leaders;          // the node leaders (lowest rank of each node), ascending
  std::vector<int> leader_index;     // for each rank: its node leader's index in `leaders`
  bool is_leader = false;
  std::unique_ptr<TcpRing> tcp;
  std::unique_ptr<ShmGroup> shm;
  uint32_t seq = 0;
  rr sticky = RINGRT_OK;
  std::string sticky_detail;
  int sticky_blamed = -1;
  std::vector<char> spb;
  NodeInfo node;
  NcclComm* nccl = nullptr;
  ~World() {
    if (nccl) nccl_destroy(nccl);
  }
};

World* g_world = nullptr;

rr need_world() {
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised (call ringrt_init first)");
  if (g_world->sticky != RINGRT_OK) {
    set_error(g_world->sticky, g_world->sticky_blamed, g_world->sticky_detail);
    return g_world->sticky;
  }
  return RINGRT_OK;
}

rr record(rr rc) {
  if (rc == RINGRT_OK || !g_world) return rc;
  World& w = *g_world;
  if (rc == RINGRT_ERR_ARG) return rc;  // caller errors do not break the world
  w.sticky = rc;
  w.sticky_detail = last_detail();
  w.sticky_blamed = last_blamed();
  if (w.tcp && (w.backend == RINGRT_BACKEND_HIER)) w.tcp->send_abort(rc, w.sticky_blamed, w.sticky_detail);
  if (w.shm) w.shm->set_abort(rc, w.sticky_blamed, w.sticky_detail);
  set_error(rc, w.sticky_blamed, w.sticky_detail);
  return rc;
}

rr host_broadcast(void* buf, size_t bytes, int root);

rr init_world(const Config& cfg) {
  if (g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is already initialised (finalize first to re-form)");
  set_log_rank(cfg.rank);
  std::unique_ptr<World> w(new (std::nothrow) World);
  if (!w) return fail(RINGRT_ERR_NOMEM, -1, "out of memory");
  w->cfg = cfg;
  w->node = probe_node();
  const int64_t deadline = now_ns() + ms_to_ns(cfg.init_timeout_ms);
  Fd listener;
  RINGRT_CHECK(rendezvous(cfg, &w->table, &listener));
  const int n = cfg.world_size;
  // topology: ranks sharing a hostname share a node
  std::map<std::string, std::vector<int>> nodes;
  for (int r = 0; r < n; ++r) nodes[w->table.peers[r].host].push_back(r);
  std::vector<int> local = nodes[w->table.peers[cfg.rank].host];
  w->local_size = static_cast<int>(local.size());
  w->local_rank = static_cast<int>(std::find(local.begin(), local.end(), cfg.rank) - local.begin());
  for (auto& kv : nodes) w->leaders.push_back(kv.second.front());
  std::sort(w->leaders.begin(), w->leaders.end());
  w->leader_index.assign(n, 0);
  for (auto& kv : nodes) {
    int li = static_cast<int>(std::find(w->leaders.begin(), w->leaders.end(), kv.second.front()) - w->leaders.begin());
    for (int r : kv.second) w->leader_index[r] = li;
  }
  w->is_leader = local.front() == cfg.rank;
  const size_t nnodes = nodes.size();
  ringrt_backend_t req = w->table.backend;
  w->nccl_requested = req == RINGRT_BACKEND_NCCL;
  switch (req) {
    case RINGRT_BACKEND_TCP: w->backend = RINGRT_BACKEND_TCP; break;
    case RINGRT_BACKEND_SHM:
      if (nnodes != 1)
        return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_BACKEND=shm but the ranks span %zu nodes", nnodes);
      w->backend = RINGRT_BACKEND_SHM;
      break;
    case RINGRT_BACKEND_HIER: w->backend = RINGRT_BACKEND_HIER; break;
    default:
      w->backend = nnodes == 1 ? RINGRT_BACKEND_SHM
                   : (nnodes == static_cast<size_t>(n) ? RINGRT_BACKEND_TCP : RINGRT_BACKEND_HIER);
  }
  const bool oversubscribed = w->local_size > w->node.cpus;
  auto make_tcp = [&]() {
    w->tcp.reset(new TcpRing);
    w->tcp->timeout_ms = cfg.timeout_ms;
    // Oversubscribed: 4 ranks on 2 CPUs here, where yielding while spinning cut the 4 KiB
    // allreduce from ~150 to ~60 us and doubled busbw at 64 KiB-1 MiB against sleeping in poll().
    w->tcp->spin_us = oversubscribed ? 1000 : 2000;
    w->tcp->yield_spin = oversubscribed;
  };
  auto make_shm = [&]() {
    w->shm.reset(new ShmGroup);
    w->shm->timeout_ms = cfg.timeout_ms;
    w->shm->yield_spin = oversubscribed;
    w->shm->spin_us = oversubscribed ? 20 : 2000;
  };
  if (w->backend == RINGRT_BACKEND_TCP) {
    std::vector<int> all(n);
    for (int r = 0; r < n; ++r) all[r] = r;
    make_tcp();
    RINGRT_CHECK(w->tcp->connect(cfg, w->table, all, listener.fd, deadline));
  } else if (w->backend == RINGRT_BACKEND_SHM) {
    make_shm();
    RINGRT_CHECK(w->shm->attach(cfg, w->table, local, deadline));
  } else {  // hierarchical
    if (w->local_size > 1) {
      make_shm();
      w->shm->hier = true;
      RINGRT_CHECK(w->shm->attach(cfg, w->table, local, deadline));
    }
    if (w->is_leader) {
      make_tcp();
      RINGRT_CHECK(w->tcp->connect(cfg, w->table, w->leaders, listener.fd, deadline));
    }
    if (w->tcp && w->shm) {
      ShmGroup* s = w->shm.get();
      TcpRing* t = w->tcp.get();
      t->set_tick([s] { s->heartbeat(); });
      s->set_tick([t] { t->keepalive_tick(); });
    }
  }
  listener.reset();
  if (debug_enabled()) {
    const std::string cc = w->tcp && w->tcp->size() > 1 ? ", TCP congestion control " + w->tcp->congestion() : "";
    log_msg("world of %d formed: backend %s, %zu node(s), local %d/%d, %d cpus, %d cores, %d NUMA node(s)%s", n,
            backend_name(w->backend), nnodes, w->local_rank, w->local_size, w->node.cpus, w->node.cores,
            w->node.numa_nodes, cc.c_str());
  }
  g_world = w.release();
  if (g_world->nccl_requested) {
    rr rc = nccl_create(&g_world->nccl, cfg.rank, n, g_world->local_rank, cfg.timeout_ms,
                        [](void* p, size_t len) { return host_broadcast(p, len, 0); });
    if (rc != RINGRT_OK) {
      std::string d = last_detail();
      int b = last_blamed();
      delete g_world;
      g_world = nullptr;
      set_error(rc, b, d);
      return rc;
    }
  }
  return RINGRT_OK;
}

// host allreduce on the resolved backend
rr host_allreduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op) {
  World& w = *g_world;
  const int div = op == RINGRT_AVG ? w.cfg.world_size : 0;
  switch (w.backend) {
    case RINGRT_BACKEND_TCP: return w.tcp->allreduce(buf, count, t, op, div, ++w.seq);
    case RINGRT_BACKEND_SHM: return w.shm->allreduce(buf, count, t, op, div, nullptr, &w.seq);
    default:
      if (!w.shm) return w.tcp->allreduce(buf, count, t, op, div, ++w.seq);
      return w.shm->allreduce(buf, count, t, op, div, w.tcp.get(), &w.seq);
  }
}

rr host_broadcast(void* buf, size_t bytes, int root) {
  World& w = *g_world;
  switch (w.backend) {
    case RINGRT_BACKEND_TCP: return w.tcp->broadcast(buf, bytes, root, ++w.seq);
    case RINGRT_BACKEND_SHM: return w.shm->broadcast(buf, bytes, root, nullptr, 0, &w.seq);
    default:
      if (!w.shm) return w.tcp->broadcast(buf, bytes, w.leader_index[root], ++w.seq);
      return w.shm->broadcast(buf, bytes, root, w.tcp.get(), w.leader_index[root], &w.seq);
  }
}

rr host_barrier() {
  World& w = *g_world;
  switch (w.backend) {
    case RINGRT_BACKEND_TCP: return w.tcp->barrier(++w.seq);
    case RINGRT_BACKEND_SHM: return w.shm->barrier(nullptr, &w.seq);
    default:
      if (!w.shm) return w.tcp->barrier(++w.seq);
      return w.shm->barrier(w.tcp.get(), &w.seq);
  }
}

rr check_buffer(const void* p, size_t count, ringrt_dtype_t t, const char* name) {
  if (!dtype_valid(t)) return fail(RINGRT_ERR_ARG, -1, "unknown dtype %d", static_cast<int>(t));
  if (count > 0 && !p) return fail(RINGRT_ERR_ARG, -1, "%s is NULL", name);
  if (count > (static_cast<size_t>(1) << 62) / dtype_size(t)) return fail(RINGRT_ERR_ARG, -1, "count too large");
  return RINGRT_OK;
}

// SPB: contributors of each bucket as a bitmap-free list check; returns count of contributors and
// whether this rank is one of them.
rr spb_run(ringrt_bucket_t* buckets, size_t nbuckets, ringrt_dtype_t t, const int* depth) {
  RINGRT_CHECK(need_world());
  World& w = *g_world;
  if (!dtype_valid(t)) return fail(RINGRT_ERR_ARG, -1, "unknown dtype %d", static_cast<int>(t));
  if (nbuckets > 0 && !buckets) return fail(RINGRT_ERR_ARG, -1, "buckets is NULL");
  const int n = w.cfg.world_size, me = w.cfg.rank;
  const size_t esz = dtype_size(t);
  std::vector<int> ncontrib(nbuckets, 0);
  std::vector<char> mine(nbuckets, 0);
  size_t total = 0;
  if (depth) {
    for (int r = 0; r < n; ++r)
      if (depth[r] < 0) return fail(RINGRT_ERR_ARG, -1, "depth[%d] = %d < 0", r, depth[r]);
  }
  for (size_t b = 0; b < nbuckets; ++b) {
    const ringrt_bucket_t& bk = buckets[b];
    RINGRT_CHECK(check_buffer(bk.buf, bk.count, t, "bucket buffer"));
    total += bk.count;
    if (depth) {
      for (int r = 0; r < n; ++r)
        if (static_cast<size_t>(depth[r]) > b) ncontrib[b]++;
      mine[b] = static_cast<size_t>(depth[me]) > b;
    } else if (!bk.ranks && bk.nranks == 0) {
      ncontrib[b] = n;
      mine[b] = 1;
    } else {
      if (!bk.ranks || bk.nranks < 0 || bk.nranks > n)
        return fail(RINGRT_ERR_ARG, -1, "bucket %zu: bad contributor list", b);
      std::vector<char> seen(n, 0);
      for (int i = 0; i < bk.nranks; ++i) {
        int r = bk.ranks[i];
        if (r < 0 || r >= n || seen[r]) return fail(RINGRT_ERR_ARG, -1, "bucket %zu: bad or repeated rank %d", b, r);
        seen[r] = 1;
        if (r == me) mine[b] = 1;
      }
      ncontrib[b] = bk.nranks;
    }
  }
  if (total == 0) return RINGRT_OK;
  if (w.spb.size() < total * esz) {
    try {
      w.spb.resize(total * esz);
    } catch (const std::bad_alloc&) {
      return fail(RINGRT_ERR_NOMEM, -1, "cannot allocate %zu bytes for SPB packing", total * esz);
    }
  }
  char* p = w.spb.data();
  for (size_t b = 0; b < nbuckets; ++b) {
    size_t nb = buckets[b].count * esz;
    if (mine[b]) std::memcpy(p, buckets[b].buf, nb);
    else std::memset(p, 0, nb);  // zero is all-bits-zero in every dtype
    p += nb;
  }
  RINGRT_CHECK(record(host_allreduce(w.spb.data(), total, t, RINGRT_SUM)));
  p = w.spb.data();
  for (size_t b = 0; b < nbuckets; ++b) {
    size_t nb = buckets[b].count * esz;
    if (ncontrib[b] == 0) std::memset(buckets[b].buf, 0, nb);
    else {
      std::memcpy(buckets[b].buf, p, nb);
      divide(buckets[b].buf, buckets[b].count, t, ncontrib[b]);
    }
    p += nb;
  }
  return RINGRT_OK;
}

}  // namespace
}  // namespace ringrt

using namespace ringrt;

extern "C" {

ringrt_result_t ringrt_init(void) {
  clear_error();
  Config cfg;
  RINGRT_CHECK(config_from_env(&cfg));
  return init_world(cfg);
}

ringrt_result_t ringrt_init_config(const ringrt_config_t* c) {
  clear_error();
  Config cfg;
  RINGRT_CHECK(config_from_struct(c, &cfg));
  return init_world(cfg);
}

ringrt_result_t ringrt_finalize(void) {
  clear_error();
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  delete g_world;
  g_world = nullptr;
  return RINGRT_OK;
}

ringrt_result_t ringrt_rank(int* rank) {
  if (!rank) return fail(RINGRT_ERR_ARG, -1, "rank is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *rank = g_world->cfg.rank;
  return RINGRT_OK;
}

ringrt_result_t ringrt_world_size(int* size) {
  if (!size) return fail(RINGRT_ERR_ARG, -1, "size is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *size = g_world->cfg.world_size;
  return RINGRT_OK;
}

ringrt_result_t ringrt_local_rank(int* r) {
  if (!r) return fail(RINGRT_ERR_ARG, -1, "local_rank is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *r = g_world->local_rank;
  return RINGRT_OK;
}

ringrt_result_t ringrt_local_size(int* s) {
  if (!s) return fail(RINGRT_ERR_ARG, -1, "local_size is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *s = g_world->local_size;
  return RINGRT_OK;
}

ringrt_result_t ringrt_backend(ringrt_backend_t* b) {
  if (!b) return fail(RINGRT_ERR_ARG, -1, "backend is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *b = g_world->nccl_requested ? RINGRT_BACKEND_NCCL : g_world->backend;
  return RINGRT_OK;
}

ringrt_result_t ringrt_allreduce(const void* sendbuf, void* recvbuf, size_t count, ringrt_dtype_t dtype,
                                 ringrt_op_t op) {
  clear_error();
  RINGRT_CHECK(need_world());
  RINGRT_CHECK(check_buffer(recvbuf, count, dtype, "recvbuf"));
  if (!op_valid(op)) return fail(RINGRT_ERR_ARG, -1, "unknown op %d", static_cast<int>(op));
  World& w = *g_world;
  if (w.nccl && nccl_is_device(w.nccl, recvbuf))
    return record(nccl_allreduce(w.nccl, sendbuf ? sendbuf : recvbuf, recvbuf, count, dtype, op));
  if (sendbuf && sendbuf != recvbuf && count) std::memmove(recvbuf, sendbuf, count * dtype_size(dtype));
  if (count == 0) return RINGRT_OK;
  return record(host_allreduce(recvbuf, count, dtype, op));
}

ringrt_result_t ringrt_broadcast(void* buf, size_t count, ringrt_dtype_t dtype, int root) {
  clear_error();
  RINGRT_CHECK(need_world());
  RINGRT_CHECK(check_buffer(buf, count, dtype, "buf"));
  World& w = *g_world;
  if (root < 0 || root >= w.cfg.world_size)
    return fail(RINGRT_ERR_ARG, -1, "root %d outside [0, %d)", root, w.cfg.world_size);
  if (w.nccl && nccl_is_device(w.nccl, buf)) return record(nccl_broadcast(w.nccl, buf, count, dtype, root));
  if (count == 0) return RINGRT_OK;
  return record(host_broadcast(buf, count * dtype_size(dtype), root));
}

ringrt_result_t ringrt_barrier(void) {
  clear_error();
  RINGRT_CHECK(need_world());
  return record(host_barrier());
}

ringrt_result_t ringrt_allreduce_spb(ringrt_bucket_t* buckets, size_t nbuckets, ringrt_dtype_t dtype) {
  clear_error();
  return spb_run(buckets, nbuckets, dtype, nullptr);
}

ringrt_result_t ringrt_allreduce_spb_depth(ringrt_bucket_t* buckets, size_t nbuckets, ringrt_dtype_t dtype,
                                           const int* depth) {
  clear_error();
  if (!depth) return fail(RINGRT_ERR_ARG, -1, "depth is NULL");
  return spb_run(buckets, nbuckets, dtype, depth);
}

const char* ringrt_error_string(ringrt_result_t r) {
  switch (r) {
    case RINGRT_OK: return "RINGRT_OK: success";
    case RINGRT_ERR_ARG: return "RINGRT_ERR_ARG: invalid argument";
    case RINGRT_ERR_STATE: return "RINGRT_ERR_STATE: not initialised, or initialised twice";
    case RINGRT_ERR_CONFIG: return "RINGRT_ERR_CONFIG: missing or malformed configuration";
    case RINGRT_ERR_AUTH: return "RINGRT_ERR_AUTH: job secret missing or refused";
    case RINGRT_ERR_SYSTEM: return "RINGRT_ERR_SYSTEM: a system call failed";
    case RINGRT_ERR_TIMEOUT: return "RINGRT_ERR_TIMEOUT: rendezvous timed out";
    case RINGRT_ERR_PEER: return "RINGRT_ERR_PEER: a peer died, stalled or aborted";
    case RINGRT_ERR_PROTOCOL: return "RINGRT_ERR_PROTOCOL: malformed, mismatched or truncated frame";
    case RINGRT_ERR_UNSUPPORTED: return "RINGRT_ERR_UNSUPPORTED: not supported by this build";
    case RINGRT_ERR_NOMEM: return "RINGRT_ERR_NOMEM: out of memory";
  }
  return "RINGRT_ERR_?: unknown result code";
}

const char* ringrt_error_detail(void) { return last_detail().c_str(); }

ringrt_result_t ringrt_failed_rank(int* rank) {
  if (!rank) return RINGRT_ERR_ARG;
  *rank = last_blamed();
  return RINGRT_OK;
}

size_t ringrt_dtype_size(ringrt_dtype_t t) { return dtype_valid(t) ? dtype_size(t) : 0; }

}  // extern "C"
