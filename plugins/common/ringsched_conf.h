// ringsched.conf (see ringsched.conf(5)): Slurm-style key=value lines, '#' comments, keys
// case-insensitive. Every bad line is reported with file:line; the plugins then run neutral
// (they change nothing) and slurmctld keeps running. No Slurm here, so the tests link it directly.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ring_request.h"
#include "ringsched/model.h"
#include "ringsched/planner.h"
#include "ringsched/similarity.h"
#include "ringsched/throughput.h"

namespace ringsched {

struct RingschedConf {
  std::string path;                    // the file read
  PlannerConfig planner;               // Policy, RestartCost, MinGainMultiple, MinResizeInterval, Samples, Seed
  int replan_interval_s = 30;          // ReplanInterval
  int min_replan_gap_s = 2;            // MinReplanGap: no two rounds closer, events included
  int reshape_interval_s = 60;         // ReshapeInterval: at most one reshape per pending job
  int resize_hold_s = 90;              // ResizeHold: a job ringrun requeued at a requested size is its own
  std::vector<std::string> profile_files;  // ProfileFiles (comma separated; relative to the file)
  std::string feature_file;            // FeatureFile (optional; enables similarity)
  std::string reference_type = "k80";  // ReferenceType (similarity's reference)
  int similarity_k = 0;                // SimilarityK; 0: auto (fit_similarity on the profiles)
  std::string plan_file;               // PlanFile ("" : the plugin picks a default)
  int max_gpus_per_job = 64;           // MaxGpusPerJob
  double default_runtime_s = 3600;     // DefaultRuntime: for jobs without --ring-iters nor limit
  bool resize_running = true;          // ResizeRunning: record + signal resizes of running jobs

  // Throws InputError(path, line, what) for the first bad line (unknown key, bad value, value out
  // of bounds) and InputError(path, 0, ...) when the file cannot be read or lacks ProfileFiles.
  static RingschedConf load(const std::string& path);
  static RingschedConf parse(const std::string& text, const std::string& path);
};

// Everything the plugins plan with, built from a configuration: profiles, similarity, planner.
class Engine {
 public:
  // Loads the profile and feature files named by the configuration (errors name file and line).
  explicit Engine(RingschedConf conf);

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

  Planner planner() const { return Planner(model_, conf_.planner); }

 private:
  RingschedConf conf_;
  ThroughputModel model_;
  std::unique_ptr<SimilarityModel> similarity_;
};

}  // namespace ringsched
