// SPDX-License-Identifier: GPL-2.0-or-later
// The policy as ringsched.conf configures it (see ConfiguredPolicy below). No Slurm here: the
// slurmctld plugins, ringsched(8) and the unit tests share it.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ring_request.h"
#include "ringsched/model.h"
#include "ringsched/planner.h"
#include "ringsched/similarity.h"
#include "ringsched/throughput.h"
#include "ringsched_conf.h"

namespace ringsched {

// The policy as ringsched.conf configures it: the profiles (and similarity predictions) and the
// planner's settings, with the decisions the plugins and ringsched(8) make from them (admission,
// the initial shape of a new job, the one GPU type of a planned job). One per configuration
// load (PolicyHolder). Not ringsim's Engine, which simulates a cluster.
class ConfiguredPolicy {
 public:
  // Loads the profile and feature files named by the configuration (errors name file and line).
  explicit ConfiguredPolicy(RingschedConf conf);

  const RingschedConf& conf() const { return conf_; }
  const ThroughputModel& model() const { return model_; }
  const SimilarityModel* similarity() const { return similarity_.get(); }

  // Makes sure `model` can be planned on `types`: measured points, or similarity predictions
  // registered now. Returns false (with `why`) when nothing is known of the model.
  bool prepare_model(const std::string& model, const std::vector<std::string>& types,
                     std::string& why);
  // The types the model is predicted/measured fastest on at one GPU, best first.
  std::vector<std::string> rank_types(const std::string& model,
                                      const std::vector<std::string>& types) const;

  // Admission of a new ring job (job_submit): fills defaults into `request` (GPU range, allowed
  // types = the cluster's) and checks it against the cluster and the configuration. Returns false
  // with a message for the user naming the option: unknown GPU type, impossible range, unknown
  // model, a range without a power of two when the policy needs one.
  bool admit(RingRequest& request, const Cluster& cluster, std::string& error);

  // The planner's view of a ring job. Iterations default to what the job would do at its minimum
  // size on its best type in `runtime_s` (its time limit, or DefaultRuntime).
  Job make_job(const std::string& id, const RingRequest& request, double submit_s,
               double runtime_s) const;

  // The one GPU type a planned job runs on in Slurm: one typed gres request cannot span types,
  // so a mixed plan runs on the fastest allowed type that holds the planned count (`cluster`
  // gives the capacity per type). Returns {"", 0} when no single type can.
  std::pair<std::string, int> single_type(const JobPlan& plan, const std::vector<std::string>& allowed,
                                          const std::string& model, const Cluster& cluster) const;

  // The shape a new ring job starts with (job_submit): what the planner gives this job alone on
  // the cluster as it is now; when nothing is free for it, the fastest allowed type that has
  // enough GPUs, at the minimum size (rounded up to a power of two when the policy uses them,
  // within the maximum). `request` has been through admit(); `runtime_s` is its time limit (0:
  // none). type is "" when no allowed type can hold the job.
  struct InitialShape {
    std::string type;
    int gpus = 0;
    std::string why;  // for the log
  };
  // `stoppable`: Slurm may requeue the job (Job::stoppable; else a fixed-size job waits for a
  // type worth starting on, ringsched-policies(7) RUNNING JOBS).
  InitialShape initial_shape(const RingRequest& request, const Cluster& cluster, double now_s,
                             double runtime_s, bool stoppable = true) const;

  Planner planner() const { return Planner(model_, conf_.planner); }

 private:
  RingschedConf conf_;
  ThroughputModel model_;
  std::unique_ptr<SimilarityModel> similarity_;
};

}  // namespace ringsched
