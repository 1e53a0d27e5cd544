// SPDX-License-Identifier: GPL-2.0-or-later
// Step 1's admission order and a running job the starvation bound admitted
// (DoublingJob::admitted_late): it goes before the waiting jobs that are not starving. Step 3
// does not shrink a running job within its request from a size where it finishes within its
// fair share to one where it would not (DoublingRound::shrinks_into_late()), unless that keeps a
// shorter job waiting, or one that waiting would make later than the shrink makes it.
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
  CPPUNIT_TEST(a_hold_that_makes_the_waiting_job_later_is_refused);
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

  // 4 GPUs. A runs on the 4 it asked for, resized long ago; B, first in the policy order,
  // waits. The plan shrinks A to 2 and starts B on 2. Marked (a fair deadline, on a numbered set
  // of types), A finishes in time at 4 and not at 2: held at 4 whatever the gain, and B waits --
  // unless B is shorter at its base than A at 4 (fair_hold_yields(); its own fair share is
  // as much at stake), when A shrinks anyway, starving or not. A deadline it misses at 4 already
  // holds nothing: the plan's gain decides, as without a deadline.
  //   Longer B: A scales poorly (4,000 iterations: 2,000 s at 4, 2,105 s at 2), B linearly (4,400
  //   iterations: 4,400 s on 1); the shrink saves 5,100 - 4,335 = 765 s. Deadlines 2,050 and 1,900.
  //   Shorter B: A linear (1,000 s at 4, 2,030 s at 2 with the restart), B 400 iterations (400 s
  //   on 1); the shrink saves 170 s. Deadlines 1,100 and 900.
  void a_job_on_track_is_not_shrunk_into_lateness() {
    auto linear = [](int n) { return static_cast<double>(n); };
    auto flat = [](int n) { return n >= 4 ? 2.0 : n >= 2 ? 1.9 : 1.0; };
    struct Case {
      const char* name;
      DoublingJob a, b;
      double on_time_s, late_s;
      bool b_shorter;
    };
    const Case cases[] = {
        {"longer B", running(elastic(4000, 1, 4, flat), 4, -1e4), elastic(4400, 1, 4, linear), 2050, 1900,
         false},
        {"shorter B", running(elastic(4000, 1, 4, linear), 4, -1e4), elastic(400, 1, 4, linear), 1100, 900,
         true},
    };
    for (const Case& c : cases) {
      DoublingJob a = c.a;
      a.requested = a.fair_max_gpus = 4;
      for (double deadline_s : {c.on_time_s, c.late_s})
        for_each_mark_and_starving(
            a, c.b, 4, 0.0,
            [deadline_s](DoublingJob& j, bool on) {
              if (!on) return;
              j.fair_time_s = deadline_s;
              j.type_set = 0;
            },
            [&c, deadline_s](bool marked, bool starving, const DoublingResult& r, const std::string& what) {
              const std::string w =
                  std::string(c.name) + " deadline " + std::to_string(deadline_s) + " " + what;
              (void)starving;  // a longer starving B does not refuse the hold (starves())
              if (marked && deadline_s == c.on_time_s && !c.b_shorter) {
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
  }

  // The "longer B" case above, B with a fair deadline too (later_than(), in fair_hold_yields()).
  // Held, A finishes at 4 in 2,000 s and B then runs 2,200 s on the 2 GPUs the plan gives it:
  // 4,200 s. Shrunk, A is 2,135 - 2,050 = 85 s past its deadline. B's deadline 4,400 s: waiting
  // costs it nothing, A is held. 4,000 s: waiting takes B 200 s past it, more than A's 85 s, and
  // A shrinks.
  void a_hold_that_makes_the_waiting_job_later_is_refused() {
    auto linear = [](int n) { return static_cast<double>(n); };
    auto flat = [](int n) { return n >= 4 ? 2.0 : n >= 2 ? 1.9 : 1.0; };
    DoublingJob a = running(elastic(4000, 1, 4, flat), 4, -1e4);
    a.requested = a.fair_max_gpus = 4;
    for (double b_deadline_s : {4400.0, 4000.0}) {
      DoublingJob b = elastic(4400, 1, 4, linear);
      b.fair_time_s = b_deadline_s;
      for_each_mark_and_starving(
          a, b, 4, 0.0,
          [](DoublingJob& j, bool on) {
            if (!on) return;
            j.fair_time_s = 2050;
            j.type_set = 0;
          },
          [b_deadline_s](bool marked, bool, const DoublingResult& r, const std::string& what) {
            const std::string w = "B's deadline " + std::to_string(b_deadline_s) + " " + what;
            if (marked && b_deadline_s > 4200) {
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 4, r.gpus[0]);
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 0, r.gpus[1]);
            } else {
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 2, r.gpus[0]);
              CPPUNIT_ASSERT_EQUAL_MESSAGE(w, 2, r.gpus[1]);
            }
          });
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingLateTest);
