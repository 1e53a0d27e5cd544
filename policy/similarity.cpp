// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/similarity.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "ringsched/csv.h"

namespace ringsched {
namespace {

// Distances below this are "the same model" (features identical up to rounding).
constexpr double kSameDistance = 1e-9;

}  // namespace

void ModelFeatures::validate() const {
  const std::string where = "model features of " + model;
  if (model.empty()) throw InputError("model features: empty model name");
  auto positive = [&](double v, const char* name) {
    if (!(v > 0) || !std::isfinite(v))
      throw InputError(where + ": " + name + " must be a positive number");
  };
  positive(params_m, "params_m");
  positive(gflops_per_sample, "gflops_per_sample");
  positive(act_mb_per_sample, "act_mb_per_sample");
  positive(batch_size, "batch_size");
  for (int c : {conv_layers, dense_layers, recurrent_layers, attention_layers, norm_layers})
    if (c < 0 || c > 100000) throw InputError(where + ": layer counts must be in 0..100000");
  if (conv_layers + dense_layers + recurrent_layers + attention_layers == 0)
    throw InputError(where + ": no conv, dense, recurrent or attention layer");
}

void FeatureTable::add(const ModelFeatures& f) {
  f.validate();
  for (ModelFeatures& r : rows_)
    if (r.model == f.model) {
      r = f;
      return;
    }
  rows_.push_back(f);
}

const ModelFeatures* FeatureTable::find(const std::string& model) const {
  for (const ModelFeatures& r : rows_)
    if (r.model == model) return &r;
  return nullptr;
}

FeatureTable FeatureTable::load_csv(const std::string& path) {
  CsvFile csv = CsvFile::read(path);
  const int c_model = csv.require_column("model");
  const int c_params = csv.require_column("params_m");
  const int c_gflops = csv.require_column("gflops_per_sample");
  const int c_conv = csv.require_column("conv_layers");
  const int c_dense = csv.require_column("dense_layers");
  const int c_rec = csv.require_column("recurrent_layers");
  const int c_attn = csv.require_column("attention_layers");
  const int c_norm = csv.require_column("norm_layers");
  const int c_act = csv.require_column("act_mb_per_sample");
  const int c_batch = csv.require_column("batch_size");
  FeatureTable table;
  for (const CsvRow& row : csv.rows()) {
    if (row.fields.size() != csv.header().size())
      csv.fail(row, "expected " + std::to_string(csv.header().size()) + " fields, found " +
                        std::to_string(row.fields.size()));
    ModelFeatures f;
    f.model = csv.str(row, c_model);
    if (f.model.empty()) csv.fail(row, "column model: empty");
    if (table.find(f.model)) csv.fail(row, "model " + f.model + " listed twice");
    f.params_m = csv.number(row, c_params);
    f.gflops_per_sample = csv.number(row, c_gflops);
    f.conv_layers = static_cast<int>(csv.integer(row, c_conv));
    f.dense_layers = static_cast<int>(csv.integer(row, c_dense));
    f.recurrent_layers = static_cast<int>(csv.integer(row, c_rec));
    f.attention_layers = static_cast<int>(csv.integer(row, c_attn));
    f.norm_layers = static_cast<int>(csv.integer(row, c_norm));
    f.act_mb_per_sample = csv.number(row, c_act);
    f.batch_size = csv.number(row, c_batch);
    try {
      f.validate();
    } catch (const InputError& e) {
      csv.fail(row, e.what());
    }
    table.rows_.push_back(f);
  }
  return table;
}

std::map<std::string, GpuTypeInfo> load_gpu_types(const std::string& path) {
  CsvFile csv = CsvFile::read(path);
  const int c_type = csv.require_column("gpu_type");
  const int c_year = csv.require_column("release_year");
  const int c_tflops = csv.require_column("fp32_tflops");
  std::map<std::string, GpuTypeInfo> out;
  for (const CsvRow& row : csv.rows()) {
    GpuTypeInfo g;
    g.type = normalize_type(csv.str(row, c_type));
    if (g.type.empty()) csv.fail(row, "column gpu_type: empty");
    long year = csv.integer(row, c_year);
    if (year < 1990 || year > 2100) csv.fail(row, "column release_year: out of range 1990..2100");
    g.release_year = static_cast<int>(year);
    g.fp32_tflops = csv.number(row, c_tflops);
    if (!(g.fp32_tflops > 0)) csv.fail(row, "column fp32_tflops: must be positive");
    if (out.count(g.type)) csv.fail(row, "gpu type " + g.type + " listed twice");
    out[g.type] = g;
  }
  return out;
}

const std::vector<std::string>& feature_names() {
  static const std::vector<std::string> names = {
      "log_params",          "log_gflops_per_sample", "log_batch",
      "log_gflops_per_iter", "log_act_mb_per_iter",   "conv_frac",
      "dense_frac",          "recurrent_frac",        "attention_frac",
      "norm_frac",           "log_gflops_per_layer",  "log_macs_per_byte"};
  return names;
}

std::vector<double> raw_feature_vector(const ModelFeatures& f) {
  // Sizes span orders of magnitude, so they enter as logs; the mix of layer kinds enters as
  // fractions of the weighted layers, so a deep and a shallow network of one kind stay close.
  double weighted = f.conv_layers + f.dense_layers + f.recurrent_layers + f.attention_layers;
  // Two derived features for why a newer GPU gains less than its peak FLOPS (data/
  // model_features.md, "Derived features"):
  //  - work per layer and iteration (every layer, norms included, is at least one kernel per
  //    pass): small kernels leave most SMs of a big GPU idle and let the per-kernel and
  //    per-iteration overhead dominate;
  //  - arithmetic intensity, multiply-accumulates per byte of memory traffic per iteration,
  //    counting 16 bytes per parameter (FP32 weights read in the forward and backward pass,
  //    gradient written, optimizer update) and activations written forward and read backward:
  //    a memory-bound model gains the memory-bandwidth ratio, not the FLOPS ratio.
  double layers = weighted + f.norm_layers;
  double bytes = 16.0 * f.params_m * 1e6 + 2.0 * f.act_mb_per_sample * 1e6 * f.batch_size;
  return {std::log(f.params_m),
          std::log(f.gflops_per_sample),
          std::log(f.batch_size),
          std::log(f.gflops_per_iteration()),
          std::log(f.act_mb_per_sample * f.batch_size),
          f.conv_layers / weighted,
          f.dense_layers / weighted,
          f.recurrent_layers / weighted,
          f.attention_layers / weighted,
          f.norm_layers / weighted,
          std::log(f.gflops_per_iteration() / layers),
          std::log(f.gflops_per_iteration() * 1e9 / bytes)};
}

std::string architecture_of(const std::string& model) {
  size_t pos = model.rfind("-b");
  if (pos == std::string::npos || pos + 2 >= model.size()) return model;
  for (size_t i = pos + 2; i < model.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(model[i]))) return model;
  return model.substr(0, pos);
}

