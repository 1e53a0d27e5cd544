// SPDX-License-Identifier: GPL-2.0-or-later
// world.cpp -- the C API: the process-global world, its transports (backends.h picks and forms
// them; every collective goes through the Transport interface), the sticky error after a failed
// collective, and structured partial backprop on top of allreduce.
#include "backends.h"
#include "reduce.h"

#include <cstring>
#include <new>

namespace ringrt {
namespace {

struct World {
  Config cfg;
  Table table;
  Topology topo;
  Transports transports;
  rr sticky = RINGRT_OK;
  std::string sticky_detail;
  int sticky_blamed = -1;
  std::vector<char> spb;
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

// The result of a collective on `t`: a failure breaks the world (argument errors aside), and the
// transport tells its peers, so that none of them waits out its timeout.
rr record(rr rc, Transport& t) {
  if (rc == RINGRT_OK || !g_world) return rc;
  World& w = *g_world;
  if (rc == RINGRT_ERR_ARG) return rc;  // caller errors do not break the world
  w.sticky = rc;
  w.sticky_detail = last_detail();
  w.sticky_blamed = last_blamed();
  t.abort(rc, w.sticky_blamed, w.sticky_detail);
  set_error(rc, w.sticky_blamed, w.sticky_detail);
  return rc;
}

// The transport for a buffer: the device one where it takes it, the host one otherwise.
Transport& transport_for(const void* buf) {
  Transports& t = g_world->transports;
  if (t.device && t.device->takes(buf)) return *t.device;
  return *t.host;
}

Transport& host() { return *g_world->transports.host; }

rr init_world(const Config& cfg) {
  if (g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is already initialised (finalize first to re-form)");
  set_log_rank(cfg.rank);
  std::unique_ptr<World> w(new (std::nothrow) World);
  if (!w) return fail(RINGRT_ERR_NOMEM, -1, "out of memory");
  w->cfg = cfg;
  const NodeInfo node = probe_node();
  const int64_t deadline = now_ns() + ms_to_ns(cfg.init_timeout_ms);
  Fd listener;
  RINGRT_CHECK(rendezvous(cfg, &w->table, &listener));
  w->topo = topology_of(w->table, cfg.rank, node);
  RINGRT_CHECK(open_transports(cfg, w->table, w->topo, listener.fd, deadline, &w->transports));
  listener.reset();
  if (debug_enabled()) {
    const Topology& t = w->topo;
    const Transports& tr = w->transports;
    std::string more = tr.host->describe();
    if (tr.device) more += (more.empty() ? "" : "; ") + tr.device->describe();
    log_msg("world of %d formed: backend %s, %zu node(s), local %d/%d, %d cpus, %d cores, %d NUMA node(s)%s%s",
            t.world, backend_name(tr.device ? tr.requested : tr.host_backend), t.nodes(), t.local_rank(),
            t.local_size(), t.node.cpus, t.node.cores, t.node.numa_nodes, more.empty() ? "" : ", ", more.c_str());
  }
  g_world = w.release();
  return RINGRT_OK;
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
  RINGRT_CHECK(record(host().allreduce(w.spb.data(), w.spb.data(), total, t, RINGRT_SUM, 0), host()));
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
  *r = g_world->topo.local_rank();
  return RINGRT_OK;
}

ringrt_result_t ringrt_local_size(int* s) {
  if (!s) return fail(RINGRT_ERR_ARG, -1, "local_size is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  *s = g_world->topo.local_size();
  return RINGRT_OK;
}

ringrt_result_t ringrt_backend(ringrt_backend_t* b) {
  if (!b) return fail(RINGRT_ERR_ARG, -1, "backend is NULL");
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  const Transports& t = g_world->transports;
  *b = t.device ? t.requested : t.host_backend;
  return RINGRT_OK;
}

ringrt_result_t ringrt_allreduce(const void* sendbuf, void* recvbuf, size_t count, ringrt_dtype_t dtype,
                                 ringrt_op_t op) {
  clear_error();
  RINGRT_CHECK(need_world());
  RINGRT_CHECK(check_buffer(recvbuf, count, dtype, "recvbuf"));
  if (!op_valid(op)) return fail(RINGRT_ERR_ARG, -1, "unknown op %d", static_cast<int>(op));
  if (count == 0) return RINGRT_OK;
  Transport& t = transport_for(recvbuf);
  const int div = op == RINGRT_AVG ? g_world->cfg.world_size : 0;
  return record(t.allreduce(sendbuf, recvbuf, count, dtype, op, div), t);
}

ringrt_result_t ringrt_broadcast(void* buf, size_t count, ringrt_dtype_t dtype, int root) {
  clear_error();
  RINGRT_CHECK(need_world());
  RINGRT_CHECK(check_buffer(buf, count, dtype, "buf"));
  if (root < 0 || root >= g_world->cfg.world_size)
    return fail(RINGRT_ERR_ARG, -1, "root %d outside [0, %d)", root, g_world->cfg.world_size);
  if (count == 0) return RINGRT_OK;
  Transport& t = transport_for(buf);
  return record(t.broadcast(buf, count * dtype_size(dtype), root), t);
}

ringrt_result_t ringrt_barrier(void) {
  clear_error();
  RINGRT_CHECK(need_world());
  return record(host().barrier(), host());
}

ringrt_result_t ringrt_allgather(const void* sendbuf, void* recvbuf, size_t count, ringrt_dtype_t dtype) {
  clear_error();
  RINGRT_CHECK(need_world());
  const size_t n = static_cast<size_t>(g_world->cfg.world_size);
  if (!dtype_valid(dtype)) return fail(RINGRT_ERR_ARG, -1, "unknown dtype %d", static_cast<int>(dtype));
  if (count > (static_cast<size_t>(1) << 62) / dtype_size(dtype) / n)
    return fail(RINGRT_ERR_ARG, -1, "count too large");
  RINGRT_CHECK(check_buffer(recvbuf, count * n, dtype, "recvbuf"));
  if (count == 0) return RINGRT_OK;
  const size_t bytes = count * dtype_size(dtype);
  // NULL: in place, this rank's part already in recvbuf
  const void* mine = sendbuf ? sendbuf : static_cast<const char*>(recvbuf) + g_world->cfg.rank * bytes;
  Transport& t = transport_for(recvbuf);
  return record(t.allgather(mine, recvbuf, bytes), t);
}

ringrt_result_t ringrt_abort(const char* reason) {
  clear_error();
  if (!g_world) return fail(RINGRT_ERR_STATE, -1, "ringrt is not initialised");
  World& w = *g_world;
  if (w.sticky != RINGRT_OK) return RINGRT_OK;  // broken already: the peers have heard
  const int me = w.cfg.rank;
  fail(RINGRT_ERR_PEER, me, "rank %d aborted the world: %.400s", me, reason && *reason ? reason : "no reason given");
  if (w.transports.device) w.transports.device->abort(RINGRT_ERR_PEER, me, last_detail());
  record(RINGRT_ERR_PEER, host());
  clear_error();
  return RINGRT_OK;
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
