// SPDX-License-Identifier: GPL-2.0-or-later
// job_submit/ringsched: admission of ring jobs. Reads the --ring-* options from the job's SPANK
// environment, rejects bad requests with a message the user sees (unknown GPU type, impossible
// range, unknown model), and sets the initial GPU type, count and node count that the planner
// picks for the cluster as it is now. Ordinary jobs pass untouched. Never lets an exception reach
// slurmctld: anything unexpected is logged and the job passes unchanged.
#include <algorithm>
#include <ctime>
#include <exception>
#include <string>

#include "policy_holder.h"
#include "resize_note.h"
#include "ring_request.h"
#include "slurm_compat.h"
#include "slurm_glue.h"

extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const uint32_t plugin_version;
const char plugin_name[] = "ringsched job submit plugin";
const char plugin_type[] = "job_submit/ringsched";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

int init(void);
int fini(void);
int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg);
// job_modify, whose signature depends on the Slurm version: slurm_compat_job_submit.cpp.
}

namespace {

ringsched::PolicyHolder* g_policy = nullptr;

bool asks_for_gpus(const char* tres) { return tres && std::string(tres).find("gpu") != std::string::npos; }

int reject(char** err_msg, const std::string& message) {
  if (err_msg) {
    xfree(*err_msg);
    *err_msg = xstrdup(message.c_str());
  }
  info("job_submit/ringsched: rejected: %s", message.c_str());
  return ESLURM_INVALID_GRES;
}

// Called with read locks on config, job, node and partition (job_submit_plugin_submit).
int submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  std::vector<std::string> env;
  for (uint32_t i = 0; job_desc->spank_job_env && i < job_desc->spank_job_env_size; ++i)
    if (job_desc->spank_job_env[i]) env.emplace_back(job_desc->spank_job_env[i]);
  ringsched::RingRequest request;
  std::string error;
  if (!request.from_env(env, error)) return reject(err_msg, "ringsched: " + error);
  if (!request.present) return SLURM_SUCCESS;  // an ordinary job

  if (asks_for_gpus(job_desc->tres_per_node) || asks_for_gpus(job_desc->tres_per_job) ||
      asks_for_gpus(job_desc->tres_per_task) || asks_for_gpus(job_desc->tres_per_socket))
    return reject(err_msg,
                  "ringsched: do not combine --gres=gpu/--gpus with --ring-* options; ringsched "
                  "picks the GPU type and count (use --ring-gpus and --ring-types)");
  if (job_desc->features && *job_desc->features)
    return reject(err_msg,
                  "ringsched: do not combine --constraint with --ring-* options; ringsched sets the "
                  "constraint to the GPU type it picks (use --ring-types to limit the types)");

  std::shared_ptr<ringsched::ConfiguredPolicy> policy = g_policy ? g_policy->get() : nullptr;
  if (!policy) {
    // Neutral: nobody would give the job its GPUs, so it is refused now rather than accepted into
    // a state in which it cannot run (ringsched(8), NEUTRAL MODE).
    info("job_submit/ringsched: ring job of uid %u refused (neutral: %s)", submit_uid,
         g_policy ? g_policy->last_error().c_str() : "not initialised");
    return reject(err_msg,
                  "ringsched: ring jobs are not accepted now: the scheduler's configuration (ringsched.conf) is "
                  "invalid and the administrator has been told (slurmctld log). Submit again later, or now "
                  "without the --ring-* options, asking for GPUs yourself (--gres=gpu:N)");
  }
  const ringsched::Cluster cluster = ringsched::snapshot_cluster();
  if (cluster.nodes.empty()) return reject(err_msg, "ringsched: this cluster has no typed GPU nodes");
  if (!policy->admit(request, cluster, error)) return reject(err_msg, error);

  // The planner decides the initial shape for the cluster as it is now, this job alone.
  const double limit_s = (job_desc->time_limit != NO_VAL && job_desc->time_limit != INFINITE)
                             ? job_desc->time_limit * 60.0
                             : 0.0;
  const auto [type, gpus, why] = policy->initial_shape(request, cluster, static_cast<double>(std::time(nullptr)), limit_s,
                                                      job_desc->requeue != 0);
  const ringsched::NodeSpread spread = ringsched::spread_gpus(cluster, type, gpus);
  if (type.empty() || spread.nodes == 0)
    return reject(err_msg, "ringsched: no node layout gives " + std::to_string(gpus) + " GPUs of type " +
                               (type.empty() ? "?" : type) + " to this job");