void SimilarityConfig::validate() const {
  if (k < 1 || k > 1000) throw InputError("similarity: k must be in 1..1000");
  if (reference_type.empty()) throw InputError("similarity: empty reference type");
  if (!feature_weights.empty()) {
    if (feature_weights.size() != feature_names().size())
      throw InputError("similarity: " + std::to_string(feature_weights.size()) +
                       " feature weights given, " + std::to_string(feature_names().size()) +
                       " features");
    double sum = 0;
    for (double w : feature_weights) {
      if (!(w >= 0) || !std::isfinite(w) || w > 1e6)
        throw InputError("similarity: feature weights must be in 0..1e6");
      sum += w;
    }
    if (!(sum > 0)) throw InputError("similarity: all feature weights are 0");
  }
  if (!(fallback_scale >= 0) || !std::isfinite(fallback_scale) || fallback_scale > 1e6)
    throw InputError("similarity: fallback_scale must be in 0..1e6");
}

std::vector<std::string> SpeedPrediction::ranking() const {
  std::vector<std::string> out;
  for (const auto& [t, r] : ratios) out.push_back(t);
  std::stable_sort(out.begin(), out.end(), [&](const std::string& a, const std::string& b) {
    return ratios.at(a) > ratios.at(b);
  });
  return out;
}

