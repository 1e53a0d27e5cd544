// SPDX-License-Identifier: GPL-2.0-or-later
// ringsim: importers on the real data and on bad rows, engine invariants, a FIFO run whose JCTs
// are computed by hand, the restart cost of a resize, determinism, and sim/sweep.sh.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <tuple>

#include <jansson.h>
#include <sys/wait.h>

#include "engine.h"
#include "policies.h"
#include "ringsched/csv.h"
#include "ringsched/importers.h"
#include "ringsched/placement.h"
#include "test_util.h"
#include "trace.h"

using namespace ringsim;
using ringsched::InputError;
using ringsched_test::TempDir;
using ringsched_test::contains;
using ringsched_test::shared_data;
using ringsched_test::repo_file;

namespace {

// Linear speeds on one type "x": v(n) = n iterations/s at n = 1, 2, 4 (measured points win).
const char kLinearProfile[] =
    "model,gpu_type,num_gpus,global_batch,iters_per_s\n"
    "m,x,1,32,1\nm,x,2,32,2\nm,x,4,32,4\n";

// One node of 4 GPUs of type "x" with kLinearProfile's speeds, and traces on it.
struct OneNodeWorld {
  TempDir dir;
  ringsched::ThroughputModel tm{ringsched::ProfileTable::load_csv(dir.write("p.csv", kLinearProfile))};
  ringsched::Cluster cluster = ringsched::Cluster::load_csv(dir.write("c.csv", "node,gpu_type,gpus\nn0,x,4\n"));
  Trace trace(const std::string& csv) { return Trace::load_csv(dir.write("t.csv", csv)); }
};

// The InputError `f` throws (where and line); fails the test if it throws none.
InputError input_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  CPPUNIT_FAIL("expected an InputError");
  return InputError("unreachable");
}

// Gives one job 2 GPUs, then 4 from the first planning round at or after 20 s.
class GrowOnce : public SchedulingPolicy {
 public:
  std::string name() const override { return "grow-once"; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    for (size_t k = 0; k < v.active.size(); ++k) out[k].gpus_by_node["n0"] = v.now_s >= 20 ? 4 : 2;
  }
};

// Gives one job 2 GPUs, and 4 from the first decision at or after 25 s, a time it names as its
// wake (SchedulingPolicy::wake_s) while it is ahead; no periodic round comes before 1,000 s.
class GrowAtWake : public SchedulingPolicy {
 public:
  std::string name() const override { return "grow-at-wake"; }
  double wake_s() const override { return now_ < 25 ? 25 : std::numeric_limits<double>::infinity(); }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    now_ = v.now_s;
    times.push_back(v.now_s);
    for (size_t k = 0; k < v.active.size(); ++k) out[k].gpus_by_node["n0"] = v.now_s >= 25 ? 4 : 2;
  }
  std::vector<double> times;  // when it decided

 private:
  double now_ = 0;
};

}  // namespace

class SimTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SimTest);
  CPPUNIT_TEST(testGavelTraceImport);
  CPPUNIT_TEST(testDurationImportItp);
  CPPUNIT_TEST(testDurationImportSeeded);
  CPPUNIT_TEST(testSacctImport);
  CPPUNIT_TEST(testBadTraceRows);
  CPPUNIT_TEST(testTraceRoundTrip);
  CPPUNIT_TEST(testElasticNeedsARange);
  CPPUNIT_TEST(testFifoHandChecked);
  CPPUNIT_TEST(testRestartCostPerResize);
  CPPUNIT_TEST(testCoalescedPlanOnIdleCluster);
  CPPUNIT_TEST(testPlanAtThePolicysWake);
  CPPUNIT_TEST(testLocalityChargedToEveryPolicy);
  CPPUNIT_TEST(testEngineInvariantsAllPolicies);
  CPPUNIT_TEST(testDeterminism);
  CPPUNIT_TEST(testUnknownPolicy);
  CPPUNIT_TEST(testCommandLine);
  CPPUNIT_TEST(testSweepScript);
  CPPUNIT_TEST(testShippedClusterShapes);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testGavelTraceImport() {
    ImportOptions o;
    ImportReport r;
    Trace t = import_gavel_trace(shared_data("gavel/philly_vc_jobs_seed0.csv"), o, &r);
    CPPUNIT_ASSERT_EQUAL(15264, r.rows);
    CPPUNIT_ASSERT_EQUAL(size_t(15264), t.jobs.size());
    CPPUNIT_ASSERT_EQUAL(0, r.skipped);
    for (size_t i = 1; i < t.jobs.size(); ++i) CPPUNIT_ASSERT(t.jobs[i - 1].submit_s <= t.jobs[i].submit_s);
    // Line 2 of the file: Transformer (batch size 128), 95121 steps, 1 GPU, arrival 0.
    bool found = false;
    for (const TraceJob& j : t.jobs)
      if (j.id == "g2") {
        found = true;
        CPPUNIT_ASSERT_EQUAL(std::string("transformer-b128"), j.model);
        CPPUNIT_ASSERT_EQUAL(95121.0, j.iterations);
        CPPUNIT_ASSERT_EQUAL(1, j.gpus);
        CPPUNIT_ASSERT(j.elastic && j.min_gpus == 1 && j.max_gpus == 32);
      }
    CPPUNIT_ASSERT(found);
    // Every model of the trace has a profile in the committed Gavel table.
    ringsched::ProfileTable table = ringsched::ProfileTable::load_csv(repo_file("data/profiles/gavel.csv"));
    for (const TraceJob& j : t.jobs) CPPUNIT_ASSERT_MESSAGE(j.model, table.has(j.model));
  }

  void testDurationImportItp() {
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(repo_file("data/profiles/gavel.csv")));
    ImportOptions o;
    o.ref_type = "v100";
    o.seed = 7;
    ImportReport r;
    std::string path = shared_data("itp/cluster01.csv");
    Trace t = import_duration_trace(path, tm, o, &r);
    CPPUNIT_ASSERT_EQUAL(r.rows, static_cast<int>(t.jobs.size()) + r.skipped);
    CPPUNIT_ASSERT(t.jobs.size() > 1000);
    CPPUNIT_ASSERT_EQUAL(0.0, t.jobs.front().submit_s);
    // Iterations are the row's duration times the drawn model's speed on v100 at its size.
    ringsched::CsvFile f = ringsched::CsvFile::read(path);
    const ringsched::CsvRow& row = f.rows()[0];
    const TraceJob* j = nullptr;
    for (const TraceJob& x : t.jobs)
      if (x.id == f.str(row, 0)) j = &x;
    CPPUNIT_ASSERT(j);
    double want = f.number(row, 2) * tm.iters_per_s(j->model, "v100", j->gpus);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(std::round(want), j->iterations, 0.5);
    CPPUNIT_ASSERT_EQUAL(static_cast<int>(f.integer(row, 3)), j->gpus);
  }

  void testDurationImportSeeded() {
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(repo_file("data/profiles/elasticflow.csv")));
    ImportOptions o;
    o.ref_type = "a100";
    o.jobs_per_hour = 20;
    o.limit = 300;
    std::string path = shared_data("gavel/philly_job_distribution.csv");
    Trace a = import_duration_trace(path, tm, o, nullptr);
    Trace b = import_duration_trace(path, tm, o, nullptr);
    o.seed = 2;
    Trace c = import_duration_trace(path, tm, o, nullptr);
    CPPUNIT_ASSERT_EQUAL(size_t(300), a.jobs.size());
    bool differs = false;
    for (size_t i = 0; i < a.jobs.size(); ++i) {
      CPPUNIT_ASSERT_EQUAL(a.jobs[i].model, b.jobs[i].model);
      CPPUNIT_ASSERT_EQUAL(a.jobs[i].submit_s, b.jobs[i].submit_s);
      if (a.jobs[i].model != c.jobs[i].model) differs = true;
    }
    CPPUNIT_ASSERT(differs);
    // About 20 jobs an hour: 300 arrivals in roughly 15 hours.
    double hours = a.jobs.back().submit_s / 3600;
    CPPUNIT_ASSERT(hours > 10 && hours < 20);
  }

  void testSacctImport() {
    TempDir d;
    std::string p = d.write("sacct.txt",
                            "JobID|User|Submit|Start|End|State|AllocTRES\n"
                            "101|ann|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T11:00:10|COMPLETED|"
                            "billing=8,cpu=8,gres/gpu:v100=4,gres/gpu=4,mem=32G,node=1\n"
                            "101.batch|ann|2024-03-01T10:00:00|2024-03-01T10:00:10|2024-03-01T11:00:10|COMPLETED|"
                            "cpu=8,gres/gpu=4\n"
                            "102|bob|2024-03-01T09:00:00|2024-03-01T09:30:00|2024-03-01T10:30:00|COMPLETED|"
                            "cpu=2,gres/gpu=2\n"
                            "103|bob|2024-03-01T12:00:00|Unknown|Unknown|PENDING|cpu=2,gres/gpu=2\n"
                            "104|eve|2024-03-01T12:00:00|2024-03-01T12:00:00|2024-03-01T12:10:00|COMPLETED|cpu=2\n");
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(repo_file("data/profiles/gavel.csv")));
    ImportOptions o;
    o.ref_type = "k80";
    ImportReport r;
    Trace t = import_sacct(p, tm, o, &r);
    CPPUNIT_ASSERT_EQUAL(size_t(2), t.jobs.size());
    CPPUNIT_ASSERT_EQUAL(3, r.skipped);
    CPPUNIT_ASSERT(contains(r.skipped_why, "job steps") && contains(r.skipped_why, "no GPUs"));
    // Sorted by submit: 102 (09:00) first at time 0, then 101 an hour later.
    CPPUNIT_ASSERT_EQUAL(std::string("102"), t.jobs[0].id);
    CPPUNIT_ASSERT_EQUAL(3600.0, t.jobs[1].submit_s);
    CPPUNIT_ASSERT_EQUAL(4, t.jobs[1].gpus);
    CPPUNIT_ASSERT_EQUAL(std::string("ann"), t.jobs[1].user);
    // Job 101 ran 3600 s on v100 (the typed TRES), not on the reference k80.
    CPPUNIT_ASSERT_DOUBLES_EQUAL(std::round(3600 * tm.iters_per_s(t.jobs[1].model, "v100", 4)), t.jobs[1].iterations,
                                 0.5);
    std::string bad = d.write("bad.txt",
                              "JobID|Submit|Start|End|AllocTRES\n"
                              "1|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:01:00|gres/gpu=2\n"
                              "2|2024-03-01T10:00:00|2024-03-01T10:00:00|2024-03-01T10:01:00|gres/gpu=lots\n");
    InputError e = input_error_of([&] { import_sacct(bad, tm, o, nullptr); });
    CPPUNIT_ASSERT_EQUAL(bad, e.where());
    CPPUNIT_ASSERT_EQUAL(3, e.line());
  }

  void testBadTraceRows() {
    TempDir d;
    const std::string head = "job_id,submit_s,model,gpus,iterations\n";
    struct Case { std::string body; int line; std::string what; };
    const Case cases[] = {
        {"a,0,m,1,10\nb,5,m,1,10\nc,3,m,1,10\n", 4, "sorted"},
        {"a,0,m,1,10\nb,5,m,1,-10\n", 3, "iterations"},
        {"a,-1,m,1,10\n", 2, "negative"},
        {"a,0,m,0,10\n", 2, "gpus"},
        {"a,0,m,1,10\na,1,m,1,10\n", 3, "repeats"},
        {"a,0,m,1,ten\n", 2, "iterations"},
        {"a,1e300,m,1,10\n", 2, "1e12"},  // a round added to such a clock changes nothing
        {"a,0x10,m,1,10\n", 2, "submit_s"},
    };
    for (const Case& c : cases) {
      std::string p = d.write("t.csv", head + c.body);
      InputError e = input_error_of([&] { Trace::load_csv(p); });
      CPPUNIT_ASSERT_EQUAL_MESSAGE(c.body, p, e.where());
      CPPUNIT_ASSERT_EQUAL_MESSAGE(c.body, c.line, e.line());
      CPPUNIT_ASSERT_MESSAGE(std::string(e.what()) + " lacks " + c.what, contains(e.what(), c.what));
    }
    // Unknown model and a job larger than the cluster: the engine names the trace line.
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(d.write("p.csv", kLinearProfile)));
    ringsched::Cluster cl = ringsched::Cluster::load_csv(d.write("c.csv", "node,gpu_type,gpus\nn0,x,4\n"));
    Trace unknown = Trace::load_csv(d.write("u.csv", head + "a,0,m,1,10\nb,1,nosuch,1,10\n"));
    InputError e1 = input_error_of([&] { Engine(cl, unknown, tm, SimConfig()); });
    CPPUNIT_ASSERT_EQUAL(3, e1.line());
    CPPUNIT_ASSERT(contains(e1.what(), "nosuch"));
    Trace big = Trace::load_csv(d.write("b.csv", head + "a,0,m,8,10\n"));
    InputError e2 = input_error_of([&] { Engine(cl, big, tm, SimConfig()); });
    CPPUNIT_ASSERT_EQUAL(2, e2.line());
    CPPUNIT_ASSERT(contains(e2.what(), "8 GPUs"));
    // A job of centuries (1e30 iterations planned a round every 300 s without end), and one
    // just within the bound (1e8 s alone at its 1 GPU) that the engine takes.
    Trace endless = Trace::load_csv(d.write("e.csv", head + "a,0,m,1,10\nb,1,m,1,1e30\n"));
    InputError e4 = input_error_of([&] { Engine(cl, endless, tm, SimConfig()); });
    CPPUNIT_ASSERT_EQUAL(3, e4.line());
    CPPUNIT_ASSERT_MESSAGE(e4.what(), contains(e4.what(), "fastest size"));
    Trace longest = Trace::load_csv(d.write("l.csv", head + "a,0,m,1,1e8\n"));
    Engine(cl, longest, tm, SimConfig());
    // Bad rows in the public trace format: file and line.
    std::string g = d.write("g.csv", "vc,job_type,total_steps,arrival_time_s,scale_factor\n"
                                     "v,ResNet-18 (batch size 16),100,0,1\nv,ResNet-18 (batch size 16),100,1,-2\n");
    InputError e3 = input_error_of([&] { import_gavel_trace(g, ImportOptions(), nullptr); });
    CPPUNIT_ASSERT_EQUAL(g, e3.where());
    CPPUNIT_ASSERT_EQUAL(3, e3.line());
  }

  void testTraceRoundTrip() {
    TempDir d;
    ImportOptions o;
    o.limit = 50;
    o.spb_fraction = 0.5;
    Trace t = import_gavel_trace(shared_data("gavel/philly_vc_jobs_seed0.csv"), o, nullptr);
    std::string p = d.path() + "/t.csv";
    t.save_csv(p);
    Trace u = Trace::load_csv(p);
    CPPUNIT_ASSERT_EQUAL(t.jobs.size(), u.jobs.size());
    int spb = 0;
    for (size_t i = 0; i < t.jobs.size(); ++i) {
      CPPUNIT_ASSERT_EQUAL(t.jobs[i].id, u.jobs[i].id);
      CPPUNIT_ASSERT_EQUAL(t.jobs[i].model, u.jobs[i].model);
      CPPUNIT_ASSERT_EQUAL(t.jobs[i].iterations, u.jobs[i].iterations);
      CPPUNIT_ASSERT_EQUAL(t.jobs[i].max_gpus, u.jobs[i].max_gpus);
      CPPUNIT_ASSERT_EQUAL(t.jobs[i].spb, u.jobs[i].spb);
      spb += u.jobs[i].spb;
    }
    CPPUNIT_ASSERT(spb > 5 && spb < 45);
  }

  // As sbatch refuses --ring-elastic without MIN < MAX, a trace row marked elastic with
  // min = max is a fixed-size job: no policy may stop or move it (the engine checks its size).
  void testElasticNeedsARange() {
    OneNodeWorld w;
    Trace t = w.trace("job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic\n"
                      "a,0,m,2,400,1,4,1\nb,1,m,2,400,2,2,1\nc,2,m,1,400,1,1,1\nd,3,m,2,400,1,4,0\n");
    CPPUNIT_ASSERT(t.jobs[0].elastic && t.jobs[0].min_gpus == 1 && t.jobs[0].max_gpus == 4);
    for (size_t k = 1; k < 4; ++k) {
      const TraceJob& j = t.jobs[k];
      CPPUNIT_ASSERT_MESSAGE(j.id, !j.elastic && j.min_gpus == j.gpus && j.max_gpus == j.gpus);
    }
    ImportOptions o;
    o.limit = 50;
    o.max_gpus_cap = 1;  // every 1-GPU job would get the range 1-1
    Trace g = import_gavel_trace(shared_data("gavel/philly_vc_jobs_seed0.csv"), o, nullptr);
    int fixed = 0;
    for (const TraceJob& j : g.jobs) {
      CPPUNIT_ASSERT_EQUAL(j.max_gpus > j.min_gpus, j.elastic);
      fixed += j.gpus == 1;
    }
    CPPUNIT_ASSERT(fixed > 0);
  }

  // One node of 4 GPUs of type x, v(n) = n. By hand (FIFO + EASY backfill):
  //  a: t=0, 2 GPUs, 100 it -> runs 0..50                                   JCT 50
  //  b: t=10, 4 GPUs, 400 it -> head, blocked until a ends at 50 (shadow 50); runs 50..150  JCT 140
  //  c: t=20, 2 GPUs, 60 it -> backfilled: 2 free and it ends at 50 <= shadow; runs 20..50  JCT 30
  //  d: t=30, 1 GPU, 10 it -> no GPU free until b ends at 150; runs 150..160                JCT 130
  void testFifoHandChecked() {
    TempDir d;
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(d.write("p.csv", kLinearProfile)));
    ringsched::Cluster cl = ringsched::Cluster::load_csv(d.write("c.csv", "node,gpu_type,gpus\nn0,x,4\n"));
    Trace t = Trace::load_csv(d.write("t.csv", "job_id,submit_s,model,gpus,iterations\n"
                                               "a,0,m,2,100\nb,10,m,4,400\nc,20,m,2,60\nd,30,m,1,10\n"));
    Engine e(cl, t, tm, SimConfig());
    auto fifo = make_fifo();
    SimResult r = e.run(*fifo, tm);
    const double want[] = {50, 140, 30, 130};
    for (int i = 0; i < 4; ++i) CPPUNIT_ASSERT_DOUBLES_EQUAL(want[i], r.jobs[i].jct_s, 1e-6);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(87.5, r.avg_jct_s, 1e-6);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(160.0, r.makespan_s, 1e-6);
    CPPUNIT_ASSERT_EQUAL(0L, r.restarts);
    // Busy GPU-seconds: a 100 + c 60 + b 400 + d 10 = 570 of 4 * 160.
    CPPUNIT_ASSERT_DOUBLES_EQUAL(570.0 / 640.0, r.gpu_util, 1e-9);
  }

  // 400 iterations: 2 GPUs (2 it/s) for 20 s -> 360 left; resized to 4 GPUs at 20 s, restart
  // cost 30 s, then 360 / 4 = 90 s: finishes at 140 (110 without the restart cost).
  void testRestartCostPerResize() {
    OneNodeWorld w;
    const ringsched::ThroughputModel& tm = w.tm;
    const ringsched::Cluster& cl = w.cluster;
    Trace t = w.trace("job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic\na,0,m,2,400,1,4,1\n");
    SimConfig cfg;
    cfg.round_s = 20;
    cfg.restart_s = 30;
    Engine e(cl, t, tm, cfg);
    GrowOnce p;
    SimResult r = e.run(p, tm);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(140.0, r.jobs[0].jct_s, 1e-6);
    CPPUNIT_ASSERT_EQUAL(1L, r.restarts);
    CPPUNIT_ASSERT_EQUAL(4, r.jobs[0].max_gpus);
    cfg.restart_s = 0;
    Engine e0(cl, t, tm, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(110.0, e0.run(p, tm).jobs[0].jct_s, 1e-6);
  }

  // --plan-gap 30 on one node of 4 GPUs: a (4 GPUs, 40 it) runs 0..10; b (4 GPUs) arrives at 5
  // and a ends at 10, both within 30 s of the plan at 0, so b is planned at 30 and runs 30..40.
  // Between 10 and 30 the cluster is idle with no arrivals left and b waiting: not a stuck
  // policy, the coalesced plan is due (the engine threw there).
  void testCoalescedPlanOnIdleCluster() {
    OneNodeWorld w;
    const ringsched::ThroughputModel& tm = w.tm;
    const ringsched::Cluster& cl = w.cluster;
    Trace t = w.trace("job_id,submit_s,model,gpus,iterations\na,0,m,4,40\nb,5,m,4,40\n");
    SimConfig cfg;
    cfg.min_plan_gap_s = 30;
    Engine e(cl, t, tm, cfg);
    for (const char* name : {"fifo", "tiresias"}) {
      auto p = make_policy(name, PolicyOptions(), tm);
      SimResult r = e.run(*p, tm);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(10.0, r.jobs[0].jct_s, 1e-6);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(35.0, r.jobs[1].jct_s, 1e-6);
    }
  }

  // A policy's wake is a decision without an event: 400 iterations on 2 GPUs (2 it/s) until the
  // wake at 25 s, then 4 GPUs after the 30 s restart: 25 + 30 + 350 / 4 = 142.5 s. With a plan
  // gap of 30 s the wake waits for it (the plan at 0 + 30), as an event does: 30 + 30 + 340 / 4 =
  // 145 s. (The engine once looped there, the wake due and no plan coming.)
  void testPlanAtThePolicysWake() {
    OneNodeWorld w;
    Trace t = w.trace("job_id,submit_s,model,gpus,iterations,min_gpus,max_gpus,elastic\na,0,m,2,400,1,4,1\n");
    for (double gap : {0.0, 30.0}) {
      SimConfig cfg;
      cfg.round_s = 1000;
      cfg.restart_s = 30;
      cfg.min_plan_gap_s = gap;
      Engine e(w.cluster, t, w.tm, cfg);
      GrowAtWake p;
      SimResult r = e.run(p, w.tm);
      const std::string what = "gap " + std::to_string(gap);
      CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(what, gap > 0 ? 145.0 : 142.5, r.jobs[0].jct_s, 1e-6);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, 1L, r.restarts);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(what, size_t{2}, p.times.size());
      CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(what, gap > 0 ? 30.0 : 25.0, p.times[1], 1e-9);
    }
  }

  // A ring spread over nodes is charged the placement's locality model, whichever policy spread
  // it. Type x measured on one server: v(1) = 1, v(2) = 1.6, v(4) = 2.5 it/s. Two nodes of 2 GPUs
  // (links 100 and 12.5 GB/s). Job a: 4 GPUs, 100 iterations, so 2 + 2 on both nodes. Per
  // iteration 0.4 s, of which compute 1 / (4 x 1) = 0.25 s and communication 0.15 s; measured
  // inside one server and run across nodes, the communication grows by 100 / 12.5: 0.4 + 0.15 x 7
  // = 1.45 s, JCT 145 s (40 s without the charge, what the engine gave before). Its isolated time
  // (the FTF denominator) is on the fewest nodes that hold it, the same two: FTF 1. Job b (2 GPUs,
  // one node) is not charged: 100 / 1.6 = 62.5 s. With equal links nothing is charged. The speed
  // is the placement's own: market_match of the same job on the same cluster plans it.
  void testLocalityChargedToEveryPolicy() {
    TempDir d;
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(
        d.write("p.csv", "model,gpu_type,num_gpus,global_batch,iters_per_s\nm,x,1,32,1\nm,x,2,32,1.6\nm,x,4,32,2.5\n")));
    Trace t = Trace::load_csv(d.write("t.csv", "job_id,submit_s,model,gpus,iterations\na,0,m,4,100\nb,200,m,2,100\n"));
    for (const char* links : {"", ",100,100"}) {
      const bool equal = *links != 0;
      ringsched::Cluster cl = ringsched::Cluster::load_csv(
          d.write("c.csv", std::string("node,gpu_type,gpus") + (equal ? ",intra_gbps,inter_gbps" : "") + "\n" +
                               "n0,x,2" + links + "\nn1,x,2" + links + "\n"));
      Engine e(cl, t, tm, SimConfig());
      const double want_a = equal ? 40.0 : 145.0;
      for (const char* name : {"fifo", "tiresias", "optimus", "besttype", "static", "doubling", "combined"}) {
        SimResult r = e.run(*make_policy(name, PolicyOptions(), tm), tm);
        CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(std::string(name) + links, want_a, r.jobs[0].jct_s, 1e-6);
        CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(std::string(name) + links, 62.5, r.jobs[1].jct_s, 1e-6);
        CPPUNIT_ASSERT_DOUBLES_EQUAL_MESSAGE(std::string(name) + links, 1.0, r.ftf_max, 1e-9);
      }
      ringsched::PlacementProblem p;
      p.model = &tm;
      p.cluster = cl;
      ringsched::PlacementJob j;
      j.model = "m";
      j.remaining = 100;
      j.min_gpus = j.max_gpus = 4;
      p.jobs = {j};
      ringsched::PlacementResult pr = ringsched::market_match(p, {4});
      CPPUNIT_ASSERT_DOUBLES_EQUAL(100.0 / want_a, pr.jobs[0].iters_per_s, 1e-9);
    }
  }

  // The first 150 jobs of the Philly-derived trace (iterations / 200 to keep it quick) on a small
  // Gavel-style cluster under every policy: every job finishes, no JCT beats the job's ideal
  // time, and the GPUs allocated never exceed the cluster (the engine also checks every node on
  // every decision and throws if a policy over-allocates). combined stops running jobs here, as
  // Tiresias does (68 stops), and combined-nopreempt (Preempt=no) never does.
  void testEngineInvariantsAllPolicies() {
    ImportOptions o;
    o.limit = 150;
    o.max_gpus_cap = 8;
    Trace t = import_gavel_trace(shared_data("gavel/philly_vc_jobs_seed0.csv"), o, nullptr);
    for (TraceJob& j : t.jobs) {
      j.iterations = std::max(1.0, std::round(j.iterations / 200));
      j.gpus = std::min(j.gpus, 8);
      j.max_gpus = std::max(j.max_gpus, j.gpus);
    }
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(repo_file("data/profiles/gavel.csv")));
    ringsched::Cluster cl;
    for (const char* type : {"k80", "p100", "v100"})
      for (int i = 0; i < 2; ++i) cl.nodes.push_back(ringsched::Node{std::string(type) + std::to_string(i), type, 4});
    SimConfig cfg;
    cfg.round_s = 600;
    Engine e(cl, t, tm, cfg);
    PolicyOptions po;
    po.samples = 4;
    po.window = 24;
    long preempt_stops = -1;
    for (const char* name :
         {"fifo", "tiresias", "optimus", "besttype", "static", "doubling", "combined", "combined-nopreempt",
          "combined-noguard"}) {
      auto p = make_policy(name, po, tm);
      SimResult r = e.run(*p, tm);
      const std::string n = name;
      if (n == "combined") preempt_stops = r.stops;
      else if (n == "tiresias") CPPUNIT_ASSERT_MESSAGE(n, r.stops > 0);
      else if (n != "doubling" && n != "combined-noguard") CPPUNIT_ASSERT_EQUAL_MESSAGE(n, 0L, r.stops);
      CPPUNIT_ASSERT_EQUAL(t.jobs.size(), r.jobs.size());
      for (size_t i = 0; i < r.jobs.size(); ++i) {
        const JobRow& j = r.jobs[i];
        CPPUNIT_ASSERT_MESSAGE(std::string(name) + " " + j.id, j.finish_s >= j.start_s && j.start_s >= j.submit_s);
        CPPUNIT_ASSERT_MESSAGE(std::string(name) + " " + j.id, j.jct_s >= e.ideal_s(t.jobs[i]) * (1 - 1e-9));
      }
      for (const auto& b : r.busy_gpus) CPPUNIT_ASSERT(b.second >= 0 && b.second <= cl.total_gpus());
      CPPUNIT_ASSERT(r.gpu_util > 0 && r.gpu_util <= 1 + 1e-9);
      CPPUNIT_ASSERT(r.avg_jct_s > 0 && r.p50_jct_s <= r.p99_jct_s);
    }
    CPPUNIT_ASSERT(preempt_stops > 0);
  }

  void testDeterminism() {
    ImportOptions o;
    o.limit = 60;
    o.max_gpus_cap = 8;
    Trace t = import_gavel_trace(shared_data("gavel/philly_vc_jobs_seed0.csv"), o, nullptr);
    for (TraceJob& j : t.jobs) {
      j.iterations = std::max(1.0, std::round(j.iterations / 500));
      j.gpus = std::min(j.gpus, 8);
    }
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(repo_file("data/profiles/gavel.csv")));
    ringsched::Cluster cl;
    for (const char* type : {"k80", "v100"}) cl.nodes.push_back(ringsched::Node{type, type, 8});
    Engine e(cl, t, tm, SimConfig());
    PolicyOptions po;
    po.samples = 4;
    for (const char* name : {"tiresias", "combined"}) {
      SimResult a = e.run(*make_policy(name, po, tm), tm);
      SimResult b = e.run(*make_policy(name, po, tm), tm);
      for (size_t i = 0; i < a.jobs.size(); ++i) CPPUNIT_ASSERT_EQUAL(a.jobs[i].finish_s, b.jobs[i].finish_s);
      CPPUNIT_ASSERT_EQUAL(a.restarts, b.restarts);
    }
  }

  void testUnknownPolicy() {
    ringsched::ThroughputModel tm;
    std::string what = ringsched_test::error_of([&] { make_policy("sjf", PolicyOptions(), tm); });
    CPPUNIT_ASSERT(contains(what, "unknown policy 'sjf'"));
  }

  // The real program: a JSON report with the DESIGN 5 fields and the hand-checked FIFO figures,
  // and a bad trace rejected with file:line and exit status 1.
  void testCommandLine() {
    TempDir d;
    const std::string bin = std::string(RINGSCHED_BUILDDIR) + "/sim/ringsim";
    std::string prof = d.write("p.csv", kLinearProfile);
    std::string cl = d.write("c.csv", "node,gpu_type,gpus\nn0,x,4\n");
    std::string tr = d.write("t.csv", "job_id,submit_s,model,gpus,iterations\n"
                                      "a,0,m,2,100\nb,10,m,4,400\nc,20,m,2,60\nd,30,m,1,10\n");
    std::string rep = d.path() + "/r.json";
    auto run = [&](const std::string& args, std::string* out) {
      int status;
      std::tie(status, *out) = run_command(bin + " " + args);
      return status;
    };
    std::string out;
    CPPUNIT_ASSERT_EQUAL(0, run("run --quiet --trace " + tr + " --cluster " + cl + " --profiles " + prof +
                                    " --compare fifo,tiresias --report " + rep, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "fifo") && contains(out, "ratios to fifo"));
    json_error_t err;
    json_t* root = json_load_file(rep.c_str(), 0, &err);
    CPPUNIT_ASSERT_MESSAGE(err.text, root);
    json_t* fifo = json_object_get(json_object_get(root, "policies"), "fifo");
    CPPUNIT_ASSERT(fifo);
    for (const char* k : {"avg_jct_s", "p50_jct_s", "p99_jct_s", "makespan_s", "gpu_util", "restarts", "stops", "ftf_max",
                          "decision_ms_p50", "decision_ms_p99", "jobs"})
      CPPUNIT_ASSERT_MESSAGE(k, json_object_get(fifo, k));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(87.5, json_number_value(json_object_get(fifo, "avg_jct_s")), 1e-6);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(160.0, json_number_value(json_object_get(fifo, "makespan_s")), 1e-6);
    CPPUNIT_ASSERT_EQUAL(size_t(4), json_array_size(json_object_get(fifo, "jobs")));
    json_decref(root);
    std::string bad = d.write("bad.csv", "job_id,submit_s,model,gpus,iterations\na,5,m,1,10\nb,1,m,1,10\n");
    CPPUNIT_ASSERT_EQUAL(1, run("run --quiet --trace " + bad + " --cluster " + cl + " --profiles " + prof, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, bad + ":3"));
    CPPUNIT_ASSERT_EQUAL(1, run("run --quiet --trace " + tr + " --cluster " + cl + " --profiles " + prof +
                                    " --round -5", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--round"));
    // A synthetic trace for a cluster holds no job larger than its largest pool of one GPU type,
    // so that `run` takes every job; and it says what it made, not "from 0 rows" (issue 14.6).
    const std::string cl24 = d.write("c24.csv", "node,gpu_type,gpus\nv1,v100,4\nv2,v100,4\np1,p100,4\n"
                                                "p2,p100,4\nk1,k80,4\nk2,k80,4\n");
    const std::string synth = d.path() + "/synth.csv";
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run("trace synth -o " + synth + " --jobs 60 --profiles " +
                                                 repo_file("data/profiles/gavel.csv") + " --ref-type v100 --jobs-per-hour 60 --cluster " + cl24,
                                             &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "60 jobs synthesised, up to 8 GPUs") && !contains(out, "rows"));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run("run --quiet --trace " + synth + " --cluster " + cl24 + " --profiles " +
                                                 repo_file("data/profiles/gavel.csv") + " --compare fifo", &out));
  }

  // sim/sweep.sh (issue 15.2's sweep) on one small family: its table and its one-figure miss
  // count, the ringsim options it passes on, and the errors that keep a site from mixing runs.
  void testSweepScript() {
    const std::string data = shared_data(".");
    if (access("/usr/bin/python3", X_OK) != 0) RINGSCHED_SKIP("/usr/bin/python3 (sweep.sh's summary) is missing");
    TempDir d;
    const std::string sweep = "cd '" + std::string(RINGSCHED_SRCDIR) + "' && RINGSIM='" + RINGSCHED_BUILDDIR +
                              "/sim/ringsim' RINGSCHED_SHARED_DATA='" + data + "' sh sim/sweep.sh ";
    const std::string efd = " --families efd --policies tiresias,combined --seeds 2";
    const std::string out1 = d.path() + "/a";
    auto [status, out] = run_command(sweep + out1 + efd);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, status);
    std::ifstream summary(out1 + "/summary.txt");
    const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
    for (const char* sc : {"efd-t4x4-L0.5-s2", "efd-t4x4-L1-s2", "efd-t4x4-L2-s2"})
      CPPUNIT_ASSERT_MESSAGE(text, contains(text, sc));
    CPPUNIT_ASSERT_MESSAGE(text, contains(text, "3 scenarios: combined best in "));
    CPPUNIT_ASSERT_MESSAGE(text, contains(text, "or p99 JCT or max FTF over Tiresias's): ") && contains(text, " of 3"));
    // Each report holds both policies and the settings it was run with (defaults: 30 s, 0 s).
    auto setting = [](const std::string& report, const char* key) {
      json_error_t err;
      json_t* root = json_load_file(report.c_str(), 0, &err);
      CPPUNIT_ASSERT_MESSAGE(report + ": " + err.text, root);
      json_t* policies = json_object_get(root, "policies");
      CPPUNIT_ASSERT(json_object_get(policies, "tiresias") && json_object_get(policies, "combined"));
      json_t* v = json_object_get(json_object_get(root, "ringsim"), key);
      CPPUNIT_ASSERT_MESSAGE(key, json_is_number(v));
      const double x = json_number_value(v);
      json_decref(root);
      return x;
    };
    CPPUNIT_ASSERT_EQUAL(30.0, setting(out1 + "/reports/efd-t4x4-L1-s2.json", "restart_s"));
    CPPUNIT_ASSERT_EQUAL(0.0, setting(out1 + "/reports/efd-t4x4-L1-s2.json", "plan_gap_s"));
    // combined's own settings, ringsim's defaults (the plugin's)
    const ringsched::PlannerConfig defaults;
    CPPUNIT_ASSERT_EQUAL(defaults.lend_horizon_s, setting(out1 + "/reports/efd-t4x4-L1-s2.json", "lend_horizon_s"));
    CPPUNIT_ASSERT_EQUAL(defaults.lend_arrivals, setting(out1 + "/reports/efd-t4x4-L1-s2.json", "lend_arrivals"));
    CPPUNIT_ASSERT_EQUAL(defaults.late_factor, setting(out1 + "/reports/efd-t4x4-L1-s2.json", "late_factor"));
    // The same folder with other options would mix runs: refused, naming both.
    std::tie(status, out) = run_command(sweep + out1 + efd + " --restart 120");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "other options") && contains(out, "restart=30") && contains(out, "restart=120"));
    const std::string out2 = d.path() + "/b";
    std::tie(status, out) = run_command(sweep + out2 + efd + " --restart 120 --plan-gap 2");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, status);
    CPPUNIT_ASSERT_EQUAL(120.0, setting(out2 + "/reports/efd-t4x4-L1-s2.json", "restart_s"));
    CPPUNIT_ASSERT_EQUAL(2.0, setting(out2 + "/reports/efd-t4x4-L1-s2.json", "plan_gap_s"));
    // A site's own layout (--cluster): every family whose profiles know its GPU types runs on it,
    // named after the file; the others are named and skipped.
    const std::string mine = d.write("mine.csv", "node,gpu_type,gpus\nt0,t4,8\nt1,t4,8\nt2,t4,2\nt3,t4,1\n");
    const std::string out3 = d.path() + "/site";
    std::tie(status, out) = run_command(sweep + out3 + " --families efd,phillyd --policies tiresias,combined --seeds 2 --cluster " + mine);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "phillyd skips mine: its profiles have no t4"));
    std::ifstream site_summary(out3 + "/summary.txt");
    const std::string site((std::istreambuf_iterator<char>(site_summary)), std::istreambuf_iterator<char>());
    CPPUNIT_ASSERT_MESSAGE(site, contains(site, "efd-mine-L0.5-s2") && contains(site, "efd-mine-L2-s2"));
    CPPUNIT_ASSERT_MESSAGE(site, contains(site, "3 scenarios: combined best in ") && !contains(site, "t4x4"));
    std::tie(status, out) = run_command(sweep + d.path() + "/c --cluster " + mine + " --links 100,100");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--links applies to the built-in clusters"));
    std::tie(status, out) = run_command(sweep + d.path() + "/c --cluster " + d.path() + "/none.csv");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "cannot read") && contains(out, "none.csv"));
    const std::string bad = d.write("bad.csv", "host,type,count\nt0,t4,8\n");
    std::tie(status, out) = run_command(sweep + d.path() + "/c --cluster " + bad);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "bad.csv: line 1 should start with node,gpu_type,gpus"));
    // Bad options: named, nothing run.
    std::tie(status, out) = run_command(sweep + d.path() + "/c --plan-gap soon");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--plan-gap wants a number of seconds") && contains(out, "'soon'"));
    std::tie(status, out) = run_command(sweep + d.path() + "/c --families efd,nope");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 2, status);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "unknown family 'nope'"));
    CPPUNIT_ASSERT(access((d.path() + "/c").c_str(), F_OK) != 0);
  }

  // data/clusters: the shapes docs/combined-placement-horizon.md was measured on load as
  // ringsim's clusters, with the GPUs and types data/clusters/README.md lists, and each starts
  // with the header sweep.sh's --cluster requires.
  void testShippedClusterShapes() {
    struct Shape {
      const char* file;
      int gpus;
      std::vector<std::string> types;
    };
    const std::vector<Shape> shapes = {
        {"v100x8", 64, {"v100"}},           {"v100x2", 64, {"v100"}},
        {"v100x4s32", 32, {"v100"}},        {"p100v100x4", 64, {"p100", "v100"}},
        {"gmixsizes", 72, {"k80", "p100", "v100"}}, {"gavel128", 128, {"k80", "p100", "v100"}},
        {"a100x4", 64, {"a100"}},           {"t4x8", 64, {"t4"}},
        {"a100t4x8", 128, {"a100", "t4"}},  {"a100mix", 96, {"a100", "t4"}},
        {"five8", 80, {"a100", "k80", "p100", "t4", "v100"}}};
    for (const Shape& sh : shapes) {
      const std::string path = repo_file(std::string("data/clusters/") + sh.file + ".csv");
      const ringsched::Cluster c = ringsched::Cluster::load_csv(path);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(path, sh.gpus, c.total_gpus());
      CPPUNIT_ASSERT_MESSAGE(path, sh.types == c.types());
      std::ifstream in(path);
      std::string header;
      std::getline(in, header);
      CPPUNIT_ASSERT_MESSAGE(path + ": " + header, header.rfind("node,gpu_type,gpus", 0) == 0);
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SimTest);
