// Model similarity (policy/similarity.cpp): the feature loader's errors, exact matches returning
// their own ratios, ranking, registration into the throughput model and measured points winning.
#include <cppunit/extensions/HelperMacros.h>

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
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
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    ProfileTable train;  // without ResNet-50: it must be predicted from others
    for (const ProfilePoint& p : gavel.points())
      if (p.model.rfind("resnet50", 0) != 0) train.add(p);
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
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    ProfileTable train;
    for (const ProfilePoint& p : gavel.points())
      if (p.model.rfind("transformer", 0) != 0) train.add(p);
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
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    ProfileTable train;
    for (const ProfilePoint& p : gavel.points())
      if (p.model.rfind("lm-", 0) != 0) train.add(p);
    SimilarityModel sim(features, train, gavel_config());
    // The unseen model has been measured on P100 only.
    ThroughputModel tm(train);
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
    ProfileTable gavel = ProfileTable::load_csv(kData + "/profiles/gavel.csv");
    ProfileTable train;
    for (const ProfilePoint& p : gavel.points())
      if (p.model.rfind("resnet18", 0) != 0) train.add(p);
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
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(SimilarityTest);
