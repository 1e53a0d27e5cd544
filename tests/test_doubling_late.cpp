// SPDX-License-Identifier: GPL-2.0-or-later
// Step 1's admission order and a running job the starvation bound admitted
// (DoublingJob::admitted_late): it goes before the waiting jobs that are not starving.
#include <cppunit/extensions/HelperMacros.h>

#include <string>
#include <vector>

#include "doubling_fixtures.h"
#include "test_util.h"

using namespace ringsched;
using namespace doubling_fixtures;

class DoublingLateTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(DoublingLateTest);
  CPPUNIT_TEST(a_late_running_job_is_not_stopped_by_an_arrival_that_is_not_late);
  CPPUNIT_TEST_SUITE_END();

 public:
  // 4 GPUs. L runs on all 4, its base raised to 4 by the starvation bound, resized long ago;
  // W, first in the policy order, waits and needs 1 GPU. Without the mark W is admitted first
  // and L, needing 4 with 3 left, is stopped; marked, L keeps its 4 and W waits -- unless W is
  // starving, when W still starts and L is stopped. Both step 3 paths (exact and incremental).
  void a_late_running_job_is_not_stopped_by_an_arrival_that_is_not_late() {
    auto linear = [](int n) { return 0.9 * n + 0.1; };
    for_each_mark_and_starving(
        running(elastic(1e5, 4, 4, linear), 4, -1e4), elastic(200, 1, 1, linear), 4, 0.0,
        [](DoublingJob& l, bool on) { l.admitted_late = on; },
        [](bool marked, bool starving, const DoublingResult& r, const std::string& what) {
          if (marked && !starving) {
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, r.gpus[0]);
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 0, r.gpus[1]);
          } else {
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 1, r.gpus[1]);
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 0, r.gpus[0]);
            CPPUNIT_ASSERT_MESSAGE(what, contains(r.reasons[0], "stopped: needs 4 GPUs, only 3 left"));
          }
        });
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingLateTest);
