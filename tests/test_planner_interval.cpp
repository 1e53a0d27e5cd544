// SPDX-License-Identifier: GPL-2.0-or-later
// The minimum interval for a running job below its request (DoublingJob::interval_grows): past
// the grace after its restart it may grow towards its request, never shrink.
#include <cppunit/extensions/HelperMacros.h>

#include <string>

#include "ringsched/planner.h"
#include "planner_fixtures.h"
#include "test_util.h"

using namespace ringsched;
using namespace planner_fixtures;

class PlannerIntervalTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerIntervalTest);
  CPPUNIT_TEST(jobStartedShortGrowsToItsRequestWithinTheInterval);
  CPPUNIT_TEST_SUITE_END();

 public:
  // "short" (resnet50-b64, days of work, elastic 1-8) asked for `requested` and runs on 4
  // V100s of one node, started `since` seconds ago (the interval is 300 s, the grace 60 s);
  // 4 more are free, on the same 8-GPU node or (`split`) on a second node of 4. Under combined,
  // past the grace and below a request that one node holds, it grows to 8 within the interval;
  // within the grace, at its request, where no node holds its request, or under plain doubling
  // the interval holds it at 4.
  void jobStartedShortGrowsToItsRequestWithinTheInterval() {
    struct Case {
      Policy policy;
      double since;
      int requested;
      bool split;
      bool grows;
    };
    for (const Case& c : {Case{Policy::Combined, 100, 8, false, true},
                          Case{Policy::Combined, 250, 8, false, true},
                          Case{Policy::Combined, 30, 8, false, false},
                          Case{Policy::Combined, 100, 4, false, false},
                          Case{Policy::Combined, 100, 8, true, false},
                          Case{Policy::Doubling, 100, 8, false, false}}) {
      Snapshot s;
      if (c.split)
        s.cluster.nodes = {Node{"v100-1", "v100", 4}, Node{"v100-2", "v100", 4}};
      else
        s.cluster.nodes = {Node{"v100-1", "v100", 8}};
      s.now_s = 10000;
      Job j = job("short", "resnet50-b64", 1, 8, 1e7);
      j.requested_gpus = c.requested;
      j.submit_s = s.now_s - c.since;
      make_running(j, plan_on({Placement{"v100-1", "v100", 4}}), s.now_s - c.since);
      s.jobs = {j};
      Plan p = plan_checked(s, c.policy);
      const JobPlan& jp = *p.find("short");
      const std::string what = std::string(policy_name(c.policy)) + " since " +
                               std::to_string(c.since) + " requested " +
                               std::to_string(c.requested) + (c.split ? " split" : "") + ": " +
                               jp.reason;
      CPPUNIT_ASSERT_MESSAGE(what, jp.runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.grows ? 8 : 4, jp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.grows, jp.resize);
      if (!c.grows) CPPUNIT_ASSERT_MESSAGE(what, contains(jp.reason, "minimum interval"));
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerIntervalTest);
