// SPDX-License-Identifier: GPL-2.0-or-later
// The floor the fairness pass and the starvation bound give a late job, as the placement gets it
// (planner.cpp): over nodes (policy/planner_steps.h, floors_faster_over_nodes()) only on the
// types where the spread ring beats every size one node holds; capped at one node, a size the
// ring may run at. A start above the request spread over nodes where the lent GPUs save little
// (start_spread_lends_at_request()) starts at the request on one node.
#include <cppunit/extensions/HelperMacros.h>

#include <algorithm>
#include <string>
#include <vector>

#include "planner_fixtures.h"
#include "planner_steps.h"
#include "ringsched/free_gpus.h"
#include "ringsched/placement.h"
#include "test_util.h"

using namespace ringsched;
using namespace ringsched::planner_detail;
using namespace planner_fixtures;

class PlannerFloorsTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerFloorsTest);
  CPPUNIT_TEST(floor_over_nodes_only_on_the_types_where_it_is_faster);
  CPPUNIT_TEST(floor_capped_at_one_node_is_a_power_of_two);
  CPPUNIT_TEST(a_grow_spread_over_nodes_that_runs_no_faster_is_found);
  CPPUNIT_TEST(a_spread_start_above_its_request_that_saves_little_starts_at_it);
  CPPUNIT_TEST_SUITE_END();

 public:
  // Every Gavel model profiled on both types, a floor of 8 on 4-GPU nodes of each: the types
  // returned are exactly those whose 8 GPUs over two nodes (Gavel's 8-GPU point with the
  // placement's locality charge) beat the best of 1, 2 and 4 GPUs on one node of either type.
  // Some model must be faster spread on V100s only, so the case the rule is for is exercised.
  void floor_over_nodes_only_on_the_types_where_it_is_faster() {
    Cluster c;
    for (const char* t : {"v100", "k80"})
      for (int i = 0; i < 4; ++i) c.nodes.push_back(Node{std::string(t) + "-" + std::to_string(i), t, 4});
    ThroughputModel m(gavel());
    const std::vector<std::string> types = {"v100", "k80"};
    int some_types = 0, none = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100") || !gavel().has(model, "k80")) continue;
      double local = 0;
      for (const std::string& t : types)
        for (int g : {1, 2, 4}) local = std::max(local, m.iters_per_s(model, t, g));
      PlacementLocality locality(c, m, {{model, types}});
      std::vector<std::string> expected;
      for (const std::string& t : types) {
        double spread = m.iters_per_s(model, t, 8) * locality.factor(0, {{t + "-0", 4}, {t + "-1", 4}});
        if (spread > local) expected.push_back(t);
      }
      FreeGpus free(c);
      std::vector<FloorFaster> got = floors_faster_over_nodes(c, m, free, {FloorOverNodes{model, types, 1, 8}});
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 32, free.free_of(types));  // the trials were given back
      if (expected.empty()) {
        ++none;
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model, size_t{0}, got.size());
        continue;
      }
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, size_t{1}, got.size());
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, size_t{0}, got[0].candidate);
      CPPUNIT_ASSERT_MESSAGE(model, expected == got[0].types);
      some_types += expected.size() < types.size();
    }
    CPPUNIT_ASSERT_MESSAGE(std::to_string(none) + " models never faster spread", some_types > 0);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(some_types) + " models faster spread on some types", none > 0);
  }

  // Two nodes of 4 V100s, one GPU of each held by a running fixed-size job: 3 free on each. A
  // job asked for 4 that has waited long is behind its fair share: the fairness pass gives it a
  // floor of 4, which one node caps at its 3 free GPUs. The placement took 3 as the job's minimum and ran it on 3 GPUs, a size a ring
  // job may not have: the next round resized it to 2 (a restart for nothing, again and again
  // in phillyd v100x4 L1 s32). The cap is a power of two: 2 on one node, or 4 over both.
  void floor_capped_at_one_node_is_a_power_of_two() {
    Cluster c;
    for (int i = 0; i < 2; ++i) c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    for (const std::string model : {"transformer-b64", "resnet50-b64", "recommendation-b8192"}) {
      Snapshot s;
      s.cluster = c;
      s.now_s = 1e5;
      s.jobs = {job("late", model, 1, 32, 2e5)};
      s.jobs[0].requested_gpus = 4;
      s.jobs[0].submit_s = 0;
      for (int i = 0; i < 2; ++i) {
        Job fixed = job("fixed" + std::to_string(i), "resnet18-b64", 1, 1, 1e9);
        fixed.elastic = false;
        make_running(fixed, plan_on({Placement{"v100-" + std::to_string(i), "v100", 1}}), 0);
        s.jobs.push_back(fixed);
      }
      PlannerConfig cfg;
      cfg.policy = Policy::Combined;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      check_capacity(p, c);
      const JobPlan& late = p.jobs[0];
      CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, contains(late.reason, "its floor is 2, the most one node"));
      CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, late.runs && is_power_of_two(late.gpus));
      CPPUNIT_ASSERT_MESSAGE(model + ": " + late.reason, p.jobs[1].runs && p.jobs[2].runs);
    }
  }

  // Every Gavel model with V100 points, running on 1 GPU of a node and planned on 4 GPUs: 2 + 2
  // over two nodes is found exactly where that ring, with the placement's locality charge, runs
  // it no faster than its one GPU; 4 on one node never (no locality to lose), nor a job that
  // keeps its size. Some model must fall on each side. Running on 2 GPUs of one node, the spread
  // 4 is found where it is no faster than those 2; for a job behind its fair share (a floor of
  // 4), only where it is no faster than one GPU either: a ring slower than its 2 but faster than
  // one GPU is left to the placement on its way to its share; some model must be such a ring.
  void a_grow_spread_over_nodes_that_runs_no_faster_is_found() {
    Cluster c;
    for (int i = 0; i < 2; ++i) c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    const NodeIndex nodes(c);
    ThroughputModel m(gavel());
    int slower = 0, faster = 0, left_to_gather = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      Snapshot s;
      s.cluster = c;
      s.jobs = {job("j", model, 1, 8)};
      make_running(s.jobs[0], plan_on({Placement{"v100-0", "v100", 1}}), 0);
      JobView v;
      v.job = &s.jobs[0];
      v.types = {"v100"};
      v.best_type = "v100";
      v.known = true;
      Plan plan;
      plan.jobs.resize(1);
      const std::map<std::string, int> spread = {{"v100-0", 2}, {"v100-1", 2}};
      PlacementLocality locality(c, m, {{model, {"v100"}}});
      const bool expected = m.iters_per_s(model, "v100", 4) * locality.factor(0, spread) <=
                            m.iters_per_s(model, "v100", 1);
      (expected ? slower : faster)++;
      set_from_placement(plan.jobs[0], {Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}});
      for (int floor : {0, 4})
        CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected, grows_no_faster(c, m, nodes, s, plan, {v}, {floor}).size() == 1);
      set_from_placement(plan.jobs[0], {Placement{"v100-0", "v100", 4}});
      CPPUNIT_ASSERT_MESSAGE(model, grows_no_faster(c, m, nodes, s, plan, {v}, {0}).empty());
      const double v4 = m.iters_per_s(model, "v100", 4) * locality.factor(0, spread);
      make_running(s.jobs[0], plan_on({Placement{"v100-0", "v100", 2}}), 0);
      set_from_placement(plan.jobs[0], {Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}});
      const bool on_two = v4 <= m.iters_per_s(model, "v100", 2) && v4 <= m.iters_per_s(model, "v100", 1);
      left_to_gather += v4 < m.iters_per_s(model, "v100", 2) && !on_two;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, on_two, grows_no_faster(c, m, nodes, s, plan, {v}, {4}).size() == 1);
      const bool slower_than_two = v4 <= m.iters_per_s(model, "v100", 2);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, slower_than_two,
                                   grows_no_faster(c, m, nodes, s, plan, {v}, {0}).size() == 1);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, slower_than_two,
                                   grows_no_faster(c, m, nodes, s, plan, {v}, {2}).size() == 1);
      make_running(s.jobs[0], plan_on({Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}}), 0);
      set_from_placement(plan.jobs[0], {Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}});
      CPPUNIT_ASSERT_MESSAGE(model, grows_no_faster(c, m, nodes, s, plan, {v}, {0}).empty());
    }
    CPPUNIT_ASSERT_MESSAGE(std::to_string(faster) + " faster spread", slower > 0);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(slower) + " no faster spread", faster > 0);
    CPPUNIT_ASSERT(left_to_gather > 0);
  }
  // Every Gavel model with V100 points, a waiting job that asked for 1 GPU, planned on 1 + 1
  // V100s of two nodes, with 297 s of work on one GPU (s35's a3c) and a lend horizon of 300 s:
  // it starts on 1 GPU of one node exactly where the spread ring saves less than one restart
  // of 30 s, over its run or over the horizon less the restart that takes the GPU back. Some
  // model must fall on each side. Never for a start on one node, a running job, or where no
  // node has room for its request.
  void a_spread_start_above_its_request_that_saves_little_starts_at_it() {
    Cluster c;
    for (int i = 0; i < 2; ++i) c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 4});
    const NodeIndex nodes(c);
    ThroughputModel m(gavel());
    const double horizon = 300, restart = 30, min_gain = 30;
    const std::map<std::string, int> spread = {{"v100-0", 1}, {"v100-1", 1}};
    int cut = 0, kept = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      const double one = m.iters_per_s(model, "v100", 1);
      Snapshot s;
      s.cluster = c;
      s.jobs = {job("j", model, 1, 8, 297 * one)};
      JobView v;
      v.job = &s.jobs[0];
      v.types = {"v100"};
      v.best_type = "v100";
      v.known = true;
      PlacementLocality locality(c, m, {{model, {"v100"}}});
      const double two = m.iters_per_s(model, "v100", 2) * locality.factor(0, spread);
      const double saves = std::min(297 - 297 * one / two, horizon * (two / one - 1) - restart);
      const bool expected = saves < min_gain;
      (expected ? cut : kept)++;
      auto planned = [&](const std::vector<Placement>& pl, FreeGpus& free) {
        Plan plan;
        plan.jobs.resize(1);
        set_from_placement(plan.jobs[0], pl);
        for (const Placement& p : pl) free.take_at(nodes.find(p.node), p.gpus);
        return plan;
      };
      FreeGpus free(c);
      Plan plan = planned({Placement{"v100-0", "v100", 1}, Placement{"v100-1", "v100", 1}}, free);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected ? 1 : 0,
                                   start_spread_lends_at_request(c, m, nodes, s, plan, {v}, {1}, free,
                                                                 horizon, restart, min_gain));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected ? 1 : 2, plan.jobs[0].gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, plan.jobs[0].gpus, 8 - free.free_of({"v100"}));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected ? size_t{1} : size_t{2}, plan.jobs[0].placement.size());
      if (expected)
        CPPUNIT_ASSERT_MESSAGE(plan.jobs[0].reason, contains(plan.jobs[0].reason, "starts at its request of 1"));
      FreeGpus packed_free(c);
      Plan packed = planned({Placement{"v100-0", "v100", 2}}, packed_free);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 0, start_spread_lends_at_request(c, m, nodes, s, packed, {v}, {1},
                                                                           packed_free, horizon, restart, min_gain));
      // Planned on 2 + 2 with a request of 3, the other two GPUs of each node held by others:
      // no node has room for 3 once the plan's GPUs are back, so the spread start stays.
      FreeGpus full(c);
      Plan no_room = planned({Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}}, full);
      for (int k = 0; k < 2; ++k) full.take_at(k, 2);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 0, start_spread_lends_at_request(c, m, nodes, s, no_room, {v}, {3},
                                                                           full, horizon, restart, min_gain));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 4, no_room.jobs[0].gpus);
      make_running(s.jobs[0], plan_on({Placement{"v100-0", "v100", 1}}), 0);
      FreeGpus running_free(c);
      Plan running = planned({Placement{"v100-0", "v100", 1}, Placement{"v100-1", "v100", 1}}, running_free);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 0, start_spread_lends_at_request(c, m, nodes, s, running, {v}, {1},
                                                                           running_free, horizon, restart, min_gain));
    }
    CPPUNIT_ASSERT_MESSAGE(std::to_string(kept) + " kept spread", cut > 0);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(cut) + " started at the request", kept > 0);
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerFloorsTest);
