// SPDX-License-Identifier: GPL-2.0-or-later
// ringrun, ringrun-train and the checkpoint store, with real processes, files and sockets.
#include <cppunit/extensions/HelperMacros.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "checkpoint.h"
#include "loopback.h"
#include "process_util.h"
#include "profile_report.h"
#include "ringsched/throughput.h"
#include "test_util.h"

namespace {

const std::string kRingrun = std::string(RINGSCHED_BUILDDIR) + "/wrapper/ringrun";
const std::string kTrain = std::string(RINGSCHED_BUILDDIR) + "/wrapper/ringrun-train";

size_t line_count(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  std::string l;
  while (std::getline(in, l)) n++;
  return n;
}

// Environment for a single worker started without ringrun.
std::string solo_env(const TempDir& d, int port) {
  std::string secret = d.path() + "/secret";
  std::ofstream(secret) << "test-secret-0123456789";
  chmod(secret.c_str(), 0600);
  return "RINGRT_RANK=0 RINGRT_WORLD_SIZE=1 RINGRT_MASTER_ADDR=127.0.0.1 RINGRT_MASTER_PORT=" +
         std::to_string(port) + " RINGRT_SECRET_FILE=" + secret + " ";
}

}  // namespace

class WrapperTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(WrapperTest);
  CPPUNIT_TEST(resize_1_2_4_2_matches_uninterrupted_run);
  CPPUNIT_TEST(kill_during_checkpoint_keeps_previous);
  CPPUNIT_TEST(corrupt_checkpoint_is_refused);
  CPPUNIT_TEST(trainer_falls_back_and_refuses_all_corrupt);
  CPPUNIT_TEST(worker_crash_is_reported);
  CPPUNIT_TEST(workers_get_their_own_environment);
  CPPUNIT_TEST(sigterm_checkpoints_and_stops);
  CPPUNIT_TEST(spb_trains);
  CPPUNIT_TEST(emulation_follows_profile_and_reports);
  CPPUNIT_TEST(profile_reports_are_bounded);
  CPPUNIT_TEST(bad_options_are_named);
  CPPUNIT_TEST(errors_name_the_launchers_rank);
  CPPUNIT_TEST(a_hung_command_fails_its_test_at_the_deadline);
  CPPUNIT_TEST_SUITE_END();

 public:
  void resize_1_2_4_2_matches_uninterrupted_run() {
    TempDir d;
    // Paced by emulation (lm-b80 on v100: 28 iterations/s on one GPU), so that each size runs
    // long enough to be asked for the next one; the arithmetic is the same as unpaced.
    const std::string train = kTrain + " --steps=900 --log-every=100000 --emulate-model=lm-b80 --loss-log=";
    const std::string pace = " --gpu-type=v100 --profiles=" + repo_file("data/profiles/gavel.csv");
    // Uninterrupted reference, one rank.
    std::string out;
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0,
        run(kRingrun + " --gpus=1 --ckpt-dir=" + d.path() + "/ref -- " + kTrain + " --steps=900 --log-every=100000 --loss-log=" + d.path() + "/ref.log", &out));
    // The same run, resized as it goes: each request is written once the run has made progress
    // at the current size, so every size really trains.
    const std::string log = d.path() + "/resized.log", ck = d.path() + "/ck";
    pid_t pid = spawn(kRingrun + " --gpus=1" + pace + " --ckpt-dir=" + ck + " -- " + train + log, d.path() + "/ringrun.out");
    size_t mark = 0;
    for (int size : {2, 4, 2}) {
      CPPUNIT_ASSERT(wait_for([&] { return line_count(log) >= mark + 100; }, 60));
      {
        // Written aside and renamed into place: ringrun never sees half a request.
        std::ofstream(ck + "/resize-request.tmp") << size << "\n";
        CPPUNIT_ASSERT_EQUAL(0, rename((ck + "/resize-request.tmp").c_str(), (ck + "/resize-request").c_str()));
      }
      CPPUNIT_ASSERT(wait_for([&] { return !std::ifstream(ck + "/resize-request").good(); }, 30));
      CPPUNIT_ASSERT(wait_for([&] {
        auto m = read_loss(log);
        return !m.empty() && m.rbegin()->second.second == size;
      }, 60));
      mark = line_count(log);
    }
    int rc = wait_status(pid);
    std::string rout = slurp(d.path() + "/ringrun.out");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(rout, 0, rc);
    CPPUNIT_ASSERT(contains(rout, "restarting locally at 4 GPUs"));
    auto ref = read_loss(d.path() + "/ref.log"), got = read_loss(log);
    CPPUNIT_ASSERT_EQUAL(size_t(900), ref.size());
    CPPUNIT_ASSERT_EQUAL(size_t(900), got.size());
    std::vector<int> sizes;
    double worst = 0;
    for (auto& [step, lw] : got) {
      if (sizes.empty() || sizes.back() != lw.second) sizes.push_back(lw.second);
      worst = std::max(worst, std::fabs(lw.first - ref.at(step).first));
    }
    CPPUNIT_ASSERT(sizes == std::vector<int>({1, 2, 4, 2}));
    // Same data, same global batch, sums in another order only: float64 rounding apart.
    CPPUNIT_ASSERT_MESSAGE("max loss difference " + std::to_string(worst), worst < 1e-9);
    CPPUNIT_ASSERT(ref.rbegin()->second.first < 0.5 * ref.begin()->second.first);  // it learns
  }

  void kill_during_checkpoint_keeps_previous() {
    TempDir d;
    const std::string ck = d.path() + "/ck";
    std::string out;
    const std::string env = solo_env(d, ringrt_local::free_port());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(env + kTrain + " --steps=200 --ckpt-dir=" + ck, &out));
    // Continue to 400; the final write pauses half-way and is killed there.
    pid_t pid = spawn(env + "RINGRUN_TEST_CKPT_PAUSE_MS=20000 exec " + kTrain + " --steps=400 --ckpt-dir=" + ck,
                      d.path() + "/w.out");
    auto tmp_exists = [&] {
      std::string o;
      return run("ls -a " + ck + " | grep -c '^.ckpt-400.tmp'", &o) == 0;
    };
    CPPUNIT_ASSERT(wait_for(tmp_exists, 30));
    kill(pid, SIGKILL);
    CPPUNIT_ASSERT_EQUAL(128 + SIGKILL, wait_status(pid));
    ringrun::CheckpointStore store(ck);
    ringrun::Checkpoint c;
    std::vector<std::string> warn;
    CPPUNIT_ASSERT(store.load_latest(&c, &warn));
    CPPUNIT_ASSERT_EQUAL(uint64_t(200), c.step);
    CPPUNIT_ASSERT(warn.empty());
    // And the trainer resumes from it.
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(env + kTrain + " --steps=250 --ckpt-dir=" + ck, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "restored step 200"));
    // The dead writer's temporary file was cleaned up by the next write.
    CPPUNIT_ASSERT(!tmp_exists());
  }

  void corrupt_checkpoint_is_refused() {
    TempDir d;
    ringrun::CheckpointStore store(d.path());
    std::vector<uint8_t> a(1000, 1), b(1000, 2);
    store.write(10, a);
    std::string newest = store.write(20, b);
    CPPUNIT_ASSERT_EQUAL(size_t(2), store.files().size());
    // Flip one payload byte.
    {
      std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(500);
      f.put(char(0x7f));
    }
    std::string err = error_of([&] { store.read_file(newest); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, newest) && contains(err, "checksum mismatch"));
    ringrun::Checkpoint c;
    std::vector<std::string> warn;
    CPPUNIT_ASSERT(store.load_latest(&c, &warn));
    CPPUNIT_ASSERT_EQUAL(uint64_t(10), c.step);
    CPPUNIT_ASSERT(c.payload == a);
    CPPUNIT_ASSERT_EQUAL(size_t(1), warn.size());
    CPPUNIT_ASSERT(contains(warn[0], newest));
    // Truncation and foreign files are named too.
    CPPUNIT_ASSERT_EQUAL(0, truncate(newest.c_str(), 100));
    err = error_of([&] { store.read_file(newest); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, newest) && contains(err, "truncated"));
    std::string junk = d.write("ckpt-30.rck", "hello, not a checkpoint at all, but long enough to hold a header....");
    err = error_of([&] { store.read_file(junk); });
    CPPUNIT_ASSERT_MESSAGE(err, contains(err, junk) && contains(err, "bad magic"));
    // Only the newest two are kept.
    store.write(40, a);
    store.write(50, a);
    auto files = store.files();
    CPPUNIT_ASSERT_EQUAL(size_t(2), files.size());
    CPPUNIT_ASSERT(contains(files[0], "ckpt-50.rck") && contains(files[1], "ckpt-40.rck"));
  }

  void trainer_falls_back_and_refuses_all_corrupt() {
    TempDir d;
    const std::string ck = d.path() + "/ck", env = solo_env(d, ringrt_local::free_port());
    std::string out;
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(env + kTrain + " --steps=100 --ckpt-every=50 --ckpt-dir=" + ck, &out));
    // Newest (100) corrupt: the trainer says so and resumes from 50.
    std::ofstream(ck + "/ckpt-100.rck", std::ios::app) << "x";
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(env + kTrain + " --steps=120 --ckpt-dir=" + ck, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, ck + "/ckpt-100.rck") && contains(out, "refused"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "restored step 50"));
    // All corrupt: no silent start from scratch.
    for (auto& f : ringrun::CheckpointStore(ck).files()) std::ofstream(f, std::ios::app) << "x";
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 1, run(env + kTrain + " --steps=200 --ckpt-dir=" + ck, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "unusable") && contains(out, "refusing to start over"));
    // A checkpoint of another configuration is refused, naming both.
    TempDir d2;
    const std::string ck2 = d2.path() + "/ck", env2 = solo_env(d2, 30000 + (getpid() + 11) % 20000);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(env2 + kTrain + " --steps=10 --ckpt-dir=" + ck2, &out));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 1, run(env2 + kTrain + " --steps=20 --hidden=8 --ckpt-dir=" + ck2, &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "belongs to another run"));
  }

  void worker_crash_is_reported() {
    TempDir d;
    std::string out;
    int rc = run(kRingrun + " --gpus=3 --ckpt-dir=" + d.path() +
                     "/ck -- sh -c 'if [ \"$RINGRT_RANK\" = 1 ]; then exit 3; fi; exec sleep 30'",
                 &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 1, rc);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "worker failed: rank 1") && contains(out, "exited with code 3"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "job failed"));
  }

  // Each worker sees its own rank and GPU, not the values ringrun inherited: getenv() returns the
  // first of two copies. printenv is the worker itself (a shell in between would keep the last).
  void workers_get_their_own_environment() {
    TempDir d;
    std::string out;
    int rc = run("CUDA_VISIBLE_DEVICES=3,5 RINGRT_RANK=7 RINGRT_WORLD_SIZE=9 " + kRingrun + " --gpus=2 --ckpt-dir=" +
                     d.path() + "/ck -- printenv RINGRT_RANK RINGRT_WORLD_SIZE CUDA_VISIBLE_DEVICES",
                 &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    // each worker's three lines leave in one write at its exit
    std::vector<std::string> seen;
    std::istringstream in(out);
    for (std::string l, w; std::getline(in, l);) {
      if (l.empty() || l.find_first_not_of("0123456789,") != std::string::npos) continue;
      w += (w.empty() ? "" : " ") + l;
      if (std::count(w.begin(), w.end(), ' ') == 2) seen.push_back(w), w.clear();
    }
    std::sort(seen.begin(), seen.end());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, size_t(2), seen.size());
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, std::string("0 2 3"), seen[0]);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, std::string("1 2 5"), seen[1]);
  }

  void sigterm_checkpoints_and_stops() {
    TempDir d;
    const std::string ck = d.path() + "/ck", log = d.path() + "/loss.log";
    pid_t pid = spawn("exec " + kRingrun + " --gpus=2 --ckpt-dir=" + ck + " -- " + kTrain +
                          " --steps=100000000 --log-every=100000 --loss-log=" + log,
                      d.path() + "/out");
    CPPUNIT_ASSERT(wait_for([&] { return line_count(log) > 200; }, 30));
    kill(pid, SIGTERM);
    int rc = wait_status(pid);
    std::string out = slurp(d.path() + "/out");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 75, rc);
    ringrun::Checkpoint c;
    CPPUNIT_ASSERT(ringrun::CheckpointStore(ck).load_latest(&c, nullptr));
    // The checkpoint holds exactly the steps that were logged.
    CPPUNIT_ASSERT_EQUAL(uint64_t(read_loss(log).rbegin()->first + 1), c.step);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "verified"));
    // The secret the ring used is private to the job's user.
    struct stat st;
    CPPUNIT_ASSERT_EQUAL(0, stat((ck + "/secret").c_str(), &st));
    CPPUNIT_ASSERT_EQUAL(0600, int(st.st_mode & 0777));
  }

  void spb_trains() {
    TempDir d;
    std::string out;
    auto final_loss = [&](const std::string& extra, const std::string& name) {
      std::string o;
      int rc = run(kRingrun + " --gpus=2 --ckpt-dir=" + d.path() + "/" + name + " -- " + kTrain +
                       " --steps=2000 --log-every=100000 --loss-log=" + d.path() + "/" + name + ".log " + extra,
                   &o);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(o, 0, rc);
      auto m = read_loss(d.path() + "/" + name + ".log");
      double s = 0;
      int n = 0;
      for (auto it = m.rbegin(); it != m.rend() && n < 200; ++it, ++n) s += it->second.first;
      return std::make_pair(m.begin()->second.first, s / n);
    };
    auto full = final_loss("", "full");
    auto spb = final_loss("--spb", "spb");
    // SPB keeps model quality: it learns, and ends close to full backprop.
    CPPUNIT_ASSERT(spb.second < 0.5 * spb.first);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(spb.second) + " vs " + std::to_string(full.second),
                           spb.second < 1.5 * full.second + 0.02);
    CPPUNIT_ASSERT(spb.second != full.second);  // and it really took another path
  }

  void emulation_follows_profile_and_reports() {
    TempDir d;
    const std::string profiles = repo_file("data/profiles/gavel.csv"), report = d.path() + "/measured.csv";
    // lm-b5 on one k80: 25.49 iterations/s in Gavel's table.
    std::string out;
    auto t0 = std::chrono::steady_clock::now();
    int rc = run(kRingrun + " --gpus=1 --gpu-type=K80 --model=lm-b5 --profiles=" + profiles + " --report=" + report +
                     " --ckpt-dir=" + d.path() + "/ck -- " + kTrain + " --steps=40 --emulate-model=lm-b5",
                 &out);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    CPPUNIT_ASSERT_MESSAGE(std::to_string(s), s >= 39 / 25.49);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "profile report accepted"));
    auto table = ringsched::ProfileTable::load_csv(report);
    CPPUNIT_ASSERT_EQUAL(size_t(1), table.points().size());
    const auto& p = table.points()[0];
    CPPUNIT_ASSERT_EQUAL(std::string("lm-b5"), p.model);
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), p.gpu_type);
    CPPUNIT_ASSERT(std::fabs(p.iters_per_s - 25.49) < 0.1 * 25.49);
    // Unknown model for emulation: named, no crash.
    rc = run(kRingrun + " --gpus=1 --gpu-type=k80 --profiles=" + profiles + " --ckpt-dir=" + d.path() + "/ck2 -- " +
                 kTrain + " --steps=5 --emulate-model=no-such-model",
             &out);
    CPPUNIT_ASSERT(rc != 0);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "no profile for model 'no-such-model'"));
  }

  void profile_reports_are_bounded() {
    const std::string profiles = repo_file("data/profiles/gavel.csv");
    ringrun::ProfileReporter rep(profiles, 3.0);
    ringsched::ProfilePoint p{"resnet50-b64", "v100", 1, 64, 0};
    ringsched::ThroughputModel tm(ringsched::ProfileTable::load_csv(profiles));
    double pred = tm.iters_per_s("resnet50-b64", "v100", 1);
    CPPUNIT_ASSERT(pred > 0);
    p.iters_per_s = pred * 1.2;
    CPPUNIT_ASSERT(rep.validate("resnet50-b64", "v100", 1, p).accepted);
    p.iters_per_s = pred * 10;  // implausibly fast
    auto v = rep.validate("resnet50-b64", "v100", 1, p);
    CPPUNIT_ASSERT(!v.accepted && contains(v.reason, "prediction"));
    p.iters_per_s = pred / 10;  // implausibly slow
    CPPUNIT_ASSERT(!rep.validate("resnet50-b64", "v100", 1, p).accepted);
    p.iters_per_s = pred;
    // Another model, type or count than the job's own: refused.
    v = rep.validate("resnet18-b64", "v100", 1, p);
    CPPUNIT_ASSERT(!v.accepted && contains(v.reason, "does not match"));
    CPPUNIT_ASSERT(!rep.validate("resnet50-b64", "k80", 1, p).accepted);
    CPPUNIT_ASSERT(!rep.validate("resnet50-b64", "v100", 2, p).accepted);
    p.iters_per_s = std::nan("");
    CPPUNIT_ASSERT(!rep.validate("resnet50-b64", "v100", 1, p).accepted);
    CPPUNIT_ASSERT(contains(error_of([&] { ringrun::ProfileReporter(profiles, 0.5); }), "out of range"));
  }

  void bad_options_are_named() {
    std::string out;
    CPPUNIT_ASSERT_EQUAL(2, run(kRingrun + " --gpus=0 -- true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--gpus"));
    CPPUNIT_ASSERT_EQUAL(2, run("env -u SLURM_JOB_ID " + kRingrun + " -- true", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "not inside a Slurm job"));
    CPPUNIT_ASSERT_EQUAL(2, run(kRingrun + " --gpus=1", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "no command"));
    CPPUNIT_ASSERT_EQUAL(2, run(kTrain + " --global-batch=0 --ckpt-dir=/tmp", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--global-batch"));
    CPPUNIT_ASSERT_EQUAL(2, run("env -u RINGRUN_CKPT_DIR " + kTrain + " --steps=10", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "no checkpoint folder"));
    // No periodic checkpoints would leave nothing to fall back to (issue 14.6).
    CPPUNIT_ASSERT_EQUAL(2, run(kTrain + " --ckpt-every=0 --ckpt-dir=/tmp", &out));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "--ckpt-every") && contains(out, "fall back"));
  }

  void errors_name_the_launchers_rank() {
    // A worker whose ring cannot form says which rank it is (RINGRT_RANK), not "rank -1".
    TempDir d;
    std::string secret = d.write("secret", "0123456789abcdef0123456789abcdef");
    chmod(secret.c_str(), 0600);
    std::string out;
    const int rc = run("RINGRT_RANK=1 RINGRT_WORLD_SIZE=2 RINGRT_MASTER_ADDR=127.0.0.1 RINGRT_MASTER_PORT=" +
                           std::to_string(ringrt_local::free_port()) + " RINGRT_SECRET_FILE=" + secret +
                           " RINGRT_INIT_TIMEOUT_MS=1000 RINGRT_TIMEOUT_MS=1000 " + kTrain +
                           " --steps=10 --ckpt-dir=" + d.path() + "/ck",
                       &out);
    CPPUNIT_ASSERT_MESSAGE(out, rc != 0);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "ringrun-train[rank 1]: ringrt_init() failed"));
    CPPUNIT_ASSERT_MESSAGE(out, !contains(out, "ringrun-train[rank -1]"));
  }

  // The tests' own deadline (process_util.h): a command that hangs, and what it started, are
  // killed, and the test sees 124 with what was still running, instead of waiting forever.
  void a_hung_command_fails_its_test_at_the_deadline() {
    std::string out;
    const auto t0 = std::chrono::steady_clock::now();
    CPPUNIT_ASSERT_EQUAL(124, run("echo started; sleep 100 & sleep 101", &out, 1));
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CPPUNIT_ASSERT_MESSAGE(out, took < 10);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "started") && contains(out, "still running after 1 s"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "sleep 100") && contains(out, "sleep 101"));
    std::string left;
    run("pgrep -f '^sleep 10[01]$' || true", &left);
    CPPUNIT_ASSERT_MESSAGE(left, left.empty());
    CPPUNIT_ASSERT_EQUAL(3, run("exit 3", &out, 5));
    const pid_t pid = spawn("exec sleep 100", "/dev/null");
    CPPUNIT_ASSERT_EQUAL(124, wait_status(pid, 1));
    CPPUNIT_ASSERT(kill(pid, 0) != 0);
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(WrapperTest);