namespace {

double one_gpu_speed(const ProfileTable& table, const std::string& model, const std::string& type) {
  for (const ProfilePoint& p : table.points_for(model, type))
    if (p.num_gpus == 1) return p.iters_per_s;
  return 0;
}

}  // namespace

std::map<std::string, double> measured_ratios(const ProfileTable& table, const std::string& model,
                                              const std::string& reference_type,
                                              const std::vector<std::string>& types) {
  std::map<std::string, double> out;
  const std::string ref = normalize_type(reference_type);
  double base = one_gpu_speed(table, model, ref);
  if (base <= 0) return out;
  std::vector<std::string> ts = types.empty() ? table.types_for(model) : types;
  for (const std::string& t_in : ts) {
    std::string t = normalize_type(t_in);
    double v = one_gpu_speed(table, model, t);
    if (v > 0) out[t] = v / base;
  }
  return out;
}

KnownRatios known_ratios(const ProfileTable& table, const std::string& reference_type,
                         const std::vector<std::string>& types) {
  KnownRatios out;
  for (const std::string& m : table.models()) {
    std::map<std::string, double> r = measured_ratios(table, m, reference_type, types);
    if (!r.empty()) out[m] = std::move(r);
  }
  return out;
}

namespace {

// The reference type, added to the types if missing; sorted, unique, normalized.
std::vector<std::string> type_list(std::vector<std::string> types, const std::string& ref) {
  for (std::string& t : types) t = normalize_type(t);
  types.push_back(ref);
  std::sort(types.begin(), types.end());
  types.erase(std::unique(types.begin(), types.end()), types.end());
  return types;
}

}  // namespace

SimilarityModel::SimilarityModel(FeatureTable features, const ProfileTable& profiles,
                                 SimilarityConfig config)
    : features_(std::move(features)), config_(std::move(config)) {
  config_.validate();
  config_.reference_type = normalize_type(config_.reference_type);
  types_ = type_list(config_.types.empty() ? profiles.types() : config_.types,
                     config_.reference_type);
  KnownRatios ratios;
  for (const std::string& m : profiles.models()) {
    if (!features_.find(m)) continue;
    std::map<std::string, double> r = measured_ratios(profiles, m, config_.reference_type, types_);
    if (!r.empty()) ratios[m] = std::move(r);
  }
  build(ratios);
}

SimilarityModel::SimilarityModel(FeatureTable features, const KnownRatios& ratios,
                                 SimilarityConfig config)
    : features_(std::move(features)), config_(std::move(config)) {
  config_.validate();
  config_.reference_type = normalize_type(config_.reference_type);
  std::vector<std::string> types = config_.types;
  if (types.empty())
    for (const auto& [m, r] : ratios)
      for (const auto& [t, v] : r) types.push_back(t);
  types_ = type_list(types, config_.reference_type);
  KnownRatios usable;
  for (const auto& [m, r] : ratios) {
    if (!features_.find(m) || !r.count(config_.reference_type)) continue;
    std::map<std::string, double> kept;
    for (const std::string& t : types_) {
      auto it = r.find(t);
      if (it != r.end() && it->second > 0 && std::isfinite(it->second)) kept[t] = it->second;
    }
    if (kept.count(config_.reference_type)) usable[m] = std::move(kept);
  }
  build(usable);
}

