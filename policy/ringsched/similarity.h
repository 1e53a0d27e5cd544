// Model-similarity policy (DESIGN 3.4; after Thanapol et al., ACIIDS 2023): predict how fast a
// model with no (or few) measurements runs on each GPU type from the models most like it.
//
// Each model is described by a row of data/model_features.csv. Distances are Euclidean over a
// normalised feature vector (logs of sizes, fractions of layer kinds, z-scored over the known
// models). A known model is one with features and a measured one-GPU point on the reference type;
// its speed ratio on type t is v(m, t, 1) / v(m, ref, 1). The prediction for a model is the
// inverse-distance weighted geometric mean of the ratios of its k nearest known models that
// measured t. Measured points always win over predictions (ThroughputModel drops a prediction as
// soon as a point of that (model, type) is added).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/throughput.h"

namespace ringsched {

// One row of the feature table (DESIGN 5). gflops_per_sample: forward multiply-accumulates (1e9)
// per training sample of one iteration, counting every pass the training step makes.
struct ModelFeatures {
  std::string model;
  double params_m = 0;
  double gflops_per_sample = 0;
  int conv_layers = 0;
  int dense_layers = 0;
  int recurrent_layers = 0;
  int attention_layers = 0;
  int norm_layers = 0;
  double act_mb_per_sample = 0;
  double batch_size = 0;

  double gflops_per_iteration() const { return gflops_per_sample * batch_size; }
  // Throws InputError("model features of X: ...") for non-positive sizes, negative counts or a
  // model with no weighted layer at all.
  void validate() const;
};

class FeatureTable {
 public:
  // model,params_m,gflops_per_sample,conv_layers,dense_layers,recurrent_layers,attention_layers,
  // norm_layers,act_mb_per_sample,batch_size. Throws InputError naming file and line for a
  // missing column, a malformed or out-of-range value, or a model listed twice.
  static FeatureTable load_csv(const std::string& path);

  void add(const ModelFeatures& f);  // validates; replaces a row of the same model
  const ModelFeatures* find(const std::string& model) const;
  const std::vector<ModelFeatures>& rows() const { return rows_; }

 private:
  std::vector<ModelFeatures> rows_;
};

// GPU type facts for the naive rules ("newest GPU is best"). data/gpu_types.csv:
// gpu_type,release_year,fp32_tflops
struct GpuTypeInfo {
  std::string type;  // normalized
  int release_year = 0;
  double fp32_tflops = 0;
};
std::map<std::string, GpuTypeInfo> load_gpu_types(const std::string& path);

// The vector distances are computed on (before normalisation); names for reports.
std::vector<double> raw_feature_vector(const ModelFeatures& f);
const std::vector<std::string>& feature_names();

struct SimilarityConfig {
  int k = 3;                         // neighbours per prediction
  std::string reference_type = "k80";
  std::vector<std::string> types;    // types to predict; empty: every type of the profile table
  void validate() const;             // throws InputError for k < 1 or an empty reference type
};

struct Neighbour {
  std::string model;
  double distance = 0;
  double weight = 0;  // normalised inverse-distance weight among the k nearest
};

struct SpeedPrediction {
  std::string model;
  std::string reference_type;
  std::map<std::string, double> ratios;  // type -> v(type, 1) / v(reference, 1); reference = 1
  std::vector<Neighbour> neighbours;     // the k nearest known models, nearest first
  // Types by predicted ratio, best first (ties: name order).
  std::vector<std::string> ranking() const;
};

// Speed ratios of a model from measured one-GPU points: type -> v(t,1)/v(ref,1). Types without a
// measured one-GPU point are left out; empty when the reference has none.
std::map<std::string, double> measured_ratios(const ProfileTable& table, const std::string& model,
                                              const std::string& reference_type,
                                              const std::vector<std::string>& types = {});

// What register_predictions added: v(model, type, n) = v(source_model, source_type, n) * ratio.
struct RegisteredPrediction {
  std::string type;
  std::string source_model;
  std::string source_type;
  double ratio = 0;
};

class SimilarityModel {
 public:
  // Known models: those with a feature row and a measured one-GPU point on the reference type.
  // Throws InputError if there are fewer than one.
  SimilarityModel(FeatureTable features, const ProfileTable& profiles, SimilarityConfig config);

  // Prediction for a feature row (the model may be unknown to the profile table). A model whose
  // features equal a known model's gets exactly that model's ratios.
  SpeedPrediction predict(const ModelFeatures& f) const;
  // Same, looking the model up in the feature table; throws InputError if it has no row.
  SpeedPrediction predict(const std::string& model) const;

  // Registers predictions in `tm` for every type in `types` on which `model` has no measured
  // point in tm.table():
  //  - if the model has measurements on some type u, the other types follow its own curve on u,
  //    scaled by the predicted ratio r_t / r_u (u: the reference type if measured, else the
  //    measured type with the most points);
  //  - otherwise its curve is the nearest known model's curve on the reference type, scaled by
  //    the FLOPs-per-iteration ratio (nearest / model) and by the predicted ratio r_t.
  // Returns what it registered; empty when the model has no feature row (nothing to go by).
  std::vector<RegisteredPrediction> register_predictions(ThroughputModel& tm,
                                                         const std::string& model,
                                                         const std::vector<std::string>& types) const;

  const std::vector<std::string>& known_models() const { return known_; }
  const std::vector<std::string>& types() const { return types_; }
  const SimilarityConfig& config() const { return config_; }
  const FeatureTable& features() const { return features_; }

 private:
  std::vector<double> normalised(const ModelFeatures& f) const;

  FeatureTable features_;
  SimilarityConfig config_;
  std::vector<std::string> types_;
  std::vector<std::string> known_;
  std::vector<std::vector<double>> known_vectors_;             // normalised, parallel to known_
  std::vector<std::map<std::string, double>> known_ratios_;    // parallel to known_
  std::vector<double> mean_, scale_;
};

}  // namespace ringsched
