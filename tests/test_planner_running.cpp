// SPDX-License-Identifier: GPL-2.0-or-later
// What a plan may do to running jobs (PlannerConfig::preempt, Job::stoppable). Slurm's plugin
// stops and moves through ringrun's checkpoint and requeue: elastic jobs it may always resize and
// move; it stops or moves a job at its size only with Preempt=yes, and only a job under ringrun.
// Off, or for a job not stoppable, the planner plans within that.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <string>

#include "ringsched/planner.h"
#include "planner_fixtures.h"
#include "test_util.h"

using namespace ringsched;
using namespace planner_fixtures;

namespace {

// A fixed-size job of `gpus` GPUs.
Job fixed_job(const std::string& id, const std::string& model, int gpus, double remaining) {
  Job j = job(id, model, gpus, gpus, remaining);
  j.elastic = false;
  j.requested_gpus = gpus;
  return j;
}

// Steps 2d and 2e's setting: two 8-GPU V100 nodes, v0 and v1, at kSmallNow, each with a 4-GPU
// resnet50 job on half of it (the small jobs the steps move): elastic and resized long ago
// (Movable), resized 100 s ago (WithinInterval), fixed-size (Fixed), or as Movable but 60 s from
// their end (EndingSoon); planned with `j` under combined, or under plain doubling (Doubling,
// small jobs as Movable).
// OnTime: the small jobs have run at their request since they were submitted 1,000 s ago, with
// 1,000 s to go: on time against their time alone, which a move's restart would make late.
// OnTimeLong: the same with 19,000 s to go, so that the restart makes them late by 0.15%.
// StartedLate: as OnTime, but submitted 10 s before they started (0.5% of their time alone), as
// slurmctld starts a job a little after its submission: on time still. LateAlready: submitted
// 100 s before they started (5%): late already, they may move. LateByARestart: as OnTimeLong,
// but 30 s late (0.15% of their time alone), as an earlier move's restart leaves a job: late.
enum class Beside {
  Movable, WithinInterval, Fixed, Doubling, EndingSoon, OnTime, OnTimeLong, StartedLate,
  LateAlready, LateByARestart
};
constexpr double kSmallNow = 10000;

Plan plan_beside_small_jobs(const Job& j, Beside b) {
  Snapshot s;
  s.now_s = kSmallNow;
  s.cluster.nodes = {Node{"v0", "v100", 8}, Node{"v1", "v100", 8}};
  s.jobs = {j};
  const double per_s = ThroughputModel(gavel()).iters_per_s("resnet50-b64", "v100", 4);
  const double remaining = b == Beside::EndingSoon ? 60 * per_s : 1e6;
  for (const char* node : {"v0", "v1"}) {
    const std::string id = std::string("small-") + node;
    Job small = b == Beside::Fixed ? fixed_job(id, "resnet50-b64", 4, remaining)
                                   : job(id, "resnet50-b64", 4, 4, remaining);
    const bool on_time = b == Beside::OnTime || b == Beside::OnTimeLong ||
                         b == Beside::StartedLate || b == Beside::LateAlready ||
                         b == Beside::LateByARestart;
    if (on_time) {
      const bool long_job = b == Beside::OnTimeLong || b == Beside::LateByARestart;
      const double alone = long_job ? 20000 : 2000;
      small.remaining = (alone - 1000) * per_s;
      small.iterations = alone * per_s;
      small.submit_s = kSmallNow - 1000 - (b == Beside::StartedLate      ? 10
                                           : b == Beside::LateAlready    ? 100
                                           : b == Beside::LateByARestart ? 30
                                                                         : 0);
    }
    make_running(small, plan_on({Placement{node, "v100", 4}}),
                 b == Beside::WithinInterval ? kSmallNow - 100
                 : on_time                  ? kSmallNow - 1000
                                            : 0);
    s.jobs.push_back(small);
  }
  return plan_checked(s, b == Beside::Doubling ? Policy::Doubling : Policy::Combined);
}

// How many of plan_beside_small_jobs()'s small jobs the plan moves; each keeps 4 GPUs on one
// node and is resized exactly when it moves.
int small_jobs_moved(const Plan& p, const std::string& what) {
  int moved = 0;
  for (const char* node : {"v0", "v1"}) {
    const JobPlan& sp = *p.find(std::string("small-") + node);
    const std::string small = what + " / " + sp.reason;
    CPPUNIT_ASSERT_EQUAL_MESSAGE(small, 4, sp.gpus);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(small, size_t{1}, sp.placement.size());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(small, sp.placement.front().node != node, sp.resize);
    moved += sp.resize;
  }
  return moved;
}

}  // namespace

class PlannerRunningTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlannerRunningTest);
  CPPUNIT_TEST(runningJobsAreNotStoppedUnlessPreempt);
  CPPUNIT_TEST(fixedSizeJobIsNotMovedUnlessPreempt);
  CPPUNIT_TEST(fixedSizeJobWaitsForAFasterTypeAsLongAsItWouldLose);
  CPPUNIT_TEST(jobThatCanUseOneTypeGetsItBack);
  CPPUNIT_TEST(jobOnTwoTypesKeepsItsGpusOfEach);
  CPPUNIT_TEST(shortArrivalIsNotHeldBehindLongerJob);
  CPPUNIT_TEST(holdDoesNotStopAStarvingRunningJob);
  CPPUNIT_TEST(spreadJobWithItsOwnShapeIsGathered);
  CPPUNIT_TEST(intervalYieldsLentGpusToAStarvingArrival);
  CPPUNIT_TEST(lentGpusComeBackBeforeAJobWithinItsRequestStops);
  CPPUNIT_TEST(intervalYieldsLentGpusToAJobWithinItsRequest);
  CPPUNIT_TEST(tailGuardKeepsTheJobThatWouldFinishLast);
  CPPUNIT_TEST(farSlowerJobIsPlacedAgainWhileJobsWait);
  CPPUNIT_TEST(lateFloorIsKeptOnOneNode);
  CPPUNIT_TEST(spreadRingGathersBySwappingASmallJob);
  CPPUNIT_TEST(lateArrivalGrowsWholeBySwappingASmallJob);
  CPPUNIT_TEST(lateArrivalGetsALendersNodeBack);
  CPPUNIT_TEST(shortArrivalGetsTheFastTypeOverALongRunningJob);
  CPPUNIT_TEST(jobPlacedAgainKeepsItsCountedSize);
  CPPUNIT_TEST_SUITE_END();

 public:
  // A long job holds all 8 V100s; six short 4-GPU jobs arrive, each of which the order puts
  // first. Combined and doubling stop the long job only when they may preempt it.
  void runningJobsAreNotStoppedUnlessPreempt() {
    for (bool elastic : {false, true})
      for (Policy pol : {Policy::Combined, Policy::Doubling})
        for (int mode : {0, 1, 2}) {  // preempt off; on; on, but the long job is not stoppable
          const bool preempt = mode == 1;
          Snapshot s;
          s.cluster.nodes = {Node{"v100-1", "v100", 4}, Node{"v100-2", "v100", 4}};
          s.now_s = 1000;
          Job l = elastic ? job("long", "resnet50-b64", 8, 8, 1e7) : fixed_job("long", "resnet50-b64", 8, 1e7);
          make_running(l, plan_on({Placement{"v100-1", "v100", 4}, Placement{"v100-2", "v100", 4}}), 0);
          l.stoppable = mode != 2;
          s.jobs = {l};
          for (int k = 0; k < 6; ++k) s.jobs.push_back(fixed_job("short" + std::to_string(k), "resnet50-b64", 4, 100));
          Plan p = plan_checked(s, pol, mode != 0);
          const JobPlan* lp = p.find("long");
          const std::string what = std::string(policy_name(pol)) + (elastic ? " elastic" : " fixed") + " mode " +
                                   std::to_string(mode) + ": " + lp->reason;
          CPPUNIT_ASSERT_MESSAGE(what, p.find("short0")->order < lp->order);
          if (preempt) {
            CPPUNIT_ASSERT_MESSAGE(what, !lp->runs);
            CPPUNIT_ASSERT_MESSAGE(what, p.find("short0")->runs);
          } else {
            CPPUNIT_ASSERT_MESSAGE(what, lp->runs && !lp->resize);
            CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lp->gpus);
            for (int k = 0; k < 6; ++k) CPPUNIT_ASSERT(!p.jobs[1 + k].runs);
          }
        }
  }

  // A fixed-size 1-GPU job on a K80 with the V100s idle: step 2c moves it only when the plan
  // may move it; an elastic 1-1 job (ringrun requeues it) moves either way.
  void fixedSizeJobIsNotMovedUnlessPreempt() {
    const std::string model = "resnet50-b64";
    const std::string best = fastest(model, 1);
    CPPUNIT_ASSERT(best != "k80");
    for (bool elastic : {false, true})
      for (int mode : {0, 1, 2}) {  // preempt off; on; on, but the job is not stoppable
        Snapshot s;
        s.cluster = small_cluster();
        s.now_s = 10000;
        Job j = elastic ? job("1", model, 1, 1, 1e6) : fixed_job("1", model, 1, 1e6);
        make_running(j, plan_on({Placement{"k80-1", "k80", 1}}), 0);
        j.stoppable = mode != 2;
        s.jobs = {j};
        const JobPlan jp = plan_checked(s, Policy::Combined, mode != 0).jobs[0];
        const bool moves = elastic || mode == 1;
        const std::string what = std::string(elastic ? "elastic" : "fixed") + " mode " + std::to_string(mode) +
                                 ": " + jp.reason;
        CPPUNIT_ASSERT_MESSAGE(what, jp.runs);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, moves, jp.resize);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string(moves ? best : "k80"), jp.placement.front().gpu_type);
      }
  }

  // Only K80s are free; the faster types are held by long fixed-size jobs. A waiting fixed-size
  // 1-GPU job starts on a K80 only once it has waited as long as the K80 would cost it over its
  // fastest type (ski rental); with preempt (it could be moved later) it starts at once.
  void fixedSizeJobWaitsForAFasterTypeAsLongAsItWouldLose() {
    const std::string model = "resnet50-b64";
    const std::string best = fastest(model, 1);
    ThroughputModel m(gavel());
    const double remaining = 1e5;
    const double loss_s = remaining / m.iters_per_s(model, "k80", 1) - remaining / m.iters_per_s(model, best, 1);
    CPPUNIT_ASSERT(loss_s > 3600);
    struct Case {
      double waited_s;
      bool preempt, starts;
      bool stoppable = true;  // the waiting job's, once it runs
    };
    for (const Case& c : {Case{0, false, false}, Case{loss_s / 2, false, false}, Case{loss_s * 1.01, false, true},
                          Case{0, true, true}, Case{0, true, false, false}}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 1e6;
      for (const char* node : {"v100-1", "v100-2", "p100-1", "p100-2"}) {
        Job h = fixed_job(std::string("h-") + node, model, 4, 1e9);
        make_running(h, plan_on({Placement{node, std::string(node, 4), 4}}), 0);
        s.jobs.push_back(h);
      }
      Job w = fixed_job("w", model, 1, remaining);
      w.submit_s = s.now_s - c.waited_s;
      w.stoppable = c.stoppable;
      s.jobs.push_back(w);
      const JobPlan jp = *plan_checked(s, Policy::Combined, c.preempt).find("w");
      const std::string what = "waited " + std::to_string(c.waited_s) + " s of " + std::to_string(loss_s) +
                               (c.preempt ? " preempt: " : ": ") + jp.reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.starts, jp.runs);
      if (c.starts) CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string("k80"), jp.placement.front().gpu_type);
      else CPPUNIT_ASSERT_MESSAGE(what, contains(jp.reason, "loses no more than it has waited"));
    }
  }

  // A long elastic job that may use V100s or K80s holds all 8 V100s; a short 1-GPU job that may
  // use only V100s arrives. The count round plans the V100s and K80s as one pool of 16, where
  // both fit; the long job gives V100s back (it may run on fewer) so that the short one starts,
  // unless it may not be resized (within its minimum interval and 2 s from the end of its grace
  // after its restart, or not stoppable at its base).
  void jobThatCanUseOneTypeGetsItBack() {
    for (int mode : {0, 1, 2, 3}) {  // 0: preempt; 1: no preempt; 2: within the interval; 3: base 8, no preempt
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 10000;
      Job l = job("long", "resnet50-b64", mode == 3 ? 8 : 1, 8, 1e7);
      l.allowed_types = {"v100", "k80"};
      make_running(l, plan_on({Placement{"v100-1", "v100", 4}, Placement{"v100-2", "v100", 4}}),
                   mode == 2 ? s.now_s - 58 : 0);
      Job w = job("short", "resnet50-b64", 1, 1, 2000);
      w.allowed_types = {"v100"};
      w.submit_s = s.now_s;
      s.jobs = {l, w};
      Plan p = plan_checked(s, Policy::Combined, mode != 1 && mode != 3);
      const JobPlan *lp = p.find("long"), *wp = p.find("short");
      const std::string what = "mode " + std::to_string(mode) + ": long: " + lp->reason + "; short: " + wp->reason;
      CPPUNIT_ASSERT_MESSAGE(what, lp->runs);
      if (mode >= 2) {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lp->gpus);
        CPPUNIT_ASSERT_MESSAGE(what, !wp->runs);
        continue;
      }
      CPPUNIT_ASSERT_MESSAGE(what, wp->runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string("v100"), wp->placement.front().gpu_type);
      CPPUNIT_ASSERT_MESSAGE(what, lp->gpus < 8);
      CPPUNIT_ASSERT_MESSAGE(what, contains(lp->reason, "counted again with the jobs that can run only on v100"));
    }
  }

  // The V100s are full: a fixed-size 4-GPU job that may use V100s or K80s runs on 3 V100s and 1
  // K80, a fixed 1-GPU V100-only job on the fourth V100 of that node, and an elastic V100-only job
  // that asked for 1 holds the other node's 4. A short 1-GPU V100-only job arrives. The jobs that
  // can run only on V100s count 6 GPUs, which the 8 V100s would hold, but the mixed job keeps 3
  // of them: the V100-only jobs are counted again on 5, and the elastic one gives GPUs back.
  // Counted on 8, the lender kept its 4 and the arrival waited ("no room on the types it would
  // start on"), round after round.
  void jobOnTwoTypesKeepsItsGpusOfEach() {
    Snapshot s;
    s.cluster = small_cluster();
    s.now_s = 10000;
    Job mixed = fixed_job("mixed", "resnet50-b64", 4, 1e7);
    mixed.allowed_types = {"v100", "k80"};
    make_running(mixed, plan_on({Placement{"v100-1", "v100", 3}, Placement{"k80-1", "k80", 1}}), 0);
    Job one = fixed_job("one", "resnet50-b64", 1, 1e7);
    one.allowed_types = {"v100"};
    make_running(one, plan_on({Placement{"v100-1", "v100", 1}}), 0);
    Job lender = job("lender", "resnet50-b64", 1, 4, 1e7);
    lender.requested_gpus = 1;
    lender.allowed_types = {"v100"};
    make_running(lender, plan_on({Placement{"v100-2", "v100", 4}}), 0);
    Job w = fixed_job("short", "resnet50-b64", 1, 2000);
    w.allowed_types = {"v100"};
    w.submit_s = s.now_s;
    s.jobs = {mixed, one, lender, w};
    Plan p = plan_checked(s, Policy::Combined, false);
    const JobPlan *lp = p.find("lender"), *wp = p.find("short");
    const std::string what = "lender: " + lp->reason + "; short: " + wp->reason;
    CPPUNIT_ASSERT_MESSAGE(what, wp->runs);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string("v100"), wp->placement.front().gpu_type);
    CPPUNIT_ASSERT_MESSAGE(what, lp->runs && lp->gpus < 4);
    CPPUNIT_ASSERT_MESSAGE(what, contains(lp->reason, "counted again with the jobs that can run "
                                                      "only on v100"));
    for (const char* id : {"mixed", "one"})
      CPPUNIT_ASSERT_MESSAGE(what, p.find(id)->runs && !p.find(id)->resize);
  }

  // A 1-GPU job arrives on a full node: a long elastic job holds 2 GPUs, two fixed-size ones the
  // others, one of which ends in 20 s. Shrinking the long job costs the sum of finish times more
  // than the new job's wait, so the gain rule would hold it at 2. A job of 5 minutes, which a
  // hold until the long job's next resize chance would make late by more than half its time
  // alone, is not held behind it: it starts now. One of 3 hours waits the 20 s. Within the
  // long job's minimum interval and its grace after its restart (60 s), the short one waits too
  // when 2 s of the grace are left, but not when 50 s are, more than 5% of its time alone.
  void shortArrivalIsNotHeldBehindLongerJob() {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    const double per_s = m.iters_per_s(model, "v100", 1);
    struct Case {
      double alone_s;
      double since;  // since the long job's restart; 0: long ago
      bool starts;
    };
    for (const Case& c : {Case{300, 0, true}, Case{300, 58, false}, Case{300, 10, true},
                          Case{3 * 3600, 0, false}}) {
      Snapshot s;
      s.cluster.nodes = {Node{"v100-1", "v100", 4}};
      s.now_s = 10000;
      Job l = job("long", model, 1, 2, 1e7);
      make_running(l, plan_on({Placement{"v100-1", "v100", 2}}), c.since > 0 ? s.now_s - c.since : 0);
      Job e = fixed_job("ends", model, 1, 20 * per_s);
      make_running(e, plan_on({Placement{"v100-1", "v100", 1}}), 0);
      Job d = fixed_job("other", model, 1, 1e7);
      make_running(d, plan_on({Placement{"v100-1", "v100", 1}}), 0);
      Job w = fixed_job("new", model, 1, c.alone_s * per_s);
      w.submit_s = s.now_s;
      s.jobs = {l, e, d, w};
      Plan p = plan_checked(s, Policy::Combined, false);
      const JobPlan *lp = p.find("long"), *wp = p.find("new");
      const std::string what = std::to_string(c.alone_s) + " s, restarted " + std::to_string(c.since) + " s ago" +
                               ": long: " + lp->reason + "; new: " + wp->reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.starts, wp->runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.starts ? 1 : 2, lp->gpus);
    }
  }

  // A hold that would stop a starving running job is refused, as one that keeps a starving job
  // waiting is. On a 4-GPU node an elastic job of days holds 2 GPUs and a fixed-size 2-GPU job
  // the others; the latter waited 5,000 s before it started and has 1,000 s left, so it is late.
  // A 100 s job arrives. Holding the long job at 2 is what the sum of finish times prefers, and
  // it would stop the late job (which, waiting, the next plan would start again at once); the
  // long job shrinks to 1 instead. (Before, running jobs never counted as starving.)
  void holdDoesNotStopAStarvingRunningJob() {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    const double per_s_2 = m.iters_per_s(model, "v100", 2);
    Snapshot s;
    s.cluster.nodes = {Node{"v100-1", "v100", 4}};
    s.now_s = 10000;
    Job l = job("long", model, 1, 4, 1e7);
    make_running(l, plan_on({Placement{"v100-1", "v100", 2}}), 0);
    Job late = fixed_job("late", model, 2, 1000 * per_s_2);
    late.iterations = 3000 * per_s_2;
    late.submit_s = s.now_s - 5000;
    make_running(late, plan_on({Placement{"v100-1", "v100", 2}}), 0);
    Job x = fixed_job("new", model, 1, 100 * m.iters_per_s(model, "v100", 1));
    x.submit_s = s.now_s;
    s.jobs = {l, late, x};
    Plan p = plan_checked(s, Policy::Combined, true);
    const JobPlan *lp = p.find("long"), *tp = p.find("late"), *xp = p.find("new");
    const std::string what = "long: " + lp->reason + "; late: " + tp->reason + "; new: " + xp->reason;
    CPPUNIT_ASSERT_MESSAGE(what, xp->runs);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 2, tp->gpus);
    CPPUNIT_ASSERT_MESSAGE(what, !tp->resize);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 1, lp->gpus);
  }

  // A running job that the placement gives its own count and type stays on its GPUs, and is
  // gathered onto fewer nodes when that pays. A resnet50 job runs on 4 V100s spread 2 + 2 over
  // two 4-GPU nodes, alone on the cluster. Its count asks for 8 (Gavel's 8-GPU point is faster
  // than its 4), the placement keeps 4 (8 over two nodes is slower than 4 on one, with the
  // locality charge), and it moves onto one node: its ring there is about 4x faster. Before,
  // the same shape on other nodes read as "no change", and it kept its spread ring for good.
  void spreadJobWithItsOwnShapeIsGathered() {
    const std::string model = "resnet50-b64";
    Snapshot s;
    s.cluster.nodes = {Node{"v100-0", "v100", 4}, Node{"v100-1", "v100", 4}};
    s.now_s = 10000;
    Job j = job("spread", model, 1, 8, 1e7);
    j.requested_gpus = 4;
    make_running(j, plan_on({Placement{"v100-0", "v100", 2}, Placement{"v100-1", "v100", 2}}), 0);
    s.jobs = {j};
    Plan p = plan_checked(s, Policy::Combined, true);
    const JobPlan& jp = *p.find("spread");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(jp.reason, 4, jp.gpus);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(jp.reason, size_t{1}, jp.placement.size());
    CPPUNIT_ASSERT_MESSAGE(jp.reason, jp.resize);
    CPPUNIT_ASSERT_MESSAGE(jp.reason, contains(jp.reason, "moves from 2 nodes to 1"));
  }

  // A job that asked for 1 GPU grew onto all 4 V100s `since` seconds ago, within the minimum
  // interval (300 s). A 1-GPU job of 100 s arrives: a hold of the interval would make it late
  // (starving). Past the grace after a restart, the grown job gives back GPUs down to no less
  // than its request, and never grows; within the grace, at its request, or when the arrival
  // is long (not starving), the interval holds it and the arrival waits. Within the grace, the
  // lender yields too when the rest of the grace is more than 5% of the arrival's time alone
  // (10 s since its restart: 50 s of 100); with 2 s left the arrival waits, and the plan names
  // the grace's end (Plan::wake_s: the restart at now - since, plus 2 x the 30 s restart cost),
  // when the lender yields though no job arrives or ends; otherwise no wake.
  void intervalYieldsLentGpusToAStarvingArrival() {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    struct Case {
      double since;
      int requested;
      double arrival_s;  // the arrival's run time alone
      bool yields;
      bool wakes;        // the plan names the grace's end
    };
    for (const Case& c : {Case{200, 1, 100, true, false}, Case{10, 1, 100, true, false},
                          Case{58, 1, 100, false, true},
                          Case{200, 4, 100, false, false}, Case{200, 1, 1e6, false, false}}) {
      Snapshot s;
      s.cluster.nodes = {Node{"v100-1", "v100", 4}};
      s.now_s = 10000;
      Job grown = job("grown", model, 1, 4, 1e7);
      grown.requested_gpus = c.requested;
      make_running(grown, plan_on({Placement{"v100-1", "v100", 4}}), s.now_s - c.since);
      Job x = fixed_job("new", model, 1, c.arrival_s * m.iters_per_s(model, "v100", 1));
      x.submit_s = s.now_s;
      s.jobs = {grown, x};
      Plan p = plan_checked(s, Policy::Combined, true);
      const JobPlan *gp = p.find("grown"), *xp = p.find("new");
      const std::string what = "since " + std::to_string(c.since) + " requested " +
                               std::to_string(c.requested) + " arrival " +
                               std::to_string(c.arrival_s) + " s; grown: " + gp->reason +
                               "; new: " + xp->reason;
      CPPUNIT_ASSERT_MESSAGE(what, gp->runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.yields, xp->runs);
      if (c.yields) {
        CPPUNIT_ASSERT_MESSAGE(what, gp->gpus >= c.requested && gp->gpus < 4);
      } else {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, gp->gpus);
        CPPUNIT_ASSERT_MESSAGE(what, !gp->resize);
        CPPUNIT_ASSERT_MESSAGE(what, contains(gp->reason, "minimum interval"));
      }
      CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(what, c.wakes ? s.now_s - c.since + 60 : 0.0, p.wake_s, 1e-9);
    }
  }

  // 12 V100s, all busy: "lender" (resnet50-b64, asked for `requested`, days of work left) runs
  // on 8 of them, resized `since` seconds ago; "owner" runs on the 4 it asked for (an hour left);
  // a 4-GPU job of 1,000 s arrives.
  static Snapshot lender_owner_arrival(double since, int requested) {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    const double v1 = m.iters_per_s(model, "v100", 1), v4 = m.iters_per_s(model, "v100", 4);
    Snapshot s;
    s.cluster.nodes = {Node{"v100-1", "v100", 4}, Node{"v100-2", "v100", 4},
                       Node{"v100-3", "v100", 4}};
    s.now_s = 10000;
    Job lender = job("lender", model, 1, 8, 3 * 86400 * v1);
    lender.requested_gpus = requested;
    lender.iterations = 2 * lender.remaining;
    lender.submit_s = s.now_s - 3600;
    make_running(lender, plan_on({Placement{"v100-1", "v100", 4}, Placement{"v100-2", "v100", 4}}),
                 s.now_s - since);
    Job owner = job("owner", model, 4, 4, 3600 * v4);
    owner.iterations = 2 * owner.remaining;
    owner.submit_s = s.now_s - 1800;
    make_running(owner, plan_on({Placement{"v100-3", "v100", 4}}), s.now_s - 3000);
    Job arrival = fixed_job("arrival", model, 4, 1000 * v4);
    arrival.submit_s = s.now_s;
    s.jobs = {lender, owner, arrival};
    return s;
  }

  // lender_owner_arrival(), the lender asked for 1 GPU and was resized long ago. The arrival is
  // not starving (it does not lose half its fair share by waiting for the interval). The plan's sum of
  // finish times favours holding the lender at 8 and stopping the owner for the arrival; under
  // combined the lent GPUs come back instead (DoublingJob::type_set, one set of types here).
  // Doubling, which lends nothing back, stops the owner.
  void lentGpusComeBackBeforeAJobWithinItsRequestStops() {
    for (Policy policy : {Policy::Combined, Policy::Doubling}) {
      Plan p = plan_checked(lender_owner_arrival(3000, 1), policy, true);
      const JobPlan *lp = p.find("lender"), *op = p.find("owner"), *ap = p.find("arrival");
      const std::string what = std::string(policy_name(policy)) + ": lender: " + lp->reason +
                               "; owner: " + op->reason + "; arrival: " + ap->reason;
      CPPUNIT_ASSERT_MESSAGE(what, ap->runs);
      if (policy == Policy::Combined) {
        CPPUNIT_ASSERT_MESSAGE(what, op->runs);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, op->gpus);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lp->gpus);
        CPPUNIT_ASSERT_MESSAGE(what, contains(lp->reason, "come back before a running job"));
      } else {
        CPPUNIT_ASSERT_MESSAGE(what, !op->runs);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lp->gpus);
      }
    }
  }

  // lender_owner_arrival(), the lender resized within the 300 s interval; the arrival (not
  // starving) comes before the owner in the order. Lent GPUs come back within
  // the interval, even within the grace after the lender's restart, rather than the owner
  // stopping; a lender at its own request is held by the interval and the owner stops.
  void intervalYieldsLentGpusToAJobWithinItsRequest() {
    for (double since : {200.0, 10.0})
      for (int requested : {1, 8}) {
        Plan p = plan_checked(lender_owner_arrival(since, requested), Policy::Combined, true);
        const JobPlan *lp = p.find("lender"), *op = p.find("owner"), *ap = p.find("arrival");
        const std::string what = "since " + std::to_string(since) + " s, requested " +
                                 std::to_string(requested) + ": lender " + lp->reason +
                                 "; owner " + op->reason + "; arrival: " + ap->reason;
        CPPUNIT_ASSERT_MESSAGE(what, ap->runs);
        if (requested == 1) {
          CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lp->gpus);
          CPPUNIT_ASSERT_MESSAGE(what, op->runs && !op->resize);
          CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, op->gpus);
        } else {
          CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lp->gpus);
          CPPUNIT_ASSERT_MESSAGE(what, contains(lp->reason, "minimum interval"));
          CPPUNIT_ASSERT_MESSAGE(what, !op->runs);
        }
      }
  }

  // 32 V100s in nodes of 4, all busy: "long" (asked for `requested`, days of work left) and
  // seven jobs of an hour or two, each on the 4 it asked for; a short 4-GPU job arrives, first
  // in the order. Without the tail guard the shortest-first admission stops "long", the last in
  // the order; with it (combined, PlannerConfig::tail_guard) "long", within its request and on
  // at most the starvation bound's 4 GPUs (1/8 of 32), is kept and the last of the others stops
  // instead. Above its request (asked for 2, runs on 4) it is not guarded: it gives GPUs back;
  // nor where the others may not be stopped: the guard would only keep the arrival waiting.
  void tailGuardKeepsTheJobThatWouldFinishLast() {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    const double v4 = m.iters_per_s(model, "v100", 4);
    struct Case {
      bool guard;
      int requested;
      bool long_runs;
      bool others_stoppable = true;
    };
    for (const Case& c : {Case{true, 4, true}, Case{false, 4, false}, Case{true, 2, false},
                          Case{true, 4, false, false}}) {
      Snapshot s;
      for (int k = 0; k < 8; ++k) s.cluster.nodes.push_back(Node{"v100-" + std::to_string(k), "v100", 4});
      s.now_s = 100000;
      Job l = job("long", model, 1, 8, 3 * 86400 * v4);
      l.requested_gpus = c.requested;
      l.submit_s = s.now_s - 7200;
      make_running(l, plan_on({Placement{"v100-0", "v100", 4}}), s.now_s - 7200);
      s.jobs = {l};
      for (int k = 1; k < 8; ++k) {
        Job o = job("other" + std::to_string(k), model, 4, 4, (3600 + 600 * k) * v4);
        o.submit_s = s.now_s - 3600;
        make_running(o, plan_on({Placement{"v100-" + std::to_string(k), "v100", 4}}), s.now_s - 3600);
        o.stoppable = c.others_stoppable;
        s.jobs.push_back(o);
      }
      Job a = fixed_job("arrival", model, 4, 600 * v4);
      a.submit_s = s.now_s;
      s.jobs.push_back(a);
      PlannerConfig cfg;
      cfg.preempt = true;
      cfg.tail_guard = c.guard;
      Plan p = Planner(ThroughputModel(gavel()), cfg).plan(s);
      check_capacity(p, s.cluster);
      const JobPlan* lp = p.find("long");
      const std::string what = std::string(c.guard ? "guard" : "no guard") + ", requested " +
                               std::to_string(c.requested) + (c.others_stoppable ? "" : ", others fixed in place") +
                               ": long " + lp->reason + "; other7 " +
                               p.find("other7")->reason;
      CPPUNIT_ASSERT_MESSAGE(what, p.find("arrival")->runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.long_runs, lp->runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.long_runs, contains(lp->reason, "tail guard"));
      if (c.long_runs) {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lp->gpus);
        CPPUNIT_ASSERT_MESSAGE(what, !p.find("other7")->runs);
      }
    }
  }

  // PlannerConfig::replace_slower. A 1-GPU resnet50 runs on a K80, 7.1x slower than on a V100,
  // while an 8-GPU job of K80s only waits (the first job holds one of the 8: without preempt it
  // is not stopped for it), so step 2c moves nothing. Placed again (factor 4, the default), it
  // moves to the idle V100s; it stays on its K80 where the factor is above 7.1, off, or within
  // its interval.
  void farSlowerJobIsPlacedAgainWhileJobsWait() {
    const std::string model = "resnet50-b64";
    const std::string best = fastest(model, 1);
    ThroughputModel m(gavel());
    const double factor = m.iters_per_s(model, best, 1) / m.iters_per_s(model, "k80", 1);
    CPPUNIT_ASSERT(factor > 4 && factor < 8);
    struct Case {
      double replace_slower, last_resize_s;
      bool moves;
    };
    for (const Case& c : {Case{0, 0, false}, Case{8, 0, false}, Case{4, 9900, false}, Case{4, 0, true}}) {
      Snapshot s;
      s.cluster = small_cluster();
      s.now_s = 10000;
      Job j = job("slow", model, 1, 1, 1e6);
      make_running(j, plan_on({Placement{"k80-1", "k80", 1}}), c.last_resize_s);
      Job w = fixed_job("w", model, 8, 1e6);
      w.allowed_types = {"k80"};
      s.jobs = {j, w};
      PlannerConfig cfg;
      cfg.preempt = false;
      cfg.replace_slower = c.replace_slower;
      const Plan p = plan_checked(s, cfg);
      const JobPlan& jp = *p.find("slow");
      const std::string what = "factor " + std::to_string(c.replace_slower) + ", resized at " +
                               std::to_string(c.last_resize_s) + ": " + jp.reason + "; w " +
                               p.find("w")->reason;
      CPPUNIT_ASSERT_MESSAGE(what, jp.runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c.moves, jp.resize);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string(c.moves ? best : "k80"), jp.placement.front().gpu_type);
      CPPUNIT_ASSERT_MESSAGE(what, !p.find("w")->runs);  // counted before the move: next pass
      // Placed again, whatever came of it, the reason says why.
      const bool placed_again = c.replace_slower > 0 && c.replace_slower <= factor && c.last_resize_s == 0;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, placed_again, contains(jp.reason, "placed again with the others: k80 runs it"));
    }
    // Below 1 every running job would count as slower than its fastest type.
    PlannerConfig bad;
    bad.replace_slower = 0.5;
    CPPUNIT_ASSERT_THROW(Planner(m, bad), InputError);
  }

  // PlannerConfig::fair_placement, through the planner (the placement's own test is
  // test_placement's fairness_floor_is_not_spread_below_its_share). A late recommendation-b8192
  // job that asked for 2 V100s holds a whole node; a recommendation-b4096 job that asked for 1
  // grows 1 -> 4, and the two other nodes have one usable GPU each. The late job's floor of 2
  // (the starvation bound) went to those two single GPUs, and the whole node to the grower; with
  // the charge (2, the default) the floor stays on one node.
  void lateFloorIsKeptOnOneNode() {
    for (double weight : {0.0, 2.0}) {
      Snapshot s;
      s.now_s = 20000;
      s.cluster.nodes = {Node{"v0", "v100", 4}, Node{"v1", "v100", 4}, Node{"v2", "v100", 4}};
      s.cluster.nodes[1].free_gpus = s.cluster.nodes[2].free_gpus = 1;
      Job late = job("late", "recommendation-b8192", 1, 4, 21100);
      late.requested_gpus = 2;
      make_running(late, plan_on({Placement{"v0", "v100", 4}}), 10000);
      Job grow = job("grow", "recommendation-b4096", 1, 4, 119000);
      grow.submit_s = 19000;
      make_running(grow, plan_on({Placement{"v1", "v100", 1}}), 10000);
      s.jobs = {late, grow};
      PlannerConfig cfg;
      cfg.fair_placement = weight;
      // The charge alone: counted within the horizon, the grower's gain from the whole node is
      // small enough that the floor stays on one node without it too.
      cfg.placement_horizon = false;
      const Plan p = plan_checked(s, cfg);
      const JobPlan& lp = *p.find("late");
      const std::string what = "weight " + std::to_string(weight) + ": " + lp.reason;
      CPPUNIT_ASSERT_MESSAGE(what, contains(lp.reason, "shrinks 4->2"));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 2, lp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, weight > 0 ? size_t{1} : size_t{2}, lp.placement.size());
    }
    PlannerConfig bad;
    bad.fair_placement = -1;
    CPPUNIT_ASSERT_THROW(Planner(ThroughputModel(gavel()), bad), InputError);
    bad.fair_placement = std::nan("");
    CPPUNIT_ASSERT_THROW(Planner(ThroughputModel(gavel()), bad), InputError);
  }

  // Step 2d (planner_gather.h): a transformer-b16 ring runs 4 + 4 over two full 8-GPU V100
  // nodes, each node's other 4 GPUs held by a 4-GPU resnet50 job. No GPU is free, so 2b cannot
  // gather it; swapping its 4 on one node for the resnet50 on the other gathers it on one node
  // for two restarts. Not where the resnet50 jobs are within their minimum interval, may not be
  // moved (fixed size, no preemption), or under plain doubling; nor where they end in 60 s: the
  // ring gathers then without moving them, and what it gains until then does not pay their
  // restarts. Nor where they are on time against their time alone, which the restart would
  // make them miss (OnTime: 30 s of 2,000; OnTimeLong: 30 s of 20,000, which a tolerance of 1%
  // of the time alone let move), also where they started 10 s after their submission
  // (StartedLate, which a tolerance of rounding only let move); but where they are late by 5%
  // already (LateAlready) or by a restart's 30 s (LateByARestart, which a tolerance of 1% for
  // the start kept), they move as Movable.
  void spreadRingGathersBySwappingASmallJob() {
    Job ring = job("ring", "transformer-b16", 8, 8, 1e6);
    ring.requested_gpus = 8;
    make_running(ring, plan_on({Placement{"v0", "v100", 4}, Placement{"v1", "v100", 4}}), 0);
    for (Beside c : {Beside::Movable, Beside::WithinInterval, Beside::Fixed, Beside::Doubling,
                     Beside::EndingSoon, Beside::OnTime, Beside::OnTimeLong, Beside::StartedLate,
                     Beside::LateAlready, Beside::LateByARestart}) {
      const Plan p = plan_beside_small_jobs(ring, c);
      const JobPlan& rp = *p.find("ring");
      const std::string what = "case " + std::to_string(static_cast<int>(c)) + ": " + rp.reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, rp.gpus);
      const int moved = small_jobs_moved(p, what);
      if (c == Beside::Movable || c == Beside::LateAlready || c == Beside::LateByARestart) {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{1}, rp.placement.size());
        CPPUNIT_ASSERT_MESSAGE(what, rp.resize && contains(rp.reason, "gathers from 2 nodes"));
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 1, moved);
      } else {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{2}, rp.placement.size());
        CPPUNIT_ASSERT_MESSAGE(what, !rp.resize);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 0, moved);
      }
    }
  }
  // Step 2e (planner_gather.h): two 8-GPU V100 nodes, each with a 4-GPU job on half of it; a
  // recommendation job arrives that is admitted at 8 (late at less). No node has 8 free, so its
  // floor is capped at 4 and the placement starts it on 4 beside one of them; moving that job to
  // the other node's 4 free GPUs lets it run whole on one node. Not where the jobs beside it are
  // within their minimum interval or may not be moved (fixed size, no preemption); plain doubling
  // spreads it instead.
  void lateArrivalGrowsWholeBySwappingASmallJob() {
    Job late = job("late", "recommendation-b4096", 1, 8, 4000);
    late.requested_gpus = 8;
    late.submit_s = kSmallNow;
    for (Beside c : {Beside::Movable, Beside::WithinInterval, Beside::Fixed, Beside::Doubling}) {
      const Plan p = plan_beside_small_jobs(late, c);
      const JobPlan& lp = *p.find("late");
      const std::string what = "case " + std::to_string(static_cast<int>(c)) + ": " + lp.reason;
      CPPUNIT_ASSERT_MESSAGE(what, lp.runs);
      // Plain doubling spreads it over the two nodes' free GPUs.
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c == Beside::Doubling ? size_t{2} : size_t{1},
                                   lp.placement.size());
      const int moved = small_jobs_moved(p, what);
      const bool grows = c == Beside::Movable || c == Beside::Doubling;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, grows ? 8 : 4, lp.gpus);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c == Beside::Movable ? 1 : 0, moved);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, c == Beside::Movable,
                                   contains(lp.reason, "grows 4->8 on"));
    }
  }
  // Step 2e's recall (planner_gather.h): eight 8-GPU V100 nodes, four full of 8-GPU jobs within
  // their interval, three with a 4-GPU job within its interval and a job that asked for 1 on 4,
  // and one held whole by a transformer that asked for 1 (a lender). A transformer arrives that
  // is admitted at 8; the count round shrinks the three small lenders, whose GPUs lie 4 to a
  // node, so its floor is capped at 4 and no job beside it may move. The lender on the whole
  // node gives back half its GPUs and moves to the 4 the arrival leaves: it runs 8 on one node.
  // Not where the lender is within its own interval.
  void lateArrivalGetsALendersNodeBack() {
    for (bool lender_may_move : {true, false}) {
      Snapshot s;
      s.now_s = kSmallNow;
      auto add = [&](const std::string& id, const std::string& model, int request, int max,
                     double remaining, const std::string& node, int gpus, double resized) {
        add_running(s, id, model, request, max, remaining, {Placement{node, "v100", gpus}}, resized);
      };
      for (int k = 0; k < 8; ++k) s.cluster.nodes.push_back(Node{"v" + std::to_string(k), "v100", 8});
      add("lender", "transformer-b32", 1, 8, 224851, "v0", 8, lender_may_move ? 0 : s.now_s - 100);
      for (const char* node : {"v1", "v2", "v3"}) {
        add(std::string("small-") + node, "resnet50-b64", 4, 4, 1e6, node, 4, s.now_s - 100);
        add(std::string("lent-") + node, "resnet50-b16", 1, 8, 1e6, node, 4, 0);
      }
      for (const char* node : {"v4", "v5", "v6", "v7"})
        add(std::string("full-") + node, "resnet50-b64", 8, 8, 1e6, node, 8, s.now_s - 100);
      add_arrival(s, "late", "transformer-b64", 8, 8, 99763);
      const Plan p = plan_checked(s, Policy::Combined);
      const JobPlan& lp = *p.find("late");
      const JobPlan& lender = *p.find("lender");
      const std::string what = std::string(lender_may_move ? "may move" : "within its interval") +
                               ": " + lp.reason + " / lender: " + lender.reason;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{1}, lp.placement.size());
      if (lender_may_move) {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lp.gpus);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string("v0"), lp.placement.front().node);
        CPPUNIT_ASSERT_MESSAGE(what, contains(lp.reason, "(4 lent GPUs back)"));
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lender.gpus);
        CPPUNIT_ASSERT_MESSAGE(what, lender.resize && lender.placement.front().node != "v0");
        CPPUNIT_ASSERT_MESSAGE(what, contains(lender.reason, "gives back 4 lent GPUs (8->4)"));
      } else {
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lp.gpus);
        CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 8, lender.gpus);
        CPPUNIT_ASSERT_MESSAGE(what, !lender.resize);
      }
    }
  }
  // PlannerConfig::placement_horizon. A resnet50 of 100 hours that asked for 4 GPUs runs on 2
  // V100s and grows back to 4 as a 4-GPU one of 2.5 hours arrives; one node of 4 V100s and one
  // of 4 K80s hold them. Counted to its end, the long job's gain on V100s is 100 hours of slower
  // running and it takes them; counted within the lend horizon (1,800 s, and charged twice
  // more for the share it is behind, FairPlacement) it is less than the short job's whole gain,
  // and the short job gets them.
  void shortArrivalGetsTheFastTypeOverALongRunningJob() {
    const std::string model = "resnet50-b64";
    ThroughputModel m(gavel());
    const double fast = m.iters_per_s(model, "v100", 4);
    CPPUNIT_ASSERT(fast > 2 * m.iters_per_s(model, "k80", 4));
    for (bool horizon : {true, false}) {
      Snapshot s;
      s.now_s = 10000;
      s.cluster.nodes = {Node{"v0", "v100", 4}, Node{"k0", "k80", 4}};
      Job lng = job("long", model, 1, 4, 360000 * fast);
      lng.requested_gpus = 4;
      make_running(lng, plan_on({Placement{"v0", "v100", 2}}), 0);
      Job shrt = job("short", model, 4, 4, 9000 * fast);
      shrt.requested_gpus = 4;
      shrt.submit_s = s.now_s;
      s.jobs = {lng, shrt};
      PlannerConfig cfg;
      cfg.placement_horizon = horizon;
      const Plan p = plan_checked(s, cfg);
      const JobPlan& lp = *p.find("long");
      const JobPlan& sp = *p.find("short");
      const std::string what = std::string(horizon ? "horizon" : "to the end") + ": long " +
                               lp.reason + "; short " + sp.reason;
      CPPUNIT_ASSERT_MESSAGE(what, lp.runs && sp.runs);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 4, lp.gpus);
      const std::string short_on = sp.placement.front().gpu_type;
      const std::string long_on = lp.placement.front().gpu_type;
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string(horizon ? "v100" : "k80"), short_on);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string(horizon ? "k80" : "v100"), long_on);
    }
  }
  // A job placed again to find it a faster type (replace_slower) keeps the size the count round
  // gave it: a resnet18 on 2 of 8 K80s, the V100s held by a job that may not be stopped, and a
  // 6-GPU fixed-size arrival the count round gives the other 6 K80s, but which starts only on a
  // type it loses no more on than it has waited (types_worth_starting_on), so it waits. The
  // placement grew the resnet18 onto the K80s left free, and the next count round took them
  // back for the waiting job, every 600 s.
  void jobPlacedAgainKeepsItsCountedSize() {
    Snapshot s;
    s.now_s = 10000;
    s.cluster.nodes = {Node{"v0", "v100", 4}, Node{"k0", "k80", 8}};
    Job slow = job("slow", "resnet18-b32", 1, 8, 1e8);
    slow.requested_gpus = 2;
    make_running(slow, plan_on({Placement{"k0", "k80", 2}}), 0);
    Job held = fixed_job("held", "resnet50-b64", 4, 1e8);
    make_running(held, plan_on({Placement{"v0", "v100", 4}}), 0);
    Job wait = fixed_job("wait", "resnet50-b64", 6, 1e6);
    wait.submit_s = s.now_s;
    s.jobs = {slow, held, wait};
    PlannerConfig cfg;
    cfg.preempt = false;
    const Plan p = plan_checked(s, cfg);
    const JobPlan& sp = *p.find("slow");
    CPPUNIT_ASSERT_MESSAGE(sp.reason, contains(sp.reason, "placed again with the others"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(sp.reason, 2, sp.gpus);
    CPPUNIT_ASSERT_MESSAGE(sp.reason, !sp.resize);
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlannerRunningTest);