void SimilarityModel::build(const KnownRatios& ratios) {
  std::vector<std::vector<double>> raw;
  for (const auto& [m, r] : ratios) {
    known_.push_back(m);
    known_ratios_.push_back(r);
    raw.push_back(raw_feature_vector(*features_.find(m)));
  }
  if (known_.empty())
    throw InputError("similarity: no model has both features and a one-GPU measurement on " +
                     config_.reference_type);
  // z-score each feature over the known models; a constant feature carries no information.
  size_t dims = feature_names().size();
  mean_.assign(dims, 0.0);
  scale_.assign(dims, 0.0);
  for (const auto& v : raw)
    for (size_t i = 0; i < dims; ++i) mean_[i] += v[i] / raw.size();
  for (const auto& v : raw)
    for (size_t i = 0; i < dims; ++i) {
      double d = v[i] - mean_[i];
      scale_[i] += d * d / raw.size();
    }
  for (double& s : scale_) s = std::sqrt(s);
  weight_roots_.assign(dims, 1.0);
  for (size_t i = 0; i < config_.feature_weights.size(); ++i)
    weight_roots_[i] = std::sqrt(config_.feature_weights[i]);
  for (const std::string& m : known_) known_vectors_.push_back(normalised(*features_.find(m)));

  std::map<std::string, int> counts;
  for (const auto& r : known_ratios_)
    for (const auto& [t, v] : r) {
      mean_ratios_[t] += v;
      ++counts[t];
    }
  for (auto& [t, v] : mean_ratios_) v /= counts[t];

  // The fallback's unit: how far a model typically is from the nearest one of another
  // architecture, i.e. how far a really new model is from what is known.
  std::set<std::string> archs;
  for (const std::string& m : known_) archs.insert(architecture_of(m));
  std::vector<double> nearest;
  for (size_t i = 0; i < known_.size(); ++i) {
    double best = -1;
    for (size_t j = 0; j < known_.size(); ++j) {
      if (j == i) continue;
      if (archs.size() > 1 && architecture_of(known_[j]) == architecture_of(known_[i])) continue;
      double d2 = 0;
      for (size_t c = 0; c < dims; ++c) {
        double d = known_vectors_[i][c] - known_vectors_[j][c];
        d2 += d * d;
      }
      if (best < 0 || d2 < best) best = d2;
    }
    if (best >= 0) nearest.push_back(std::sqrt(best));
  }
  if (!nearest.empty()) {
    std::sort(nearest.begin(), nearest.end());
    size_t n = nearest.size();
    typical_distance_ = n % 2 ? nearest[n / 2] : 0.5 * (nearest[n / 2 - 1] + nearest[n / 2]);
  }
}

std::vector<double> SimilarityModel::normalised(const ModelFeatures& f) const {
  std::vector<double> v = raw_feature_vector(f);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale_[i] > 1e-12 ? weight_roots_[i] * (v[i] - mean_[i]) / scale_[i] : 0.0;
  return v;
}

SpeedPrediction SimilarityModel::predict(const std::string& model) const {
  const ModelFeatures* f = features_.find(model);
  if (!f) throw InputError("similarity: model " + model + " has no row in the feature table");
  return predict(*f);
}

