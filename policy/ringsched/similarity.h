// SPDX-License-Identifier: GPL-2.0-or-later
// Model-similarity policy (DESIGN 3.4; after Thanapol et al., ACIIDS 2023): predict how fast a
// model with no (or few) measurements runs on each GPU type from the models most like it.
//
// Each model is described by a row of data/model_features.csv. Distances are Euclidean over a
// normalised feature vector (logs of sizes, fractions of layer kinds, z-scored over the known
// models), each dimension scaled by the square root of its feature weight (default: all 1). A
// known model is one with features and a measured one-GPU point on the reference type; its speed
// ratio on type t is v(m, t, 1) / v(m, ref, 1). The prediction for a model is the
// inverse-distance weighted geometric mean of the ratios of its k nearest known models that
// measured t, optionally pulled towards the mean ratio of all known models when those neighbours
// are far (fallback_scale). fit_similarity() chooses k, the weights and the fallback by leaving
// groups of known models out (nested inside any evaluation that holds models out itself).
// Measured points always win over predictions (ThroughputModel drops a prediction as soon as a
// point of that (model, type) is added).
#pragma once

#include <functional>
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
  // Weight of each feature in the distance, parallel to feature_names(); empty: all 1. Must be
  // non-negative and not all 0.
  std::vector<double> feature_weights;
  // Fallback towards the mean rule. With d the harmonic mean distance of the k nearest known
  // models and s = fallback_scale x typical_distance(), the log ratios predicted are
  //   a * (neighbours' log ratios) + (1 - a) * (log of the mean ratio of all known models),
  //   a = s^2 / (s^2 + d^2),
  // so s is the distance at which the neighbours and the mean weigh equally. 0: no fallback.
  double fallback_scale = 0;
  void validate() const;  // throws InputError for k < 1, an empty reference type, bad weights
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
  // Share of the neighbours' estimate in the log ratios (a above); 1 without fallback.
  double neighbour_share = 1.0;
  // Types by predicted ratio, best first (ties: name order).
  std::vector<std::string> ranking() const;
};

// Speed ratios of a model from measured one-GPU points: type -> v(t,1)/v(ref,1). Types without a
// measured one-GPU point are left out; empty when the reference has none.
std::map<std::string, double> measured_ratios(const ProfileTable& table, const std::string& model,
                                              const std::string& reference_type,
                                              const std::vector<std::string>& types = {});

// The architecture of a model id: "resnet18-b16" -> "resnet18" (an id is an architecture plus
// its batch size, data/model_features.md); an id without a "-b<digits>" suffix is its own.
std::string architecture_of(const std::string& model);

// Measured ratios of known models: model -> (type -> v(type,1) / v(reference,1)).
using KnownRatios = std::map<std::string, std::map<std::string, double>>;

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
  // Same from ratios already measured (those of models without a feature row or without the
  // reference type are ignored); config.types empty: the types found in `ratios`.
  SimilarityModel(FeatureTable features, const KnownRatios& ratios, SimilarityConfig config);

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
  // Per type, the arithmetic mean ratio of the known models that measured it (the naive rule
  // "mean ratio of all models", and what the fallback pulls towards).
  const std::map<std::string, double>& mean_ratios() const { return mean_ratios_; }
  // Unit of fallback_scale: the median, over known models, of the distance to the nearest known
  // model of another architecture (of another model where all share one); 0 with one model.
  double typical_distance() const { return typical_distance_; }

 private:
  void build(const KnownRatios& ratios);
  std::vector<double> normalised(const ModelFeatures& f) const;

  FeatureTable features_;
  SimilarityConfig config_;
  std::vector<std::string> types_;
  std::vector<std::string> known_;
  std::vector<std::vector<double>> known_vectors_;             // normalised, parallel to known_
  std::vector<std::map<std::string, double>> known_ratios_;    // parallel to known_
  std::vector<double> mean_, scale_;
  std::vector<double> weight_roots_;  // sqrt of the feature weights, parallel to feature_names()
  std::map<std::string, double> mean_ratios_;
  double typical_distance_ = 0;
};

// Feature weights learned from measured ratios alone: for feature i, the root mean square over
// the non-reference types t of the correlation between feature i and log ratio t across the known
// models, scaled to mean 1 (all 1 when no feature correlates). A feature that varies with the
// speed ratios counts more in the distance; one that only tells models apart counts less.
std::vector<double> learn_feature_weights(const FeatureTable& features, const KnownRatios& ratios,
                                          const std::string& reference_type);

// Choosing the configuration by leave-one-group-out on the known models only: each candidate
// (k, uniform or learned weights, fallback scale) predicts every known model from the known
// models of the other groups (weights learned again without the left-out group); the candidate
// with the most correct best types wins, then the lower mean |log predicted/measured ratio|,
// then the earlier one in the grid. Used inside an outer evaluation, this is nested
// cross-validation: the outer held-out models are not in `ratios` and never score a candidate.
struct FitCandidate {
  int k = 0;
  bool learned_weights = false;
  double fallback_scale = 0;
  int evaluated = 0;     // models scored
  int top1 = 0;          // of which the predicted best type was the measured best
  double mean_abs_log_error = 0;  // over their non-reference ratios
};

struct SimilarityFit {
  SimilarityConfig config;               // the winner, weights learned on all of `ratios`
  std::vector<FitCandidate> candidates;  // grid order; empty when fewer than 2 groups
  int chosen = -1;                       // index into candidates; -1: base config kept
};

struct FitGrid {
  std::vector<int> k = {1, 2, 3, 4, 5, 8};
  std::vector<double> fallback_scale = {0, 0.5, 1, 2, 4};  // 0: no fallback
  bool try_learned_weights = true;
};

// group(model) names the set a model is left out with (architecture_of: a whole new
// architecture; the identity: one new job type). base supplies reference_type and types.
SimilarityFit fit_similarity(const FeatureTable& features, const KnownRatios& ratios,
                             const SimilarityConfig& base,
                             const std::function<std::string(const std::string&)>& group,
                             const FitGrid& grid = FitGrid());

// The known ratios of a profile table (models with a one-GPU point on the reference type).
KnownRatios known_ratios(const ProfileTable& table, const std::string& reference_type,
                         const std::vector<std::string>& types = {});

}  // namespace ringsched
