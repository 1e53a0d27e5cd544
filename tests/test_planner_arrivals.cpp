// SPDX-License-Identifier: GPL-2.0-or-later
// The lend horizon's arrival gap: ArrivalClock counts arrivals as the planning passes see them,
// and the planner values GPUs lent above a request for at least LendArrivals mean gaps (and
// kLendHorizonRestarts restart costs).
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <limits>
#include <string>
#include <utility>
#include <vector>

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
  CPPUNIT_TEST(aLongBurstKeepsCountingEachJobOnce);
  CPPUNIT_TEST(slowArrivalsLendLongerThanTheHorizon);
  CPPUNIT_TEST(costlyRestartsLendLonger);
  CPPUNIT_TEST(aBadArrivalGapIsRefused);
  CPPUNIT_TEST_SUITE_END();

  // A pass at `now` listing jobs by id and submit time.
  static Snapshot listing(double now, std::initializer_list<std::pair<const char*, double>> jobs) {
    Snapshot s;
    s.now_s = now;
    for (const auto& [id, submit] : jobs) {
      s.jobs.push_back(job(id, "resnet18-b64", 1, 1));
      s.jobs.back().submit_s = submit;
    }
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
    CPPUNIT_ASSERT_EQUAL(0.0, clock.observe(listing(100, {{"1", 90}})));  // one arrival: no gap yet
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(200, {{"1", 90}, {"2", 150}})));
    // Still listed: not again, also when requeued (Slurm then resets its submit time).
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(300, {{"1", 90}, {"2", 280}})));
    // Two at once: three gaps over 300 s.
    CPPUNIT_ASSERT_EQUAL(100.0, clock.observe(listing(400, {{"2", 280}, {"3", 350}, {"4", 399}})));
    // Submitted within the second of the previous pass (whole seconds in Slurm), listed now.
    CPPUNIT_ASSERT_EQUAL(125.0, clock.observe(listing(600, {{"4", 399}, {"5", 399}})));
  }

  void theGapDoesNotLengthenWhileNothingArrives() {
    ArrivalClock clock;
    clock.observe(listing(0, {{"1", 0}}));
    clock.observe(listing(60, {{"1", 0}, {"2", 60}}));
    CPPUNIT_ASSERT_EQUAL(60.0, clock.observe(listing(3600, {{"2", 60}})));
    CPPUNIT_ASSERT_EQUAL(60.0, clock.observe(listing(7200, {})));
  }

  void theGapIsTakenOverTheLatestArrivals() {
    ArrivalClock clock;
    // Slow at first (one an hour), then one a minute: after kWindow fast ones the hour is gone.
    double t = 0;
    for (int k = 0; k < 5; ++k, t += 3600) clock.observe(listing(t, {{std::to_string(k).c_str(), t}}));
    for (int k = 0; k < ArrivalClock::kWindow; ++k, t += 60)
      clock.observe(listing(t, {{("fast" + std::to_string(k)).c_str(), t}}));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(60.0, clock.gap_s(), 1e-9);
  }

  void aLongBurstKeepsCountingEachJobOnce() {
    // 500 jobs, 4 arriving at the start of each minute and 4 leaving, listed every 10 s with
    // their submit times, and each minute the oldest one requeued (its submit time reset, as
    // Slurm does). The set of counted jobs is pruned on the way (every 27 minutes or so); a
    // requeued job that the pruning forgot would arrive again, at a pass of its own.
    ArrivalClock clock;
    std::vector<std::pair<std::string, double>> live;
    for (int minute = 0, next = 0; minute < 125; ++minute)
      for (int tick = 0; tick < 6; ++tick) {
        const double now = minute * 60.0 + tick * 10;
        if (tick == 0)
          for (int k = 0; k < 4; ++k, ++next) live.emplace_back("j" + std::to_string(next), now);
        if (live.size() > 40 && tick == 3) live.erase(live.begin(), live.begin() + 4);
        if (tick == 5) live.front().second = now;
        Snapshot s;
        s.now_s = now;
        for (const auto& [id, submit] : live) {
          s.jobs.push_back(job(id, "resnet18-b64", 1, 1));
          s.jobs.back().submit_s = submit;
        }
        // 16 arrivals in 4 minutes: the window spans 4 passes of 4 (3 minutes over 15 gaps),
        // at every pass once 4 minutes have passed.
        const double gap = clock.observe(s);
        if (minute >= 4)
          CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE("at " + std::to_string(now) + " s", 12.0, gap, 1e-9);
      }
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

  // The horizon the plan used is also at least kLendHorizonRestarts restart costs: 7,200 s at
  // 120 s, 1,800 s (LendHorizon) at 30 s and at 10 s; 3 arrival gaps where they are longer; off
  // with LendHorizon=0 whatever the restart costs.
  void costlyRestartsLendLonger() {
    const ThroughputModel m(gavel());
    struct Case {
      double restart_s, gap_s, lend_horizon_s, used_s;
    };
    for (const Case& k : {Case{120, 0, 1800, 7200}, Case{30, 0, 1800, 1800}, Case{10, 0, 1800, 1800},
                          Case{120, 1e4, 1800, 3e4}, Case{120, 0, 0, 0}}) {
      PlannerConfig c;
      c.costs.restart_s = k.restart_s;
      c.lend_horizon_s = k.lend_horizon_s;
      const Plan p = Planner(m, c).plan(lender_and_arrival(k.gap_s));
      CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE("restart " + std::to_string(k.restart_s), k.used_s,
                                           p.lend_horizon_s, 1e-9);
    }
    CPPUNIT_ASSERT_DOUBLES_EQUAL(PlannerConfig{}.lend_horizon_s,
                                 kLendHorizonRestarts * PlannerConfig{}.costs.restart_s, 1e-9);
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
