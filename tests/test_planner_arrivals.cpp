// SPDX-License-Identifier: GPL-2.0-or-later
// The lend horizon's arrival gap: ArrivalClock counts arrivals as the planning passes see them,
// and the planner values GPUs lent above a request for at least LendArrivals mean gaps.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <limits>
#include <string>

#include "ringsched/arrivals.h"
#include "ringsched/planner.h"
#include "planner_fixtures.h"

using namespace ringsched;
using namespace planner_fixtures;

class PlannerArrivalsTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerArrivalsTest);
  CPPUNIT_TEST(theClockCountsEachJobOnceWhenFirstListed);
  CPPUNIT_TEST(theGapDoesNotLengthenWhileNothingArrives);
  CPPUNIT_TEST(theGapIsTakenOverTheLatestArrivals);
  CPPUNIT_TEST(slowArrivalsLendLongerThanTheHorizon);
  CPPUNIT_TEST(aBadArrivalGapIsRefused);
  CPPUNIT_TEST_SUITE_END();

  static Snapshot listing(double now, std::initializer_list<const char*> ids) {
    Snapshot s;
    s.now_s = now;
    for (const char* id : ids) s.jobs.push_back(job(id, "resnet18-b64", 1, 1));
    return s;
  }

  // 3 V100s. L (400,000 iterations, asked for 1, may grow to 8) runs on 1; S (100,000, asked
  // for 1, up to 2) arrives. Valued for 1,800 s, L's growth saves less than doubling S does;
  // valued for 300,000 s it saves more.
  static Snapshot lender_and_arrival(double arrival_gap_s) {
    Snapshot s;
    s.cluster.nodes.push_back(Node{"v100-1", "v100", 3});
    s.now_s = 1e4;
    Job l = job("L", "resnet50-b64", 1, 8, 4e5);
    l.iterations = 4.8e5;
    l.state = JobState::Running;
    l.current_gpus = 1;
    l.current_type = "v100";
    l.gpus_by_node["v100-1"] = 1;
    Job a = job("S", "resnet18-b64", 1, 2, 1e5);
    a.submit_s = s.now_s;
    s.jobs = {l, a};
    s.arrival_gap_s = arrival_gap_s;
    return s;
  }

 public:
  void theClockCountsEachJobOnceWhenFirstListed() {
    ArrivalClock clock;
    CPPUNIT_ASSERT_EQUAL(0.0, clock.observe(listing(100, {"1"})));  // one arrival: no gap yet
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(200, {"1", "2"})));
    // Still listed (running, or requeued at a new size with a new submit time): not again.
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(200, {"1", "2"})));
    // Two at once: three gaps over 300 s.
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(400, {"2", "3", "4"})));
  }

  void theGapDoesNotLengthenWhileNothingArrives() {
    ArrivalClock clock;
    clock.observe(listing(0, {"1"}));
    clock.observe(listing(60, {"1", "2"}));
    CPPUNIT_ASSERT_EQUAL(60.0, clock.observe(listing(3600, {"2"})));
    CPPUNIT_ASSERT_EQUAL(60.0, clock.observe(listing(7200, {})));
    // A job listed again after a pass without it (a restart of slurmctld) is a new arrival.
    CPPUNIT_ASSERT_EQUAL(3600.0, clock.observe(listing(7200, {"2"})));
  }

  void theGapIsTakenOverTheLatestArrivals() {
    ArrivalClock clock;
    // Slow at first (one an hour), then one a minute: after kWindow fast ones the hour is gone.
    double t = 0;
    for (int k = 0; k < 5; ++k, t += 3600) clock.observe(listing(t, {std::to_string(k).c_str()}));
    for (int k = 0; k < ArrivalClock::kWindow; ++k, t += 60)
      clock.observe(listing(t, {("fast" + std::to_string(k)).c_str()}));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(60.0, clock.gap_s(), 1e-9);
  }

  void slowArrivalsLendLongerThanTheHorizon() {
    const ThroughputModel m(gavel());
    PlannerConfig cfg;  // combined, LendHorizon 1800, LendArrivals 3
    struct Case {
      double gap, arrivals;
      bool lends;  // L grows (valued past 1,800 s) rather than S doubling
    };
    for (const Case& k : {Case{0, 3, false}, Case{500, 3, false}, Case{1e5, 3, true}, Case{1e5, 0, false}}) {
      PlannerConfig c = cfg;
      c.lend_arrivals = k.arrivals;
      const Plan p = Planner(m, c).plan(lender_and_arrival(k.gap));
      check_capacity(p, lender_and_arrival(k.gap).cluster);
      const std::string what = "gap " + std::to_string(k.gap) + " x " + std::to_string(k.arrivals) + ": L " +
                               p.find("L")->reason + "; S " + p.find("S")->reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, k.lends ? 2 : 1, p.find("L")->gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, k.lends ? 1 : 2, p.find("S")->gpus);
    }
    // The horizon is max(LendHorizon, LendArrivals x gap): the same plan as that horizon alone.
    PlannerConfig alone = cfg;
    alone.lend_horizon_s = 3e5;
    alone.lend_arrivals = 0;
    const Plan a = Planner(m, alone).plan(lender_and_arrival(0));
    const Plan b = Planner(m, cfg).plan(lender_and_arrival(1e5));
    CPPUNIT_ASSERT_EQUAL(a.find("L")->reason, b.find("L")->reason);
    CPPUNIT_ASSERT_EQUAL(a.find("S")->reason, b.find("S")->reason);
  }

  void aBadArrivalGapIsRefused() {
    const Planner planner(ThroughputModel(gavel()), PlannerConfig{});
    for (double bad : {-1.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()}) {
      try {
        planner.plan(lender_and_arrival(bad));
        CPPUNIT_FAIL("arrival_gap_s " + std::to_string(bad) + " was taken");
      } catch (const InputError& e) {
        CPPUNIT_ASSERT_MESSAGE(e.what(), std::string(e.what()).find("arrival_gap_s") != std::string::npos);
      }
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerArrivalsTest);
