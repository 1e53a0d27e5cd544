// SPDX-License-Identifier: GPL-2.0-or-later
#include "slurm_job.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "bounded_int.h"
#include "config.h"
#include "ringsched/model.h"

#ifdef HAVE_LIBSLURM
extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
}

#include "slurm_api_compat.h"
#endif

namespace ringrun {

namespace {

// "gres:gpu:v100:4", "gres/gpu:v100=4", "gres:gpu:4" -> type and count (count 0 if none).
[[maybe_unused]] void parse_gpu_gres(const std::string& s, std::string* type, int* count) {
  *count = 0;
  type->clear();
  size_t at = s.find("gpu");
  if (at == std::string::npos) return;
  std::string rest = s.substr(at + 3);
  size_t end = rest.find(',');
  if (end != std::string::npos) rest = rest.substr(0, end);
  std::vector<std::string> f;
  std::string cur;
  for (char c : rest) {
    if (c == ':' || c == '=' || c == '(') {
      f.push_back(cur);
      cur.clear();
      if (c == '(') break;
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) f.push_back(cur);
  // f[0] is "" (what followed "gpu"); then [type,] count.
  std::vector<std::string> g;
  for (auto& x : f)
    if (!x.empty()) g.push_back(x);
  if (g.empty()) return;
  int n = 0;
  if (ringsched::parse_int(g.back(), 1, 4096, &n)) {
    *count = n;
    if (g.size() >= 2) *type = g[g.size() - 2];
  } else if (g.size() == 1) {
    *type = g[0];
    *count = 1;
  }
}

}  // namespace

#ifdef HAVE_LIBSLURM

bool libslurm_available() { return true; }

static std::string slurm_error() { return slurm_strerror(slurm_get_errno()); }

SlurmJob::SlurmJob(uint32_t job_id) : id_(job_id) {
  static bool initialised = false;
  if (!initialised) slurm_init(nullptr), initialised = true;
  refresh();
}

void SlurmJob::refresh() {
  job_info_msg_t* msg = nullptr;
  if (ringsched::load_job(&msg, id_, SHOW_DETAIL) != SLURM_SUCCESS || !msg || msg->record_count < 1) {
    if (msg) slurm_free_job_info_msg(msg);
    throw std::runtime_error("cannot read Slurm job " + std::to_string(id_) + ": " + slurm_error());
  }
  const slurm_job_info_t& j = msg->job_array[0];
  shape_.job_id = id_;
  shape_.nodes = int(j.num_nodes);
  parse_gpu_gres(j.tres_per_node ? j.tres_per_node : "", &shape_.gpu_type, &shape_.gpus_per_node);
  shape_.type_by_feature = false;
  if (shape_.gpu_type.empty()) {
    shape_.gpu_type = ringsched::type_from_constraint(j.features ? j.features : "");
    shape_.type_by_feature = !shape_.gpu_type.empty();
  }
  shape_.admin_comment = j.admin_comment ? j.admin_comment : "";
  shape_.comment = j.comment ? j.comment : "";
  shape_.first_node_addr.clear();
  shape_.node_gpu_type.clear();
  if (j.nodes && *j.nodes) {
    ringsched::HostlistHandle hl = slurm_hostlist_create(j.nodes);
    if (char* first = hl ? slurm_hostlist_shift(hl) : nullptr) {
      node_info_msg_t* nodes = nullptr;
      if (slurm_load_node_single(&nodes, first, SHOW_ALL) == SLURM_SUCCESS && nodes && nodes->record_count > 0) {
        const node_info_t& n = nodes->node_array[0];
        if (n.node_addr) shape_.first_node_addr = n.node_addr;
        int count;
        if (n.gres) parse_gpu_gres(std::string("gres:") + n.gres, &shape_.node_gpu_type, &count);
      }
      if (nodes) slurm_free_node_info_msg(nodes);
      if (shape_.first_node_addr.empty()) shape_.first_node_addr = first;
      free(first);
    }
    if (hl) slurm_hostlist_destroy(hl);
  }
  slurm_free_job_info_msg(msg);
}

int SlurmJob::node_gpus(const std::string& wanted) const {
  node_info_msg_t* nodes = nullptr;
  int best = 0;
  if (slurm_load_node(0, &nodes, SHOW_ALL) != SLURM_SUCCESS || !nodes) return 0;
  for (uint32_t i = 0; i < nodes->record_count; ++i) {
    const node_info_t& n = nodes->node_array[i];
    if (!n.gres) continue;
    std::string type;
    int count;
    const std::string& want = wanted;
    parse_gpu_gres(std::string("gres:") + n.gres, &type, &count);
    if (want.empty() || type == want) best = std::max(best, count);
  }
  slurm_free_node_info_msg(nodes);
  return best;
}

std::string SlurmJob::set_comment(const std::string& comment) {
  job_desc_msg_t d;
  slurm_init_job_desc_msg(&d);
  ringsched::set_update_job_id(d, id_);
  d.comment = const_cast<char*>(comment.c_str());
  if (slurm_update_job(&d) != SLURM_SUCCESS) return "Comment update failed: " + slurm_error();
  shape_.comment = comment;
  return "";
}

std::string SlurmJob::requeue_held() {
  if (ringsched::requeue_job(id_, JOB_REQUEUE_HOLD) != SLURM_SUCCESS) return "requeue failed: " + slurm_error();
  return "";
}

std::string SlurmJob::requeue_resized(int total, const std::string& new_type, double* requeue_s, double* update_s,
                                      bool* requeued) {
  *requeued = false;
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  const std::string type = new_type.empty() ? shape_.gpu_type : new_type;
  if (type != shape_.gpu_type && !shape_.type_by_feature)
    return "a typed GPU request (" + (shape_.gpu_type.empty() ? std::string("untyped") : shape_.gpu_type) +
           ") cannot be switched to type " + new_type + " (DESIGN 4); ringsched gives ring jobs their type as a "
           "feature constraint";
  int per_node_max = node_gpus(type);
  if (per_node_max <= 0) per_node_max = shape_.gpus_per_node;
  if (total < 1 || per_node_max < 1) return "cannot size the job: " + std::to_string(total) + " GPUs";
  int nodes = (total + per_node_max - 1) / per_node_max;
  if (total % nodes != 0)
    return std::to_string(total) + " GPUs do not split evenly over " + std::to_string(nodes) + " nodes";
  const int per_node = total / nodes;

  if (ringsched::requeue_job(id_, JOB_REQUEUE_HOLD) != SLURM_SUCCESS) return "requeue failed: " + slurm_error();
  *requeued = true;
  *requeue_s = std::chrono::duration<double>(clock::now() - t0).count();
  auto t1 = clock::now();

  // One field per update (DESIGN 4: a failed multi-field update is not atomic). The job may
  // still be completing right after the requeue; retry briefly on "not pending".
  auto update = [&](job_desc_msg_t* d, const std::string& what) -> std::string {
    for (int tries = 0;; ++tries) {
      if (slurm_update_job(d) == SLURM_SUCCESS) return "";
      int e = slurm_get_errno();
      if ((e == ESLURM_JOB_NOT_PENDING || e == ESLURM_TRANSITION_STATE_NO_UPDATE) && tries < 50) {
        usleep(100000);
        continue;
      }
      return what + " update failed: " + slurm_strerror(e);
    }
  };
  // The fields that may change, as (name, old value, new value), updated in this order.
  struct Field {
    const char* name;
    std::string from, to;
    int nodes_from = 0, nodes_to = 0;  // NumNodes as numbers
  };
  const std::string typed = shape_.type_by_feature || shape_.gpu_type.empty() ? "" : shape_.gpu_type + ":";
  const std::vector<Field> fields = {
      {"NumNodes", std::to_string(shape_.nodes), std::to_string(nodes), shape_.nodes, nodes},
      {"TresPerNode", std::string(ringsched::kGpuTres) + ":" + typed + std::to_string(shape_.gpus_per_node),
       std::string(ringsched::kGpuTres) + ":" + typed + std::to_string(per_node)},
      {"Features", shape_.gpu_type, type},
  };
  auto set_field = [&](const Field& f, const std::string& value) {
    job_desc_msg_t d;
    slurm_init_job_desc_msg(&d);
    ringsched::set_update_job_id(d, id_);
    const std::string name = f.name;
    if (name == "NumNodes") d.min_nodes = d.max_nodes = uint32_t(value == f.to ? f.nodes_to : f.nodes_from);
    else if (name == "TresPerNode") d.tres_per_node = const_cast<char*>(value.c_str());
    else d.features = const_cast<char*>(value.c_str());
    return update(&d, name);
  };
  std::string err;
  size_t done = 0;
  for (; done < fields.size() && err.empty(); ++done)
    if (fields[done].from != fields[done].to) err = set_field(fields[done], fields[done].to);
  if (!err.empty()) {
    for (size_t i = done - 1; i-- > 0;)  // the failed field itself was not changed
      if (fields[i].from != fields[i].to) {
        const std::string e2 = set_field(fields[i], fields[i].from);
        if (!e2.empty()) err += "; rollback: " + e2;
      }
  }
  job_desc_msg_t rel;
  slurm_init_job_desc_msg(&rel);
  ringsched::set_update_job_id(rel, id_);
  rel.priority = INFINITE;  // what "scontrol release" sends
  std::string rerr = update(&rel, "release");
  *update_s = std::chrono::duration<double>(clock::now() - t1).count();
  if (!rerr.empty()) err += (err.empty() ? "" : "; ") + rerr;
  return err;
}

#else  // !HAVE_LIBSLURM

bool libslurm_available() { return false; }
SlurmJob::SlurmJob(uint32_t job_id) : id_(job_id) {
  throw std::runtime_error("ringrun was built without libslurm (Debian: libslurm-dev); cannot manage job " +
                           std::to_string(job_id));
}
void SlurmJob::refresh() {}
int SlurmJob::node_gpus(const std::string& wanted) const { return 0; }
std::string SlurmJob::set_comment(const std::string&) { return "built without libslurm"; }
std::string SlurmJob::requeue_held() { return "built without libslurm"; }
std::string SlurmJob::requeue_resized(int, const std::string&, double*, double*, bool* requeued) {
  *requeued = false;
  return "built without libslurm";
}

#endif

}  // namespace ringrun
