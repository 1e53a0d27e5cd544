// SPDX-License-Identifier: GPL-2.0-or-later
// Snapshots and checks the planner's tests share (test_planner.cpp, test_planner_running.cpp):
// Gavel's measured profiles, the local test cluster's shape, jobs and running jobs.
#pragma once

#include <cppunit/extensions/HelperMacros.h>

#include <map>
#include <string>
#include <vector>

#include "ringsched/planner.h"
#include "test_util.h"

namespace planner_fixtures {

using namespace ringsched;

inline const ProfileTable& gavel() {
  static ProfileTable t = ProfileTable::load_csv(repo_file("data/profiles/gavel.csv"));
  return t;
}

// 2 nodes x 4 GPUs of each Gavel type, like the local test cluster.
inline Cluster small_cluster() {
  Cluster c;
  for (const char* t : {"v100", "p100", "k80"})
    for (int i = 1; i <= 2; ++i) c.nodes.push_back(Node{std::string(t) + "-" + std::to_string(i), t, 4});
  return c;
}

inline Job job(const std::string& id, const std::string& model, int min, int max, double remaining = 50000) {
  Job j;
  j.id = id;
  j.user = "alice";
  j.model = model;
  j.iterations = j.remaining = remaining;
  j.min_gpus = min;
  j.max_gpus = max;
  j.requested_gpus = min;
  return j;
}

// The fastest type of `model` on n GPUs, from the measured table.
inline std::string fastest(const std::string& model, int n) {
  ThroughputModel m(gavel());
  std::string best;
  double v = 0;
  for (const char* t : {"v100", "p100", "k80"})
    if (m.iters_per_s(model, t, n) > v) {
      v = m.iters_per_s(model, t, n);
      best = t;
    }
  return best;
}

// The same cluster with one network speed inside and between nodes, so that a ring may span
// nodes at no extra cost.
inline Cluster flat_cluster() {
  Cluster c = small_cluster();
  for (Node& n : c.nodes) n.inter_gbps = n.intra_gbps;
  return c;
}

inline void check_capacity(const Plan& p, const Cluster& c) {
  std::map<std::string, int> used;
  for (const JobPlan& j : p.jobs) {
    int sum = 0;
    for (const Placement& pl : j.placement) {
      used[pl.node] += pl.gpus;
      sum += pl.gpus;
      CPPUNIT_ASSERT_MESSAGE(pl.node, c.find(pl.node) != nullptr);
      CPPUNIT_ASSERT_EQUAL(c.find(pl.node)->gpu_type, pl.gpu_type);
    }
    CPPUNIT_ASSERT_EQUAL(j.gpus, sum);
    CPPUNIT_ASSERT_EQUAL(j.runs, j.gpus > 0);
  }
  for (const auto& [node, g] : used)
    CPPUNIT_ASSERT_MESSAGE(node + " over-allocated", g <= c.find(node)->usable());
}

// The plan of `policy` (default settings; `preempt`: PlannerConfig::preempt) for s, checked
// against the cluster's capacity.
inline Plan plan_checked(const Snapshot& s, const PlannerConfig& cfg) {
  Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
  check_capacity(p, s.cluster);
  return p;
}
inline Plan plan_checked(const Snapshot& s, Policy policy, bool preempt = false) {
  PlannerConfig cfg;
  cfg.policy = policy;
  cfg.preempt = preempt;
  return plan_checked(s, cfg);
}

// What a test case's assertions print: the policy, the job's remaining work and its reason.
inline std::string case_text(Policy policy, double remaining, const JobPlan& jp) {
  return std::string(policy_name(policy)) + " remaining " + std::to_string(remaining) + ": " +
         jp.reason;
}

// A plan row holding exactly these placements (for make_running).
inline JobPlan plan_on(const std::vector<Placement>& placement) {
  JobPlan jp;
  jp.placement = placement;
  for (const Placement& p : placement) {
    jp.gpus += p.gpus;
    jp.gpus_by_type[p.gpu_type] += p.gpus;
  }
  return jp;
}

inline void make_running(Job& j, const JobPlan& jp, double now) {
  j.state = JobState::Running;
  j.current_gpus = jp.gpus;
  j.gpus_by_node.clear();
  for (const Placement& p : jp.placement) j.gpus_by_node[p.node] += p.gpus;
  j.current_type = jp.gpus_by_type.size() == 1 ? jp.gpus_by_type.begin()->first : "";
  j.last_resize_s = now;
}

// Adds to `s` an elastic job from 1 to `max` GPUs that asked for `request`, submitted 600 s
// before `s.now_s`, running on `on` since `resized`.
inline void add_running(Snapshot& s, const std::string& id, const std::string& model, int request,
                        int max, double remaining, const std::vector<Placement>& on,
                        double resized) {
  Job j = job(id, model, 1, max, remaining);
  j.requested_gpus = request;
  j.submit_s = s.now_s - 600;
  make_running(j, plan_on(on), resized);
  s.jobs.push_back(j);
}

// Adds to `s` an elastic job from 1 to `max` GPUs that asked for `request`, arriving now.
inline void add_arrival(Snapshot& s, const std::string& id, const std::string& model, int request,
                        int max, double remaining) {
  Job j = job(id, model, 1, max, remaining);
  j.requested_gpus = request;
  j.submit_s = s.now_s;
  s.jobs.push_back(j);
}

}  // namespace planner_fixtures
