// SPDX-License-Identifier: GPL-2.0-or-later
// Model similarity (policy/similarity.cpp, policy/similarity_fit.cpp): the feature loader's
// errors, exact matches returning their own ratios, ranking, registration into the throughput
// model and measured points winning; feature weights, the fallback towards the mean ratio, the
// learned weights and the leave-one-group-out fit.
#include <cppunit/extensions/HelperMacros.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "ringsched/similarity.h"
#include "ringsched/throughput.h"

using namespace ringsched;

namespace {

const std::string kData = std::string(RINGSCHED_SRCDIR) + "/data";
const char* kHeader =
    "model,params_m,gflops_per_sample,conv_layers,dense_layers,recurrent_layers,"
    "attention_layers,norm_layers,act_mb_per_sample,batch_size\n";

// A real file in /tmp, removed when the test ends.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/test_similarity_XXXXXX";
    int fd = mkstemp(name);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Expects load_csv to throw an InputError naming the file and line whose text contains `what`.
void expect_error(const std::string& body, int line, const std::string& what) {
  TempFile f(std::string(kHeader) + body);
  try {
    FeatureTable::load_csv(f.path());
  } catch (const InputError& e) {
    std::string msg = e.what();
    CPPUNIT_ASSERT_MESSAGE(msg, msg.find(f.path()) != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(msg, msg.find(":" + std::to_string(line)) != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(msg, msg.find(what) != std::string::npos);
    return;
  }
  CPPUNIT_FAIL("no InputError for: " + body);
}

ProfilePoint point(const std::string& m, const std::string& t, int n, double b, double v) {
  ProfilePoint p;
  p.model = m;
  p.gpu_type = t;
  p.num_gpus = n;
  p.global_batch = b;
  p.iters_per_s = v;
  return p;
}

SimilarityConfig gavel_config(int k = 3) {
  SimilarityConfig c;
  c.k = k;
  c.reference_type = "k80";
  c.types = {"k80", "p100", "v100"};
  return c;
}

size_t feature_index(const std::string& name) {
  const std::vector<std::string>& names = feature_names();
  size_t i = std::find(names.begin(), names.end(), name) - names.begin();
  if (i == names.size()) throw std::runtime_error("no feature " + name);
  return i;
}

// Gavel's profile points except those of models whose id starts with `prefix` (the unseen ones).
ProfileTable gavel_without(const std::string& prefix) {
  ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv"), train;
  for (const ProfilePoint& p : gavel.points())
    if (p.model.rfind(prefix, 0) != 0) train.add(p);
  return train;
}

// The Gavel ratios of the models whose id starts with one of `prefixes` (all when empty).
KnownRatios gavel_ratios(const std::vector<std::string>& prefixes = {}) {
  ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
  KnownRatios all = known_ratios(gavel, "k80", {"k80", "p100", "v100"}), out;
  for (const auto& [m, r] : all) {
    bool keep = prefixes.empty();
    for (const std::string& p : prefixes) keep = keep || m.rfind(p, 0) == 0;
    if (keep) out[m] = r;
  }
  return out;
}

}  // namespace

class SimilarityTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(SimilarityTest);
  CPPUNIT_TEST(loader_reads_committed_table);
  CPPUNIT_TEST(loader_errors_name_file_and_line);
  CPPUNIT_TEST(known_model_gets_its_own_ratios);
  CPPUNIT_TEST(prediction_is_between_neighbours);
  CPPUNIT_TEST(ranking_orders_by_ratio);
  CPPUNIT_TEST(registered_predictions_give_positive_speeds);
  CPPUNIT_TEST(partial_measurement_pivots_on_own_curve);
  CPPUNIT_TEST(measured_points_replace_predictions);
  CPPUNIT_TEST(bad_config_throws);
  CPPUNIT_TEST(architecture_of_strips_batch_suffix);
  CPPUNIT_TEST(ratio_constructor_matches_profile_constructor);
  CPPUNIT_TEST(feature_weights_select_what_counts);
  CPPUNIT_TEST(fallback_blends_towards_mean_ratio);
  CPPUNIT_TEST(typical_distance_is_nearest_other_architecture);
  CPPUNIT_TEST(learned_weights_follow_correlation);
  CPPUNIT_TEST(fit_scores_candidates_by_leaving_groups_out);
  CPPUNIT_TEST(fit_needs_two_groups);
  CPPUNIT_TEST(nested_job_type_leave_out_meets_goal);
  CPPUNIT_TEST_SUITE_END();

 public:
  void loader_reads_committed_table() {
    FeatureTable t = FeatureTable::load_csv(kData + "/model_features.csv");
    // Every model of both profile tables has a feature row.
    for (const char* file : {"/profiles/gavel.csv", "/profiles/elasticflow.csv"}) {
      ProfileTable p = ProfileTable::load_csv(kData + file);
      for (const std::string& m : p.models())
        CPPUNIT_ASSERT_MESSAGE(m, t.find(m) != nullptr);
    }
    const ModelFeatures* r = t.find("resnet50-b64");
    CPPUNIT_ASSERT(r);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(25.6, r->params_m, 1e-9);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(64.0, r->batch_size, 1e-9);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(3.8 * 64, r->gflops_per_iteration(), 1e-9);
    auto gpus = load_gpu_types(kData + "/gpu_types.csv");
    CPPUNIT_ASSERT(gpus.at("v100").release_year > gpus.at("k80").release_year);
  }

  void loader_errors_name_file_and_line() {
    expect_error("a,1,1,1,0,0,0,0,1,16\nb,1,1,1,0,0,0,0,1\n", 3, "expected 10 fields");
    expect_error("a,1,1,1,0,0,0,0,1,16\na,2,1,1,0,0,0,0,1,16\n", 3, "listed twice");
    expect_error("a,abc,1,1,0,0,0,0,1,16\n", 2, "params_m");
    expect_error("a,1,-1,1,0,0,0,0,1,16\n", 2, "gflops_per_sample must be a positive");
    expect_error("a,1,1,0,0,0,0,0,1,16\n", 2, "no conv, dense");
    expect_error("a,1,1,1,0,0,0,0,1,0\n", 2, "batch_size");
    expect_error("a,1,1,-3,0,0,0,0,1,16\n", 2, "layer counts");
    // Missing column: the header names the problem.
    TempFile f("model,params_m\na,1\n");
    CPPUNIT_ASSERT_THROW(FeatureTable::load_csv(f.path()), InputError);
    CPPUNIT_ASSERT_THROW(FeatureTable::load_csv("/nonexistent/features.csv"), InputError);
  }

  void known_model_gets_its_own_ratios() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    SimilarityModel sim(features, gavel, gavel_config());
    // A new model whose features equal a known one's (a renamed copy) gets exactly its ratios.
    for (const char* known : {"recommendation-b1024", "cyclegan", "lm-b20"}) {
      ModelFeatures copy = *features.find(known);
      copy.model = std::string("renamed-") + known;
      SpeedPrediction p = sim.predict(copy);
      auto truth = measured_ratios(gavel, known, "k80", {"k80", "p100", "v100"});
      CPPUNIT_ASSERT_EQUAL(size_t(3), truth.size());
      for (const auto& [t, r] : truth) CPPUNIT_ASSERT_DOUBLES_EQUAL(r, p.ratios.at(t), 1e-9 * r);
      CPPUNIT_ASSERT_EQUAL(std::string(known), p.neighbours.front().model);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(0.0, p.neighbours.front().distance, 1e-12);
    }
  }

