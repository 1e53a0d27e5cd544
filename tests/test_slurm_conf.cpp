// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the plugins' Slurm-free parts: the --ring-* option parser (shared by the SPANK
// plugin and job_submit), ringsched.conf parsing with file:line errors, and admission of ring
// jobs against a cluster, with the real Gavel profiles and model features of data/.
#include <cppunit/extensions/HelperMacros.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

#include "ring_request.h"
#include "configured_policy.h"
#include "ringsched_conf.h"
#include "test_util.h"

using ringsched::ConfiguredPolicy;
using ringsched::InputError;
using ringsched::RingRequest;
using ringsched::RingschedConf;

namespace {

std::string data(const std::string& f) { return std::string(RINGSCHED_SRCDIR) + "/data/" + f; }

RingschedConf good_conf() {
  return RingschedConf::parse("ProfileFiles=" + data("profiles/gavel.csv") + "\nFeatureFile=" +
                                  data("model_features.csv") + "\nMaxGpusPerJob=16\n",
                              "test.conf");
}

ringsched::Cluster three_types() {
  ringsched::Cluster c;
  for (const char* t : {"v100", "p100", "k80"})
    for (int i = 1; i <= 2; ++i) {
      ringsched::Node n;
      n.name = std::string(t) + "-" + std::to_string(i);
      n.gpu_type = t;
      n.gpus = 4;
      c.nodes.push_back(n);
    }
  return c;
}

std::string conf_error(const std::string& text) {
  try {
    RingschedConf::parse(text, "ringsched.conf");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class SlurmConfTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SlurmConfTest);
  CPPUNIT_TEST(testOptionValues);
  CPPUNIT_TEST(testOptionErrors);
  CPPUNIT_TEST(testEnvRoundTrip);
  CPPUNIT_TEST(testForgedEnvRejected);
  CPPUNIT_TEST(testConfValues);
  CPPUNIT_TEST(testConfErrorsNameFileAndLine);
  CPPUNIT_TEST(testConfFileMissing);
  CPPUNIT_TEST(testAdmitFillsDefaults);
  CPPUNIT_TEST(testAdmitRejects);
  CPPUNIT_TEST(testSimilarityAdmitsUnprofiledModel);
  CPPUNIT_TEST(testInitialShape);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testOptionValues() {
    RingRequest r;
    std::string err;
    CPPUNIT_ASSERT(r.set("ring-model", "resnet50-b64", err));
    CPPUNIT_ASSERT(r.set("ring-gpus", "2-16", err));
    CPPUNIT_ASSERT(r.set("ring-types", "V100,p100,v100", err));
    CPPUNIT_ASSERT(r.set("ring-spb", "", err));
    CPPUNIT_ASSERT(r.validate(err));
    CPPUNIT_ASSERT_EQUAL(2, r.min_gpus);
    CPPUNIT_ASSERT_EQUAL(16, r.max_gpus);
    CPPUNIT_ASSERT_EQUAL(size_t(2), r.types.size());  // lower-cased, duplicates dropped
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), r.types[0]);
    CPPUNIT_ASSERT(r.is_elastic());
    CPPUNIT_ASSERT(r.set("ring-fixed", "", err));
    CPPUNIT_ASSERT(!r.is_elastic());
    RingRequest one;
    CPPUNIT_ASSERT(one.set("ring-gpus", "4", err));
    CPPUNIT_ASSERT_EQUAL(4, one.min_gpus);
    CPPUNIT_ASSERT_EQUAL(4, one.max_gpus);
  }

  void testOptionErrors() {
    std::string err;
    RingRequest r;
    CPPUNIT_ASSERT(!r.set("ring-gpus", "8-2", err));
    CPPUNIT_ASSERT(err.find("--ring-gpus='8-2'") != std::string::npos);
    for (const char* bad : {"0", "1-99999", "-3", "a-b", "", "1-", "4-4-4"})
      CPPUNIT_ASSERT_MESSAGE(bad, !r.set("ring-gpus", bad, err));
    CPPUNIT_ASSERT(!r.set("ring-model", "x;rm -rf", err));
    CPPUNIT_ASSERT(!r.set("ring-model", std::string(65, 'a'), err));
    CPPUNIT_ASSERT(!r.set("ring-types", "v100,,k80", err));
    CPPUNIT_ASSERT(!r.set("ring-batch", "0", err));
    CPPUNIT_ASSERT(!r.set("ring-iters", "1e9", err));
    RingRequest both;
    CPPUNIT_ASSERT(both.set("ring-elastic", "", err));
    CPPUNIT_ASSERT(!both.set("ring-fixed", "", err));
    CPPUNIT_ASSERT(err.find("exclude each other") != std::string::npos);
    RingRequest no_model;
    CPPUNIT_ASSERT(no_model.set("ring-gpus", "1-4", err));
    CPPUNIT_ASSERT(!no_model.validate(err));
    CPPUNIT_ASSERT(err.find("--ring-model is required") != std::string::npos);
    RingRequest elastic_one;
    elastic_one.set("ring-model", "m", err);
    elastic_one.set("ring-gpus", "4", err);
    elastic_one.set("ring-elastic", "", err);
    CPPUNIT_ASSERT(!elastic_one.validate(err));
  }

  void testEnvRoundTrip() {
    RingRequest r;
    std::string err;
    r.set("ring-model", "transformer-b128", err);
    r.set("ring-gpus", "1-8", err);
    r.set("ring-fixed", "", err);
    r.set("ring-batch", "128", err);
    r.set("ring-iters", "5000", err);
    r.set("ring-types", "v100,k80", err);
    std::vector<std::string> env = {"PATH=/bin", "SPANK_OTHER=1"};
    for (const auto& [k, v] : r.to_env()) env.push_back("SPANK_" + k + "=" + v);
    RingRequest back;
    CPPUNIT_ASSERT_MESSAGE(err, back.from_env(env, err));
    CPPUNIT_ASSERT(back.present);
    CPPUNIT_ASSERT_EQUAL(r.model, back.model);
    CPPUNIT_ASSERT_EQUAL(8, back.max_gpus);
    CPPUNIT_ASSERT_EQUAL(0, back.elastic);
    CPPUNIT_ASSERT_EQUAL(128L, back.batch);
    CPPUNIT_ASSERT_EQUAL(5000.0, back.iterations);
    CPPUNIT_ASSERT_EQUAL(size_t(2), back.types.size());
    RingRequest ordinary;
    CPPUNIT_ASSERT(ordinary.from_env({"PATH=/bin", "SPANK_FOO=bar"}, err));
    CPPUNIT_ASSERT(!ordinary.present);
  }

  void testForgedEnvRejected() {
    // The SPANK environment comes from the client: job_submit checks it again.
    std::string err;
    RingRequest r;
    CPPUNIT_ASSERT(!r.from_env({"SPANK_RING_MODEL=m", "SPANK_RING_GPUS=0-99999"}, err));
    CPPUNIT_ASSERT(err.find("--ring-gpus") != std::string::npos);
    RingRequest e;
    CPPUNIT_ASSERT(!e.from_env({"RING_MODEL=m", "RING_ELASTIC=maybe"}, err));
    RingRequest no_model;
    CPPUNIT_ASSERT(!no_model.from_env({"RING_GPUS=1-4"}, err));
  }

  void testConfValues() {
    const RingschedConf c = RingschedConf::parse(
        "# comment\n  policy = Doubling  # trailing\nReplanInterval=7\nRestartCost=12.5\n"
        "MinGainMultiple=3\nMinResizeInterval=90\nSamples=16\nProfileFiles=a.csv, /abs/b.csv\n"
        "PlanFile=plan.json\nMaxGpusPerJob=32\nPowerOfTwo=no\nResizeRunning=false\nPreempt=no\n",
        "/etc/slurm/ringsched.conf");
    CPPUNIT_ASSERT(c.planner.policy == ringsched::Policy::Doubling);
    CPPUNIT_ASSERT_EQUAL(7, c.replan_interval_s);
    CPPUNIT_ASSERT_EQUAL(12.5, c.planner.costs.restart_s);
    CPPUNIT_ASSERT_EQUAL(3.0, c.planner.costs.min_gain_multiple);
    CPPUNIT_ASSERT_EQUAL(90.0, c.planner.costs.min_interval_s);
    CPPUNIT_ASSERT_EQUAL(16, c.planner.samples);
    CPPUNIT_ASSERT_EQUAL(std::string("/etc/slurm/a.csv"), c.profile_files.at(0));  // relative to the file
    CPPUNIT_ASSERT_EQUAL(std::string("/abs/b.csv"), c.profile_files.at(1));
    CPPUNIT_ASSERT_EQUAL(std::string("/etc/slurm/plan.json"), c.plan_file);
    CPPUNIT_ASSERT_EQUAL(32, c.max_gpus_per_job);
    CPPUNIT_ASSERT(!c.planner.power_of_two);
    CPPUNIT_ASSERT(!c.resize_running);
    CPPUNIT_ASSERT(!c.planner.preempt);
    // Pending-job reshaping: defaults, then set.
    CPPUNIT_ASSERT_EQUAL(2, c.min_replan_gap_s);
    CPPUNIT_ASSERT_EQUAL(60, c.reshape_interval_s);
    CPPUNIT_ASSERT_EQUAL(90, c.resize_hold_s);
    const RingschedConf r = RingschedConf::parse(
        "ProfileFiles=p.csv\nMinReplanGap=5\nReshapeInterval=0\nResizeHold=30\n", "ringsched.conf");
    CPPUNIT_ASSERT_EQUAL(5, r.min_replan_gap_s);
    CPPUNIT_ASSERT(r.planner.preempt);  // the default
    CPPUNIT_ASSERT(r.planner.tail_guard);
    CPPUNIT_ASSERT(!RingschedConf::parse("ProfileFiles=p.csv\nTailGuard=no\n", "x").planner.tail_guard);
    CPPUNIT_ASSERT(r.planner.placement_horizon);
    const std::string off = "ProfileFiles=p.csv\nPlacementHorizon=no\n";
    CPPUNIT_ASSERT(!RingschedConf::parse(off, "x").planner.placement_horizon);
    const std::string maybe = error_of([] {
      RingschedConf::parse("ProfileFiles=p.csv\nPlacementHorizon=maybe\n", "ringsched.conf");
    });
    CPPUNIT_ASSERT_MESSAGE("PlacementHorizon=maybe: " + maybe, contains(maybe, "ringsched.conf:2"));
    // The lend horizon: the planner's default, a number of seconds, 0 (off); a bad one named.
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.lend_horizon_s, r.planner.lend_horizon_s);
    CPPUNIT_ASSERT_EQUAL(600.0, RingschedConf::parse("ProfileFiles=p.csv\nLendHorizon=600\n", "x").planner.lend_horizon_s);
    CPPUNIT_ASSERT_EQUAL(0.0, RingschedConf::parse("ProfileFiles=p.csv\nLendHorizon=0\n", "x").planner.lend_horizon_s);
    const std::string negative =
        error_of([] { RingschedConf::parse("ProfileFiles=p.csv\nLendHorizon=-5\n", "ringsched.conf"); });
    CPPUNIT_ASSERT_MESSAGE("LendHorizon=-5: " + negative, contains(negative, "ringsched.conf:2"));
    // ... and at least LendArrivals mean gaps between arrivals.
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.lend_arrivals, r.planner.lend_arrivals);
    CPPUNIT_ASSERT_EQUAL(0.0, RingschedConf::parse("ProfileFiles=p.csv\nLendArrivals=0\n", "x").planner.lend_arrivals);
    const std::string many =
        error_of([] { RingschedConf::parse("ProfileFiles=p.csv\n\nLendArrivals=many\n", "ringsched.conf"); });
    CPPUNIT_ASSERT_MESSAGE("LendArrivals=many: " + many, contains(many, "ringsched.conf:3"));
    // Finish-time fairness and the starvation bound: the planner's defaults, then set.
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.fairness, r.planner.fairness);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.late_factor, r.planner.late_factor);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.late_share, r.planner.late_share);
    const RingschedConf f = RingschedConf::parse(
        "ProfileFiles=p.csv\nFairness=1.5\nLateFactor=0\nLateShare=0.25\n", "x");
    CPPUNIT_ASSERT_EQUAL(1.5, f.planner.fairness);
    CPPUNIT_ASSERT_EQUAL(0.0, f.planner.late_factor);
    CPPUNIT_ASSERT_EQUAL(0.25, f.planner.late_share);
    // The example an admin copies parses, and says what the defaults are.
    const RingschedConf ex = RingschedConf::load(std::string(RINGSCHED_SRCDIR) + "/etc/ringsched.conf.example");
    CPPUNIT_ASSERT(ex.planner.policy == ringsched::Policy::Combined);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.fairness, ex.planner.fairness);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.late_factor, ex.planner.late_factor);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.late_share, ex.planner.late_share);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.tail_guard, ex.planner.tail_guard);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.placement_horizon,
                         ex.planner.placement_horizon);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.lend_horizon_s, ex.planner.lend_horizon_s);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.lend_arrivals, ex.planner.lend_arrivals);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.replace_slower, ex.planner.replace_slower);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.replace_slower, r.planner.replace_slower);
    CPPUNIT_ASSERT_EQUAL(0.0, RingschedConf::parse("ProfileFiles=p.csv\nReplaceSlower=0\n", "x").planner.replace_slower);
    CPPUNIT_ASSERT_EQUAL(2.5, RingschedConf::parse("ProfileFiles=p.csv\nReplaceSlower=2.5\n", "x").planner.replace_slower);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.fair_placement, ex.planner.fair_placement);
    CPPUNIT_ASSERT_EQUAL(ringsched::PlannerConfig{}.fair_placement, r.planner.fair_placement);
    CPPUNIT_ASSERT_EQUAL(0.0, RingschedConf::parse("ProfileFiles=p.csv\nFairPlacement=0\n", "x").planner.fair_placement);
    CPPUNIT_ASSERT_EQUAL(8.0, RingschedConf::parse("ProfileFiles=p.csv\nFairPlacement=8\n", "x").planner.fair_placement);
    CPPUNIT_ASSERT_EQUAL(0, r.reshape_interval_s);
    CPPUNIT_ASSERT_EQUAL(30, r.resize_hold_s);
    // Similarity neighbours: auto (0) by default, a number, or auto spelled out.
    CPPUNIT_ASSERT_EQUAL(0, c.similarity_k);
    CPPUNIT_ASSERT_EQUAL(5, RingschedConf::parse("ProfileFiles=p.csv\nSimilarityK=5\n", "x").similarity_k);
    CPPUNIT_ASSERT_EQUAL(0, RingschedConf::parse("ProfileFiles=p.csv\nSimilarityK=Auto\n", "x").similarity_k);
  }

  void testConfErrorsNameFileAndLine() {
    const std::string base = "ProfileFiles=p.csv\n";
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched.conf:2: ReplanInterval='banana': expected a whole number in 1..86400"),
                         conf_error(base + "ReplanInterval=banana\n"));
    CPPUNIT_ASSERT(conf_error(base + "\n\nReplanInterval=0\n").find("ringsched.conf:4:") == 0);
    CPPUNIT_ASSERT(conf_error(base + "Samples=2.5\n").find("whole number") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "Policy=fastest\n").find("ringsched.conf:2: Policy='fastest'") == 0);
    CPPUNIT_ASSERT(conf_error(base + "NoSuchKey=1\n").find("unknown key 'NoSuchKey'") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "just words\n").find("expected Key=Value") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "RestartCost=-1\n").find("RestartCost") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "RestartCost=nan\n").find("RestartCost") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "MinReplanGap=0\n").find("ringsched.conf:2: MinReplanGap='0'") == 0);
    CPPUNIT_ASSERT(conf_error(base + "ReshapeInterval=-5\n").find("ReshapeInterval") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "ResizeHold=1e9\n").find("ResizeHold") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "PowerOfTwo=perhaps\n").find("yes or no") != std::string::npos);
    CPPUNIT_ASSERT(conf_error(base + "SimilarityK=0\n").find("ringsched.conf:2: SimilarityK='0'") == 0);
    CPPUNIT_ASSERT(conf_error(base + "SimilarityK=some\n").find("SimilarityK") != std::string::npos);
    CPPUNIT_ASSERT(conf_error("Policy=static\n").find("ProfileFiles is required") != std::string::npos);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched.conf:2: LateShare='1.5': expected a number in 0..1"),
                         conf_error(base + "LateShare=1.5\n"));
    CPPUNIT_ASSERT(conf_error(base + "Fairness=-1\n").find("ringsched.conf:2: Fairness='-1'") == 0);
    CPPUNIT_ASSERT(conf_error(base + "LateFactor=inf\n").find("ringsched.conf:2: LateFactor='inf'") == 0);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched.conf:2: ReplaceSlower='0.5': expected 0 (off) or a factor of 1 or more"),
                         conf_error(base + "ReplaceSlower=0.5\n"));
    CPPUNIT_ASSERT(conf_error(base + "FairPlacement=-1\n").find("ringsched.conf:2: FairPlacement='-1'") == 0);
    // A removed key: the line, and what to do, rather than "unknown key".
    CPPUNIT_ASSERT(conf_error(base + "LendValuation=no\n").find("ringsched.conf:2: LendValuation was removed") == 0);
    CPPUNIT_ASSERT(conf_error(base + "LendValuation=no\n").find("delete the line") != std::string::npos);
  }

  void testConfFileMissing() {
    try {
      RingschedConf::load("/nonexistent/ringsched.conf");
      CPPUNIT_FAIL("loaded a missing file");
    } catch (const InputError& e) {
      CPPUNIT_ASSERT(std::string(e.what()).find("/nonexistent/ringsched.conf") == 0);
    }
    // A profile file with a bad row: the engine names that file and line.
    char path[] = "/tmp/ringsched-test-XXXXXX.csv";
    const int fd = mkstemps(path, 4);
    CPPUNIT_ASSERT(fd >= 0);
    const std::string text = "model,gpu_type,num_gpus,global_batch,iters_per_s\nm,v100,1,32,-5\n";
    CPPUNIT_ASSERT(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    close(fd);
    try {
      ConfiguredPolicy e(RingschedConf::parse(std::string("ProfileFiles=") + path + "\n", "x.conf"));
      unlink(path);
      CPPUNIT_FAIL("accepted a negative throughput");
    } catch (const InputError& e) {
      unlink(path);
      CPPUNIT_ASSERT_MESSAGE(e.what(), std::string(e.what()).find(std::string(path) + ":2") != std::string::npos);
    }
  }

  void testAdmitFillsDefaults() {
    ConfiguredPolicy engine(good_conf());
    RingRequest r;
    std::string err;
    r.set("ring-model", "resnet50-b64", err);
    CPPUNIT_ASSERT_MESSAGE(err, engine.admit(r, three_types(), err));
    CPPUNIT_ASSERT_EQUAL(1, r.min_gpus);
    CPPUNIT_ASSERT_EQUAL(1, r.max_gpus);
    CPPUNIT_ASSERT_EQUAL(size_t(3), r.types.size());
    RingRequest e;
    e.set("ring-model", "resnet50-b64", err);
    e.set("ring-elastic", "", err);
    CPPUNIT_ASSERT(engine.admit(e, three_types(), err));
    CPPUNIT_ASSERT_EQUAL(16, e.max_gpus);  // MaxGpusPerJob
    const ringsched::Job job = engine.make_job("7", e, 100, 600);
    CPPUNIT_ASSERT(job.elastic);
    // Iterations: what one GPU of the best type does in the 600 s limit.
    CPPUNIT_ASSERT_DOUBLES_EQUAL(engine.model().iters_per_s("resnet50-b64", "v100", 1) * 600, job.iterations, 1e-6);
  }

  void testAdmitRejects() {
    ConfiguredPolicy engine(good_conf());
    const auto cluster = three_types();
    auto reject = [&](const std::string& gpus, const std::string& types, const std::string& model) {
      RingRequest r;
      std::string err;
      r.set("ring-model", model, err);
      if (!gpus.empty()) r.set("ring-gpus", gpus, err);
      if (!types.empty()) r.set("ring-types", types, err);
      return engine.admit(r, cluster, err) ? std::string() : err;
    };
    CPPUNIT_ASSERT(reject("", "a100", "resnet50-b64").find("unknown GPU type 'a100'") != std::string::npos);
    CPPUNIT_ASSERT(reject("12", "", "resnet50-b64").find("impossible --ring-gpus=12-12") != std::string::npos);
    CPPUNIT_ASSERT(reject("1-32", "", "resnet50-b64").find("MaxGpusPerJob=16") != std::string::npos);
    CPPUNIT_ASSERT(reject("3", "", "resnet50-b64").find("power of two") != std::string::npos);
    CPPUNIT_ASSERT(reject("5-7", "", "resnet50-b64").find("power of two") != std::string::npos);
    CPPUNIT_ASSERT(reject("", "", "unheard-of").find("unheard-of") != std::string::npos);
    CPPUNIT_ASSERT(reject("2-8", "v100", "resnet50-b64").empty());
  }

  void testInitialShape() {
    // What job_submit gives a new ring job, without a cluster (issue 18.3).
    ConfiguredPolicy policy(good_conf());
    auto admitted = [&](const std::string& gpus, const std::string& types, bool elastic) {
      RingRequest r;
      std::string err;
      r.set("ring-model", "resnet50-b64", err);
      r.set("ring-gpus", gpus, err);
      if (!types.empty()) r.set("ring-types", types, err);
      if (elastic) r.set("ring-elastic", "", err);
      CPPUNIT_ASSERT_MESSAGE(err, policy.admit(r, three_types(), err));
      return r;
    };
    // An idle cluster: the planner's choice (placement may prefer a slower type it has room on).
    const auto fastest = policy.rank_types("resnet50-b64", {"v100", "p100", "k80"}).front();
    auto idle = policy.initial_shape(admitted("4", "", false), three_types(), 0, 0);
    CPPUNIT_ASSERT_MESSAGE(idle.why, !idle.type.empty() && idle.why.find("no GPUs free") == std::string::npos);
    CPPUNIT_ASSERT_EQUAL(4, idle.gpus);
    // Every GPU held: it waits for the fastest allowed type at its minimum, rounded up to a power
    // of two within its maximum.
    ringsched::Cluster full = three_types();
    for (auto& n : full.nodes) n.free_gpus = 0;
    auto waiting = policy.initial_shape(admitted("3-8", "", true), full, 0, 0);
    CPPUNIT_ASSERT_EQUAL(fastest, waiting.type);
    CPPUNIT_ASSERT_EQUAL(4, waiting.gpus);
    CPPUNIT_ASSERT_MESSAGE(waiting.why, waiting.why.find("no GPUs free now") != std::string::npos);
    auto k80 = policy.initial_shape(admitted("1-2", "k80", true), full, 0, 0);
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), k80.type);
    CPPUNIT_ASSERT_EQUAL(1, k80.gpus);
    // Without powers of two the minimum stays as it is.
    ConfiguredPolicy any_count(RingschedConf::parse("ProfileFiles=" + data("profiles/gavel.csv") + "\nPowerOfTwo=no\n"
                                                    "MaxGpusPerJob=16\n", "test.conf"));
    RingRequest r3;
    std::string err;
    r3.set("ring-model", "resnet50-b64", err);
    r3.set("ring-gpus", "3-8", err);
    r3.set("ring-elastic", "", err);
    CPPUNIT_ASSERT_MESSAGE(err, any_count.admit(r3, three_types(), err));
    CPPUNIT_ASSERT_EQUAL(3, any_count.initial_shape(r3, full, 0, 0).gpus);
  }

  void testSimilarityAdmitsUnprofiledModel() {
    // A model with a feature row but no profile is planned from its nearest known models.
    ConfiguredPolicy engine(good_conf());
    const auto features = ringsched::FeatureTable::load_csv(data("model_features.csv"));
    std::string unprofiled;
    for (const auto& f : features.rows())
      if (!engine.model().table().has(f.model)) unprofiled = f.model;
    if (unprofiled.empty()) return;  // every featured model is profiled: nothing to predict
    RingRequest r;
    std::string err;
    r.set("ring-model", unprofiled, err);
    CPPUNIT_ASSERT_MESSAGE(err, engine.admit(r, three_types(), err));
    CPPUNIT_ASSERT(!engine.rank_types(unprofiled, r.types).empty());
    CPPUNIT_ASSERT(engine.model().is_predicted(unprofiled, engine.rank_types(unprofiled, r.types).front()));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SlurmConfTest);
