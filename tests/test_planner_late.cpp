// SPDX-License-Identifier: GPL-2.0-or-later
// The size the starvation bound admits a late waiting job at (policy/planner_steps.h,
// late_admission_size()): the smallest doubling of its minimum that finishes it within
// late_admission_target() fair shares, not its whole request, so that a burst of late arrivals
// runs side by side instead of half of them waiting.
#include <cppunit/extensions/HelperMacros.h>

#include <algorithm>
#include <string>
#include <vector>

#include "planner_fixtures.h"
#include "planner_steps.h"
#include "test_util.h"

using namespace ringsched;
using namespace ringsched::planner_detail;
using namespace planner_fixtures;

class PlannerLateTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerLateTest);
  CPPUNIT_TEST(a_waiting_late_job_gets_the_smallest_doubling_on_time);
  CPPUNIT_TEST(a_burst_of_late_arrivals_runs_side_by_side);
  CPPUNIT_TEST_SUITE_END();

  // A model whose 4 V100s finish it within the target when its request is 8 (and 1 GPU does
  // not finish it within the bound): the case the step-down is for.
  static std::string model_on_time_at_4(const PlannerConfig& cfg) {
    ThroughputModel m(gavel());
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      const double at8 = m.iters_per_s(model, "v100", 8);
      if (m.iters_per_s(model, "v100", 1) * cfg.late_factor < at8 &&
          m.iters_per_s(model, "v100", 2) * late_admission_target(cfg) < at8 &&
          m.iters_per_s(model, "v100", 4) * late_admission_target(cfg) >= at8)
        return model;
    }
    return "";
  }

 public:
  // Every Gavel model on V100s, asking for 8 with a minimum of 1: just arrived, the size is the
  // first of 2 and 4 that finishes it within the target (halfway from the fair share to the
  // bound), else 8; 0 where 1 GPU is within the bound. Some model must land below its request
  // and some at it. Having waited 0.3 x its time alone, it gets what the same rule gives, and
  // for some model that is its request where it had been less. Of several types, or running,
  // or capped below its request, it gets that size, not marked as within the target.
  void a_waiting_late_job_gets_the_smallest_doubling_on_time() {
    PlannerConfig cfg;
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.25, late_admission_target(cfg), 1e-12);
    ThroughputModel m(gavel());
    int below = 0, whole = 0, whole_later = 0;
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      Job j = job("j", model, 1, 32, 1e5);
      j.requested_gpus = 8;
      const double alone = j.remaining / m.iters_per_s(model, "v100", 8);
      auto expected = [&](double waited) {
        if (waited + j.remaining / m.iters_per_s(model, "v100", 1) <= cfg.late_factor * alone) return 0;
        for (int g : {2, 4})
          if (waited + j.remaining / m.iters_per_s(model, "v100", g) <= 1.25 * alone) return g;
        return 8;
      };
      const LateAdmission got = late_admission_size(m, cfg, j, "v100", 1, 8, 8, 0, alone, true);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected(0), got.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, got.gpus > 0 && got.gpus < 8, got.within_target);
      below += got.within_target;
      whole += got.gpus == 8;
      if (got.gpus == 0) continue;
      const LateAdmission later = late_admission_size(m, cfg, j, "v100", 1, 8, 8, 0.3 * alone, alone, true);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, expected(0.3 * alone), later.gpus);
      whole_later += got.gpus < 8 && later.gpus == 8;
      const LateAdmission several = late_admission_size(m, cfg, j, "v100", 1, 8, 8, 0, alone, false);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 8, several.gpus);
      CPPUNIT_ASSERT_MESSAGE(model, !several.within_target);
      const LateAdmission capped = late_admission_size(m, cfg, j, "v100", 1, 8, 4, 0, alone, true);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, std::min(4, got.gpus), capped.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, got.gpus < 4, capped.within_target);
      make_running(j, plan_on({Placement{"v100-0", "v100", 4}}), 0);
      const LateAdmission running = late_admission_size(m, cfg, j, "v100", 1, 8, 8, 0, alone, true);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model, 4, running.gpus);
      CPPUNIT_ASSERT_MESSAGE(model, !running.within_target);
    }
    CPPUNIT_ASSERT_MESSAGE(std::to_string(whole) + " at their request", below > 0);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(below) + " below their request", whole > 0);
    CPPUNIT_ASSERT(whole_later > 0);
    // The target never passes the bound: at LateFactor 0.5 it is the bound.
    cfg.late_factor = 0.5;
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.5, late_admission_target(cfg), 1e-12);
  }

  // 64 V100s on 8 nodes with links as fast between nodes as inside them; 16 jobs of a model
  // that 4 GPUs finish within the target arrive together, each asking for 8. Each is late at
  // its minimum, so the bound admits it, at 4: all 16 run. At their whole request (the rule
  // before) 8 ran and 8 waited (itp03 on a100t4x4 with 100 GB/s links: 1.071x doubling's avg
  // JCT, which ran them all at 4).
  void a_burst_of_late_arrivals_runs_side_by_side() {
    PlannerConfig cfg;
    const std::string model = model_on_time_at_4(cfg);
    CPPUNIT_ASSERT_MESSAGE("no Gavel model finishes on 4 V100s within the target", !model.empty());
    Cluster c;
    for (int i = 0; i < 8; ++i) {
      c.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 8});
      c.nodes.back().inter_gbps = c.nodes.back().intra_gbps;
    }
    Snapshot s;
    s.cluster = c;
    s.now_s = 0;
    for (int k = 0; k < 16; ++k) {
      s.jobs.push_back(job("burst" + std::to_string(k), model, 1, 32, 1e5));
      s.jobs.back().requested_gpus = 8;
    }
    Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(p, c);
    for (const JobPlan& jp : p.jobs) {
      CPPUNIT_ASSERT_EQUAL_MESSAGE(model + " " + jp.job_id + ": " + jp.reason, 4, jp.gpus);
      CPPUNIT_ASSERT_MESSAGE(jp.reason, contains(jp.reason, "admitted at 4 GPUs"));
      CPPUNIT_ASSERT_MESSAGE(jp.reason, contains(jp.reason, "4 finish it within 1.25 x"));
    }
    // One of them already running on 4: admitted at its size, which the reason does not call a
    // step down (it is the running job's cap, whether or not 4 finish it in time).
    make_running(s.jobs[0], plan_on({Placement{"v100-0", "v100", 4}}), 0);
    Plan r = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(r, c);
    CPPUNIT_ASSERT_MESSAGE(r.jobs[0].reason, contains(r.jobs[0].reason, "admitted at 4 GPUs"));
    CPPUNIT_ASSERT_MESSAGE(r.jobs[0].reason, !contains(r.jobs[0].reason, "finish it within"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerLateTest);
