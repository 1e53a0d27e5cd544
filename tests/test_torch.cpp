// SPDX-License-Identifier: GPL-2.0-or-later
// PyTorch under ringrun (python/, ringsched-torch(3)): real /usr/bin/python3 processes with
// Debian's torch, started by the real ringrun, talking over the real libringrt. The scripts are
// python/examples/train_digits.py (a CNN on scikit-learn's load_digits) and tests/torch/*.py.
//
// Tolerance (the "fp32 reduction-order tolerance" of docs/pytorch.md): runs that differ only in
// the order in which float32 gradients are summed (world size, backend, a restart in between)
// agree within 1e-5 on every logged loss and every parameter after the run; in practice they
// differ by 1e-8 .. 1e-6.
#include <cppunit/extensions/HelperMacros.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "process_util.h"
#include "test_util.h"
#include "torch_skip.h"

namespace {

const std::string kRingrun = std::string(RINGSCHED_BUILDDIR) + "/wrapper/ringrun";
const std::string kEnv = "PYTHONPATH=" + std::string(RINGSCHED_BUILDDIR) + "/python/site ";
const std::string kPython = RINGSCHED_PYTHON;
const std::string kTrain = repo_file("python/examples/train_digits.py");
const double kTolerance = 1e-5;
const int kSteps = 120;  // every run of train_digits here: the LR schedule depends on it

// ringrun with `gpus` workers of a Python script, in the foreground.
std::string ringrun_cmd(int gpus, const std::string& ckpt, const std::string& script, const std::string& args,
                        const std::string& ringrun_opts = "") {
  return kEnv + kRingrun + " --gpus=" + std::to_string(gpus) + " --ckpt-dir=" + ckpt + " " + ringrun_opts + " -- " +
         kPython + " " + script + " " + args;
}

// A background ringrun (own process group, its pid ringrun's own); output to log.
pid_t start(const std::string& cmd, const std::string& log) { return spawn("exec env " + cmd, log); }

// Polled every 50 ms: the loss logs it reads are small, the CPU is the workers'.
bool eventually(const std::function<bool()>& cond, double seconds) { return wait_for(cond, seconds, 0.05); }

// Asks a running ringrun for a new size through its request file (renamed into place).
void request_size(const std::string& ckpt, int size) {
  std::ofstream(ckpt + "/resize-request.tmp") << size << "\n";
  CPPUNIT_ASSERT_EQUAL(0, rename((ckpt + "/resize-request.tmp").c_str(), (ckpt + "/resize-request").c_str()));
}

// Steps logged so far in a loss log (last step + 1), -1 when none.
long logged_steps(const std::string& log) {
  auto m = read_loss(log);
  return m.empty() ? -1 : m.rbegin()->first + 1;
}

// A number printed after `key` in the output, NaN when missing.
double number_after(const std::string& out, const std::string& key) {
  size_t at = out.find(key);
  return at == std::string::npos ? std::nan("") : std::atof(out.c_str() + at + key.size());
}

// compare.py's verdict on two loss logs: the largest difference over their common steps.
double loss_gap(const std::string& a, const std::string& b, long* common) {
  std::string out;
  CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(kPython + " " + repo_file("tests/torch/compare.py") + " loss " + a + " " + b, &out));
  *common = long(number_after(out, "steps "));
  return number_after(out, "maxdiff ");
}

double param_gap(const std::string& a, const std::string& b) {
  std::string out;
  CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(kPython + " " + repo_file("tests/torch/compare.py") + " params " + a + " " + b, &out));
  return number_after(out, "maxdiff ");
}

// The uninterrupted one-rank run every elastic test compares with (made once per program).
struct Reference {
  TempDir dir;
  std::string log, params;
};
const Reference& reference() {
  static std::unique_ptr<Reference> ref;
  if (!ref) {
    ref = std::make_unique<Reference>();
    ref->log = ref->dir.path() + "/ref.log";
    ref->params = ref->dir.path() + "/ref.json";
    std::string out;
    int rc = run(ringrun_cmd(1, ref->dir.path() + "/ck", kTrain,
                             "--backend=gloo --steps=" + std::to_string(kSteps) + " --loss-log=" + ref->log +
                                 " --out=" + ref->params),
                 &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
  }
  return *ref;
}

void assert_matches_reference(const std::string& log, const std::string& params, const std::string& context) {
  long common = 0;
  double gap = loss_gap(reference().log, log, &common);
  CPPUNIT_ASSERT_EQUAL_MESSAGE(context, long(kSteps), common);
  CPPUNIT_ASSERT_MESSAGE(context + ": loss differs by " + std::to_string(gap), gap <= kTolerance);
  double pgap = param_gap(reference().params, params);
  CPPUNIT_ASSERT_MESSAGE(context + ": parameters differ by " + std::to_string(pgap), pgap <= kTolerance);
}

}  // namespace

class TorchTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(TorchTest);
  CPPUNIT_TEST(unmodified_script_gets_torchrun_environment);
  CPPUNIT_TEST(collectives_match_serial_reference_per_dtype_and_op);
  CPPUNIT_TEST(ddp_on_ringrt_matches_gloo);
  CPPUNIT_TEST(resize_1_2_4_2_matches_uninterrupted_run);
  CPPUNIT_TEST(gradient_accumulation_keeps_the_global_batch);
  CPPUNIT_TEST(ignored_stop_is_killed_and_job_resumes_from_last_good_checkpoint);
  CPPUNIT_TEST(corrupt_and_partial_checkpoints_are_refused);
  CPPUNIT_TEST(spb_accuracy_within_one_point_of_full_backprop);
  CPPUNIT_TEST(measured_iterations_reach_the_profile_report);
  CPPUNIT_TEST_SUITE_END();

 public:
  void setUp() override {
    if (!torch_missing(kPython).empty()) RINGSCHED_SKIP(torch_missing(kPython));
  }

  void unmodified_script_gets_torchrun_environment() {
    TempDir d;
    std::string out;
    int rc = run(ringrun_cmd(3, d.path() + "/ck", repo_file("tests/torch/env_check.py"), ""), &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    for (int r = 0; r < 3; ++r) {
      const std::string rank = std::to_string(r);
      CPPUNIT_ASSERT_MESSAGE(out, contains(out, "env RANK=" + rank + " LOCAL_RANK=" + rank +
                                                    " WORLD_SIZE=3 LOCAL_WORLD_SIZE=3 GROUP_RANK=0 ROLE_RANK=" + rank +
                                                    " MASTER_ADDR=127.0.0.1 MASTER_PORT="));
      CPPUNIT_ASSERT_MESSAGE(out, contains(out, "TORCHELASTIC_RESTART_COUNT=0 RINGRT_RANK=" + rank + " "));
    }
    // gloo's store and libringrt's rendezvous use different ports, so both work in one job.
    const double torch_port = number_after(out, "MASTER_PORT="), ring_port = number_after(out, "RINGRT_MASTER_PORT=");
    CPPUNIT_ASSERT_MESSAGE(out, torch_port > 0 && ring_port > 0 && torch_port != ring_port);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "gloo allreduce 6 ringrt allreduce 6"));
  }

  void collectives_match_serial_reference_per_dtype_and_op() {
    TempDir d;
    std::string out;
    // Three ranks: uneven ring segments, and a root other than 0 for the rooted calls.
    int rc = run(ringrun_cmd(3, d.path() + "/ck", repo_file("tests/torch/collectives.py"), ""), &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    for (int r = 0; r < 3; ++r)
      CPPUNIT_ASSERT_MESSAGE(out, contains(out, "rank " + std::to_string(r) + ": 124 checks passed"));
  }

  void ddp_on_ringrt_matches_gloo() {
    TempDir d;
    // A few steps show that DDP averages its buckets alike on both backends (docs/pytorch.md:
    // bitwise equal at 2 ranks after 60 steps, 3.0e-8 apart at 4 ranks after 40); more steps
    // would only add time to a test that starts six torch processes.
    const std::string steps = " --steps=15 --out=";
    std::string out;
    for (const char* backend : {"ringrt", "gloo"}) {
      int rc = run(ringrun_cmd(3, d.path() + "/ck-" + backend, kTrain,
                               std::string("--backend=") + backend + steps + d.path() + "/" + backend + ".json"),
                   &out);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    }
    double gap = param_gap(d.path() + "/ringrt.json", d.path() + "/gloo.json");
    CPPUNIT_ASSERT_MESSAGE("DDP parameters differ by " + std::to_string(gap), gap <= kTolerance);
  }

  void resize_1_2_4_2_matches_uninterrupted_run() {
    reference();
    TempDir d;
    const std::string ck = d.path() + "/ck", log = d.path() + "/resized.log", params = d.path() + "/resized.json";
    // Paced so that each size trains a while before the next request.
    pid_t pid = start(ringrun_cmd(1, ck, kTrain, "--steps=" + std::to_string(kSteps) + " --pace=0.05 --loss-log=" + log +
                                                     " --out=" + params),
                      d.path() + "/ringrun.out");
    long mark = 0;
    for (int size : {2, 4, 2}) {
      CPPUNIT_ASSERT_MESSAGE(slurp(d.path() + "/ringrun.out"),
                             eventually([&] { return logged_steps(log) >= mark + 20; }, 120));
      request_size(ck, size);
      CPPUNIT_ASSERT_MESSAGE(slurp(d.path() + "/ringrun.out"), eventually([&] {
        auto m = read_loss(log);
        return !m.empty() && m.rbegin()->second.second == size;
      }, 120));
      mark = logged_steps(log);
    }
    std::string ringrun_out;
    CPPUNIT_ASSERT_EQUAL_MESSAGE(slurp(d.path() + "/ringrun.out"), 0, wait_status(pid));
    ringrun_out = slurp(d.path() + "/ringrun.out");
    CPPUNIT_ASSERT_MESSAGE(ringrun_out, contains(ringrun_out, "restored step"));
    // Every size really trained.
    std::set<int> worlds;
    for (auto& [step, lw] : read_loss(log)) worlds.insert(lw.second);
    CPPUNIT_ASSERT_MESSAGE(ringrun_out, worlds == std::set<int>({1, 2, 4}));
    assert_matches_reference(log, params, ringrun_out);
  }

  void gradient_accumulation_keeps_the_global_batch() {
    reference();
    TempDir d;
    // 64 samples over 3 ranks (21/21/22) in micro-batches of at most 8: uneven shards and
    // accumulation, the same update as one rank taking all 64 at once.
    const std::string log = d.path() + "/acc.log", params = d.path() + "/acc.json";
    std::string out;
    int rc = run(ringrun_cmd(3, d.path() + "/ck", kTrain, "--steps=" + std::to_string(kSteps) +
                                                           " --micro-batch=8 --loss-log=" + log + " --out=" + params),
                 &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    assert_matches_reference(log, params, out);
  }

  void ignored_stop_is_killed_and_job_resumes_from_last_good_checkpoint() {
    reference();
    TempDir d;
    const std::string ck = d.path() + "/ck", log = d.path() + "/loss.log", params = d.path() + "/out.json";
    const std::string args = "--steps=" + std::to_string(kSteps) + " --ckpt-every=10 --loss-log=" + log + " --out=" + params;
    pid_t pid = start(ringrun_cmd(2, ck, kTrain, args + " --pace=0.05 --ignore-stop", "--grace=2"),
                      d.path() + "/first.out");
    CPPUNIT_ASSERT_MESSAGE(slurp(d.path() + "/first.out"), eventually([&] { return logged_steps(log) >= 35; }, 120));
    request_size(ck, 1);
    // The workers ignore SIGUSR1: ringrun kills them after its grace period and reports it.
    int rc = wait_status(pid);
    std::string first = slurp(d.path() + "/first.out");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(first, 1, rc);
    CPPUNIT_ASSERT_MESSAGE(first, contains(first, "did not stop within 2 s; killing them"));
    // Restarted, the job resumes from the last periodic checkpoint and ends where the
    // uninterrupted run ends.
    std::string out;
    rc = run(ringrun_cmd(1, ck, kTrain, args), &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    long restored = long(number_after(out, "restored step "));
    CPPUNIT_ASSERT_MESSAGE(out, restored >= 30 && restored % 10 == 0);
    assert_matches_reference(log, params, first + out);
  }

  void corrupt_and_partial_checkpoints_are_refused() {
    reference();
    TempDir d;
    const std::string ck = d.path() + "/ck", log = d.path() + "/loss.log", params = d.path() + "/out.json";
    const std::string args = "--steps=" + std::to_string(kSteps) + " --ckpt-every=20 --loss-log=" + log + " --out=" + params;
    // Stopped by SIGTERM after step 45 or so: checkpoints at 40 (periodic) and at the stop.
    pid_t pid = start(ringrun_cmd(2, ck, kTrain, args + " --pace=0.05"), d.path() + "/first.out");
    CPPUNIT_ASSERT_MESSAGE(slurp(d.path() + "/first.out"), eventually([&] { return logged_steps(log) >= 45; }, 120));
    kill(pid, SIGTERM);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(slurp(d.path() + "/first.out"), 75, wait_status(pid));
    std::string out;
    CPPUNIT_ASSERT_EQUAL(0, run("ls " + ck + "/ckpt-*.rck | sort -t- -k2 -n | tail -1", &out));
    const std::string newest = out.substr(0, out.find('\n'));
    CPPUNIT_ASSERT_MESSAGE(out, !contains(newest, "ckpt-40.rck"));
    // One byte of the newest checkpoint's payload flipped; a partial file (the first half of a
    // good one) as the newest of all.
    {
      std::fstream f(newest, std::ios::in | std::ios::out | std::ios::binary);
      f.seekg(-100, std::ios::end);
      char c = 0;
      f.read(&c, 1);
      f.seekp(-100, std::ios::end);
      c ^= 0x5a;
      f.write(&c, 1);
    }
    std::string half = slurp(ck + "/ckpt-40.rck");
    {
      std::ofstream f(ck + "/ckpt-999.rck", std::ios::binary);
      f.write(half.data(), std::streamsize(half.size() / 2));
    }
    chmod((ck + "/ckpt-999.rck").c_str(), 0600);
    int rc = run(ringrun_cmd(2, ck, kTrain, args), &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "refused checkpoint " + ck + "/ckpt-999.rck: truncated"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "refused checkpoint " + newest));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "restored step 40 from " + ck + "/ckpt-40.rck"));
    assert_matches_reference(log, params, out);
    // With nothing usable left the job refuses to start over from scratch.
    for (const std::string& f : {ck + "/ckpt-999.rck", ck + "/ckpt-100.rck", ck + "/ckpt-120.rck"}) {
      std::ofstream(f, std::ios::trunc) << "RINGCKPT garbage";
      chmod(f.c_str(), 0600);
    }
    rc = run(ringrun_cmd(1, ck, kTrain, args), &out);
    CPPUNIT_ASSERT_MESSAGE(out, rc == 1);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "every checkpoint in " + ck + " is unusable"));
  }

  void spb_accuracy_within_one_point_of_full_backprop() {
    TempDir d;
    std::string out, spb_out;
    const std::string steps = " --steps=200 --out=";
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, run(ringrun_cmd(2, d.path() + "/ck1", kTrain, steps + d.path() + "/full.json"), &out));
    CPPUNIT_ASSERT_EQUAL_MESSAGE(spb_out, 0,
                                 run(ringrun_cmd(2, d.path() + "/ck2", kTrain, "--spb" + steps + d.path() + "/spb.json"), &spb_out));
    const double full = number_after(out, "accuracy "), spb = number_after(spb_out, "accuracy ");
    std::printf("     SPB: accuracy %.4f vs %.4f full; step %.2f ms vs %.2f ms full\n", spb, full,
                number_after(spb_out.substr(spb_out.find("accuracy ")), " step "),
                number_after(out.substr(out.find("accuracy ")), " step "));
    CPPUNIT_ASSERT_MESSAGE(out + spb_out, full > 0.9);
    CPPUNIT_ASSERT_MESSAGE(out + spb_out, std::abs(full - spb) <= 0.01);
    // SPB really trained differently (the shallow ranks skipped the convolutions' backward).
    CPPUNIT_ASSERT(param_gap(d.path() + "/full.json", d.path() + "/spb.json") > 1e-3);
  }

  void measured_iterations_reach_the_profile_report() {
    TempDir d;
    // A profile that predicts about what this machine does (the report is accepted within 100x).
    const std::string profiles = d.write("profiles.csv", "model,gpu_type,num_gpus,global_batch,iters_per_s\n"
                                                          "digits-cnn,cpu,1,64,20\ndigits-cnn,cpu,2,64,30\n");
    const std::string report = d.path() + "/report.csv";
    std::string out;
    int rc = run(ringrun_cmd(2, d.path() + "/ck", kTrain, "--steps=30",
                             "--model=digits-cnn --gpu-type=cpu --profiles=" + profiles + " --report=" + report +
                                 " --report-factor=100"),
                 &out);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, rc);
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "iterations/s on 2 x cpu over 29 steps"));
    CPPUNIT_ASSERT_MESSAGE(out, contains(out, "profile report accepted"));
    std::string csv = slurp(report);
    CPPUNIT_ASSERT_MESSAGE(csv, contains(csv, "digits-cnn,cpu,2,64,"));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(TorchTest);
