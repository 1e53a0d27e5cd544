// SPDX-License-Identifier: GPL-2.0-or-later
// 500 submissions in a burst by an ordinary user against the real local cluster, with the
// ringsched plugins and without them: slurmctld must survive and hold every job, and the
// submission rate of both runs is printed (measured here, on this machine, in one run). Jobs are
// submitted held so that the burst measures admission (SPANK, job_submit, priority), not 500 job
// starts on two cores.
#include <cppunit/extensions/HelperMacros.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "slurm_test_cluster.h"

using ringtest::SlurmTestCluster;

namespace {

constexpr int kJobs = 500;
constexpr int kParallel = 4;  // concurrent sbatch processes

struct Burst {
  double seconds = 0;
  int accepted = 0;
};

Burst burst(SlurmTestCluster& c, const std::string& sbatch_args) {
  // xargs runs kParallel sbatch processes at a time; each prints its job id.
  const std::string cmd = "seq " + std::to_string(kJobs) + " | xargs -P" + std::to_string(kParallel) +
                          " -I{} sbatch --parsable --hold -o /dev/null -J burst{} " + sbatch_args +
                          " --wrap true | grep -c '^[0-9]'";
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = c.run_as(SlurmTestCluster::kSiteUser, cmd, "/");
  Burst b;
  b.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  b.accepted = std::atoi(r.out.c_str());
  return b;
}

int jobs_in_queue(SlurmTestCluster& c) {
  return std::atoi(c.run("squeue -h -t PD -o %i | wc -l").out.c_str());
}

}  // namespace

class SlurmBurstTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SlurmBurstTest);
  CPPUNIT_TEST(testBurstWithAndWithoutPlugins);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testBurstWithAndWithoutPlugins() {
    SlurmTestCluster& with = SlurmTestCluster::get("test_slurm_burst", true);
    with.cancel_all();
    const Burst ring = burst(with, "--ring-model=resnet50-b64 --ring-gpus=1-8");
    CPPUNIT_ASSERT(with.ctld_up());
    CPPUNIT_ASSERT_EQUAL(kJobs, ring.accepted);
    CPPUNIT_ASSERT_EQUAL(kJobs, jobs_in_queue(with));
    with.cancel_all();

    SlurmTestCluster& without = SlurmTestCluster::get("test_slurm_burst", false);
    const Burst plain = burst(without, "--gres=gpu:v100:1");
    CPPUNIT_ASSERT(without.ctld_up());
    CPPUNIT_ASSERT_EQUAL(kJobs, plain.accepted);
    CPPUNIT_ASSERT_EQUAL(kJobs, jobs_in_queue(without));
    without.cancel_all();

    std::printf("burst of %d sbatch (%d at a time): with ringsched plugins %.1f s = %.0f jobs/s; "
                "without plugins %.1f s = %.0f jobs/s (ratio %.2f)\n",
                kJobs, kParallel, ring.seconds, kJobs / ring.seconds, plain.seconds,
                kJobs / plain.seconds, ring.seconds / plain.seconds);
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SlurmBurstTest);
