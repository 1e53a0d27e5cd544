// SPDX-License-Identifier: GPL-2.0-or-later
// The planner's configuration checked once, at construction, and the policy names that
// ringsched.conf and ringsim use (Planner::plan() is in planner.cpp).
#include <cmath>
#include <string>

#include "ringsched/planner.h"

namespace ringsched {

const char* policy_name(Policy p) {
  switch (p) {
    case Policy::Static: return "static";
    case Policy::Doubling: return "doubling";
    case Policy::Hetero: return "hetero";
    case Policy::Combined: return "combined";
  }
  return "?";
}

Policy parse_policy(const std::string& name) {
  for (Policy p : {Policy::Static, Policy::Doubling, Policy::Hetero, Policy::Combined})
    if (name == policy_name(p)) return p;
  throw InputError("unknown policy '" + name + "' (expected static, doubling, hetero or combined)");
}

const JobPlan* Plan::find(const std::string& job_id) const {
  for (const JobPlan& j : jobs)
    if (j.job_id == job_id) return &j;
  return nullptr;
}

Planner::Planner(ThroughputModel model, PlannerConfig config)
    : model_(std::move(model)), config_(config) {
  if (config_.samples < 0) throw InputError("planner: samples must be >= 0");
  if (!(config_.aging >= 0) || !std::isfinite(config_.aging))
    throw InputError("planner: aging must be a finite number >= 0");
  if (!(config_.fairness >= 0) || !std::isfinite(config_.fairness))
    throw InputError("planner: fairness must be a finite number >= 0");
  if (!(config_.late_factor >= 0) || !std::isfinite(config_.late_factor))
    throw InputError("planner: late_factor must be a finite number >= 0");
  if (!(config_.late_share >= 0 && config_.late_share <= 1))
    throw InputError("planner: late_share must be within [0, 1]");
  if (!(config_.lend_horizon_s >= 0) || !std::isfinite(config_.lend_horizon_s))
    throw InputError("planner: lend_horizon_s must be a finite number of seconds >= 0");
  if (!(config_.lend_arrivals >= 0) || !std::isfinite(config_.lend_arrivals))
    throw InputError("planner: lend_arrivals must be a finite number >= 0");
  // Below 1 every running job would count as slower than its fastest type.
  if (!(config_.replace_slower == 0 || (config_.replace_slower >= 1 && std::isfinite(config_.replace_slower))))
    throw InputError("planner: replace_slower must be 0 (off) or a finite number >= 1");
  if (!(config_.fair_placement >= 0) || !std::isfinite(config_.fair_placement))
    throw InputError("planner: fair_placement must be a finite number >= 0");
}

void Planner::set_similarity(std::shared_ptr<const SimilarityModel> similarity) {
  similarity_ = std::move(similarity);
}

}  // namespace ringsched
