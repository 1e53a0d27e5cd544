// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun on the real local Slurm cluster (scripts/testcluster.sh, with the plugins): a training job
// of an ordinary user (ringtest1) resized 1 -> 2 -> 4 -> 2 GPUs through checkpoint, requeue and
// restore reaches the same loss curve as an uninterrupted run. The first two steps are the
// owner's own (the request file: ringrun requeues with hold, updates and releases the job, which
// the planner does not own); the last takes the planner's path (an admin writes the
// "ringsched:resize=N,type=T,at=E" AdminComment and sends SIGUSR2, as priority/ringsched does;
// ringrun checkpoints and requeues with hold; the planner thread applies the shape and releases
// the job), and also moves the job from v100 to p100. Prints each resize's latency from the job's
// events file.
#include <cppunit/extensions/HelperMacros.h>

#include <sys/stat.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "slurm_test_cluster.h"
#include "test_util.h"

namespace {

constexpr const char* kOwner = ringtest::SlurmTestCluster::kOwner;

}  // namespace

class WrapperSlurmTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(WrapperSlurmTest);
  CPPUNIT_TEST(resize_on_slurm_matches_uninterrupted_run);
  CPPUNIT_TEST_SUITE_END();

 public:
  void resize_on_slurm_matches_uninterrupted_run() {
    ringtest::SlurmTestCluster::ensure_user(kOwner);
    auto& cluster = ringtest::SlurmTestCluster::get("wrapper", true);
    const std::string stage = cluster.stage_programs();
    // The job's folder belongs to its user (the checkpoints go below it, private).
    TempDir d;
    cluster.run("chown " + std::string(kOwner) + ": " + d.path() + " && chmod 755 " + d.path());
    const std::string ck = d.path() + "/ck", loss = d.path() + "/slurm.loss";
    const std::string training = " --steps=1200 --log-every=100000 --emulate-model=lm-b80";
    // A master port exported from the submitting shell is ignored (it would put every job on it).
    const std::string script =
        d.write("job.sh", "#!/bin/sh\n" + cluster.stage_env() + "\nexport RINGRT_MASTER_PORT=1\nexec " + stage +
                              "/ringrun --model=lm-b80 --profiles=" + stage + "/gavel.csv --ckpt-dir=" + ck + " -- " +
                              stage + "/ringrun-train" + training + " --loss-log=" + loss + "\n");
    cluster.run("chown " + std::string(kOwner) + ": " + script + " && chmod 755 " + script);
    std::string out;
    // The GPU type as a feature constraint, as job_submit/ringsched gives it to ring jobs: the
    // planner's resize to 2 GPUs also moves the job from v100 to p100.
    unsigned job = cluster.submit_as(kOwner, "--requeue --open-mode=append -o " + d.path() +
                                                 "/job.out --constraint=v100 --gres=gpu:1 " + script,
                                     d.path(), &out);
    CPPUNIT_ASSERT_MESSAGE(out, job > 0);
    size_t mark = 0;
    auto lines = [&] { return read_loss(loss).size(); };
    const std::pair<int, std::string> phases[] = {{2, "v100"}, {4, "v100"}, {2, "p100"}};
    for (const auto& [size, type] : phases) {
      CPPUNIT_ASSERT(ringtest::SlurmTestCluster::wait_for([&] { return lines() >= mark + 100; }, 120));
      if (type == "p100") {
        // The planner's way: AdminComment (an admin's or the planner's to write) + SIGUSR2.
        auto r = cluster.run("scontrol update JobId=" + std::to_string(job) +
                             " AdminComment=ringsched:resize=2,type=p100,at=0 && scancel -b -s USR2 " +
                             std::to_string(job));
        CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
      } else {
        // The owner's request, written aside and renamed into place: ringrun never sees half a
        // request.
        auto r = cluster.run_as(kOwner, "echo " + std::to_string(size) + " > " + ck + "/resize-request.tmp && mv " + ck +
                                            "/resize-request.tmp " + ck + "/resize-request");
        CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
      }
      CPPUNIT_ASSERT_MESSAGE(cluster.run("cat " + d.path() + "/job.out").out,
                             ringtest::SlurmTestCluster::wait_for([&] {
                               auto m = read_loss(loss);
                               return !m.empty() && m.rbegin()->second.second == size;
                             }, 120));
      mark = lines();
      CPPUNIT_ASSERT_EQUAL(ringtest::SlurmTestCluster::gpu_tres(std::to_string(size)), cluster.job_field(job, "TresPerNode"));
      CPPUNIT_ASSERT_EQUAL(type, cluster.job_field(job, "Features"));
      CPPUNIT_ASSERT_MESSAGE(cluster.job_field(job, "NodeList"), contains(cluster.job_field(job, "NodeList"), type + "-"));
    }
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:resized=2,type=p100,at=0"), cluster.job_field(job, "AdminComment"));
    // What the job said and did, for the messages of the checks below.
    auto story = [&] { return cluster.run("tail -n 40 " + d.path() + "/job.out; cat " + ck + "/events").out; };
    CPPUNIT_ASSERT_MESSAGE(story(), ringtest::SlurmTestCluster::wait_for(
        [&] { return cluster.job_field(job, "JobState") == "COMPLETED"; }, 180));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(), std::string("3"), cluster.job_field(job, "Restarts"));
    CPPUNIT_ASSERT_MESSAGE(story(), contains(cluster.run("cat " + d.path() + "/job.out").out, "ignoring RINGRT_MASTER_PORT=1"));

    // The same training, uninterrupted, one local rank.
    auto r = cluster.run(cluster.stage_env() + "; " + stage + "/ringrun --gpus=1 --ckpt-dir=" + d.path() + "/ref-ck -- " + stage + "/ringrun-train" +
                         " --steps=1200 --log-every=100000 --loss-log=" + d.path() + "/ref.loss");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(r.out, 0, r.rc);
    auto ref = read_loss(d.path() + "/ref.loss"), got = read_loss(loss);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(story(), size_t(1200), got.size());
    double worst = 0;
    std::vector<int> sizes;
    for (auto& [step, lw] : got) {
      worst = std::max(worst, std::fabs(lw.first - ref.at(step).first));
      if (sizes.empty() || sizes.back() != lw.second) sizes.push_back(lw.second);
    }
    std::string trail;
    for (int w : sizes) trail += " " + std::to_string(w);
    CPPUNIT_ASSERT_MESSAGE("world sizes:" + trail + "\n" + story(), sizes == std::vector<int>({1, 2, 4, 2}));
    CPPUNIT_ASSERT_MESSAGE(std::to_string(worst), worst < 1e-9);

    // Latency of each resize, decision -> first iteration at the new size (printed, and bounded
    // loosely: the goal is 15 s, a shared machine can be slower).
    std::ifstream ev(ck + "/events");
    std::string line;
    double decided = 0;
    while (std::getline(ev, line)) {
      std::istringstream is(line);
      double t;
      std::string what, detail;
      is >> t >> what >> detail;
      if (what == "decision") decided = t;
      if (what == "first_step" && decided > 0) {
        std::printf("     resize latency: %.2f s (decision -> first iteration at the new size)\n", t - decided);
        CPPUNIT_ASSERT(t - decided < 60);
        decided = 0;
      }
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(WrapperSlurmTest);
