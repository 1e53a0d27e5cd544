// SPDX-License-Identifier: GPL-2.0-or-later
// The doubling round's minimum interval (policy/doubling_round.h, step 3) yielding GPUs a job was
// lent to a starving job (DoublingJob::interval_yields_to_starving).
#include <cppunit/extensions/HelperMacros.h>

#include <string>
#include <vector>

#include "doubling_fixtures.h"
#include "doubling_steps.h"
#include "test_util.h"

using namespace ringsched;
using namespace doubling_fixtures;

class DoublingIntervalTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(DoublingIntervalTest);
  CPPUNIT_TEST(interval_yields_lent_gpus_only_to_a_starving_job);
  CPPUNIT_TEST_SUITE_END();

 public:
  // G runs on all 8 GPUs, resized 100 s ago (the interval is 300 s); it asked for 2, and the
  // planner marked it (minimum 2, maximum its current 8). S needs 20 s on 1 GPU. The interval
  // holds G unless S is starving; marked and S starving, G gives GPUs back, to no fewer than 2.
  void interval_yields_lent_gpus_only_to_a_starving_job() {
    ResizeCosts costs;  // restart 30 s, gain >= 2 x 30 s, interval 300 s
    auto linear = [](int n) { return 0.9 * n + 0.1; };
    for (int exact_max : {16, 0}) {
      DoublingSteps steps;
      steps.exact_hysteresis_max_jobs = exact_max;
      for (int marked : {0, 1})
        for (int starving : {0, 1}) {
          auto g = running(elastic(1e5, 2, 8, linear), 8, 0.0);
          g.interval_yields_to_starving = marked;
          auto s = elastic(20, 1, 1, linear);
          s.elastic = false;
          s.starving = starving;
          const std::vector<DoublingJob> jobs = {g, s};
          DoublingResult r = doubling_heuristic(jobs, {1, 0}, 8, costs, 100.0, steps);
          check_valid(jobs, 8, r);
          const std::string what = "exact_max " + std::to_string(exact_max) + " marked " +
                                   std::to_string(marked) + " starving " + std::to_string(starving) +
                                   ": G " + r.reasons[0] + "; S " + r.reasons[1];
          if (marked && starving) {
            CPPUNIT_ASSERT_MESSAGE(what, r.gpus[1] == 1);
            CPPUNIT_ASSERT_MESSAGE(what, r.gpus[0] >= 2 && r.gpus[0] < 8);
          } else {
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, r.gpus[0]);
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 0, r.gpus[1]);
            CPPUNIT_ASSERT_MESSAGE(what, contains(r.reasons[0], "minimum interval 300 s"));
          }
        }
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingIntervalTest);