  // The type as a node feature, so that the planner can retype the job while it is pending.
  const bool by_feature = ringsched::type_is_node_feature(type);
  if (!by_feature)
    info("job_submit/ringsched: nodes of GPU type %s do not all have Feature=%s in slurm.conf: the "
         "job asks for a typed gres, and its type cannot change while it waits (ringsched(8))",
         type.c_str(), type.c_str());
  const ringsched::GpuRequest gres = ringsched::gpu_request(type, spread.per_node, by_feature);
  xfree(job_desc->tres_per_node);
  job_desc->tres_per_node = xstrdup(gres.tres_per_node.c_str());
  xfree(job_desc->features);
  if (!gres.features.empty()) job_desc->features = xstrdup(gres.features.c_str());
  job_desc->min_nodes = static_cast<uint32_t>(spread.nodes);
  job_desc->max_nodes = static_cast<uint32_t>(spread.nodes);
  // The mark by which ringrun knows that the planner owns the job's shape (resize_note.h); users
  // cannot write AdminComment, and Slurm checked the user's own value before this plugin.
  xfree(job_desc->admin_comment);
  job_desc->admin_comment = xstrdup(ringsched::PlannerNote::admitted().str().c_str());
  info("job_submit/ringsched: uid %u model %s gpus %d-%d -> %d x %s on %d node(s): %s", submit_uid,
       request.model.c_str(), request.min_gpus, request.max_gpus, gpus, type.c_str(), spread.nodes,
       why.c_str());
  return SLURM_SUCCESS;
}

}  // namespace

extern "C" int init(void) {
  try {
    g_policy = new ringsched::PolicyHolder("job_submit/ringsched");
    g_policy->get(true);  // logs a bad configuration now; the plugin still loads (neutral)
  } catch (const std::exception& e) {
    error("job_submit/ringsched: init: %s", e.what());
  }
  return SLURM_SUCCESS;
}

extern "C" int fini(void) {
  delete g_policy;
  g_policy = nullptr;
  return SLURM_SUCCESS;
}

extern "C" int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
  try {
    return submit(job_desc, submit_uid, err_msg);
  } catch (const std::exception& e) {
    error("job_submit/ringsched: unexpected error, job passes unchanged: %s", e.what());
  } catch (...) {
    error("job_submit/ringsched: unexpected error, job passes unchanged");
  }
  return SLURM_SUCCESS;
}

// Users may not change the GPUs, the node count or the features (its GPU type) of a ring job by
// hand: the planner owns its shape. Root and SlurmUser (the planner's own updates) may.
int ringsched::job_submit_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid,
                                 char** err_msg) {
  try {
    if (submit_uid == 0 || submit_uid == slurm_conf.slurm_user_id) return SLURM_SUCCESS;
    ringsched::RingRequest request;
    std::string error;
    if (ringsched::job_ring_request(job_ptr, request, error) &&
        (asks_for_gpus(job_desc->tres_per_node) || asks_for_gpus(job_desc->tres_per_job) ||
         asks_for_gpus(job_desc->tres_per_task) || asks_for_gpus(job_desc->tres_per_socket) ||
         job_desc->features || job_desc->min_nodes != NO_VAL || job_desc->max_nodes != NO_VAL)) {
      info("job_submit/ringsched: uid %u may not change the GPUs, node count or features of ring job %u",
           submit_uid, job_ptr->job_id);
      if (err_msg) {  // 24.11 and later show it to the user
        xfree(*err_msg);
        *err_msg = xstrdup("ringsched: the planner owns the GPUs, node count and features of ring jobs");
      }
      return ESLURM_ACCESS_DENIED;
    }
  } catch (...) {
    error("job_submit/ringsched: unexpected error in job_modify; change allowed");
  }
  return SLURM_SUCCESS;
}