SpeedPrediction SimilarityModel::predict(const ModelFeatures& f) const {
  f.validate();
  std::vector<double> x = normalised(f);
  std::vector<std::pair<double, size_t>> by_distance;
  for (size_t j = 0; j < known_.size(); ++j) {
    double d2 = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      double d = x[i] - known_vectors_[j][i];
      d2 += d * d;
    }
    by_distance.push_back({std::sqrt(d2), j});
  }
  std::sort(by_distance.begin(), by_distance.end());

  // Inverse-distance weights over a neighbour list; identical models take all the weight.
  auto weights = [](const std::vector<std::pair<double, size_t>>& nb) {
    std::vector<double> w(nb.size(), 0.0);
    bool exact = !nb.empty() && nb.front().first < kSameDistance;
    double sum = 0;
    for (size_t i = 0; i < nb.size(); ++i) {
      w[i] = exact ? (nb[i].first < kSameDistance ? 1.0 : 0.0) : 1.0 / nb[i].first;
      sum += w[i];
    }
    for (double& v : w) v /= sum;
    return w;
  };

  SpeedPrediction out;
  out.model = f.model;
  out.reference_type = config_.reference_type;
  size_t k = std::min<size_t>(config_.k, by_distance.size());
  std::vector<std::pair<double, size_t>> nearest(by_distance.begin(), by_distance.begin() + k);
  std::vector<double> w = weights(nearest);
  for (size_t i = 0; i < k; ++i)
    out.neighbours.push_back({known_[nearest[i].second], nearest[i].first, w[i]});

  // How much the neighbours are trusted: their inverse-distance weighted mean distance (the
  // harmonic mean of the k distances) against the fallback distance s.
  double s = config_.fallback_scale * typical_distance_;
  if (s > 0 && nearest.front().first >= kSameDistance) {
    double inverse = 0;
    for (const auto& p : nearest) inverse += 1.0 / p.first;
    double d = nearest.size() / inverse;
    out.neighbour_share = s * s / (s * s + d * d);
  }

  // Per type: the k nearest known models that measured it (a type only some models ran on
  // still gets k votes). Geometric mean, because ratios multiply.
  for (const std::string& t : types_) {
    std::vector<std::pair<double, size_t>> nb;
    for (const auto& p : by_distance) {
      if (nb.size() >= k) break;
      if (known_ratios_[p.second].count(t)) nb.push_back(p);
    }
    if (nb.empty()) continue;
    std::vector<double> wt = weights(nb);
    double log_sum = 0;
    for (size_t i = 0; i < nb.size(); ++i)
      log_sum += wt[i] * std::log(known_ratios_[nb[i].second].at(t));
    double mean = mean_ratios_.at(t);  // exists: some known model measured t
    out.ratios[t] =
        std::exp(out.neighbour_share * log_sum + (1.0 - out.neighbour_share) * std::log(mean));
  }
  out.ratios[config_.reference_type] = 1.0;
  return out;
}

std::vector<RegisteredPrediction> SimilarityModel::register_predictions(
    ThroughputModel& tm, const std::string& model, const std::vector<std::string>& types) const {
  std::vector<RegisteredPrediction> added;
  const ModelFeatures* f = features_.find(model);
  if (!f) return added;
  SpeedPrediction pred = predict(*f);
  const ProfileTable& table = tm.table();

  // The measured type to pivot on: the reference if measured, else the one with most points.
  std::string pivot;
  size_t pivot_points = 0;
  for (const std::string& t : table.types_for(model)) {
    if (!pred.ratios.count(t)) continue;
    size_t n = table.points_for(model, t).size();
    if (t == config_.reference_type) n = static_cast<size_t>(-1);
    if (n > pivot_points) {
      pivot = t;
      pivot_points = n;
    }
  }
  for (const std::string& t_in : types) {
    std::string t = normalize_type(t_in);
    if (table.has(model, t) || !pred.ratios.count(t)) continue;
    RegisteredPrediction r;
    r.type = t;
    if (!pivot.empty()) {
      r.source_model = model;
      r.source_type = pivot;
      r.ratio = pred.ratios.at(t) / pred.ratios.at(pivot);
    } else {
      // No measurement of its own: borrow the nearest known model's reference curve, scaled by
      // how much more work an iteration of this model is.
      const std::string& anchor = pred.neighbours.front().model;
      const ModelFeatures* fa = features_.find(anchor);
      r.source_model = anchor;
      r.source_type = config_.reference_type;
      r.ratio = fa->gflops_per_iteration() / f->gflops_per_iteration() * pred.ratios.at(t);
    }
    tm.add_prediction(model, t, r.source_model, r.source_type, r.ratio);
    added.push_back(r);
  }
  return added;
}

}  // namespace ringsched
