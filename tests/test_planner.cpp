// SPDX-License-Identifier: GPL-2.0-or-later
// The planner on the real Gavel profiles: one call, a snapshot in, a plan out.
#include <cppunit/extensions/HelperMacros.h>

#include <iomanip>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <string>

#include "ringsched/placement.h"
#include "ringsched/planner.h"
#include "ringsched/similarity.h"
#include "planner_fixtures.h"
#include "test_util.h"

using namespace ringsched;
using namespace planner_fixtures;

namespace {

// Every decision of a plan as text, numbers exact: two plans are the same iff these are.
std::string describe(const Plan& plan) {
  std::ostringstream o;
  o << std::setprecision(17) << plan.policy << ' ' << plan.objective_s << ' ' << plan.decision_ms << '\n';
  for (const JobPlan& j : plan.jobs) {
    o << j.job_id << " order " << j.order << " runs " << j.runs << " gpus " << j.gpus << " resize " << j.resize
      << " spb " << j.spb_depth << " speed " << j.predicted_iters_per_s << " finish " << j.predicted_finish_s;
    for (const auto& [type, n] : j.gpus_by_type) o << ' ' << type << ':' << n;
    for (const Placement& p : j.placement) o << ' ' << p.node << '/' << p.gpu_type << '/' << p.gpus;
    o << " | " << j.reason << '\n';
  }
  return o.str();
}

// The plan of one elastic 1-8 job asking for 8 GPUs, submitted long ago (late for its fair
// share), under combined with fairness 1; the plan's capacity checked.
JobPlan late_job_plan(const ThroughputModel& m, const std::string& model, const Cluster& c) {
  Snapshot s;
  s.cluster = c;
  s.now_s = 1e6;
  s.jobs = {job("1", model, 1, 8, 1e5)};
  s.jobs[0].requested_gpus = 8;
  PlannerConfig cfg;
  cfg.fairness = 1;
  Plan p = Planner(m, cfg).plan(s);
  check_capacity(p, c);
  return p.jobs[0];
}

}  // namespace

class PlannerTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerTest);
  CPPUNIT_TEST(fastestTypeWhenFree);
  CPPUNIT_TEST(idleClusterGrowsElasticJob);
  CPPUNIT_TEST(arrivalShrinksElasticJob);
  CPPUNIT_TEST(hysteresisKeepsRecentlyResizedJob);
  CPPUNIT_TEST(staticPolicyKeepsRequestedSizes);
  CPPUNIT_TEST(nonResizingPoliciesNeverPreempt);
  CPPUNIT_TEST(doublingFallsBackToSizeThatFits);
  CPPUNIT_TEST(countsPlannedOnTheGpusAJobMayUse);
  CPPUNIT_TEST(impossibleJobWaitsWithReason);
  CPPUNIT_TEST(neverOverAllocatesOnAnyPolicy);
  CPPUNIT_TEST(roundsOfRunningJobsStayFeasible);
  CPPUNIT_TEST(sameShapeElsewhereMovesWhenItsGpusAreTaken);
  CPPUNIT_TEST(deterministicForSameSeed);
  CPPUNIT_TEST(orderPutsShortJobsFirst);
  CPPUNIT_TEST(unseenModelUsesSimilarity);
  CPPUNIT_TEST(invalidSnapshotThrows);
  CPPUNIT_TEST(lateJobsFairFloorStaysInsideOneNode);
  CPPUNIT_TEST(spreadJobGathersOntoFewerNodes);
  CPPUNIT_TEST(slowTypeJobMovesToAnIdleFasterType);
  CPPUNIT_TEST(mixedTypeJobMovesToOneIdleType);
  CPPUNIT_TEST(lateJobsFairFloorNotOnlyOnSlowTypes);
  CPPUNIT_TEST(lateJobAdmittedAtItsRequestedSize);
  CPPUNIT_TEST(floorOverNodesWhereFaster);
  CPPUNIT_TEST_SUITE_END();

 public:
  void fastestTypeWhenFree() {
    for (const std::string model : {"resnet50-b64", "transformer-b128", "lm-b20"}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.jobs = {job("1", model, 4, 4)};
      s.jobs[0].elastic = false;
      s.jobs[0].requested_gpus = 4;
      for (Policy pol : {Policy::Static, Policy::Hetero, Policy::Combined}) {
        PlannerConfig cfg;
        cfg.policy = pol;
        Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
        const JobPlan& jp = p.jobs[0];
        CPPUNIT_ASSERT_MESSAGE(model + " " + policy_name(pol) + ": " + jp.reason, jp.runs);
        CPPUNIT_ASSERT_EQUAL(4, jp.gpus);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model + " " + policy_name(pol) + ": " + jp.reason,
                                     4, jp.gpus_by_type.count(fastest(model, 4)) ? jp.gpus_by_type.at(fastest(model, 4)) : 0);
        CPPUNIT_ASSERT(jp.predicted_iters_per_s > 0);
        CPPUNIT_ASSERT(!jp.reason.empty());
      }
    }
  }

  void idleClusterGrowsElasticJob() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 1, 8, 1e6)};
    for (Policy pol : {Policy::Doubling, Policy::Combined}) {
      PlannerConfig cfg;
      cfg.policy = pol;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      CPPUNIT_ASSERT_MESSAGE(std::string(policy_name(pol)) + ": " + p.jobs[0].reason, p.jobs[0].gpus > 1);
      CPPUNIT_ASSERT(is_power_of_two(p.jobs[0].gpus));
      CPPUNIT_ASSERT(p.jobs[0].gpus <= 8);
    }
  }

  void arrivalShrinksElasticJob() {
    // One elastic job grows over the idle cluster; then enough new jobs arrive that they could
    // not all start unless it gives GPUs back.
    Snapshot s;
    s.cluster = flat_cluster();
    s.now_s = 0;
    s.jobs = {job("big", "resnet50-b64", 1, 16, 1e6)};
    PlannerConfig cfg;
    cfg.costs.min_interval_s = 60;
    Planner planner(ThroughputModel(gavel()), cfg);
    Plan p1 = planner.plan(s);
    int grown = p1.jobs[0].gpus;
    CPPUNIT_ASSERT_MESSAGE(p1.jobs[0].reason, grown >= 8);
    make_running(s.jobs[0], p1.jobs[0], 0);
    s.now_s = 3600;
    int total = s.cluster.total_gpus();
    for (int k = 0; k < total - grown + 2; ++k) {
      // Long enough that making them wait for the big job costs more than shrinking it.
      Job j = job("new" + std::to_string(k), "resnet18-b64", 1, 1, 2e5);
      j.submit_s = 3600;
      s.jobs.push_back(j);
    }
    Plan p2 = planner.plan(s);
    check_capacity(p2, s.cluster);
    const JobPlan* big = p2.find("big");
    CPPUNIT_ASSERT_MESSAGE(big->reason, big->gpus < grown);
    CPPUNIT_ASSERT(big->resize);
    int started = 0;
    for (const JobPlan& jp : p2.jobs) started += jp.job_id != "big" && jp.runs;
    CPPUNIT_ASSERT(started > total - grown);
  }

  void hysteresisKeepsRecentlyResizedJob() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 1, 16, 1e6)};
    PlannerConfig cfg;
    cfg.costs.min_interval_s = 600;
    Planner planner(ThroughputModel(gavel()), cfg);
    // It runs on 2 GPUs, resized a minute ago: the idle cluster must not grow it yet.
    make_running(s.jobs[0], plan_on({Placement{"v100-1", "v100", 2}}), 0);
    s.now_s = 60;
    Plan p1 = planner.plan(s);
    CPPUNIT_ASSERT_MESSAGE(p1.jobs[0].reason, !p1.jobs[0].resize);
    CPPUNIT_ASSERT_EQUAL(2, p1.jobs[0].gpus);
    CPPUNIT_ASSERT_EQUAL(std::string("v100-1"), p1.jobs[0].placement.at(0).node);
    s.now_s = 10000;
    Plan p2 = planner.plan(s);
    CPPUNIT_ASSERT_MESSAGE(p2.jobs[0].reason, p2.jobs[0].resize && p2.jobs[0].gpus > 2);
  }

  // Doubling decides counts on the pooled cluster; when that count does not fit the types and
  // nodes left, the job must take the largest size that does, not wait.
  void doublingFallsBackToSizeThatFits() {
    Snapshot s;
    s.cluster = small_cluster();
    for (Node& n : s.cluster.nodes) n.free_gpus = 0;
    s.cluster.nodes[0].free_gpus = 2;  // v100-1: 2 free GPUs, nothing else in the cluster
    s.cluster.nodes[2].free_gpus = 4;  // p100-1: free, but the job may only use v100
    s.jobs = {job("1", "resnet50-b64", 1, 4, 1e6)};
    s.jobs[0].allowed_types = {"v100"};
    for (Policy pol : {Policy::Doubling, Policy::Combined}) {
      PlannerConfig cfg;
      cfg.policy = pol;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      check_capacity(p, s.cluster);
      CPPUNIT_ASSERT_MESSAGE(std::string(policy_name(pol)) + ": " + p.jobs[0].reason, p.jobs[0].runs);
      CPPUNIT_ASSERT_EQUAL(2, p.jobs[0].gpus_by_type["v100"]);
    }
    // The same job already running on v100-1's 2 GPUs keeps running there.
    PlannerConfig cfg;
    cfg.policy = Policy::Doubling;
    s.cluster.nodes[0].free_gpus = 2;
    make_running(s.jobs[0], plan_on({Placement{"v100-1", "v100", 2}}), -1e6);
    s.jobs.push_back(job("2", "lm-b20", 1, 1, 1000));
    Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(p, s.cluster);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[0].reason, p.jobs[0].runs);
    CPPUNIT_ASSERT_EQUAL(std::string("v100-1"), p.jobs[0].placement.at(0).node);
  }

  // Static and hetero never resize or preempt: a running job keeps its GPUs even when shorter
  // pending jobs come first in the policy order and would use them.
  void nonResizingPoliciesNeverPreempt() {
    for (Policy pol : {Policy::Static, Policy::Hetero}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 1000;
      s.jobs = {job("long", "resnet50-b64", 8, 8, 1e7)};
      s.jobs[0].elastic = false;
      s.jobs[0].requested_gpus = 8;
      make_running(s.jobs[0], plan_on({Placement{"v100-1", "v100", 4}, Placement{"v100-2", "v100", 4}}), 0);
      for (int k = 0; k < 6; ++k) {
        Job j = job("short" + std::to_string(k), "resnet50-b64", 4, 4, 100);
        j.elastic = false;
        j.requested_gpus = 4;
        s.jobs.push_back(j);
      }
      PlannerConfig cfg;
      cfg.policy = pol;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      check_capacity(p, s.cluster);
      const JobPlan* l = p.find("long");
      CPPUNIT_ASSERT_MESSAGE(std::string(policy_name(pol)) + ": " + l->reason, l->runs && !l->resize);
      CPPUNIT_ASSERT_EQUAL(8, l->gpus_by_type.at("v100"));
      CPPUNIT_ASSERT(p.find("short0")->order < l->order);
    }
  }

  void staticPolicyKeepsRequestedSizes() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 1, 16), job("2", "lm-b20", 2, 8)};
    s.jobs[0].requested_gpus = 4;
    s.jobs[1].requested_gpus = 2;
    PlannerConfig cfg;
    cfg.policy = Policy::Static;
    Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
    CPPUNIT_ASSERT_EQUAL(4, p.jobs[0].gpus);
    CPPUNIT_ASSERT_EQUAL(2, p.jobs[1].gpus);
  }

  // Two jobs that may use only the 8 V100s of a 24-GPU cluster: their counts are planned against
  // those 8, so both run. Planned against all 24, the first doubled past what the V100s hold and
  // the other found no V100 left and waited.
  void countsPlannedOnTheGpusAJobMayUse() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 1, 16, 1e6), job("2", "resnet50-b64", 1, 16, 5e5)};
    for (Job& j : s.jobs) j.allowed_types = {"v100"};
    s.jobs.push_back(job("3", "resnet18-b64", 1, 16, 1e5));  // any type: the other group
    s.jobs[2].allowed_types = {"p100", "k80"};
    PlannerConfig cfg;
    cfg.policy = Policy::Doubling;
    Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(p, s.cluster);
    int v100 = 0;
    for (int k = 0; k < 2; ++k) {
      CPPUNIT_ASSERT_MESSAGE(p.jobs[k].reason, p.jobs[k].runs);
      CPPUNIT_ASSERT(!contains(p.jobs[k].reason, "fit the GPU types and nodes left"));
      v100 += p.jobs[k].gpus_by_type["v100"];
    }
    CPPUNIT_ASSERT(v100 <= 8);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[2].reason, p.jobs[2].runs && p.jobs[2].gpus_by_type.count("v100") == 0);
  }

  void impossibleJobWaitsWithReason() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 1, 4), job("2", "resnet50-b64", 1, 4)};
    s.jobs[0].allowed_types = {"h100"};
    s.jobs[1].min_gpus = s.jobs[1].max_gpus = 64;
    Plan p = Planner(ThroughputModel(gavel()), PlannerConfig()).plan(s);
    CPPUNIT_ASSERT(!p.jobs[0].runs);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[0].reason, contains(p.jobs[0].reason, "h100"));
    CPPUNIT_ASSERT(!p.jobs[1].runs);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[1].reason, contains(p.jobs[1].reason, "cannot run"));
  }

  void neverOverAllocatesOnAnyPolicy() {
    Snapshot s;
    s.cluster = small_cluster();
    s.cluster.nodes[0].free_gpus = 1;  // others hold 3 of v100-1
    const char* models[] = {"resnet50-b64", "transformer-b128", "lm-b20", "a3c", "cyclegan",
                            "recommendation-b1024", "resnet18-b16"};
    for (int k = 0; k < 14; ++k) {
      Job j = job(std::to_string(k), models[k % 7], 1, 1 << (k % 4), 1000.0 * (k + 1));
      j.elastic = k % 3 != 0;
      j.requested_gpus = 1 << (k % 3);
      s.jobs.push_back(j);
    }
    for (Policy pol : {Policy::Static, Policy::Doubling, Policy::Hetero, Policy::Combined}) {
      PlannerConfig cfg;
      cfg.policy = pol;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      check_capacity(p, s.cluster);
      int ran = 0;
      for (const JobPlan& jp : p.jobs) ran += jp.runs;
      CPPUNIT_ASSERT_MESSAGE(policy_name(pol), ran > 0);
    }
  }

  // Many planning rounds in a row, as slurmctld or ringsim run them: each plan's running jobs
  // become the next snapshot's running jobs, some finish, new ones arrive, some of unseen models.
  // Every plan must fit the cluster (the planner also checks this itself and throws).
  void roundsOfRunningJobsStayFeasible() {
    const char* models[] = {"resnet50-b64", "transformer-b128", "lm-b20", "a3c", "unseen-net",
                            "recommendation-b1024", "resnet18-b16", "cyclegan"};
    for (Policy pol : {Policy::Static, Policy::Doubling, Policy::Hetero, Policy::Combined}) {
      PlannerConfig cfg;
      cfg.policy = pol;
      cfg.samples = 8;
      Planner planner(ThroughputModel(gavel()), cfg);
      Snapshot s;
      s.cluster = small_cluster();
      unsigned r = 12345;
      auto rnd = [&r](unsigned m) { r = r * 1103515245u + 12345u; return (r >> 8) % m; };
      int next_id = 0;
      for (int round = 0; round < 150; ++round) {
        s.now_s = 600.0 * round;
        for (int k = static_cast<int>(rnd(6)); k > 0; --k) {
          Job j = job("j" + std::to_string(next_id++), models[rnd(8)], 1 << rnd(2), 1 << (2 + rnd(3)),
                      1000.0 * (1 + rnd(2000)));
          j.elastic = rnd(3) != 0;
          j.requested_gpus = 1 << rnd(5);
          j.submit_s = s.now_s;
          s.jobs.push_back(j);
        }
        Plan p;
        std::string err = error_of([&] { p = planner.plan(s); });
        CPPUNIT_ASSERT_MESSAGE(std::string(policy_name(pol)) + " round " + std::to_string(round) + ": " + err, err.empty());
        check_capacity(p, s.cluster);
        std::vector<Job> next;
        for (size_t k = 0; k < s.jobs.size(); ++k) {
          Job j = s.jobs[k];
          const JobPlan& jp = p.jobs[k];
          if (jp.runs) {
            if (j.state != JobState::Running || jp.resize) make_running(j, jp, s.now_s);
            j.remaining = std::max(0.0, j.remaining - 300.0 * std::max(1.0, jp.predicted_iters_per_s));
          } else {
            j.state = JobState::Pending;
            j.gpus_by_node.clear();
            j.current_gpus = 0;
          }
          if (j.remaining > 0) next.push_back(j);
        }
        s.jobs = next;
      }
    }
  }

  // Found by ringsim: a running job of an unseen model is re-planned at its current size but on
  // another node, because the market gave its GPUs to a pending job; "same shape, stay where it
  // is" must not put it back on GPUs that are no longer free.
  void sameShapeElsewhereMovesWhenItsGpusAreTaken() {
    // Doubling counts on the pooled cluster give u 8 GPUs and m 4; both may only use k80, of which
    // 6 are free: k80-1 (u holds 2 of its 4), and one on each of k80-2 and k80-3. The market puts
    // m on k80-1, which takes u's GPUs; u then fits only at its current size, 2, on k80-2+3.
    Snapshot s;
    s.cluster.nodes = {Node{"k80-1", "k80", 4}, Node{"k80-2", "k80", 4}, Node{"k80-3", "k80", 4},
                       Node{"p100-1", "p100", 8}};
    s.cluster.nodes[1].free_gpus = 1;
    s.cluster.nodes[2].free_gpus = 1;
    s.cluster.nodes[3].free_gpus = 6;
    s.now_s = 10000;
    Job u = job("u", "mystery-net", 2, 8, 1e5);
    u.requested_gpus = 8;
    u.allowed_types = {"k80"};
    u.priority_boost = 1;
    make_running(u, plan_on({Placement{"k80-1", "k80", 2}}), 0);
    Job m = job("m", "resnet50-b64", 4, 4, 1e3);
    m.elastic = false;
    m.requested_gpus = 4;
    m.allowed_types = {"k80"};
    s.jobs = {u, m};
    for (Policy pol : {Policy::Doubling, Policy::Combined}) {
      PlannerConfig cfg;
      cfg.policy = pol;
      Plan p;
      std::string err = error_of([&] { p = Planner(ThroughputModel(gavel()), cfg).plan(s); });
      CPPUNIT_ASSERT_MESSAGE(std::string(policy_name(pol)) + ": " + err, err.empty());
      check_capacity(p, s.cluster);
      if (p.find("u")->runs && p.find("u")->placement.at(0).node != "k80-1")
        CPPUNIT_ASSERT_MESSAGE(p.find("u")->reason, p.find("u")->resize);
    }
  }

  void deterministicForSameSeed() {
    Snapshot s;
    s.cluster = small_cluster();
    for (int k = 0; k < 10; ++k) s.jobs.push_back(job(std::to_string(k), k % 2 ? "lm-b20" : "resnet50-b64", 1, 8, 5000.0 * (k + 1)));
    PlannerConfig cfg;
    cfg.seed = 42;
    Planner a(ThroughputModel(gavel()), cfg), b(ThroughputModel(gavel()), cfg);
    Plan pa = a.plan(s), pb = b.plan(s);
    pa.decision_ms = pb.decision_ms = 0;
    CPPUNIT_ASSERT_EQUAL(describe(pa), describe(pb));
  }

  void orderPutsShortJobsFirst() {
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("long", "resnet50-b64", 1, 1, 1e6), job("short", "resnet50-b64", 1, 1, 100)};
    Plan p = Planner(ThroughputModel(gavel()), PlannerConfig()).plan(s);
    CPPUNIT_ASSERT(p.find("short")->order < p.find("long")->order);
    s.jobs[0].priority_boost = 1;
    p = Planner(ThroughputModel(gavel()), PlannerConfig()).plan(s);
    CPPUNIT_ASSERT(p.find("long")->order < p.find("short")->order);
    // No starvation: a long job (t ~ 2.3e5 s) that has waited long enough (w > t^2 / t_short,
    // ~2.3e9 s here) comes before a new short one.
    s.jobs[0].priority_boost = 0;
    s.now_s = 1e10;
    s.jobs[1].submit_s = s.now_s;
    p = Planner(ThroughputModel(gavel()), PlannerConfig()).plan(s);
    CPPUNIT_ASSERT(p.find("long")->order < p.find("short")->order);
    // ...unless aging is off: pure shortest remaining time first.
    PlannerConfig srtf;
    srtf.aging = 0;
    p = Planner(ThroughputModel(gavel()), srtf).plan(s);
    CPPUNIT_ASSERT(p.find("short")->order < p.find("long")->order);
  }

  void unseenModelUsesSimilarity() {
    // Hold every ResNet-50 variant out of the profiles; similarity must still run it on the type
    // ResNet-50 is really fastest on.
    ProfileTable held;
    for (const ProfilePoint& pt : gavel().points())
      if (pt.model.rfind("resnet50", 0) != 0) held.add(pt);
    FeatureTable features = FeatureTable::load_csv(repo_file("data/model_features.csv"));
    SimilarityConfig sc;
    auto sim = std::make_shared<SimilarityModel>(features, held, sc);
    Snapshot s;
    s.cluster = small_cluster();
    s.jobs = {job("1", "resnet50-b64", 4, 4)};
    s.jobs[0].elastic = false;
    s.jobs[0].requested_gpus = 4;
    Planner planner{ThroughputModel(held), PlannerConfig()};
    planner.set_similarity(sim);
    Plan p = planner.plan(s);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[0].reason, p.jobs[0].runs);
    // Similarity predicts one-GPU speed ratios: the job goes to the type ResNet-50 is really
    // fastest on alone, and never to the slowest.
    CPPUNIT_ASSERT_MESSAGE(p.jobs[0].reason, p.jobs[0].gpus_by_type.count(fastest("resnet50-b64", 1)));
    CPPUNIT_ASSERT(!p.jobs[0].gpus_by_type.count("k80"));
    CPPUNIT_ASSERT(p.jobs[0].predicted_iters_per_s > 0);
    // Without similarity the job still runs, at its requested size.
    Plan q = Planner(ThroughputModel(held), PlannerConfig()).plan(s);
    CPPUNIT_ASSERT_MESSAGE(q.jobs[0].reason, q.jobs[0].runs && q.jobs[0].gpus == 4);
    CPPUNIT_ASSERT(contains(q.jobs[0].reason, "no profile"));
  }

  void invalidSnapshotThrows() {
    Snapshot s;
    s.jobs = {job("1", "resnet50-b64", 1, 4)};
    Planner planner{ThroughputModel(gavel()), PlannerConfig()};
    CPPUNIT_ASSERT(contains(error_of([&] { planner.plan(s); }), "no nodes"));
    s.cluster = small_cluster();
    s.jobs.push_back(job("1", "lm-b20", 1, 2));
    CPPUNIT_ASSERT(contains(error_of([&] { planner.plan(s); }), "listed twice"));
    s.jobs.pop_back();
    s.jobs[0].max_gpus = 0;
    CPPUNIT_ASSERT(contains(error_of([&] { planner.plan(s); }), "job 1"));
    CPPUNIT_ASSERT(contains(error_of([] { parse_policy("fastest"); }), "fastest"));
  }

  // A job that asked for 8 GPUs and is already late for its fair share (submitted long ago):
  // the doubling's fairness pass gives it 8, and that size is a floor for combined's placement
  // only up to what one node of its type has free. On two 4-GPU V100 nodes the placement, which
  // charges a V100 ring that spans nodes Gavel's spread-run slowdown, keeps it inside one node
  // at 4 for at least one model, never below the capped floor (the uncapped floor of 8 spread
  // every such job over both nodes, and, running, kept it spread). On one 8-GPU node the floor
  // is the whole 8.
  void lateJobsFairFloorStaysInsideOneNode() {
    Cluster two_nodes, one_node;
    for (int i = 1; i <= 2; ++i) two_nodes.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    one_node.nodes.push_back(Node{"v100-8", "v100", 8});
    int fair_sized = 0, on_one_node = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      ThroughputModel m(gavel());
      if (!(m.iters_per_s(model, "v100", 8) > m.iters_per_s(model, "v100", 4))) continue;
      for (const Cluster& c : {two_nodes, one_node}) {
        const JobPlan jp = late_job_plan(m, model, c);
        if (!contains(jp.reason, "fair share")) continue;  // the doubling alone grew it to 8
        ++fair_sized;
        if (c.nodes.size() == 1) {
          CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + jp.reason, 8, jp.gpus);
        } else if (jp.gpus < 8) {
          // Shrunk only to stay inside one node, never below the floor of one node's GPUs.
          CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + jp.reason, size_t{1}, jp.placement.size());
          CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + jp.reason, 4, jp.gpus);
          ++on_one_node;
        }
      }
    }
    CPPUNIT_ASSERT(fair_sized > 0);
    CPPUNIT_ASSERT(on_one_node > 0);  // with the uncapped floor every one of them spread over both
    PlannerConfig bad;
    bad.fairness = -1;
    CPPUNIT_ASSERT_THROW(Planner(ThroughputModel(gavel()), bad), InputError);
  }

  // The starvation bound (PlannerConfig::late_factor). On 64 V100s (16 nodes of 4), a
  // transformer job asking for 8 GPUs arrives with 63 longer 1-GPU jobs. At its minimum it would
  // take more than twice its time alone on 8, so it is admitted at 8 and the longer jobs behind
  // it fill what is left; the placement keeps it on one whole node (its floor is capped at a
  // node, as the fairness pass's is: its ring spread over two nodes is slower than on one).
  // With the bound off it starts at 1 GPU, as the doubling paper's admission gives every
  // elastic job. A job that asks for the whole cluster gets no more than
  // late_share of it from the bound; a running late job is not shrunk.
  void lateJobAdmittedAtItsRequestedSize() {
    Cluster c;
    for (int i = 0; i < 16; ++i) c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    const std::string model = "transformer-b64";
    ThroughputModel m(gavel());
    CPPUNIT_ASSERT(m.iters_per_s(model, "v100", 8) > 2 * m.iters_per_s(model, "v100", 1));
    PlacementLocality locality(c, m, {{model, {"v100"}}});
    CPPUNIT_ASSERT(m.iters_per_s(model, "v100", 8) * locality.factor(0, {{"v100-0", 4}, {"v100-1", 4}}) <
                   m.iters_per_s(model, "v100", 4));
    auto snapshot = [&](int requested) {
      Snapshot s;
      s.cluster = c;
      s.now_s = 100;
      s.jobs = {job("late", model, 1, 32, 2e4)};
      s.jobs[0].requested_gpus = requested;
      for (int k = 0; k < 63; ++k) s.jobs.push_back(job("long" + std::to_string(k), "resnet50-b64", 1, 32, 1e7));
      return s;
    };
    auto plan = [&](const Snapshot& s, double late_factor) {
      PlannerConfig cfg;
      cfg.late_factor = late_factor;
      cfg.costs.min_gain_multiple = 0;  // no hysteresis: the shrink below is the plan's own
      Plan p = Planner(m, cfg).plan(s);
      check_capacity(p, c);
      return p;
    };
    auto running_others = [](const Plan& p) {
      int k = 0;
      for (const JobPlan& jp : p.jobs) k += jp.job_id != "late" && jp.runs;
      return k;
    };
    Plan on = plan(snapshot(8), 2);
    CPPUNIT_ASSERT_MESSAGE(on.jobs[0].reason, contains(on.jobs[0].reason, "admitted at 8 GPUs"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(on.jobs[0].reason, 4, on.jobs[0].gpus);
    CPPUNIT_ASSERT_EQUAL(size_t{1}, on.jobs[0].placement.size());
    CPPUNIT_ASSERT_EQUAL(56, running_others(on));
    // Counted at 8, placed on one 4-GPU node: the reason says so rather than leave "8" and
    // "4x v100" side by side.
    CPPUNIT_ASSERT_MESSAGE(on.jobs[0].reason, contains(on.jobs[0].reason, "4 GPUs, not the 8 counted"));
    CPPUNIT_ASSERT_MESSAGE(on.jobs[0].reason, contains(on.jobs[0].reason, "its floor is 4, the most one node"));
    Plan off = plan(snapshot(8), 0);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(off.jobs[0].reason, 1, off.jobs[0].gpus);
    CPPUNIT_ASSERT_MESSAGE(off.jobs[0].reason, !contains(off.jobs[0].reason, "counted"));
    CPPUNIT_ASSERT_EQUAL(63, running_others(off));

    // The whole cluster asked for: the bound raises it to late_share x 64 = 8 GPUs, no more.
    Plan whole = plan(snapshot(64), 2);
    CPPUNIT_ASSERT_MESSAGE(whole.jobs[0].reason, contains(whole.jobs[0].reason, "admitted at 8 GPUs"));
    CPPUNIT_ASSERT_EQUAL(56, running_others(whole));

    // Running on 4 GPUs: not shrunk to make room for the longer jobs (off: it is).
    Snapshot r = snapshot(8);
    make_running(r.jobs[0], plan_on({Placement{"v100-0", "v100", 4}}), -1e4);
    Plan kept = plan(r, 2);
    CPPUNIT_ASSERT_MESSAGE(kept.jobs[0].reason, kept.jobs[0].gpus >= 4);
    Plan shrunk = plan(r, 0);
    CPPUNIT_ASSERT_MESSAGE(shrunk.jobs[0].reason, shrunk.jobs[0].gpus < 4);

    PlannerConfig bad;
    bad.late_factor = -1;
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
    bad.late_factor = 2;
    bad.late_share = 1.5;
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
    bad.late_share = 0.125;
    bad.lend_horizon_s = -1;
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
    bad.lend_horizon_s = std::numeric_limits<double>::infinity();
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
    bad.lend_horizon_s = 1800;
    bad.lend_arrivals = -3;
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
    bad.lend_arrivals = std::numeric_limits<double>::quiet_NaN();
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
  }

  // The floor over nodes. The snapshot above (a late job asking for 8, 63 longer 1-GPU jobs on
  // 16 nodes of 4 V100s), for every Gavel model that 8 GPUs run faster than 4: the late job gets
  // its whole floor of 8 over two nodes exactly when its ring there (Gavel's 8-GPU point with the
  // placement's locality charge) is faster than any size one node holds (1, 2 or 4 GPUs), and
  // says so; otherwise it stays on one node.
  void floorOverNodesWhereFaster() {
    Cluster c;
    for (int i = 0; i < 16; ++i) c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    ThroughputModel m(gavel());
    int spread = 0, kept = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100") || !(m.iters_per_s(model, "v100", 8) > m.iters_per_s(model, "v100", 4)))
        continue;
      Snapshot s;
      s.cluster = c;
      s.now_s = 100;
      s.jobs = {job("late", model, 1, 32, 2e4)};
      s.jobs[0].requested_gpus = 8;
      for (int k = 0; k < 63; ++k) s.jobs.push_back(job("long" + std::to_string(k), "resnet50-b64", 1, 32, 1e7));
      PlannerConfig cfg;
      cfg.costs.min_gain_multiple = 0;
      Plan p = Planner(m, cfg).plan(s);
      check_capacity(p, c);
      const JobPlan& late = p.jobs[0];
      CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, contains(late.reason, "admitted at 8 GPUs"));
      PlacementLocality locality(c, m, {{model, {"v100"}}});
      const double over_two = m.iters_per_s(model, "v100", 8) * locality.factor(0, {{"v100-0", 4}, {"v100-1", 4}});
      double one_node = 0;
      for (int g : {1, 2, 4}) one_node = std::max(one_node, m.iters_per_s(model, "v100", g));
      if (over_two > one_node) {
        ++spread;
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + late.reason, 8, late.gpus);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + late.reason, size_t{2}, late.placement.size());
        CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, contains(late.reason, "its floor of 8 GPUs over nodes"));
      } else {
        ++kept;
        CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, late.gpus <= 4);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model + ": " + late.reason, size_t{1}, late.placement.size());
      }
    }
    CPPUNIT_ASSERT_MESSAGE(std::to_string(kept) + " kept", spread > 0);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(spread) + " spread", kept > 0);
  }

  // A running 4-GPU job held as 2 + 2 on two 4-GPU V100 nodes (grown while only scattered GPUs
  // were free) keeps its count. Now both nodes are free: under combined it moves onto one node,
  // where Gavel's V100 rings are faster, when the time saved exceeds min_gain_multiple restarts,
  // and stays put when little work is left or its last resize was within min_interval_s.
  // Doubling, which plans no locality, leaves it where it is.
  void spreadJobGathersOntoFewerNodes() {
    Snapshot s;
    for (int i = 1; i <= 2; ++i) s.cluster.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    s.now_s = 10000;
    const JobPlan spread = plan_on({Placement{"v100-1", "v100", 2}, Placement{"v100-2", "v100", 2}});
    struct Case {
      Policy policy;
      double remaining, last_resize_s;
      bool moves;
    };
    for (const Case& c : {Case{Policy::Combined, 1e6, 0, true}, Case{Policy::Combined, 1, 0, false},
                          Case{Policy::Combined, 1e6, 9900, false}, Case{Policy::Doubling, 1e6, 0, false}}) {
      Job j = job("1", "resnet50-b64", 4, 4, c.remaining);
      j.requested_gpus = 4;
      make_running(j, spread, c.last_resize_s);
      s.jobs = {j};
      Plan p = plan_checked(s, c.policy);
      const JobPlan& jp = p.jobs[0];
      std::string what = case_text(c.policy, c.remaining, jp);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, jp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.moves, jp.resize);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{c.moves ? 1u : 2u}, jp.placement.size());
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.moves, contains(jp.reason, "moves from 2 nodes to 1"));
    }
  }

  // A 1-GPU job that started on a K80 while faster GPUs were taken keeps its count: under
  // combined it moves to the fastest allowed type once that type has a GPU nobody got this round
  // and the time saved exceeds min_gain_multiple restarts; it stays when little work is left, when
  // its last resize was within min_interval_s, when the faster GPUs are all held, while a job
  // waits, and under doubling (no GPU types). Step 2c alone: ReplaceSlower off (with it, the
  // placement moves the job also while one waits: test_planner_running.cpp).
  void slowTypeJobMovesToAnIdleFasterType() {
    const std::string model = "resnet50-b64";
    const std::string best = fastest(model, 1);
    CPPUNIT_ASSERT(best != "k80");
    const JobPlan on_k80 = plan_on({Placement{"k80-1", "k80", 1}});
    struct Case {
      Policy policy;
      double remaining, last_resize_s;
      bool faster_held, someone_waits, moves;
    };
    for (const Case& c : {Case{Policy::Combined, 1e6, 0, false, false, true},
                          Case{Policy::Combined, 1, 0, false, false, false},
                          Case{Policy::Combined, 1e6, 9900, false, false, false},
                          Case{Policy::Combined, 1e6, 0, true, false, false},
                          Case{Policy::Combined, 1e6, 0, false, true, false},
                          Case{Policy::Doubling, 1e6, 0, false, false, false}}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 10000;
      Job j = job("1", model, 1, 1, c.remaining);
      make_running(j, on_k80, c.last_resize_s);
      s.jobs = {j};
      if (c.faster_held)  // inelastic 4-GPU jobs on every V100 and P100 node
        for (const char* node : {"v100-1", "v100-2", "p100-1", "p100-2"}) {
          Job h = job(std::string("h-") + node, model, 4, 4);
          const JobPlan held = plan_on({Placement{node, std::string(node, 4), 4}});
          h.elastic = false;
          h.requested_gpus = 4;
          make_running(h, held, 0);
          s.jobs.push_back(h);
        }
      if (c.someone_waits) {  // 8 K80s, of which the job holds one: it waits, nobody moves
        Job w = job("w", model, 8, 8);
        w.elastic = false;
        w.requested_gpus = 8;
        w.allowed_types = {"k80"};
        s.jobs.push_back(w);
      }
      PlannerConfig cfg;
      cfg.policy = c.policy;
      cfg.preempt = false;
      cfg.replace_slower = 0;
      Plan p = plan_checked(s, cfg);
      const JobPlan& jp = p.jobs[0];
      std::string what = case_text(c.policy, c.remaining, jp);
      if (c.someone_waits) CPPUNIT_ASSERT_MESSAGE(p.jobs.back().reason, !p.jobs.back().runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 1, jp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.moves, jp.resize);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string(c.moves ? best : "k80"),
                                   jp.placement.front().gpu_type);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.moves, contains(jp.reason, "moves from k80 to " + best));
    }
  }

  // The fairness floor of a late 8-GPU resnet18 is not forced where only K80s have room for it:
  // 8 K80s run it slower (27 it/s) than the 2 free P100s (61). Where 8 P100s are free, it holds.
  void lateJobsFairFloorNotOnlyOnSlowTypes() {
    const std::string model = "resnet18-b16";
    ThroughputModel m(gavel());
    CPPUNIT_ASSERT(m.iters_per_s(model, "k80", 8) < m.iters_per_s(model, "p100", 1));
    for (int p100s : {2, 8}) {
      Cluster c;
      c.nodes = {Node{"k80-1", "k80", 8}, Node{"p100-1", "p100", p100s}};
      const JobPlan jp = late_job_plan(m, model, c);
      std::string what = std::to_string(p100s) + " P100s: " + jp.reason;
      CPPUNIT_ASSERT_MESSAGE(what, jp.runs && jp.gpus_by_type.count("k80") == 0);
      CPPUNIT_ASSERT_MESSAGE(what, jp.predicted_iters_per_s > m.iters_per_s(model, "k80", 8));
      if (p100s == 8) CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, jp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, p100s == 2, contains(jp.reason, "only slower types have room"));
    }
  }

  // A job on a K80 and a P100 runs at the K80's pace: with the cluster idle it moves to the
  // fastest single type (2c), unless it is nearly done.
  void mixedTypeJobMovesToOneIdleType() {
    const std::string model = "resnet50-b64";
    const std::string best = fastest(model, 2);
    const JobPlan mixed = plan_on({Placement{"k80-1", "k80", 1}, Placement{"p100-1", "p100", 1}});
    for (double remaining : {1e6, 1.0}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 10000;
      Job j = job("1", model, 2, 2, remaining);
      make_running(j, mixed, 0);
      s.jobs = {j};
      Plan p = plan_checked(s, Policy::Combined);
      const JobPlan& jp = p.jobs[0];
      std::string what = case_text(Policy::Combined, remaining, jp);
      const bool moves = remaining > 1;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 2, jp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, moves, jp.resize);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{moves ? 1u : 2u}, jp.gpus_by_type.size());
      if (moves) CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 2, jp.gpus_by_type.at(best));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, moves, contains(jp.reason, "moves from k80+p100 to " + best));
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerTest);