  void prediction_is_between_neighbours() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable train = gavel_without("resnet50");  // it must be predicted from others
    SimilarityModel sim(features, train, gavel_config(3));
    SpeedPrediction p = sim.predict("resnet50-b64");
    CPPUNIT_ASSERT_EQUAL(size_t(3), p.neighbours.size());
    double wsum = 0;
    for (const Neighbour& n : p.neighbours) {
      CPPUNIT_ASSERT(n.model.rfind("resnet50", 0) != 0);
      CPPUNIT_ASSERT(n.weight > 0);
      wsum += n.weight;
    }
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, wsum, 1e-9);
    // Nearest first; a weighted geometric mean lies within the neighbours' range.
    for (size_t i = 1; i < p.neighbours.size(); ++i)
      CPPUNIT_ASSERT(p.neighbours[i - 1].distance <= p.neighbours[i].distance);
    for (const std::string t : {"p100", "v100"}) {
      double lo = 1e9, hi = 0;
      for (const Neighbour& n : p.neighbours) {
        double r = measured_ratios(train, n.model, "k80").at(t);
        lo = std::min(lo, r);
        hi = std::max(hi, r);
      }
      CPPUNIT_ASSERT(p.ratios.at(t) >= lo - 1e-9 && p.ratios.at(t) <= hi + 1e-9);
    }
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, p.ratios.at("k80"), 1e-12);
  }

  void ranking_orders_by_ratio() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    SimilarityModel sim(features, gavel, gavel_config());
    // Gavel measured Recommendation (batch 1024) at p100 1.53x and v100 0.66x the K80 speed,
    // so a model identical to it ranks p100, k80, v100.
    std::vector<std::string> r = sim.predict("recommendation-b1024").ranking();
    CPPUNIT_ASSERT_EQUAL(size_t(3), r.size());
    CPPUNIT_ASSERT_EQUAL(std::string("p100"), r[0]);
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), r[1]);
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), r[2]);
    std::vector<std::string> c = sim.predict("cyclegan").ranking();
    CPPUNIT_ASSERT_EQUAL(std::string("v100"), c[0]);
    CPPUNIT_ASSERT_EQUAL(std::string("p100"), c[1]);
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), c[2]);
    SpeedPrediction manual;
    manual.ratios = {{"a", 2.0}, {"b", 3.0}, {"c", 0.5}};
    CPPUNIT_ASSERT((manual.ranking() == std::vector<std::string>{"b", "a", "c"}));
  }

  void registered_predictions_give_positive_speeds() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable train = gavel_without("transformer");
    SimilarityModel sim(features, train, gavel_config());
    ThroughputModel tm(train);
    CPPUNIT_ASSERT_EQUAL(0.0, tm.iters_per_s("transformer-b64", "v100", 1));
    auto added = sim.register_predictions(tm, "transformer-b64", {"k80", "p100", "v100"});
    CPPUNIT_ASSERT_EQUAL(size_t(3), added.size());
    SpeedPrediction pred = sim.predict("transformer-b64");
    for (const std::string t : {"k80", "p100", "v100"}) {
      CPPUNIT_ASSERT(tm.is_predicted("transformer-b64", t));
      for (int n : {1, 2, 4, 8}) CPPUNIT_ASSERT(tm.iters_per_s("transformer-b64", t, n) > 0);
      // The curves keep the predicted ratios between types.
      CPPUNIT_ASSERT_DOUBLES_EQUAL(pred.ratios.at(t),
                                   tm.iters_per_s("transformer-b64", t, 1) /
                                       tm.iters_per_s("transformer-b64", "k80", 1),
                                   1e-9);
    }
    // The anchor's curve is scaled by the FLOPs-per-iteration ratio.
    const RegisteredPrediction& k80 = added.front();
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), k80.type);
    double expect = features.find(k80.source_model)->gflops_per_iteration() /
                    features.find("transformer-b64")->gflops_per_iteration();
    CPPUNIT_ASSERT_DOUBLES_EQUAL(expect, k80.ratio, 1e-9 * expect);
    // A model with no feature row gets nothing, and nothing is registered.
    CPPUNIT_ASSERT(sim.register_predictions(tm, "no-such-model", {"k80"}).empty());
    CPPUNIT_ASSERT_EQUAL(0.0, tm.iters_per_s("no-such-model", "k80", 1));
  }

  void partial_measurement_pivots_on_own_curve() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable train = gavel_without("lm-");
    SimilarityModel sim(features, train, gavel_config());
    // The unseen model has been measured on P100 only.
    ThroughputModel tm(train);
    const ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    for (const ProfilePoint& p : gavel.points())
      if (p.model == "lm-b20" && p.gpu_type == "p100") tm.add_measurement(p);
    auto added = sim.register_predictions(tm, "lm-b20", {"k80", "p100", "v100"});
    CPPUNIT_ASSERT_EQUAL(size_t(2), added.size());  // p100 is measured
    SpeedPrediction pred = sim.predict("lm-b20");
    for (const RegisteredPrediction& r : added) {
      CPPUNIT_ASSERT_EQUAL(std::string("lm-b20"), r.source_model);
      CPPUNIT_ASSERT_EQUAL(std::string("p100"), r.source_type);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(pred.ratios.at(r.type) / pred.ratios.at("p100"), r.ratio, 1e-9);
      for (int n : {1, 4})
        CPPUNIT_ASSERT_DOUBLES_EQUAL(tm.iters_per_s("lm-b20", "p100", n) * r.ratio,
                                     tm.iters_per_s("lm-b20", r.type, n), 1e-9);
    }
    CPPUNIT_ASSERT(!tm.is_predicted("lm-b20", "p100"));
  }

  void measured_points_replace_predictions() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable train = gavel_without("resnet18");
    SimilarityModel sim(features, train, gavel_config());
    ThroughputModel tm(train);
    sim.register_predictions(tm, "resnet18-b64", {"k80", "p100", "v100"});
    CPPUNIT_ASSERT(tm.is_predicted("resnet18-b64", "v100"));
    double predicted = tm.iters_per_s("resnet18-b64", "v100", 1);
    tm.add_measurement(point("resnet18-b64", "v100", 1, 64, 123.5));
    CPPUNIT_ASSERT(!tm.is_predicted("resnet18-b64", "v100"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(123.5, tm.iters_per_s("resnet18-b64", "v100", 1), 1e-9);
    CPPUNIT_ASSERT(std::fabs(predicted - 123.5) > 1e-6);
    // Registering again leaves the measured type alone.
    auto again = sim.register_predictions(tm, "resnet18-b64", {"k80", "p100", "v100"});
    for (const RegisteredPrediction& r : again) CPPUNIT_ASSERT(r.type != "v100");
    CPPUNIT_ASSERT_DOUBLES_EQUAL(123.5, tm.iters_per_s("resnet18-b64", "v100", 1), 1e-9);
  }

  void bad_config_throws() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    SimilarityConfig c = gavel_config();
    c.k = 0;
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    c = gavel_config();
    c.reference_type = "h100";  // nobody measured it: no known model
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    SimilarityModel sim(features, gavel, gavel_config());
    CPPUNIT_ASSERT_THROW(sim.predict("no-such-model"), InputError);
    c = gavel_config();
    c.feature_weights = {1.0, 2.0};  // not one per feature
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    c.feature_weights.assign(feature_names().size(), 0.0);  // all 0: no distance at all
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    c.feature_weights[0] = -1.0;
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    c = gavel_config();
    c.fallback_scale = -0.5;
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
    c.fallback_scale = std::nan("");
    CPPUNIT_ASSERT_THROW(SimilarityModel(features, gavel, c), InputError);
  }

  void architecture_of_strips_batch_suffix() {
    CPPUNIT_ASSERT_EQUAL(std::string("resnet18"), architecture_of("resnet18-b16"));
    CPPUNIT_ASSERT_EQUAL(std::string("resnet50cifar10"), architecture_of("resnet50cifar10-b256"));
    CPPUNIT_ASSERT_EQUAL(std::string("a3c"), architecture_of("a3c"));
    CPPUNIT_ASSERT_EQUAL(std::string("x-b"), architecture_of("x-b"));
    CPPUNIT_ASSERT_EQUAL(std::string("x-b12a"), architecture_of("x-b12a"));
    CPPUNIT_ASSERT_EQUAL(std::string("my-bert"), architecture_of("my-bert-b8"));
  }

  void ratio_constructor_matches_profile_constructor() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    ProfileTable train = gavel_without("transformer");
    KnownRatios ratios = known_ratios(train, "k80", {"k80", "p100", "v100"});
    CPPUNIT_ASSERT(!ratios.count("transformer-b64"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, ratios.at("lm-b20").at("k80"), 1e-12);
    SimilarityModel a(features, train, gavel_config());
    SimilarityModel b(features, ratios, gavel_config());
    CPPUNIT_ASSERT(a.known_models() == b.known_models());
    SpeedPrediction pa = a.predict("transformer-b64"), pb = b.predict("transformer-b64");
    CPPUNIT_ASSERT_EQUAL(size_t(3), pb.ratios.size());
    for (const auto& [t, r] : pa.ratios) CPPUNIT_ASSERT_DOUBLES_EQUAL(r, pb.ratios.at(t), 1e-12);
    // Ratios without the reference, or of a model without features, are not known models.
    ratios["no-features"] = {{"k80", 1.0}, {"v100", 9.0}};
    ratios["transformer-b64"] = {{"v100", 9.0}};
    SimilarityModel c(features, ratios, gavel_config());
    CPPUNIT_ASSERT(c.known_models() == a.known_models());
  }

  void feature_weights_select_what_counts() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    KnownRatios train = gavel_ratios({"lm-", "transformer", "resnet18", "a3c", "cyclegan"});
    // Only the batch size counts: resnet50-b64's nearest models are those at batch 64.
    SimilarityConfig c = gavel_config(2);
    c.feature_weights.assign(feature_names().size(), 0.0);
    c.feature_weights[feature_index("log_batch")] = 1.0;
    SimilarityModel by_batch(features, train, c);
    SpeedPrediction p = by_batch.predict("resnet50-b64");
    std::set<std::string> got;
    for (const Neighbour& n : p.neighbours) {
      got.insert(n.model);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(0.0, n.distance, 1e-12);
    }
    CPPUNIT_ASSERT((got == std::set<std::string>{"resnet18-b64", "transformer-b64"}));
    // Only the share of conv layers counts: ResNet-50 (53 of 54 weighted layers) is nearest to
    // CycleGAN (all conv), then to the ResNet-18s (20 of 21), not to A3C, LSTMs or Transformers.
    c.feature_weights.assign(feature_names().size(), 0.0);
    c.feature_weights[feature_index("conv_frac")] = 1.0;
    SimilarityModel by_conv(features, train, c);
    std::vector<Neighbour> nb = by_conv.predict("resnet50-b64").neighbours;
    CPPUNIT_ASSERT_EQUAL(std::string("cyclegan"), nb.at(0).model);
    CPPUNIT_ASSERT_MESSAGE(nb.at(1).model, nb.at(1).model.rfind("resnet18", 0) == 0);
  }

  void fallback_blends_towards_mean_ratio() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    KnownRatios all = gavel_ratios();
    KnownRatios train;
    for (const auto& [m, r] : all)
      if (architecture_of(m) != "cyclegan") train[m] = r;
    SimilarityConfig c = gavel_config(3);
    SimilarityModel plain(features, train, c);
    // The mean rule: arithmetic mean of the known ratios.
    double sum = 0;
    for (const auto& [m, r] : train) sum += r.at("v100");
    CPPUNIT_ASSERT_DOUBLES_EQUAL(sum / train.size(), plain.mean_ratios().at("v100"), 1e-12);
    SpeedPrediction knn = plain.predict("cyclegan");
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, knn.neighbour_share, 0.0);
    double last_share = 1.0;
    for (double scale : {4.0, 1.0, 0.25}) {
      c.fallback_scale = scale;
      SimilarityModel blended(features, train, c);
      SpeedPrediction p = blended.predict("cyclegan");
      double inverse = 0;
      for (const Neighbour& n : p.neighbours) inverse += 1.0 / n.distance;
      double d = p.neighbours.size() / inverse, s = scale * blended.typical_distance();
      double a = s * s / (s * s + d * d);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(a, p.neighbour_share, 1e-12);
      CPPUNIT_ASSERT(a > 0 && a < last_share);  // a smaller scale trusts the neighbours less
      last_share = a;
      for (const std::string t : {"p100", "v100"}) {
        double expect = std::exp(a * std::log(knn.ratios.at(t)) +
                                 (1 - a) * std::log(plain.mean_ratios().at(t)));
        CPPUNIT_ASSERT_DOUBLES_EQUAL(expect, p.ratios.at(t), 1e-9 * expect);
      }
      CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, p.ratios.at("k80"), 0.0);
      // An exact copy of a known model still gets exactly its ratios.
      ModelFeatures copy = *features.find("lm-b20");
      copy.model = "copy-of-lm-b20";
      SpeedPrediction e = blended.predict(copy);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, e.neighbour_share, 0.0);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(train.at("lm-b20").at("v100"), e.ratios.at("v100"), 1e-12);
    }
  }

  void typical_distance_is_nearest_other_architecture() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    // Two architectures, one model each: the typical distance is the distance between them.
    KnownRatios two = gavel_ratios({"resnet18-b16", "lm-b5"});
    CPPUNIT_ASSERT_EQUAL(size_t(2), two.size());
    SimilarityModel sim(features, two, gavel_config(2));
    SpeedPrediction p = sim.predict("resnet18-b16");
    CPPUNIT_ASSERT_EQUAL(std::string("lm-b5"), p.neighbours.at(1).model);
    CPPUNIT_ASSERT(sim.typical_distance() > 0);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(p.neighbours.at(1).distance, sim.typical_distance(), 1e-12);
    // Batch variants of one architecture are not "other architectures": with resnet18-b32 added
    // (much closer to resnet18-b16 than lm-b5 is), the typical distance is still one between
    // architectures, far above the step between the two batch sizes.
    two["resnet18-b32"] = gavel_ratios({"resnet18-b32"}).at("resnet18-b32");
    SimilarityModel three(features, two, gavel_config(3));
    double batch_step = 0;
    for (const Neighbour& n : three.predict("resnet18-b16").neighbours)
      if (n.model == "resnet18-b32") batch_step = n.distance;
    CPPUNIT_ASSERT(batch_step > 0);
    CPPUNIT_ASSERT(three.typical_distance() > 2 * batch_step);
  }

  void learned_weights_follow_correlation() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    const size_t dims = feature_names().size();
    // Within one architecture only the batch varies: the per-sample and layer-kind features are
    // constant (weight 0), and the features that are log(batch) plus a constant correlate
    // equally with the ratios.
    std::vector<double> w = learn_feature_weights(features, gavel_ratios({"resnet18"}), "k80");
    CPPUNIT_ASSERT_EQUAL(dims, w.size());
    double sum = 0;
    for (double v : w) {
      CPPUNIT_ASSERT(v >= 0);
      sum += v;
    }
    CPPUNIT_ASSERT_DOUBLES_EQUAL(double(dims), sum, 1e-9);
    for (const char* constant : {"log_params", "log_gflops_per_sample", "conv_frac", "norm_frac"})
      CPPUNIT_ASSERT_DOUBLES_EQUAL(0.0, w[feature_index(constant)], 1e-12);
    CPPUNIT_ASSERT(w[feature_index("log_batch")] > 0.5);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(w[feature_index("log_batch")],
                                 w[feature_index("log_gflops_per_iter")], 1e-9);
    // Too few models to correlate: all 1.
    std::vector<double> flat = learn_feature_weights(features, gavel_ratios({"a3c", "cyclegan"}), "k80");
    for (double v : flat) CPPUNIT_ASSERT_DOUBLES_EQUAL(1.0, v, 0.0);
  }

  void fit_scores_candidates_by_leaving_groups_out() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    KnownRatios ratios = gavel_ratios();
    FitGrid grid;
    grid.k = {1, 3};
    grid.fallback_scale = {0, 1};
    SimilarityFit fit = fit_similarity(features, ratios, gavel_config(), architecture_of, grid);
    CPPUNIT_ASSERT_EQUAL(size_t(8), fit.candidates.size());
    CPPUNIT_ASSERT(fit.chosen >= 0);
    // The first candidate (k=1, uniform weights, no fallback), scored here by hand.
    const FitCandidate& first = fit.candidates.front();
    CPPUNIT_ASSERT_EQUAL(1, first.k);
    CPPUNIT_ASSERT(!first.learned_weights);
    int top1 = 0, evaluated = 0;
    std::set<std::string> archs;
    for (const auto& [m, r] : ratios) archs.insert(architecture_of(m));
    for (const std::string& a : archs) {
      KnownRatios train;
      for (const auto& [m, r] : ratios)
        if (architecture_of(m) != a) train[m] = r;
      SimilarityModel sim(features, train, gavel_config(1));
      for (const auto& [m, r] : ratios) {
        if (architecture_of(m) != a) continue;
        ++evaluated;
        std::string truth = r.at("v100") > r.at("p100") ? "v100" : "p100";
        if (sim.predict(m).ranking().front() == truth) ++top1;
      }
    }
    CPPUNIT_ASSERT_EQUAL(26, evaluated);
    CPPUNIT_ASSERT_EQUAL(evaluated, first.evaluated);
    CPPUNIT_ASSERT_EQUAL(top1, first.top1);
    CPPUNIT_ASSERT(first.mean_abs_log_error > 0);
    // The winner: most correct best types, then the smaller error.
    const FitCandidate& won = fit.candidates[fit.chosen];
    for (const FitCandidate& c : fit.candidates) {
      CPPUNIT_ASSERT_EQUAL(26, c.evaluated);
      CPPUNIT_ASSERT(c.top1 <= won.top1);
      if (c.top1 == won.top1) CPPUNIT_ASSERT(c.mean_abs_log_error >= won.mean_abs_log_error - 1e-12);
    }
    CPPUNIT_ASSERT_EQUAL(won.k, fit.config.k);
    CPPUNIT_ASSERT_EQUAL(won.fallback_scale, fit.config.fallback_scale);
    CPPUNIT_ASSERT_EQUAL(won.learned_weights, !fit.config.feature_weights.empty());
    CPPUNIT_ASSERT_EQUAL(std::string("k80"), fit.config.reference_type);
  }

  void fit_needs_two_groups() {
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    SimilarityConfig base = gavel_config(5);
    SimilarityFit fit = fit_similarity(features, gavel_ratios({"resnet18"}), base, architecture_of);
    CPPUNIT_ASSERT(fit.candidates.empty());
    CPPUNIT_ASSERT_EQUAL(-1, fit.chosen);
    CPPUNIT_ASSERT_EQUAL(5, fit.config.k);
    CPPUNIT_ASSERT(fit.config.feature_weights.empty());
    // The same models one job type per group can be fitted.
    auto own = [](const std::string& m) { return m; };
    SimilarityFit per_type = fit_similarity(features, gavel_ratios({"resnet18"}), base, own);
    CPPUNIT_ASSERT(per_type.chosen >= 0);
    CPPUNIT_ASSERT_EQUAL(5, per_type.candidates.front().evaluated);
    // An empty grid keeps the base configuration; a missing grouping is an error.
    FitGrid empty;
    empty.k.clear();
    SimilarityFit none = fit_similarity(features, gavel_ratios(), base, own, empty);
    CPPUNIT_ASSERT_EQUAL(-1, none.chosen);
    CPPUNIT_ASSERT_EQUAL(5, none.config.k);
    CPPUNIT_ASSERT_THROW(fit_similarity(features, gavel_ratios(), base, nullptr), InputError);
  }

  void nested_job_type_leave_out_meets_goal() {
    // Nested cross-validation, as bench/eval_similarity runs it: each job type is predicted by a
    // configuration fitted on the other job types only. The goal: >= 80% best types.
    FeatureTable features = FeatureTable::load_csv(kData + "/model_features.csv");
    KnownRatios all = gavel_ratios();
    auto own = [](const std::string& m) { return m; };
    int top1 = 0;
    for (const auto& [held, truth] : all) {
      KnownRatios train = all;
      train.erase(held);
      SimilarityFit fit = fit_similarity(features, train, gavel_config(), own);
      SimilarityModel sim(features, train, fit.config);
      std::string best = truth.at("v100") > truth.at("p100") ? "v100" : "p100";
      if (sim.predict(held).ranking().front() == best) ++top1;
    }
    CPPUNIT_ASSERT_EQUAL(size_t(26), all.size());
    CPPUNIT_ASSERT_MESSAGE(std::to_string(top1) + "/26", top1 >= 21);  // 21/26 = 80.8%
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SimilarityTest);
