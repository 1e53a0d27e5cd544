// SPDX-License-Identifier: GPL-2.0-or-later
// SPB cost model (policy/spb.cpp) on the real Gavel profiles: full depth equals the plain ring
// model, balanced depths equalise a mixed K80/V100 set, bounds and coverage hold, traffic follows
// the contributors of each layer, bad depths throw.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ringsched/spb.h"
#include "ringsched/throughput.h"

using namespace ringsched;

namespace {

const ThroughputModel& gavel() {
  static const ThroughputModel tm(
      ProfileTable::load_csv(std::string(RINGSCHED_SRCDIR) + "/data/profiles/gavel.csv"));
  return tm;
}

std::vector<SpbWorker> workers(const std::vector<std::string>& types, const std::vector<double>& d) {
  std::vector<SpbWorker> out;
  for (size_t i = 0; i < types.size(); ++i) out.push_back({types[i], d[i]});
  return out;
}

}  // namespace

class SpbTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SpbTest);
  CPPUNIT_TEST(full_depth_equals_plain_model);
  CPPUNIT_TEST(compute_factor_follows_backward_ratio);
  CPPUNIT_TEST(balanced_depths_equalise_mixed_set);
  CPPUNIT_TEST(balanced_depths_respect_bounds_and_coverage);
  CPPUNIT_TEST(traffic_counts_only_contributors);
  CPPUNIT_TEST(rotating_pattern_covers_every_layer);
  CPPUNIT_TEST(reduced_footprint_is_faster_than_full_depth);
  CPPUNIT_TEST(bad_depths_throw);
  CPPUNIT_TEST_SUITE_END();

 public:
  void full_depth_equals_plain_model() {
    SpbConfig cfg;
    for (const char* model : {"resnet50-b64", "transformer-b64", "a3c"})
      for (int n : {1, 2, 4, 8}) {
        double plain = gavel().iters_per_s(model, "v100", n);
        if (plain <= 0 || plain > n * gavel().iters_per_s(model, "v100", 1)) continue;
        std::vector<SpbWorker> w(n, SpbWorker{"v100", 1.0});
        SpbIteration it = spb_iteration(gavel(), model, w, SpbShares::Proportional, cfg);
        CPPUNIT_ASSERT_DOUBLES_EQUAL(plain, it.iters_per_s(), 1e-9 * plain);
        CPPUNIT_ASSERT_DOUBLES_EQUAL(n > 1 ? 1.0 : 0.0, it.traffic_fraction, 1e-12);
        CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, it.useful_fraction, 1e-12);
        CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, it.min_coverage, 1e-12);
      }
    // Mixed set: proportional shares at full depth are DESIGN 3.1's mixed model.
    auto w = workers({"v100", "v100", "k80", "k80"}, {1, 1, 1, 1});
    SpbIteration it = spb_iteration(gavel(), "resnet50-b64", w, SpbShares::Proportional, cfg);
    double plain = gavel().iters_per_s_mixed("resnet50-b64", {{"v100", 2}, {"k80", 2}});
    CPPUNIT_ASSERT(plain > 0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(plain, it.iters_per_s(), 1e-9 * plain);
  }

  void compute_factor_follows_backward_ratio() {
    SpbConfig cfg;  // backward = 2x forward
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, spb_compute_factor(1.0, cfg), 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(2.0 / 3.0, spb_compute_factor(0.5, cfg), 1e-12);
    cfg.backward_to_forward = 1.0;
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.625, spb_compute_factor(0.25, cfg), 1e-12);
    // Equal shares, depth 0.5 on one of two V100s: it computes 2/3 of the other's time and
    // keeps half the activations of its share.
    SpbConfig c2;
    auto w = workers({"v100", "v100"}, {1.0, 0.5});
    SpbIteration it = spb_iteration(gavel(), "resnet50-b64", w, SpbShares::Equal, c2);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(2.0 / 3.0, it.compute_s[1] / it.compute_s[0], 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.5, it.act_fraction[0], 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.25, it.act_fraction[1], 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(it.compute_s[0], it.compute_s_max, 1e-15);
  }

  void balanced_depths_equalise_mixed_set() {
    // A3C: V100 is 2.09x a K80 in Gavel's table, so K80s can catch up at a depth above 0.2.
    SpbConfig cfg;
    cfg.min_depth = 0.1;
    cfg.traffic_follows_depth = true;
    std::vector<std::string> types = {"v100", "k80", "v100", "k80"};
    std::vector<double> d = balanced_depths(gavel(), "a3c", types, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, d[0], 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, d[2], 1e-12);
    CPPUNIT_ASSERT(d[1] > cfg.min_depth && d[1] < 1.0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(d[1], d[3], 1e-12);
    SpbIteration it = spb_iteration(gavel(), "a3c", workers(types, d), SpbShares::Equal, cfg);
    for (double t : it.compute_s) CPPUNIT_ASSERT_DOUBLES_EQUAL(it.compute_s_max, t, 1e-9 * t);
    // Against full depth with equal shares the K80s were the stragglers.
    SpbIteration full =
        spb_iteration(gavel(), "a3c", workers(types, {1, 1, 1, 1}), SpbShares::Equal, cfg);
    CPPUNIT_ASSERT(full.compute_s_max > 1.5 * it.compute_s_max);
    CPPUNIT_ASSERT(it.traffic_fraction < 1.0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.5, it.min_coverage, 1e-12);
  }

  void balanced_depths_respect_bounds_and_coverage() {
    SpbConfig cfg;
    cfg.min_depth = 0.3;
    // ResNet-50: V100 is 7.1x a K80; no depth >= 0.3 lets a K80 keep up, so it stays at the bound.
    std::vector<std::string> types = {"v100", "v100", "k80", "k80"};
    std::vector<double> d = balanced_depths(gavel(), "resnet50-b64", types, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.3, d[2], 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.3, d[3], 1e-12);
    for (double x : d) CPPUNIT_ASSERT(x >= cfg.min_depth - 1e-12 && x <= 1.0);
    // Coverage 0.75 of 4 workers: three at full depth, so one K80 must go deep; it then sets
    // the pace and the other K80 has no reason to cut either.
    cfg.min_coverage = 0.75;
    d = balanced_depths(gavel(), "resnet50-b64", types, cfg);
    for (double x : d) CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, x, 1e-12);
    // With three V100s the fastest three cover every layer and the K80 alone is cut.
    d = balanced_depths(gavel(), "a3c", {"v100", "k80", "v100", "v100"}, cfg);
    CPPUNIT_ASSERT_EQUAL(1.0, d[0]);
    CPPUNIT_ASSERT_EQUAL(1.0, d[2]);
    CPPUNIT_ASSERT_EQUAL(1.0, d[3]);
    CPPUNIT_ASSERT(d[1] < 1.0 && d[1] >= cfg.min_depth);
    cfg.min_coverage = 1.0;
    for (double x : balanced_depths(gavel(), "a3c", types, cfg)) CPPUNIT_ASSERT_EQUAL(1.0, x);
    // Homogeneous sets need no cut.
    cfg.min_coverage = 0.5;
    for (double x : balanced_depths(gavel(), "a3c", {"k80", "k80", "k80"}, cfg))
      CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, x, 1e-12);
  }

  void traffic_counts_only_contributors() {
    SpbConfig cfg;
    cfg.traffic_follows_depth = true;
    // Depths {1, 1, .5, .5}: the upper half of the layers is all-reduced among 4 workers
    // (2*3/4 = 1.5 each), the lower half among 2 (2*1/2 = 1): (0.5*1.5 + 0.5*1) / 1.5.
    auto w = workers({"v100", "v100", "v100", "v100"}, {1, 1, 0.5, 0.5});
    SpbIteration it = spb_iteration(gavel(), "resnet50-b64", w, SpbShares::Equal, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL((0.75 + 0.5) / 1.5, it.traffic_fraction, 1e-12);
    SpbIteration full = spb_iteration(gavel(), "resnet50-b64",
                                      workers({"v100", "v100", "v100", "v100"}, {1, 1, 1, 1}),
                                      SpbShares::Equal, cfg);
    CPPUNIT_ASSERT(full.comm_s > 0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(full.comm_s * it.traffic_fraction, it.comm_s, 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(0.75, it.useful_fraction, 1e-12);
    // libringrt's packed SPB allreduce (the default) moves every bucket among all workers.
    cfg.traffic_follows_depth = false;
    SpbIteration packed = spb_iteration(gavel(), "resnet50-b64", w, SpbShares::Equal, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, packed.traffic_fraction, 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(full.comm_s, packed.comm_s, 1e-12);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(it.compute_s_max, packed.compute_s_max, 1e-15);
  }

  void rotating_pattern_covers_every_layer() {
    std::vector<double> cycle = {1.0, 0.5};
    std::vector<int> full_count(4, 0);
    for (long i = 0; i < 4; ++i) {
      std::vector<double> d = rotating_depths(4, cycle, i);
      int full = 0;
      for (int w = 0; w < 4; ++w) {
        full += d[w] == 1.0;
        full_count[w] += d[w] == 1.0;
      }
      CPPUNIT_ASSERT_EQUAL(2, full);  // half the workers full depth every iteration
    }
    for (int c : full_count) CPPUNIT_ASSERT_EQUAL(2, c);  // every worker trains every layer
    CPPUNIT_ASSERT_THROW(rotating_depths(4, {}, 0), InputError);
    CPPUNIT_ASSERT_THROW(rotating_depths(0, cycle, 0), InputError);
    CPPUNIT_ASSERT_THROW(rotating_depths(4, {1.0, 0.0}, 0), InputError);
  }

  void reduced_footprint_is_faster_than_full_depth() {
    SpbConfig cfg;
    for (int gpus : {2, 4, 8}) {
      SpbFootprint f = spb_at_footprint(gavel(), "resnet50-b64", "p100", gpus, cfg);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(gavel().iters_per_s("resnet50-b64", "p100", gpus),
                                   f.full_depth_iters_per_s, 1e-12);
      CPPUNIT_ASSERT(f.spb_iters_per_s > f.full_depth_iters_per_s);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(f.spb_iters_per_s, f.useful_iters_per_s, 1e-12);
      CPPUNIT_ASSERT(f.mean_depth < 1.0 && f.mean_depth >= cfg.min_depth);
      // Compute can shrink at most to (1 + b * d_min)/(1 + b) per worker on average.
      CPPUNIT_ASSERT(f.speedup() < 1.0 / spb_compute_factor(cfg.min_depth, cfg) + 1e-9);
    }
    // Counting only the computed share of the gradients makes SPB worth less.
    cfg.quality_discount = 1.0;
    SpbFootprint f = spb_at_footprint(gavel(), "resnet50-b64", "p100", 4, cfg);
    CPPUNIT_ASSERT(f.useful_iters_per_s < f.spb_iters_per_s);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(f.spb_iters_per_s * f.useful_fraction, f.useful_iters_per_s, 1e-9);
    // One GPU: coverage forces full depth, nothing changes.
    cfg.quality_discount = 0;
    SpbFootprint one = spb_at_footprint(gavel(), "resnet50-b64", "p100", 1, cfg);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(one.full_depth_iters_per_s, one.spb_iters_per_s, 1e-9);
  }

  void bad_depths_throw() {
    SpbConfig cfg;
    for (double d : {0.0, -0.5, 1.5, std::numeric_limits<double>::quiet_NaN(), 0.1}) {
      auto w = workers({"v100", "v100"}, {1.0, d});
      CPPUNIT_ASSERT_THROW(spb_iteration(gavel(), "resnet50-b64", w, SpbShares::Equal, cfg),
                           InputError);
    }
    CPPUNIT_ASSERT_THROW(spb_compute_factor(0.0, cfg), InputError);
    CPPUNIT_ASSERT_THROW(spb_iteration(gavel(), "resnet50-b64", {}, SpbShares::Equal, cfg),
                         InputError);
    CPPUNIT_ASSERT_THROW(spb_iteration(gavel(), "resnet50-b64", workers({"h100"}, {1.0}),
                                       SpbShares::Equal, cfg),
                         InputError);
    CPPUNIT_ASSERT_THROW(spb_at_footprint(gavel(), "resnet50-b64", "v100", 0, cfg), InputError);
    SpbConfig bad;
    bad.min_depth = 0;
    CPPUNIT_ASSERT_THROW(bad.validate(), InputError);
    bad = SpbConfig();
    bad.min_coverage = 1.5;
    CPPUNIT_ASSERT_THROW(bad.validate(), InputError);
    bad = SpbConfig();
    bad.quality_discount = -1;
    CPPUNIT_ASSERT_THROW(balanced_depths(gavel(), "a3c", {"k80"}, bad), InputError);
    try {
      spb_iteration(gavel(), "resnet50-b64", workers({"v100", "v100"}, {1.0, 2.0}),
                    SpbShares::Equal, cfg);
    } catch (const InputError& e) {
      CPPUNIT_ASSERT(std::string(e.what()).find("worker 1 depth") != std::string::npos);
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SpbTest);
