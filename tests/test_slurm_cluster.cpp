// SPDX-License-Identifier: GPL-2.0-or-later
// Integration tests of the ringsched plugins in a real Slurm 22.05 cluster (munged, slurmctld and
// six slurmd on 127.0.0.1 with v100, p100 and k80 fake GPUs; scripts/testcluster.sh). Jobs are
// submitted with the real sbatch and the SPANK options; results are read back from scontrol,
// squeue, the slurmctld log and the plan JSON that priority/ringsched writes.
#include <cppunit/extensions/HelperMacros.h>
#include <jansson.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <functional>
#include <set>
#include <unistd.h>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/throughput.h"
#include "slurm_test_cluster.h"

using ringtest::SlurmTestCluster;

namespace {

SlurmTestCluster& cluster() { return SlurmTestCluster::get("test_slurm_cluster", true); }

// A planned or current job row of the plan JSON.
struct PlanRow {
  bool found = false;
  bool runs = false;
  bool resize = false;
  int gpus = 0;
  int order = -1;
  int current_gpus = 0;
  std::string reason;
};

struct PlanView {
  long long generated_at = 0;
  std::map<std::string, PlanRow> jobs;
};

PlanView read_plan() {
  PlanView v;
  json_error_t err;
  json_t* root = json_load_file(cluster().plan_path().c_str(), 0, &err);
  if (!root) return v;
  v.generated_at = json_integer_value(json_object_get(root, "generated_at"));
  size_t i;
  json_t* j;
  json_array_foreach(json_object_get(json_object_get(root, "plan"), "jobs"), i, j) {
    PlanRow& r = v.jobs[json_string_value(json_object_get(j, "job_id"))];
    r.found = true;
    r.runs = json_is_true(json_object_get(j, "runs"));
    r.resize = json_is_true(json_object_get(j, "resize"));
    r.gpus = static_cast<int>(json_integer_value(json_object_get(j, "gpus")));
    r.order = static_cast<int>(json_integer_value(json_object_get(j, "order")));
    const char* reason = json_string_value(json_object_get(j, "reason"));
    r.reason = reason ? reason : "";
  }
  json_array_foreach(json_object_get(root, "jobs"), i, j) {
    PlanRow& r = v.jobs[json_string_value(json_object_get(j, "job_id"))];
    r.current_gpus = static_cast<int>(json_integer_value(json_object_get(j, "current_gpus")));
  }
  json_decref(root);
  return v;
}

std::string describe(const PlanView& v) {
  std::ostringstream os;
  for (const auto& [id, r] : v.jobs)
    os << " [job " << id << " runs=" << r.runs << " gpus=" << r.gpus << " now=" << r.current_gpus
       << " resize=" << r.resize << " order=" << r.order << ": " << r.reason << "]";
  return os.str();
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

bool wait_state(unsigned job, const std::string& state, double seconds) {
  return SlurmTestCluster::wait_for([&] { return cluster().job_field(job, "JobState") == state; }, seconds);
}

// A model of the profile table whose fastest type at one GPU is `type`, and its second best.
std::pair<std::string, std::string> model_fastest_on(const std::string& type) {
  ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(std::string(RINGSCHED_SRCDIR) +
                                                                  "/data/profiles/gavel.csv"));
  for (const std::string& m : tm.table().models()) {
    std::vector<std::pair<double, std::string>> s;
    for (const char* t : {"v100", "p100", "k80"}) s.emplace_back(tm.iters_per_s(m, t, 4), t);
    std::sort(s.rbegin(), s.rend());
    if (s[0].first > 0 && s[1].first > 0 && s[0].second == type && s[0].first > 1.2 * s[1].first)
      return {m, s[1].second};
  }
  return {"", ""};
}

// Every node's CPUs held by an ordinary job without GPUs: ring jobs stay pending although the
// planner sees free GPUs (and plans them every round).
unsigned hold_all_cpus() {
  const unsigned hog = cluster().submit("-N6 --ntasks-per-node=1 -c 8 --wrap 'sleep 300'");
  return hog > 0 && wait_state(hog, "RUNNING", 20) ? hog : 0;
}

// A ring job's GPUs per node as ringsched asks for them: the type as a feature constraint and an
// untyped gres count, e.g. "v100:4" for Features=v100 TresPerNode=gres:gpu:4 (gres/gpu:4 by 24.11).
std::string gpus_of(unsigned job) {
  const std::string tres = cluster().job_field(job, "TresPerNode");  // "gres:gpu:4" or "gres/gpu:4"
  const std::string prefix = SlurmTestCluster::gpu_tres("");
  const std::string count = tres.rfind(prefix, 0) == 0 ? tres.substr(prefix.size()) : "?" + tres;
  return cluster().job_field(job, "Features") + ":" + count;
}

// A pending job's request, e.g. "v100:4 N=1".
std::string shape_of(unsigned job) { return gpus_of(job) + " N=" + cluster().job_field(job, "NumNodes"); }

std::string type_of(const std::string& shape) { return shape.substr(0, shape.find(':')); }

// Number of planning rounds that wrote the plan during `seconds`, sampling `each` meanwhile.
int rounds_while(double seconds, const std::function<void()>& each) {
  std::set<long long> seen;
  const double t0 = static_cast<double>(std::time(nullptr));
  while (std::time(nullptr) - t0 < seconds) {
    seen.insert(read_plan().generated_at);
    each();
    usleep(400000);
  }
  return static_cast<int>(seen.size()) - 1;
}

const char* kTrapScript = "--wrap 'trap \"echo resize-requested\" USR2; while true; do sleep 1; done'";

}  // namespace

class SlurmClusterTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SlurmClusterTest);
  CPPUNIT_TEST(testOptionsShownInHelp);
  CPPUNIT_TEST(testRejectsUnknownType);
  CPPUNIT_TEST(testRejectsImpossibleRange);
  CPPUNIT_TEST(testOrdinaryJobUntouched);
  CPPUNIT_TEST(testFastestTypeWhenFree);
  CPPUNIT_TEST(testFixedJobGetsItsWholeCount);
  CPPUNIT_TEST(testElasticGrowsThenShrinks);
  CPPUNIT_TEST(testElasticGrowsThenShrinksDoubling);
  CPPUNIT_TEST(testOrderingFollowsPlan);
  CPPUNIT_TEST(testCliExplainsJobs);
  CPPUNIT_TEST(testSprioListsPendingRingJobs);
  CPPUNIT_TEST(testSurvivesBadConfig);
  CPPUNIT_TEST(testRestartWithJobsInFlight);
  CPPUNIT_TEST(testPendingReshapedAtMostOncePerInterval);
  CPPUNIT_TEST(testPendingJobRetyped);
  CPPUNIT_TEST(testUserCannotRetypeRingJob);
  CPPUNIT_TEST(testPendingTypeDoesNotFlip);
  CPPUNIT_TEST(testManyPendingJobsAllStart);
  CPPUNIT_TEST(testDownAfterReconfigureLeavesNoDaemon);
  CPPUNIT_TEST_SUITE_END();

 public:
  void setUp() override { cluster(); }
  void tearDown() override { cluster().cancel_all(); }

  void testOptionsShownInHelp() {
    const auto r = cluster().run("sbatch --help");
    for (const char* o : {"--ring-model=NAME", "--ring-gpus=MIN-MAX", "--ring-elastic", "--ring-fixed",
                          "--ring-spb", "--ring-types=LIST"})
      CPPUNIT_ASSERT_MESSAGE(o, r.out.find(o) != std::string::npos);
    // The help's example model is one the cluster accepts (issue 14.6).
    const size_t eg = r.out.find("(e.g. ");
    CPPUNIT_ASSERT_MESSAGE(r.out, eg != std::string::npos);
    const std::string example = r.out.substr(eg + 6, r.out.find_first_of(";) \n", eg + 6) - eg - 6);
    std::string out;
    CPPUNIT_ASSERT_MESSAGE(example + ": " + out,
                           cluster().submit("--hold --ring-model=" + example + " --wrap true", &out) > 0);
  }

  void testRejectsUnknownType() {
    std::string out;
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --ring-types=a100 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("unknown GPU type 'a100'") != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(out, out.find("k80, p100, v100") != std::string::npos);
  }

  void testRejectsImpossibleRange() {
    std::string out;
    // 16 GPUs of one type do not exist (8 per type).
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --ring-gpus=16 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("impossible --ring-gpus=16-16") != std::string::npos);
    // Reversed range: the SPANK plugin stops sbatch itself.
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --ring-gpus=8-2 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("--ring-gpus='8-2'") != std::string::npos);
    // Above MaxGpusPerJob.
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --ring-gpus=1-64 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("MaxGpusPerJob=16") != std::string::npos);
    // A ring option without a model: refused, not submitted as an ordinary job (issue 14.6).
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-elastic --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("--ring-model") != std::string::npos);
    // A model nobody knows, with no feature row to predict it from.
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=no-such-model --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("no-such-model") != std::string::npos);
  }

  void testOrdinaryJobUntouched() {
    std::string out;
    const unsigned id = cluster().submit("--gres=gpu:k80:1 --wrap 'sleep 30'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, id > 0);
    CPPUNIT_ASSERT_EQUAL(SlurmTestCluster::gpu_tres("k80:1"), cluster().job_field(id, "TresPerNode"));
    CPPUNIT_ASSERT(wait_state(id, "RUNNING", 15));
    CPPUNIT_ASSERT(cluster().job_field(id, "NodeList").rfind("k80-", 0) == 0);
  }

  void testFastestTypeWhenFree() {
    const auto [model, second] = model_fastest_on("v100");
    CPPUNIT_ASSERT_MESSAGE("no model in gavel.csv is clearly fastest on v100", !model.empty());
    std::string out;
    const unsigned a = cluster().submit("--ring-model=" + model + " --ring-gpus=4 --ring-fixed --wrap 'sleep 60'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, a > 0);
    CPPUNIT_ASSERT(wait_state(a, "RUNNING", 20));
    CPPUNIT_ASSERT_EQUAL(std::string("v100:4"), gpus_of(a));
    CPPUNIT_ASSERT(cluster().job_field(a, "NodeList").rfind("v100-", 0) == 0);
    // With every v100 held, the same fixed-size request, one Slurm may not requeue, waits for a
    // v100 rather than start on the next best type, where it would lose more than it has waited:
    // it cannot be stopped or moved once started, Preempt=yes or not (ski rental,
    // ringsched-policies(7) RUNNING JOBS). Its plan says so.
    const unsigned b = cluster().submit("--gres=gpu:v100:4 --wrap 'sleep 300'");
    CPPUNIT_ASSERT(wait_state(b, "RUNNING", 20));
    const unsigned c =
        cluster().submit("--ring-model=" + model + " --ring-gpus=4 --ring-fixed --no-requeue --wrap 'sleep 60'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, c > 0);
    CPPUNIT_ASSERT_EQUAL(std::string("v100:4"), gpus_of(c));
    const std::string cid = std::to_string(c);
    CPPUNIT_ASSERT_MESSAGE("no waiting reason: " + describe(read_plan()), SlurmTestCluster::wait_for([&] {
      return read_plan().jobs[cid].reason.find("loses no more than it has waited") != std::string::npos;
    }, 20));
    CPPUNIT_ASSERT_EQUAL(std::string("PENDING"), cluster().job_field(c, "JobState"));
    // An elastic job may be moved later (ringrun requeues it): it takes the next best type now.
    const unsigned e = cluster().submit("--ring-model=" + model + " --ring-gpus=1-4 --ring-elastic --wrap 'sleep 60'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, e > 0);
    CPPUNIT_ASSERT(wait_state(e, "RUNNING", 20));
    CPPUNIT_ASSERT_MESSAGE(gpus_of(e), gpus_of(e).rfind(second + ":", 0) == 0);
    // Once a v100 node is free, the fixed-size job runs there.
    cluster().run("scancel " + std::to_string(b));
    CPPUNIT_ASSERT(wait_state(c, "RUNNING", 30));
    CPPUNIT_ASSERT(cluster().job_field(c, "NodeList").rfind("v100-", 0) == 0);
  }

  void testFixedJobGetsItsWholeCount() {
    // 8 GPUs: two nodes of one type (a typed gres cannot span types, even if the plan mixes them).
    std::string out;
    const unsigned id = cluster().submit("--ring-model=resnet50-b64 --ring-gpus=8 --ring-fixed --wrap 'sleep 60'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, id > 0);
    CPPUNIT_ASSERT(wait_state(id, "RUNNING", 20));
    const std::string gpus = gpus_of(id);
    CPPUNIT_ASSERT_MESSAGE(gpus, gpus.size() > 2 && gpus.compare(gpus.size() - 2, 2, ":4") == 0);
    CPPUNIT_ASSERT_EQUAL(std::string("2"), cluster().job_field(id, "NumNodes"));
    const std::string nodes = cluster().job_field(id, "NodeList");  // e.g. v100-[1-2]
    CPPUNIT_ASSERT_MESSAGE(nodes, nodes.find("[1-2]") != std::string::npos);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(nodes + " vs " + gpus, nodes.substr(0, nodes.find('-')), type_of(gpus));
  }

  void testElasticGrowsThenShrinksDoubling() {
    SlurmTestCluster::ConfOverride conf(cluster(), "Policy=doubling\n");
    testElasticGrowsThenShrinks();
  }

  void testElasticGrowsThenShrinks() {
    // v100-2 and half of v100-1 held by ordinary jobs: the elastic job starts on 2 GPUs of v100-1.
    const unsigned far = cluster().submit("--gres=gpu:v100:4 -w v100-2 --wrap 'sleep 300'");
    const unsigned near = cluster().submit("--gres=gpu:v100:2 -w v100-1 --wrap 'sleep 300'");
    CPPUNIT_ASSERT(wait_state(far, "RUNNING", 20));
    CPPUNIT_ASSERT(wait_state(near, "RUNNING", 20));
    std::string out;
    const unsigned e = cluster().submit("--ring-model=transformer-b128 --ring-types=v100 --ring-gpus=1-4 " +
                                        std::string(kTrapScript), &out);
    CPPUNIT_ASSERT_MESSAGE(out, e > 0);
    CPPUNIT_ASSERT(wait_state(e, "RUNNING", 20));
    CPPUNIT_ASSERT_EQUAL_MESSAGE("the planner should start the job on the 2 free v100s of v100-1",
                                 std::string("v100:2"), gpus_of(e));
    const std::string id = std::to_string(e);
    // The rest of its node frees up: the plan grows the job and records the request on it.
    cluster().run("scancel " + std::to_string(near));
    PlanView v;
    const bool grew = SlurmTestCluster::wait_for([&] {
      v = read_plan();
      const PlanRow& r = v.jobs[id];
      return r.runs && r.current_gpus == 2 && r.gpus == 4 && r.resize;
    }, 20);
    CPPUNIT_ASSERT_MESSAGE("no plan grew the elastic job:" + describe(v), grew);
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] {
      return cluster().job_field(e, "AdminComment").find("ringsched:resize=4") == 0; }, 10));
    // A new fixed job wants 2 v100s: the plan shrinks the elastic one back, both run.
    const unsigned n = cluster().submit("--ring-model=resnet50-b64 --ring-types=v100 --ring-gpus=2 --ring-fixed --wrap 'sleep 300'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, n > 0);
    const std::string nid = std::to_string(n);
    const bool shrank = SlurmTestCluster::wait_for([&] {
      v = read_plan();
      const PlanRow& r = v.jobs[id];
      const PlanRow& rn = v.jobs[nid];
      return rn.found && rn.runs && rn.gpus == 2 && r.runs && r.gpus > 0 && r.gpus < 4;
    }, 20);
    CPPUNIT_ASSERT_MESSAGE("no plan shrank the elastic job for the new one:" + describe(v), shrank);
  }

  void testOrderingFollowsPlan() {
    // Every node's CPUs held by an ordinary job without GPUs: ring jobs stay pending although the
    // planner sees free GPUs, so their priorities show the plan's order.
    const unsigned hog = cluster().submit("-N6 --ntasks-per-node=1 -c 8 --wrap 'sleep 300'");
    CPPUNIT_ASSERT(wait_state(hog, "RUNNING", 20));
    std::vector<unsigned> ring;
    for (const char* args : {"--ring-model=resnet18-b16 --ring-gpus=1-4",
                             "--ring-model=transformer-b128 --ring-gpus=2-8",
                             "--ring-model=lm-b20 --ring-gpus=1"}) {
      std::string out;
      const unsigned id = cluster().submit(std::string(args) + " --wrap true", &out);
      CPPUNIT_ASSERT_MESSAGE(out, id > 0);
      ring.push_back(id);
    }
    const unsigned plain = cluster().submit("--gres=gpu:k80:1 --wrap true");
    CPPUNIT_ASSERT(plain > 0);
    PlanView v;
    CPPUNIT_ASSERT_MESSAGE("the plan does not start the three ring jobs", SlurmTestCluster::wait_for([&] {
      v = read_plan();
      for (unsigned id : ring) if (!v.jobs[std::to_string(id)].runs) return false;
      return true;
    }, 20));
    // Priorities (read after the plan was applied) sort as the plan orders the jobs.
    bool ordered = SlurmTestCluster::wait_for([&] {
      v = read_plan();
      std::vector<std::pair<int, long>> order_prio;
      for (unsigned id : ring)
        order_prio.emplace_back(v.jobs[std::to_string(id)].order,
                                std::stol("0" + cluster().job_field(id, "Priority")));
      std::sort(order_prio.begin(), order_prio.end());
      for (size_t i = 1; i < order_prio.size(); ++i)
        if (order_prio[i].second >= order_prio[i - 1].second) return false;
      return order_prio.back().second > std::stol("0" + cluster().job_field(plain, "Priority"));
    }, 15);
    CPPUNIT_ASSERT_MESSAGE("priorities do not follow the plan:" + describe(v), ordered);
  }

  void testCliExplainsJobs() {
    std::string out;
    const unsigned id = cluster().submit("--ring-model=resnet50-b64 --ring-gpus=1-4 --wrap 'sleep 60'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, id > 0);
    const std::string cli = std::string(RINGSCHED_BUILDDIR) + "/tools/ringsched --plan " + cluster().plan_path();
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] { return read_plan().jobs[std::to_string(id)].found; }, 15));
    const auto status = cluster().run(cli + " status");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(status.out, 0, status.rc);
    CPPUNIT_ASSERT_MESSAGE(status.out, status.out.find(std::to_string(id) + " ") != std::string::npos);
    const auto explain = cluster().run(cli + " explain " + std::to_string(id));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(explain.out, 0, explain.rc);
    CPPUNIT_ASSERT_MESSAGE(explain.out, explain.out.find("why:") != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(explain.out, explain.out.find("resnet50-b64") != std::string::npos);
    // A pending job's request is what it asks for, not what it has now (issue 14.6).
    const unsigned held = cluster().submit("--hold --ring-model=resnet50-b64 --ring-gpus=2 --ring-fixed --wrap true", &out);
    CPPUNIT_ASSERT_MESSAGE(out, held > 0);
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] { return read_plan().jobs[std::to_string(held)].found; }, 15));
    const auto waiting = cluster().run(cli + " explain " + std::to_string(held));
    CPPUNIT_ASSERT_MESSAGE(waiting.out, waiting.out.find("asks for: 2 x ") != std::string::npos &&
                                           waiting.out.find("now:") == std::string::npos);
    const auto missing = cluster().run(cli + " explain 999999");
    CPPUNIT_ASSERT(missing.rc != 0);
  }

  // sprio lists pending ring jobs with their priority and its parts (issue 14.6: it listed none):
  // a ring job the plan starts has its whole priority as the site factor (1000000 - its place in
  // the plan's order); any other pending job the age band's base (1000) as site and the minutes
  // it waited as age. Held jobs are not listed, as sprio does for every priority plugin.
  void testSprioListsPendingRingJobs() {
    const unsigned hog = hold_all_cpus();
    CPPUNIT_ASSERT(hog > 0);
    std::vector<unsigned> ring;
    for (const char* args : {"--ring-model=resnet18-b16 --ring-gpus=1-4", "--ring-model=lm-b20 --ring-gpus=1"}) {
      std::string out;
      ring.push_back(cluster().submit(std::string(args) + " --wrap true", &out));
      CPPUNIT_ASSERT_MESSAGE(out, ring.back() > 0);
    }
    const unsigned plain = cluster().submit("--gres=gpu:k80:1 --wrap true");
    const unsigned held = cluster().submit("--hold --ring-model=resnet50-b64 --ring-gpus=2 --ring-fixed --wrap true");
    CPPUNIT_ASSERT(plain > 0 && held > 0);
    // Once the plan starts both ring jobs, their priorities are the plan's band.
    PlanView v;
    CPPUNIT_ASSERT_MESSAGE("the plan does not start the ring jobs", SlurmTestCluster::wait_for([&] {
      v = read_plan();
      for (unsigned id : ring)
        if (!v.jobs[std::to_string(id)].runs || std::stol("0" + cluster().job_field(id, "Priority")) < 100000)
          return false;
      return true;
    }, 20));
    // JOBID PRIORITY SITE AGE, one line per pending job, no header.
    std::map<unsigned, std::vector<long>> rows;
    std::string text;
    const bool listed = SlurmTestCluster::wait_for([&] {
      const auto r = cluster().run("sprio -h -o '%i %Y %S %A'");
      text = r.out;
      rows.clear();
      std::istringstream in(r.out);
      unsigned id;
      long prio, site, age;
      while (in >> id >> prio >> site >> age) rows[id] = {prio, site, age};
      return r.rc == 0 && rows.count(ring[0]) && rows.count(ring[1]) && rows.count(plain);
    }, 15);
    CPPUNIT_ASSERT_MESSAGE("sprio does not list the pending jobs:\n" + text, listed);
    CPPUNIT_ASSERT_MESSAGE("sprio lists a held job:\n" + text, !rows.count(held));
    v = read_plan();
    for (unsigned id : ring) {
      const std::vector<long>& row = rows[id];
      const long prio = std::stol("0" + cluster().job_field(id, "Priority"));
      CPPUNIT_ASSERT_EQUAL_MESSAGE(text, prio, row[0]);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(text, 1000000L - v.jobs[std::to_string(id)].order, row[1]);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(text, 0L, row[2]);
    }
    const std::vector<long>& p = rows[plain];
    CPPUNIT_ASSERT_EQUAL_MESSAGE(text, std::stol("0" + cluster().job_field(plain, "Priority")), p[0]);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(text, 1000L, p[1]);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(text, p[0] - 1000, p[2]);
    // sprio -j asks slurmctld for one job (22.05 filters in the plugin).
    const auto one = cluster().run("sprio -h -o '%i' -j " + std::to_string(ring[1]));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(one.out, std::to_string(ring[1]) + "\n", one.out.substr(one.out.find_first_not_of(' ')));
  }

  void testSurvivesBadConfig() {
    SlurmTestCluster::ConfOverride conf(cluster(), "Policy=combined\nReplanInterval=banana\n");
    const auto& r = conf.reconfigured();
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    // ProfileFiles, FeatureFile, PlanFile, MaxGpusPerJob, 4 test lines, Policy: the bad line is 11.
    const std::string where = cluster().conf_path() + ":11:";
    CPPUNIT_ASSERT_MESSAGE("no file:line error in the slurmctld log", SlurmTestCluster::wait_for([&] {
      return file_text(cluster().slurmctld_log()).find(where) != std::string::npos; }, 10));
    CPPUNIT_ASSERT(cluster().ctld_up());
    // Neutral: a ring job is refused at submit with the reason and what to do (it would never be
    // given GPUs); ordinary jobs run.
    std::string out;
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --ring-gpus=1-4 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("ringsched.conf") != std::string::npos &&
                                    out.find("without the --ring-* options") != std::string::npos);
    const unsigned plain = cluster().submit("--gres=gpu:p100:1 --wrap true");
    CPPUNIT_ASSERT(plain > 0);
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] {
      const std::string s = cluster().job_field(plain, "JobState");
      return s == "COMPLETED" || s == "RUNNING"; }, 20));
    CPPUNIT_ASSERT(cluster().ctld_up());
    // Fixed again: the rejection of unknown types is back.
    cluster().write_ringsched_conf("");
    cluster().run("scontrol reconfigure");
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] {
      std::string o;
      return cluster().submit("--ring-model=resnet50-b64 --ring-types=a100 --hold --wrap true", &o) == 0 &&
             o.find("unknown GPU type") != std::string::npos; }, 10));
  }

  void testRestartWithJobsInFlight() {
    std::string out;
    const unsigned running = cluster().submit("--ring-model=resnet50-b64 --ring-gpus=4 --ring-fixed --wrap 'sleep 120'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, running > 0);
    CPPUNIT_ASSERT(wait_state(running, "RUNNING", 20));
    const unsigned pending = cluster().submit("--ring-model=resnet50-b64 --ring-gpus=8 --ring-fixed --begin=now+600 --wrap true", &out);
    CPPUNIT_ASSERT_MESSAGE(out, pending > 0);
    const long long restarted_at = std::time(nullptr);
    cluster().restart_ctld();
    CPPUNIT_ASSERT(cluster().ctld_up());
    CPPUNIT_ASSERT_EQUAL(std::string("RUNNING"), cluster().job_field(running, "JobState"));
    CPPUNIT_ASSERT_EQUAL(std::string("PENDING"), cluster().job_field(pending, "JobState"));
    // The planning thread runs again after the restart and still sees both jobs.
    PlanView v;
    CPPUNIT_ASSERT_MESSAGE("no plan after the restart", SlurmTestCluster::wait_for([&] {
      v = read_plan();
      return v.generated_at >= restarted_at && v.jobs[std::to_string(running)].found &&
             v.jobs[std::to_string(pending)].found; }, 15));
    CPPUNIT_ASSERT_EQUAL(4, v.jobs[std::to_string(running)].current_gpus);
  }
  void testPendingReshapedAtMostOncePerInterval() {
    // An elastic v100 job, pending (CPUs held) on an idle GPU cluster, planned at 4 GPUs. Set by
    // hand (root may) to 1 GPU, the planner reshapes it back once; set to 1 again, it stays so
    // for ReshapeInterval (60 s by default) although every round still plans it at 4.
    CPPUNIT_ASSERT(hold_all_cpus() > 0);
    std::string out;
    const unsigned id = cluster().submit("--ring-model=resnet50-b64 --ring-types=v100 --ring-gpus=1-4 --wrap true", &out);
    CPPUNIT_ASSERT_MESSAGE(out, id > 0);
    const std::string planned = "v100:4";
    auto tres = [&] { return gpus_of(id); };
    CPPUNIT_ASSERT_MESSAGE("not planned at 4 v100: " + shape_of(id) + describe(read_plan()),
                           SlurmTestCluster::wait_for([&] { return tres() == planned; }, 20));
    const std::string to_one = "scontrol update JobId=" + std::to_string(id) + " TresPerNode=" + SlurmTestCluster::gpu_tres("1");
    auto r = cluster().run(to_one);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    CPPUNIT_ASSERT_MESSAGE("the planner did not reshape the job back: " + shape_of(id),
                           SlurmTestCluster::wait_for([&] { return tres() == planned; }, 20));
    r = cluster().run(to_one);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    std::vector<std::string> seen;
    int planned_at_4 = 0;
    const int rounds = rounds_while(12, [&] {
      const std::string s = tres();
      if (seen.empty() || seen.back() != s) seen.push_back(s);
      if (read_plan().jobs[std::to_string(id)].gpus == 4) ++planned_at_4;
    });
    CPPUNIT_ASSERT_MESSAGE("too few planning rounds to tell: " + std::to_string(rounds), rounds >= 3);
    CPPUNIT_ASSERT_MESSAGE("the plan no longer wants 4 GPUs", planned_at_4 > 0);
    std::string trail;
    for (const std::string& s : seen) trail += " [" + s + "]";
    CPPUNIT_ASSERT_EQUAL_MESSAGE("reshaped again within ReshapeInterval:" + trail, size_t(1), seen.size());
    CPPUNIT_ASSERT_EQUAL(std::string("v100:1"), seen[0]);
    CPPUNIT_ASSERT(cluster().job_field(id, "Reason") != "BadConstraints");
    CPPUNIT_ASSERT(std::stol("0" + cluster().job_field(id, "Priority")) > 0);
  }

  void testPendingJobRetyped() {
    // An elastic job fastest on v100 arrives while every v100 is held: job_submit gives it the
    // next best type. Held (so that it waits), it is retyped to v100 once the v100s are free, and
    // then runs there: the type is a feature constraint, which Slurm can change on a pending job.
    // (A fixed-size job would be given v100 at once: testFastestTypeWhenFree.)
    const auto [model, second] = model_fastest_on("v100");
    CPPUNIT_ASSERT_MESSAGE("no model in gavel.csv is clearly fastest on v100", !model.empty());
    std::vector<unsigned> holders;
    for (const char* node : {"v100-1", "v100-2"}) {
      holders.push_back(cluster().submit(std::string("--gres=gpu:v100:4 -w ") + node + " --wrap 'sleep 300'"));
      CPPUNIT_ASSERT(wait_state(holders.back(), "RUNNING", 20));
    }
    std::string out;
    const unsigned id =
        cluster().submit("--ring-model=" + model + " --ring-gpus=2-4 --ring-elastic --hold --wrap 'sleep 30'", &out);
    CPPUNIT_ASSERT_MESSAGE(out, id > 0);
    CPPUNIT_ASSERT_MESSAGE(gpus_of(id), gpus_of(id).rfind(second + ":", 0) == 0);
    for (unsigned h : holders) cluster().run("scancel " + std::to_string(h));
    CPPUNIT_ASSERT_MESSAGE("not retyped to v100: " + shape_of(id) + describe(read_plan()),
                           SlurmTestCluster::wait_for([&] { return gpus_of(id).rfind("v100:", 0) == 0; }, 20));
    const auto r = cluster().run("scontrol release " + std::to_string(id));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    CPPUNIT_ASSERT(wait_state(id, "RUNNING", 20));
    CPPUNIT_ASSERT(cluster().job_field(id, "NodeList").rfind("v100-", 0) == 0);
  }

  void testUserCannotRetypeRingJob() {
    // The planner owns a ring job's type: a constraint of the user's at submit is refused with a
    // message, and so is a later change of the job's features or GPUs by its owner (an ordinary
    // user, here nobody); other changes stay allowed.
    std::string out;
    CPPUNIT_ASSERT_EQUAL(0u, cluster().submit("--ring-model=resnet50-b64 --constraint=k80 --wrap true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, out.find("do not combine --constraint") != std::string::npos);
    const auto sub = cluster().run("cd / && runuser -u nobody -- sbatch --parsable --hold --output=/dev/null "
                                   "--ring-model=resnet50-b64 --ring-gpus=1-4 --wrap true");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(sub.out, 0, sub.rc);
    const std::string id = sub.out.substr(0, sub.out.find_first_of(";\n"));
    const unsigned job = static_cast<unsigned>(std::stoul(id));
    const std::string type = cluster().job_field(job, "Features");
    CPPUNIT_ASSERT_MESSAGE(type, !type.empty() && type != "(null)");
    const std::string other = type == "k80" ? "p100" : "k80";
    for (const std::string& change : {"Features=" + other, "TresPerNode=" + SlurmTestCluster::gpu_tres("4")}) {
      const auto r = cluster().run("runuser -u nobody -- scontrol update JobId=" + id + " " + change);
      CPPUNIT_ASSERT_MESSAGE(change + " was allowed: " + r.out, r.rc != 0);
      CPPUNIT_ASSERT_MESSAGE(r.out, r.out.find("denied") != std::string::npos);
    }
    CPPUNIT_ASSERT_EQUAL(type, cluster().job_field(job, "Features"));
    const auto ok = cluster().run("runuser -u nobody -- scontrol update JobId=" + id + " TimeLimit=10");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(ok.out, 0, ok.rc);
  }

  void testPendingTypeDoesNotFlip() {
    // Pending elastic and fixed jobs of several models with every GPU free in the plan: each
    // round plans them anew (sampling, market), but a job's GPU type changes at most once and
    // never goes back; nothing ends up BadConstraints or at priority 0.
    CPPUNIT_ASSERT(hold_all_cpus() > 0);
    std::vector<unsigned> jobs;
    for (const char* args : {"--ring-model=resnet18-b16 --ring-gpus=1-4", "--ring-model=transformer-b128 --ring-gpus=2-8",
                             "--ring-model=lm-b20 --ring-gpus=1-2", "--ring-model=resnet50-b64 --ring-gpus=4 --ring-fixed",
                             "--ring-model=recommendation-b512 --ring-gpus=1-4"}) {
      std::string out;
      const unsigned id = cluster().submit(std::string(args) + " --wrap true", &out);
      CPPUNIT_ASSERT_MESSAGE(out, id > 0);
      jobs.push_back(id);
    }
    std::map<unsigned, std::vector<std::string>> types;
    std::string bad;
    const int rounds = rounds_while(15, [&] {
      for (unsigned id : jobs) {
        const std::string t = type_of(shape_of(id));
        auto& v = types[id];
        if (!t.empty() && (v.empty() || v.back() != t)) v.push_back(t);
        if (cluster().job_field(id, "Reason") == "BadConstraints") bad += " " + std::to_string(id);
      }
    });
    CPPUNIT_ASSERT_MESSAGE("too few planning rounds to tell: " + std::to_string(rounds), rounds >= 4);
    CPPUNIT_ASSERT_MESSAGE("BadConstraints:" + bad, bad.empty());
    for (unsigned id : jobs) {
      std::string trail;
      for (const std::string& t : types[id]) trail += " " + t;
      CPPUNIT_ASSERT_MESSAGE("job " + std::to_string(id) + " flipped types:" + trail, types[id].size() <= 2);
      CPPUNIT_ASSERT(std::stol("0" + cluster().job_field(id, "Priority")) > 0);
    }
  }

  void testManyPendingJobsAllStart() {
    // The A/B failure: a burst of ring jobs on an idle cluster must all run and end, none left
    // never runnable (BadConstraints) by a reshape.
    std::vector<unsigned> jobs;
    const char* shapes[] = {"--ring-model=resnet18-b16 --ring-gpus=1-4", "--ring-model=transformer-b128 --ring-gpus=2-8",
                            "--ring-model=lm-b20 --ring-gpus=1-2 --ring-fixed", "--ring-model=resnet50-b64 --ring-gpus=4 --ring-fixed",
                            "--ring-model=recommendation-b512 --ring-gpus=1-4", "--ring-model=a3c --ring-gpus=1 --ring-fixed"};
    for (int i = 0; i < 18; ++i) {
      std::string out;
      // Elastic jobs may be asked to resize (SIGUSR2); without ringrun they just ignore it.
      const unsigned id = cluster().submit(std::string(shapes[i % 6]) + " --wrap 'trap \"\" USR2; sleep 4'", &out);
      CPPUNIT_ASSERT_MESSAGE(out, id > 0);
      jobs.push_back(id);
    }
    std::string bad, left;
    int active = 0;
    SlurmTestCluster::wait_for([&] {
      left.clear();
      active = 0;
      for (unsigned id : jobs) {
        const std::string state = cluster().job_field(id, "JobState");
        if (cluster().job_field(id, "Reason") == "BadConstraints") bad += " " + std::to_string(id);
        if (state != "COMPLETED") left += " " + std::to_string(id) + ":" + state + "/" + cluster().job_field(id, "Reason");
        if (state == "PENDING" || state == "RUNNING" || state == "COMPLETING" || state == "CONFIGURING") ++active;
      }
      return active == 0;
    }, 120, 1.0);
    CPPUNIT_ASSERT_MESSAGE("BadConstraints:" + bad, bad.empty());
    CPPUNIT_ASSERT_MESSAGE("not finished (COMPLETED):" + left, left.empty());
  }

  // The harness's "down" stops every daemon of the cluster, also right after a reconfigure: from
  // Slurm 23.11 slurmctld then starts a new process, which writes the PID file only after a
  // moment, and a slurmctld started so outlived its test program (25.11's test_slurm_elastic,
  // whose last test reconfigures on its way out). The window is made to last, on every version:
  // the PID file names a process that has exited. Last of the program: the cluster comes up
  // again afterwards.
  void testDownAfterReconfigureLeavesNoDaemon() {
    const ringtest::CommandResult r = cluster().run("scontrol reconfigure");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    CPPUNIT_ASSERT(SlurmTestCluster::wait_for([&] { return cluster().ctld_up(); }, 15));
    const std::string gone = cluster().run("sh -c 'echo $$'").out;
    CPPUNIT_ASSERT(!gone.empty());
    std::ofstream(cluster().dir() + "/slurmctld.pid") << gone;
    const std::string harness = std::string(RINGSCHED_SRCDIR) + "/scripts/testcluster.sh";
    const ringtest::CommandResult down = cluster().run(harness + " down");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(down.out, 0, down.rc);
    const std::string conf = "-f " + cluster().dir() + "/slurm.conf";
    const std::string find = "for p in /proc/[0-9]*; do case $(cat $p/comm 2>/dev/null) in slurmctld|slurmd) "
                             "tr '\\0' ' ' < $p/cmdline 2>/dev/null | grep -q -- '" + conf +
                             "' && echo ${p#/proc/};; esac; done; true";
    std::string left;
    const bool none = SlurmTestCluster::wait_for([&] {
      left = cluster().run(find).out;
      return left.empty();
    }, 10);
    if (!none) cluster().run("kill -KILL " + left);  // not into the next program's ports
    const ringtest::CommandResult up = cluster().run(harness + " up --plugins --builddir=" + RINGSCHED_BUILDDIR);
    CPPUNIT_ASSERT_MESSAGE("daemons left after down: " + left, none);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(up.out, 0, up.rc);
    CPPUNIT_ASSERT(cluster().ctld_up());
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SlurmClusterTest);
