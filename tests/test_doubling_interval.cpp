// SPDX-License-Identifier: GPL-2.0-or-later
// The doubling round's minimum interval (policy/doubling_round.h, step 3) yielding GPUs a job was
// lent to a starving job (DoublingJob::interval_yields).
#include <cppunit/extensions/HelperMacros.h>

#include <string>
#include <vector>

#include "doubling_fixtures.h"
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
    auto linear = [](int n) { return 0.9 * n + 0.1; };
    DoublingJob s = elastic(20, 1, 1, linear);
    s.elastic = false;
    for_each_mark_and_starving(
        running(elastic(1e5, 2, 8, linear), 8, 0.0), s, 8, 100.0,
        [](DoublingJob& g, bool on) { g.interval_yields = on; },
        [](bool marked, bool starving, const DoublingResult& r, const std::string& what) {
          if (marked && starving) {
            CPPUNIT_ASSERT_MESSAGE(what, r.gpus[1] == 1);
            CPPUNIT_ASSERT_MESSAGE(what, r.gpus[0] >= 2 && r.gpus[0] < 8);
          } else {
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, r.gpus[0]);
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 0, r.gpus[1]);
            CPPUNIT_ASSERT_MESSAGE(what, contains(r.reasons[0], "minimum interval 300 s"));
          }
        });
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingIntervalTest);
