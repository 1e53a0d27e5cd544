// SPDX-License-Identifier: GPL-2.0-or-later
#include "configured_policy.h"

#include <algorithm>
#include <exception>
#include <tuple>

namespace ringsched {

ConfiguredPolicy::ConfiguredPolicy(RingschedConf conf) : conf_(std::move(conf)) {
  ProfileTable table;
  for (const std::string& f : conf_.profile_files) table.merge(ProfileTable::load_csv(f));
  if (table.points().empty())
    throw InputError(conf_.path, 0, "ProfileFiles hold no profile point");
  if (conf_.planner.use_similarity && !conf_.feature_file.empty()) {
    FeatureTable features = FeatureTable::load_csv(conf_.feature_file);
    SimilarityConfig sc;
    sc.k = conf_.similarity_k > 0 ? conf_.similarity_k : 3;
    sc.reference_type = conf_.reference_type;
    // auto: k, feature weights and the fallback chosen by leaving whole architectures of the
    // profiled models out (the way eval_similarity scores it), once per configuration load.
    if (conf_.similarity_k == 0)
      sc = fit_similarity(features, known_ratios(table, sc.reference_type), sc, architecture_of).config;
    similarity_ = std::make_unique<SimilarityModel>(std::move(features), table, sc);
  }
  model_ = ThroughputModel(std::move(table));
}

bool ConfiguredPolicy::prepare_model(const std::string& model, const std::vector<std::string>& types,
                           std::string& why) {
  std::vector<std::string> missing;
  for (const std::string& t : types)
    if (!model_.knows(model, t)) missing.push_back(t);
  if (missing.empty()) return true;
  if (similarity_ && similarity_->features().find(model))
    similarity_->register_predictions(model_, model, missing);
  for (const std::string& t : types)
    if (model_.knows(model, t)) return true;
  why = "model '" + model + "' has no profile on " +
        (types.size() == 1 ? "GPU type " + types[0] : std::string("any allowed GPU type")) +
        (similarity_ ? " and no row in " + conf_.feature_file + " to predict it from"
                     : " (set FeatureFile in ringsched.conf to predict unknown models)");
  return false;
}

std::vector<std::string> ConfiguredPolicy::rank_types(const std::string& model,
                                            const std::vector<std::string>& types) const {
  std::vector<std::pair<double, std::string>> speed;
  for (const std::string& t : types) {
    const double v = model_.iters_per_s(model, t, 1);
    if (v > 0) speed.emplace_back(-v, t);
  }
  std::sort(speed.begin(), speed.end());
  std::vector<std::string> ranked;
  for (const auto& s : speed) ranked.push_back(s.second);
  return ranked;
}

bool ConfiguredPolicy::admit(RingRequest& request, const Cluster& cluster, std::string& error) {
  const std::vector<std::string> cluster_types = cluster.types();
  std::string known;
  for (const auto& t : cluster_types) known += (known.empty() ? "" : ", ") + t;
  for (const std::string& t : request.types) {
    if (std::find(cluster_types.begin(), cluster_types.end(), t) == cluster_types.end()) {
      error = "ringsched: unknown GPU type '" + t + "' in --ring-types (this cluster has: " +
              known + ")";
      return false;
    }
  }
  if (request.types.empty()) request.types = cluster_types;
  if (request.min_gpus == 0) {
    request.min_gpus = 1;
    request.max_gpus = request.elastic == 1 ? conf_.max_gpus_per_job : 1;
  }
  if (request.max_gpus > conf_.max_gpus_per_job) {
    error = "ringsched: --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
            std::to_string(request.max_gpus) + " exceeds MaxGpusPerJob=" +
            std::to_string(conf_.max_gpus_per_job);
    return false;
  }
  int largest = 0;
  std::string largest_type;
  for (const std::string& t : request.types) {
    if (cluster.gpus_of_type(t) > largest) {
      largest = cluster.gpus_of_type(t);
      largest_type = t;
    }
  }
  if (request.min_gpus > largest) {
    error = "ringsched: impossible --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
            std::to_string(request.max_gpus) + ": the job needs at least " +
            std::to_string(request.min_gpus) + " GPUs of one type, the largest allowed pool has " +
            std::to_string(largest) + (largest_type.empty() ? "" : " (" + largest_type + ")");
    return false;
  }
  if (conf_.planner.power_of_two) {
    const int p = floor_power_of_two(std::min(request.max_gpus, largest));
    if (p < request.min_gpus) {
      error = "ringsched: --ring-gpus=" + std::to_string(request.min_gpus) + "-" +
              std::to_string(request.max_gpus) +
              " holds no power of two that fits the cluster (ring jobs use 1, 2, 4, 8, ... GPUs)";
      return false;
    }
  }
  std::string why;
  if (!prepare_model(request.model, request.types, why)) {
    error = "ringsched: --ring-model: " + why;
    return false;
  }
  return true;
}

Job ConfiguredPolicy::make_job(const std::string& id, const RingRequest& request, double submit_s,
                     double runtime_s) const {
  Job job;
  job.id = id;
  job.model = request.model;
  job.global_batch = static_cast<double>(request.batch);
  job.min_gpus = std::max(1, request.min_gpus);
  job.max_gpus = std::max(job.min_gpus, request.max_gpus);
  job.allowed_types = request.types;
  job.elastic = request.is_elastic();
  job.requested_gpus = job.min_gpus;
  job.spb = request.spb;
  job.submit_s = submit_s;
  double iterations = request.iterations;
  if (iterations <= 0) {
    double best = 0;
    for (const std::string& t : rank_types(request.model, request.types))
      best = std::max(best, model_.iters_per_s(request.model, t, job.min_gpus));
    // A partition without MaxTime gives every job a 365-day limit: a limit of a week or more
    // says nothing about the training's length, DefaultRuntime does better.
    const bool limit_known = runtime_s > 0 && runtime_s < 7 * 86400.0;
    iterations = std::max(1.0, best * (limit_known ? runtime_s : conf_.default_runtime_s));
  }
  job.iterations = iterations;
  job.remaining = iterations;
  return job;
}

std::pair<std::string, int> ConfiguredPolicy::single_type(const JobPlan& plan,
                                                const std::vector<std::string>& allowed,
                                                const std::string& model,
                                                const Cluster& cluster) const {
  if (plan.gpus_by_type.size() == 1) return *plan.gpus_by_type.begin();
  if (plan.gpus <= 0) return {"", 0};
  for (const std::string& t : rank_types(model, allowed))
    if (cluster.usable_of_type(t) >= plan.gpus) return {t, plan.gpus};
  for (const std::string& t : rank_types(model, allowed))
    if (cluster.gpus_of_type(t) >= plan.gpus) return {t, plan.gpus};
  return {"", 0};
}

ConfiguredPolicy::InitialShape ConfiguredPolicy::initial_shape(const RingRequest& request, const Cluster& cluster,
                                                               double now_s, double runtime_s,
                                                               bool stoppable) const {
  InitialShape shape;
  Snapshot snap;
  snap.cluster = cluster;
  snap.now_s = now_s;
  snap.jobs.push_back(make_job("new", request, now_s, runtime_s));
  snap.jobs.back().stoppable = stoppable;
  try {
    const Plan plan = planner().plan(snap);
    const JobPlan* jp = plan.find("new");
    if (jp && jp->runs) {
      std::tie(shape.type, shape.gpus) = single_type(*jp, request.types, request.model, cluster);
      shape.why = jp->reason;
      if (jp->gpus_by_type.size() > 1) shape.why += " (mixed types: runs on " + shape.type + " alone in Slurm)";
    }
  } catch (const std::exception& e) {
    shape.why = std::string("planner failed (") + e.what() + "); ";
  }
  if (shape.gpus > 0) return shape;
  // Nothing free now: wait for the fastest allowed type at the minimum size.
  shape = InitialShape{"", 0, shape.why};
  for (const std::string& t : rank_types(request.model, request.types))
    if (cluster.gpus_of_type(t) >= request.min_gpus) {
      shape.type = t;
      break;
    }
  shape.gpus = conf_.planner.power_of_two ? ceil_power_of_two(request.min_gpus) : request.min_gpus;
  shape.gpus = std::min(shape.gpus, request.max_gpus);
  shape.why += "no GPUs free now: waits for " + (shape.type.empty() ? std::string("?") : shape.type) +
               " (fastest allowed type for " + request.model + ")";
  return shape;
}

}  // namespace ringsched
