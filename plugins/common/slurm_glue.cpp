// SPDX-License-Identifier: GPL-2.0-or-later
#include "slurm_glue.h"

#include <algorithm>
#include <cstdlib>

#include "slurm_compat.h"

namespace ringsched {

namespace {

const gres_node_state_t* node_gpu_state(const node_record_t* node) {
  if (!node->gres_list) return nullptr;
  const gres_node_state_t* found = nullptr;
  ListIterator it = list_iterator_create(node->gres_list);
  while (auto* gres = static_cast<gres_state_t*>(list_next(it))) {
    if (gres->gres_name && std::string(gres->gres_name) == "gpu") {
      found = static_cast<const gres_node_state_t*>(gres->gres_data);
      break;
    }
  }
  list_iterator_destroy(it);
  return found;
}

// Walks the gpu entries of a job's gres list: the allocated list of a running job or the
// requested one of a pending job.
template <typename F>
void for_each_gpu_gres(List list, F f) {
  if (!list) return;
  ListIterator it = list_iterator_create(list);
  while (auto* gres = static_cast<gres_state_t*>(list_next(it))) {
    if (gres->gres_name && std::string(gres->gres_name) == "gpu" && gres->gres_data)
      f(static_cast<const gres_job_state_t*>(gres->gres_data));
  }
  list_iterator_destroy(it);
}

std::string node_gpu_type(const node_record_t* node) {
  const gres_node_state_t* gpu = node ? node_gpu_state(node) : nullptr;
  return gpu && gpu->type_cnt > 0 && gpu->type_name[0] ? normalize_type(gpu->type_name[0]) : "";
}

}  // namespace

bool type_is_node_feature(const std::string& type) {
  bool any = false;
  node_record_t* node = nullptr;
  for (int i = 0; (node = next_node(&i)); ++i) {
    if (node_gpu_type(node) != type) continue;
    any = true;
    bool has = false;
    const std::string features = node->features ? node->features : "";
    for (size_t start = 0; start <= features.size() && !has;) {
      const size_t end = std::min(features.find(',', start), features.size());
      has = normalize_type(features.substr(start, end - start)) == type;
      start = end + 1;
    }
    if (!has) return false;
  }
  return any;
}

Cluster snapshot_cluster() {
  Cluster cluster;
  node_record_t* node = nullptr;
  for (int i = 0; (node = next_node(&i)); ++i) {
    const gres_node_state_t* gpu = node_gpu_state(node);
    if (!gpu || gpu->gres_cnt_avail == 0 || gpu->type_cnt == 0 || !gpu->type_name[0]) continue;
    Node n;
    n.name = node->name;
    n.gpu_type = normalize_type(gpu->type_name[0]);
    n.gpus = static_cast<int>(gpu->gres_cnt_avail);
    const bool usable = !IS_NODE_DOWN(node) && !IS_NODE_DRAIN(node) && !IS_NODE_FAIL(node) &&
                        !IS_NODE_NO_RESPOND(node);
    const long free_gpus = usable ? static_cast<long>(gpu->gres_cnt_avail) -
                                        static_cast<long>(gpu->gres_cnt_alloc)
                                  : 0;
    n.free_gpus = static_cast<int>(std::max(0L, free_gpus));
    cluster.nodes.push_back(n);
  }
  return cluster;
}

bool job_ring_request(const job_record_t* job, RingRequest& request, std::string& error) {
  if (!job->spank_job_env || job->spank_job_env_size == 0) return false;
  std::vector<std::string> env;
  for (uint32_t i = 0; i < job->spank_job_env_size; ++i)
    if (job->spank_job_env[i]) env.emplace_back(job->spank_job_env[i]);
  if (!request.from_env(env, error)) return false;
  return request.present;
}

GpuShape job_gpu_shape(const job_record_t* job) {
  GpuShape shape;
  if (IS_JOB_RUNNING(job) || IS_JOB_SUSPENDED(job)) {
    for_each_gpu_gres(job->gres_list_alloc, [&](const gres_job_state_t* g) {
      if (g->type_name) shape.type = normalize_type(g->type_name);
      if (shape.type.empty() && job->node_bitmap) {
        // An untyped request: the type of the nodes it got.
        const int first = bit_ffs(job->node_bitmap);
        if (first >= 0 && first < node_record_count) shape.type = node_gpu_type(node_record_table_ptr[first]);
      }
      // gres_cnt_node_alloc[k] belongs to the k-th node of the job's node_bitmap.
      int k = 0;
      for (int idx = job->node_bitmap ? bit_ffs(job->node_bitmap) : -1;
           idx >= 0 && idx < node_record_count && k < static_cast<int>(g->node_cnt); ++idx) {
        if (!bit_test(job->node_bitmap, idx)) continue;
        const int n = g->gres_cnt_node_alloc ? static_cast<int>(g->gres_cnt_node_alloc[k]) : 0;
        if (n > 0 && node_record_table_ptr[idx]) {
          shape.gpus_by_node[node_record_table_ptr[idx]->name] += n;
          shape.gpus += n;
        }
        ++k;
      }
    });
    shape.nodes = static_cast<int>(shape.gpus_by_node.size());
    shape.type_by_feature = job->details && !shape.type.empty() &&
                            type_from_constraint(job->details->features ? job->details->features : "") == shape.type;
    return shape;
  }
  const int nodes = job->details ? static_cast<int>(std::max<uint32_t>(1, job->details->min_nodes)) : 1;
  for_each_gpu_gres(job->gres_list_req, [&](const gres_job_state_t* g) {
    if (g->type_name) shape.type = normalize_type(g->type_name);
    if (g->gres_per_node > 0 && g->gres_per_node != NO_VAL64)
      shape.gpus += static_cast<int>(g->gres_per_node) * nodes;
    else if (g->gres_per_job > 0 && g->gres_per_job != NO_VAL64)
      shape.gpus += static_cast<int>(g->gres_per_job);
  });
  shape.nodes = nodes;
  if (shape.type.empty() && job->details) {
    shape.type = type_from_constraint(job->details->features ? job->details->features : "");
    shape.type_by_feature = !shape.type.empty();
  }
  return shape;
}

NodeSpread spread_gpus(const Cluster& cluster, const std::string& type, int gpus) {
  NodeSpread s;
  int per_node_cap = 0, node_count = 0;
  for (const Node& n : cluster.nodes) {
    if (n.gpu_type != type) continue;
    per_node_cap = std::max(per_node_cap, n.gpus);
    ++node_count;
  }
  if (per_node_cap == 0 || gpus <= 0) return s;
  s.nodes = (gpus + per_node_cap - 1) / per_node_cap;
  while (s.nodes <= node_count && gpus % s.nodes != 0) ++s.nodes;
  if (s.nodes > node_count) return NodeSpread{};
  s.per_node = gpus / s.nodes;
  return s;
}

GpuRequest gpu_request(const std::string& type, int per_node, bool by_feature) {
  GpuRequest r;
  if (by_feature) {
    r.tres_per_node = std::string(kGpuTres) + ":" + std::to_string(per_node);
    r.features = type;
  } else {
    r.tres_per_node = std::string(kGpuTres) + ":" + type + ":" + std::to_string(per_node);
  }
  return r;
}

}  // namespace ringsched
