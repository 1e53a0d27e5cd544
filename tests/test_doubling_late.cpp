// SPDX-License-Identifier: GPL-2.0-or-later
// Step 1's admission order and a running job the starvation bound admitted
// (DoublingJob::admitted_late): it goes before the waiting jobs that are not starving. Step 3
// does not shrink a running job within its request from a size where it finishes within its
// fair share to one where it would not (DoublingRound::shrinks_into_late()).
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
  CPPUNIT_TEST(a_job_on_track_is_not_shrunk_into_lateness);
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

  // 4 GPUs, linear speeds. A runs on the 4 it asked for (4,000 iterations: 1,000 s), resized long
  // ago; B, first in the policy order, arrives with 400 iterations. The plan shrinks A to 2 and
  // starts B on 2: 2,230 s of finish times against 2,400 with A held and B waiting, a gain of
  // 200 s over the 60 s a resize must gain. Marked (a fair deadline 1,100 s away, on a numbered
  // set of types), A finishes in time at 4 and not at 2 (2,030 s): held at 4 whatever the gain,
  // and B waits -- unless B is starving and shorter, when A shrinks anyway. A deadline it misses
  // at 4 already (900 s) holds nothing: the plan's gain decides, as without a deadline.
  void a_job_on_track_is_not_shrunk_into_lateness() {
    auto linear = [](int n) { return static_cast<double>(n); };
    DoublingJob a = running(elastic(4000, 1, 4, linear), 4, -1e4);
    a.requested = a.fair_max_gpus = 4;
    for (double deadline_s : {1100.0, 900.0})
      for_each_mark_and_starving(
          a, elastic(400, 1, 4, linear), 4, 0.0,
          [deadline_s](DoublingJob& j, bool on) {
            if (!on) return;
            j.fair_time_s = deadline_s;
            j.type_set = 0;
          },
          [deadline_s](bool marked, bool starving, const DoublingResult& r, const std::string& what) {
            const std::string w = "deadline " + std::to_string(deadline_s) + " " + what;
            if (marked && !starving && deadline_s > 1000) {
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 4, r.gpus[0]);
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 0, r.gpus[1]);
              CPPUNIT_ASSERT_MESSAGE(w, contains(r.reasons[0], "kept at 4: fewer GPUs would finish "
                                                               "it later than its fair share"));
            } else {
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 2, r.gpus[0]);
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 2, r.gpus[1]);
            }
          });
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingLateTest);
