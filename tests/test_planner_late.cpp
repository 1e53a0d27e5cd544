// SPDX-License-Identifier: GPL-2.0-or-later
// The size the starvation bound admits a late waiting job at (policy/planner_steps.h,
// late_admission_size()): the smallest doubling of its minimum that finishes it within
// late_admission_target() fair shares, not its whole request, so that a burst of late arrivals
// runs side by side instead of half of them waiting; and, where the late jobs of one type still
// ask for more than it has, halved down to what keeps them within the bound
// (fit_late_admissions()); at most late_share of the GPUs of its types (late_cap_of()).
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
  CPPUNIT_TEST(late_jobs_of_one_type_are_halved_to_fit_it);
  CPPUNIT_TEST(the_late_cap_is_a_share_of_the_jobs_types);
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
  // One whose 4 V100s finish it within the bound but not within the target (asked for 8).
  static std::string model_in_bound_at_4(const PlannerConfig& cfg) {
    ThroughputModel m(gavel());
    for (const std::string& model : gavel().models()) {
      if (!gavel().has(model, "v100")) continue;
      const double at8 = m.iters_per_s(model, "v100", 8), at4 = m.iters_per_s(model, "v100", 4);
      if (m.iters_per_s(model, "v100", 1) * cfg.late_factor < at8 &&
          at4 * late_admission_target(cfg) < at8 && at4 * cfg.late_factor >= at8)
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
    // A model that needs 8 for the target but 4 for the bound: admitted at 8 each, 128 GPUs of
    // V100s, so halved to 4 (fit_late_admissions()), and again all 16 run.
    const std::string wide = model_in_bound_at_4(cfg);
    CPPUNIT_ASSERT_MESSAGE("no Gavel model needs 8 V100s for the target and 4 for the bound",
                           !wide.empty());
    for (Job& j : s.jobs) j = job(j.id, wide, 1, 32, 1e5), j.requested_gpus = 8;
    Plan f = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(f, c);
    for (const JobPlan& jp : f.jobs) {
      CPPUNIT_ASSERT_EQUAL_MESSAGE(wide + " " + jp.job_id + ": " + jp.reason, 4, jp.gpus);
      CPPUNIT_ASSERT_MESSAGE(jp.reason, contains(jp.reason, "ask for more than its GPUs"));
    }
    // Twice the V100s, half of them held by jobs the planner does not own (Node::free_gpus 0):
    // the 128 asked fit the type's 128 GPUs but not the 64 the planner has, so again all at 4.
    Cluster held = c;
    for (int i = 8; i < 16; ++i) {
      held.nodes.push_back(Node{"v100-" + std::to_string(i), "v100", 8});
      held.nodes.back().inter_gbps = held.nodes.back().intra_gbps;
      held.nodes.back().free_gpus = 0;
    }
    s.cluster = held;
    Plan h = Planner(ThroughputModel(gavel()), cfg).plan(s);
    check_capacity(h, held);
    for (const JobPlan& jp : h.jobs)
      CPPUNIT_ASSERT_EQUAL_MESSAGE(wide + " " + jp.job_id + ": " + jp.reason, 4, jp.gpus);
  }

  // 16 waiting late jobs of V100s only, each admitted at 8 (128 GPUs), whose 4 still finish
  // within the bound; a running late V100 job on 8 and a waiting one of several types at 8,
  // neither halved; a late A100 job at 8, on a type with room. On 72 V100s, the lowest priority
  // halve first, one halving each per sweep, until the V100 jobs fit: the running job's 8 and
  // the waiting ones' 128 need 16 halvings to 64 + 8 = 72, so all 16 go to 4, and none to 2
  // though 2 is still within the bound for some. On 104, 8 halvings: the last 8 in order.
  // Jobs whose halves leave the bound keep their size.
  void late_jobs_of_one_type_are_halved_to_fit_it() {
    PlannerConfig cfg;
    const int waiting = 16, running = waiting, several = waiting + 1, a100 = waiting + 2;
    std::vector<JobView> views(waiting + 3);
    std::vector<int> order;
    for (size_t i = 0; i < views.size(); ++i) {
      views[i].types = {i == static_cast<size_t>(a100) ? "a100" : "v100"};
      if (static_cast<int>(i) == several) views[i].types.push_back("k80");
      views[i].best_type = views[i].types.front();
      order.push_back(static_cast<int>(i));
    }
    auto fresh = [&] {  // the even ones within the bound at 4, the odd ones at 2 too
      std::vector<LateAdmission> late(views.size(), LateAdmission{8, false, 0, false});
      for (int i = 0; i < waiting; ++i) late[i].smallest_in_bound = i % 2 ? 2 : 4;
      return late;
    };
    auto run = [&](int v100s, std::vector<LateAdmission>& late) {
      return fit_late_admissions(views, {{"v100", v100s}, {"a100", 8}}, order, late);
    };
    std::vector<LateAdmission> late = fresh();
    CPPUNIT_ASSERT_EQUAL(16, run(72, late));
    for (int i = 0; i < waiting; ++i) {
      CPPUNIT_ASSERT_EQUAL(4, late[i].gpus);
      CPPUNIT_ASSERT(late[i].fitted && !late[i].within_target);
      CPPUNIT_ASSERT_MESSAGE(late_admission_reason(cfg, late[i]),
                             contains(late_admission_reason(cfg, late[i]), "admitted at 4 GPUs") &&
                                 contains(late_admission_reason(cfg, late[i]), "ask for more than its GPUs"));
    }
    for (int i : {running, several, a100}) {
      CPPUNIT_ASSERT_EQUAL(8, late[i].gpus);
      CPPUNIT_ASSERT(!late[i].fitted);
    }
    late = fresh();
    CPPUNIT_ASSERT_EQUAL(8, run(104, late));
    for (int i = 0; i < waiting; ++i) CPPUNIT_ASSERT_EQUAL(i < 8 ? 8 : 4, late[i].gpus);
    // Room for all: nothing changes. No half within the bound: nothing changes either.
    late = fresh();
    CPPUNIT_ASSERT_EQUAL(0, run(136, late));
    for (int i = 0; i < waiting; ++i) late[i].smallest_in_bound = 0;
    CPPUNIT_ASSERT_EQUAL(0, run(72, late));
    for (int i = 0; i < waiting; ++i) CPPUNIT_ASSERT_EQUAL(8, late[i].gpus);
    // Where 2 fits and is within the bound, a second sweep goes there: 64 V100s need 128 + 8 -
    // 64 = 72 GPUs back, 64 from the first sweep, 8 from halving four jobs of bound 2 again.
    late = fresh();
    CPPUNIT_ASSERT_EQUAL(20, run(64, late));
    int at2 = 0;
    for (int i = 0; i < waiting; ++i) {
      CPPUNIT_ASSERT(late[i].gpus == 4 || (late[i].gpus == 2 && i % 2 == 1));
      at2 += late[i].gpus == 2;
    }
    CPPUNIT_ASSERT_EQUAL(4, at2);
  }

  // LateShare 1/8. 64 A100s on 4-GPU nodes and 64 T4s: a job of A100s only is capped at 8 (of
  // its 64), not 16 (of the cluster's 128); one of both types at 16. 16 T4s on 4-GPU nodes next
  // to 112 other GPUs: 4, one node, not 2. 16 A100s on one 16-GPU node: 16 would be its node,
  // but never above the cluster's cap of 16 -- with a smaller cluster cap, that cap. Without
  // power-of-two sizes, 6-GPU nodes give 6; with them, 4.
  void the_late_cap_is_a_share_of_the_jobs_types() {
    PlannerConfig cfg;
    const std::vector<std::string> a100 = {"a100"}, both = {"a100", "t4"}, t4 = {"t4"};
    const std::map<std::string, int> gpus = {{"a100", 64}, {"t4", 64}};
    const std::map<std::string, int> node = {{"a100", 4}, {"t4", 4}};
    CPPUNIT_ASSERT_EQUAL(8, late_cap_of(a100, gpus, node, 16, cfg));
    CPPUNIT_ASSERT_EQUAL(16, late_cap_of(both, gpus, node, 16, cfg));
    CPPUNIT_ASSERT_EQUAL(4, late_cap_of(t4, {{"t4", 16}, {"v100", 112}}, node, 16, cfg));
    CPPUNIT_ASSERT_EQUAL(16, late_cap_of(a100, {{"a100", 16}}, {{"a100", 16}}, 16, cfg));
    CPPUNIT_ASSERT_EQUAL(8, late_cap_of(a100, {{"a100", 16}}, {{"a100", 16}}, 8, cfg));
    CPPUNIT_ASSERT_EQUAL(4, late_cap_of(a100, {{"a100", 24}}, {{"a100", 6}}, 16, cfg));
    cfg.power_of_two = false;
    CPPUNIT_ASSERT_EQUAL(6, late_cap_of(a100, {{"a100", 24}}, {{"a100", 6}}, 16, cfg));

    // The planner: 64 V100s and 64 K80s on 4-GPU nodes, a late job asking for 64 that may run on
    // V100s only, of a model whose bound admits it at the whole cap either way: 8, not 16.
    cfg = PlannerConfig();
    ThroughputModel m(gavel());
    std::string model;
    for (const std::string& name : gavel().models()) {
      if (!gavel().has(name, "v100")) continue;
      Job j = job("j", name, 1, 64, 1e6);
      j.requested_gpus = 64;
      const double alone = j.remaining / m.iters_per_s(name, "v100", 64);
      if (late_admission_size(m, cfg, j, "v100", 1, 64, 16, 0, alone, true).gpus == 16 &&
          late_admission_size(m, cfg, j, "v100", 1, 64, 8, 0, alone, true).gpus == 8) {
        model = name;
        break;
      }
    }
    CPPUNIT_ASSERT_MESSAGE("no Gavel model is admitted at the whole cap on V100s", !model.empty());
    Snapshot snap;
    for (const char* t : {"v100", "k80"})
      for (int i = 0; i < 16; ++i) snap.cluster.nodes.push_back(Node{std::string(t) + std::to_string(i), t, 4});
    snap.jobs.push_back(job("late", model, 1, 64, 1e6));
    snap.jobs.back().requested_gpus = 64;
    snap.jobs.back().allowed_types = {"v100"};
    Plan p = Planner(ThroughputModel(gavel()), cfg).plan(snap);
    CPPUNIT_ASSERT_MESSAGE(p.jobs[0].reason, contains(p.jobs[0].reason, "admitted at 8 GPUs"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerLateTest);
