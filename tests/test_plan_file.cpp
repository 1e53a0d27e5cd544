// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the plan file (plugins/common/plan_file.h), the one format priority/ringsched
// writes and the ringsched command reads: write -> read gives back what was written, the file is
// replaced whole with a sane mode, and a bad or truncated file gives an error naming the file and
// what is wrong, in the module and in the ringsched command.
#include <cppunit/extensions/HelperMacros.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "plan_file.h"
#include "ringsched/model.h"
#include "test_util.h"

using ringsched::PlanFile;
using ringsched_test::contains;
using ringsched_test::error_of;
using ringsched_test::TempDir;

namespace {

PlanFile sample_plan() {
  PlanFile pf;
  pf.generated_at = 1700000123;
  pf.config = "/etc/slurm/ringsched.conf";
  pf.cluster = {{"n1", "v100", 4, 2}, {"n2", "p100", 8, 8}};
  ringsched::PlanFileJob running;
  running.job_id = "17";
  running.running = true;
  running.model = "resnet50";
  running.min_gpus = 1;
  running.max_gpus = 8;
  running.elastic = true;
  running.current_type = "v100";
  running.current_gpus = 2;
  running.has_progress = true;
  running.iterations = 10000.5;
  running.remaining = 1234.0625;
  running.admin_comment = "ringsched:resize=4,type=p100,at=1700000100";
  ringsched::PlanFileJob waiting;
  waiting.job_id = "18";
  waiting.model = "unknown \"model\"";
  waiting.min_gpus = waiting.max_gpus = 2;
  waiting.current_type = "p100";
  waiting.current_gpus = 2;
  pf.jobs = {running, waiting};
  pf.plan.policy = "combined";
  pf.plan.objective_s = 4321.125;
  pf.plan.decision_ms = 0.1;  // not exact in binary: the figure must come back all the same
  pf.plan.lend_horizon_s = 3924;
  pf.plan.wake_s = 1700000165;  // 42 s after generated_at
  ringsched::JobPlan a;
  a.job_id = "17";
  a.order = 0;
  a.runs = true;
  a.gpus = 4;
  a.gpus_by_type = {{"p100", 4}};
  a.placement = {{"n2", "p100", 4}};
  a.resize = true;
  a.spb_depth = 0.75;
  a.predicted_iters_per_s = 3.3;
  a.predicted_finish_s = std::nan("");  // not finite: written as null, read back as NaN
  a.reason = "faster on p100";
  ringsched::JobPlan b;
  b.job_id = "18";
  b.order = 1;
  b.reason = "waits for GPUs";
  pf.plan.jobs = {a, b};
  return pf;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool same_real(double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; }

// The ringsched command of this build on `plan`: exit status and what it printed.
std::pair<int, std::string> ringsched_cli(const std::string& plan, const std::string& args) {
  return run_command(std::string(RINGSCHED_BUILDDIR) + "/tools/ringsched --plan '" + plan + "' " + args);
}

}  // namespace

class PlanFileTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(PlanFileTest);
  CPPUNIT_TEST(testRoundTrip);
  CPPUNIT_TEST(testReplacedWholeWithSaneMode);
  CPPUNIT_TEST(testWriteFailureNamesFile);
  CPPUNIT_TEST(testTruncatedFileNamesWhere);
  CPPUNIT_TEST(testMissingFile);
  CPPUNIT_TEST(testBadFieldsNamed);
  CPPUNIT_TEST(testCommandReadsThroughModule);
  CPPUNIT_TEST(testCommandRefusesBadPlan);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testRoundTrip() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    const PlanFile in = sample_plan();
    ringsched::write_plan_file(path, in);
    const PlanFile out = ringsched::read_plan_file(path);
    CPPUNIT_ASSERT_EQUAL(in.generated_at, out.generated_at);
    CPPUNIT_ASSERT_EQUAL(in.config, out.config);
    CPPUNIT_ASSERT(in.cluster == out.cluster);
    CPPUNIT_ASSERT_EQUAL(in.jobs.size(), out.jobs.size());
    for (size_t i = 0; i < in.jobs.size(); ++i) {
      const auto &x = in.jobs[i], &y = out.jobs[i];
      CPPUNIT_ASSERT_EQUAL(x.job_id, y.job_id);
      CPPUNIT_ASSERT_EQUAL(x.running, y.running);
      CPPUNIT_ASSERT_EQUAL(x.model, y.model);
      CPPUNIT_ASSERT_EQUAL(x.min_gpus, y.min_gpus);
      CPPUNIT_ASSERT_EQUAL(x.max_gpus, y.max_gpus);
      CPPUNIT_ASSERT_EQUAL(x.elastic, y.elastic);
      CPPUNIT_ASSERT_EQUAL(x.current_type, y.current_type);
      CPPUNIT_ASSERT_EQUAL(x.current_gpus, y.current_gpus);
      CPPUNIT_ASSERT_EQUAL(x.has_progress, y.has_progress);
      CPPUNIT_ASSERT_EQUAL(x.iterations, y.iterations);
      CPPUNIT_ASSERT_EQUAL(x.remaining, y.remaining);
      CPPUNIT_ASSERT_EQUAL(x.admin_comment, y.admin_comment);
    }
    CPPUNIT_ASSERT_EQUAL(in.plan.policy, out.plan.policy);
    CPPUNIT_ASSERT_EQUAL(in.plan.objective_s, out.plan.objective_s);
    CPPUNIT_ASSERT_EQUAL(in.plan.decision_ms, out.plan.decision_ms);
    CPPUNIT_ASSERT_EQUAL(in.plan.lend_horizon_s, out.plan.lend_horizon_s);
    CPPUNIT_ASSERT_EQUAL(in.plan.wake_s, out.plan.wake_s);
    CPPUNIT_ASSERT_EQUAL(in.plan.jobs.size(), out.plan.jobs.size());
    for (size_t i = 0; i < in.plan.jobs.size(); ++i) {
      const auto &x = in.plan.jobs[i], &y = out.plan.jobs[i];
      CPPUNIT_ASSERT_EQUAL(x.job_id, y.job_id);
      CPPUNIT_ASSERT_EQUAL(x.order, y.order);
      CPPUNIT_ASSERT_EQUAL(x.runs, y.runs);
      CPPUNIT_ASSERT_EQUAL(x.gpus, y.gpus);
      CPPUNIT_ASSERT(x.gpus_by_type == y.gpus_by_type);
      CPPUNIT_ASSERT_EQUAL(x.placement.size(), y.placement.size());
      for (size_t k = 0; k < x.placement.size(); ++k) {
        CPPUNIT_ASSERT_EQUAL(x.placement[k].node, y.placement[k].node);
        CPPUNIT_ASSERT_EQUAL(x.placement[k].gpu_type, y.placement[k].gpu_type);
        CPPUNIT_ASSERT_EQUAL(x.placement[k].gpus, y.placement[k].gpus);
      }
      CPPUNIT_ASSERT_EQUAL(x.resize, y.resize);
      CPPUNIT_ASSERT_EQUAL(x.spb_depth, y.spb_depth);
      CPPUNIT_ASSERT_EQUAL(x.predicted_iters_per_s, y.predicted_iters_per_s);
      CPPUNIT_ASSERT(same_real(x.predicted_finish_s, y.predicted_finish_s));
      CPPUNIT_ASSERT_EQUAL(x.reason, y.reason);
    }
    CPPUNIT_ASSERT(out.job("18") && out.job("18")->model == "unknown \"model\"");
    CPPUNIT_ASSERT(!out.job("19"));
  }

  void testReplacedWholeWithSaneMode() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    // A link left at the temporary name is not written through: the file it names is untouched.
    const std::string victim = dir.write("victim", "keep me\n");
    CPPUNIT_ASSERT_EQUAL(0, ::symlink(victim.c_str(), (path + ".tmp").c_str()));
    const mode_t old_mask = ::umask(077);
    PlanFile first = sample_plan();
    ringsched::write_plan_file(path, first);
    first.plan.policy = "doubling";
    first.generated_at += 30;
    ringsched::write_plan_file(path, first);
    ::umask(old_mask);
    struct stat st;
    CPPUNIT_ASSERT_EQUAL(0, ::stat(path.c_str(), &st));
    CPPUNIT_ASSERT_EQUAL(static_cast<mode_t>(0644), static_cast<mode_t>(st.st_mode & 07777));
    CPPUNIT_ASSERT(S_ISREG(st.st_mode));
    CPPUNIT_ASSERT_EQUAL(std::string("keep me\n"), read_text(victim));
    CPPUNIT_ASSERT(::access((path + ".tmp").c_str(), F_OK) != 0);  // nothing left behind
    const PlanFile back = ringsched::read_plan_file(path);
    CPPUNIT_ASSERT_EQUAL(std::string("doubling"), back.plan.policy);
    CPPUNIT_ASSERT_EQUAL(first.generated_at, back.generated_at);
  }

  void testWriteFailureNamesFile() {
    TempDir dir;
    const std::string path = dir.path() + "/no-such-folder/plan.json";
    const std::string e = error_of([&] { ringsched::write_plan_file(path, sample_plan()); });
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, path + ": cannot write the plan"));
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, "No such file or directory"));
  }

  void testTruncatedFileNamesWhere() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    ringsched::write_plan_file(path, sample_plan());
    const std::string whole = read_text(path);
    const std::string cut = dir.write("cut.json", whole.substr(0, whole.size() / 2));
    const std::string e = error_of([&] { ringsched::read_plan_file(cut); });
    // "FILE:LINE: not a readable plan (column C: ...; truncated, ...)"
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, cut + ":"));
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, "not a readable plan"));
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, "truncated"));
    const std::string empty = dir.write("empty.json", "");
    const std::string e2 = error_of([&] { ringsched::read_plan_file(empty); });
    CPPUNIT_ASSERT_MESSAGE(e2, contains(e2, empty + ":") && contains(e2, "not a readable plan"));
  }

  void testMissingFile() {
    TempDir dir;
    const std::string path = dir.path() + "/absent.json";
    const std::string e = error_of([&] { ringsched::read_plan_file(path); });
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, path + ": cannot read the plan"));
    CPPUNIT_ASSERT_MESSAGE(e, contains(e, "is priority/ringsched running?"));
  }

  void testBadFieldsNamed() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    ringsched::write_plan_file(path, sample_plan());
    const std::string good = read_text(path);
    // Each edit of the good file, and the place and complaint its error must name.
    struct Case {
      std::string from, to, expect;
    };
    const Case cases[] = {
        {"\"min_gpus\": 1,", "\"min_gpus\": \"one\",", "jobs[0].min_gpus: expected a whole number in 0..1048576"},
        {"\"max_gpus\": 8,", "\"max_gpus\": -8,", "jobs[0].max_gpus: expected a whole number"},
        {"\"state\": \"running\"", "\"state\": \"sleeping\"", "jobs[0].state: expected \"running\" or \"pending\""},
        {"\"elastic\": true", "\"elastic\": 1", "jobs[0].elastic: expected true or false"},
        {"\"p100\": 4", "\"p100\": 99999999", "plan.jobs[0].gpus_by_type.p100: expected a whole number"},
        {"\"spb_depth\": 0.75", "\"spb_depth\": 7.5", "plan.jobs[0].spb_depth: expected a number in 0..1"},
        {"\"lend_horizon_s\": 3924.0", "\"lend_horizon_s\": \"long\"", "plan.lend_horizon_s: expected a number"},
        {"\"wake_s\": 1700000165.0", "\"wake_s\": -5", "plan.wake_s: expected a number"},
        {"\"order\": 1,", "\"order\": 1.5,", "plan.jobs[1].order: expected a whole number"},
        {"\"generated_at\": 1700000123", "\"generated_at\": \"now\"", "generated_at: expected a whole number"},
        {"\"reason\": \"faster on p100\"", "\"why\": \"faster on p100\"", "plan.jobs[0].reason: missing"},
        {"\"policy\": \"combined\"", "\"policy\": \"combined\", \"policy\": \"static\"", "duplicate"},
        {"\"plan\": {", "\"plan\": [], \"x\": {", "not a ringsched plan (no \"plan\" object)"},
    };
    for (const Case& c : cases) {
      const size_t at = good.find(c.from);
      CPPUNIT_ASSERT_MESSAGE("the sample plan has no " + c.from, at != std::string::npos);
      std::string bad = good;
      bad.replace(at, c.from.size(), c.to);
      const std::string f = dir.write("bad.json", bad);
      const std::string e = error_of([&] { ringsched::read_plan_file(f); });
      CPPUNIT_ASSERT_MESSAGE(c.to + " gave: " + e, contains(e, f + ":") && contains(e, c.expect));
    }
    // A plan written before the lend horizon was recorded still reads: no horizon.
    std::string old = good;
    const size_t key = old.find("\"lend_horizon_s\": 3924.0,");
    CPPUNIT_ASSERT(key != std::string::npos);
    old.erase(key, std::string("\"lend_horizon_s\": 3924.0,").size());
    CPPUNIT_ASSERT_EQUAL(0.0, ringsched::read_plan_file(dir.write("old.json", old)).plan.lend_horizon_s);
    // Nor its wake: none.
    const size_t wake = old.find("\"wake_s\": 1700000165.0");
    CPPUNIT_ASSERT(wake != std::string::npos);
    old.erase(wake, std::string("\"wake_s\": 1700000165.0").size());
    old.erase(old.rfind(',', wake), 1);
    CPPUNIT_ASSERT_EQUAL(0.0, ringsched::read_plan_file(dir.write("old2.json", old)).plan.wake_s);
    const std::string list = dir.write("list.json", "[1, 2]\n");
    CPPUNIT_ASSERT(contains(error_of([&] { ringsched::read_plan_file(list); }), "not a ringsched plan"));
  }

  void testCommandReadsThroughModule() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    ringsched::write_plan_file(path, sample_plan());
    const auto [rc, out] = ringsched_cli(path, "status");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "policy combined"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "lend horizon 3924 s"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "plans again 42 s after it"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "p100 8/8") && contains(out, "v100 2/4"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "17       running  resnet50             1-8     2xv100     4xp100     0     resize"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "18       pending"));
    const auto [rc2, out2] = ringsched_cli(path, "explain 17");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out2, 0, rc2);
    CPPUNIT_ASSERT_MESSAGE(out2, contains(out2, "place:    n2: 4 x p100"));
    CPPUNIT_ASSERT_MESSAGE(out2, contains(out2, "recorded: ringsched:resize=4,type=p100,at=1700000100"));
    CPPUNIT_ASSERT_MESSAGE(out2, contains(out2, "spb:      mean backprop depth 0.75"));
  }

  void testCommandRefusesBadPlan() {
    TempDir dir;
    const std::string path = dir.path() + "/plan.json";
    ringsched::write_plan_file(path, sample_plan());
    std::string bad = read_text(path);
    bad.replace(bad.find("\"current_gpus\": 2"), 17, "\"current_gpus\": \"2\"");
    const std::string f = dir.write("bad.json", bad);
    // The command used to print such a job with 0 GPUs; now it names the file and the field.
    const auto [rc, out] = ringsched_cli(f, "status");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 1, rc);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "ringsched: " + f + ": jobs[0].current_gpus: expected a whole number"));
    const std::string whole = read_text(path);
    const std::string cut = dir.write("cut.json", whole.substr(0, whole.size() * 2 / 3));
    const auto [rc2, out2] = ringsched_cli(cut, "explain 17");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out2, 1, rc2);
    CPPUNIT_ASSERT_MESSAGE(out2, contains(out2, cut + ":") && contains(out2, "not a readable plan"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(PlanFileTest);
