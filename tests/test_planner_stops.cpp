// SPDX-License-Identifier: GPL-2.0-or-later
// A plan that stops a starving running job within its request starts no job above its base
// (planner_steps.h, start_at_base_past_a_stop()).
#include <cppunit/extensions/HelperMacros.h>

#include <string>

#include "ringsched/planner.h"
#include "planner_fixtures.h"
#include "test_util.h"

using namespace ringsched;
using namespace planner_fixtures;

class PlannerStopsTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerStopsTest);
  CPPUNIT_TEST(noStartAboveItsBaseWhereTheRoundStopsAStarvingJob);
  CPPUNIT_TEST_SUITE_END();

 public:
  // Two 4-GPU V100 nodes. "hold" (resnet50-b64, days of work, fixed at 4) restarted 30 s ago
  // on v100-1: the interval keeps it. "late" (fixed at 4, on v100-2) waited `late_waited`
  // seconds before it started 1,000 s ago and has hours left: after a long wait it is starving.
  // "short" (resnet18-b32, elastic 1-4, asked for 1, minutes of work) arrives and is first in
  // order: one GPU must come from "late", which is stopped. The three GPUs left would start
  // "short" at 4; where "late" is starving it starts at 1, the GPUs "late" comes back for kept
  // free. Where "late" is not starving, or no job is stopped (no "hold"), "short" starts at 4.
  void noStartAboveItsBaseWhereTheRoundStopsAStarvingJob() {
    struct Case {
      double late_waited;
      bool hold;
      bool late_stops;
      int short_gpus;
    };
    for (const Case& c : {Case{1e5, true, true, 1}, Case{0, true, true, 4},
                          Case{1e5, false, false, 4}}) {
      Snapshot s;
      s.cluster.nodes = {Node{"v100-1", "v100", 4}, Node{"v100-2", "v100", 4}};
      s.now_s = 2e5;
      if (c.hold) {
        Job h = job("hold", "resnet50-b64", 4, 4, 1e7);
        h.elastic = false;
        h.requested_gpus = 4;
        h.submit_s = 0;
        make_running(h, plan_on({Placement{"v100-1", "v100", 4}}), s.now_s - 30);
        s.jobs.push_back(h);
      }
      Job l = job("late", "resnet50-b64", 4, 4, 2e5);
      l.elastic = false;
      l.requested_gpus = 4;
      // 1,000 s of its work done: on time but for its wait
      l.iterations =
          l.remaining + 1000 * ThroughputModel(gavel()).iters_per_s("resnet50-b64", "v100", 4);
      l.submit_s = s.now_s - 1000 - c.late_waited;
      make_running(l, plan_on({Placement{"v100-2", "v100", 4}}), s.now_s - 1000);
      s.jobs.push_back(l);
      Job sh = job("short", "resnet18-b32", 1, 4, 3000);
      sh.submit_s = s.now_s;
      s.jobs.push_back(sh);
      PlannerConfig cfg;
      cfg.policy = Policy::Combined;
      cfg.tail_guard = false;
      Plan p = plan_checked(s, cfg);
      const JobPlan& sp = *p.find("short");
      const JobPlan& lp = *p.find("late");
      const std::string what = "waited " + std::to_string(c.late_waited) +
                               (c.hold ? " hold" : "") + ": short " + sp.reason + "; late " +
                               lp.reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, !c.late_stops, lp.runs);
      CPPUNIT_ASSERT_MESSAGE(what, sp.runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.short_gpus, sp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.short_gpus == 1,
                                   contains(sp.reason, "no more this round"));
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerStopsTest);
