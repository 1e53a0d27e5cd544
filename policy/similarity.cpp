#include "ringsched/similarity.h"

#include <algorithm>
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
      "log_params",     "log_gflops_per_sample", "log_batch",      "log_gflops_per_iter",
      "log_act_mb_per_iter", "conv_frac",      "dense_frac",     "recurrent_frac",
      "attention_frac", "norm_frac"};
  return names;
}

std::vector<double> raw_feature_vector(const ModelFeatures& f) {
  // Sizes span orders of magnitude, so they enter as logs; the mix of layer kinds enters as
  // fractions of the weighted layers, so a deep and a shallow network of one kind stay close.
  double weighted = f.conv_layers + f.dense_layers + f.recurrent_layers + f.attention_layers;
  return {std::log(f.params_m),
          std::log(f.gflops_per_sample),
          std::log(f.batch_size),
          std::log(f.gflops_per_iteration()),
          std::log(f.act_mb_per_sample * f.batch_size),
          f.conv_layers / weighted,
          f.dense_layers / weighted,
          f.recurrent_layers / weighted,
          f.attention_layers / weighted,
          f.norm_layers / weighted};
}

void SimilarityConfig::validate() const {
  if (k < 1 || k > 1000) throw InputError("similarity: k must be in 1..1000");
  if (reference_type.empty()) throw InputError("similarity: empty reference type");
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

SimilarityModel::SimilarityModel(FeatureTable features, const ProfileTable& profiles,
                                 SimilarityConfig config)
    : features_(std::move(features)), config_(std::move(config)) {
  config_.validate();
  config_.reference_type = normalize_type(config_.reference_type);
  if (config_.types.empty()) {
    types_ = profiles.types();
  } else {
    for (const std::string& t : config_.types) types_.push_back(normalize_type(t));
  }
  if (std::find(types_.begin(), types_.end(), config_.reference_type) == types_.end())
    types_.push_back(config_.reference_type);
  std::sort(types_.begin(), types_.end());
  types_.erase(std::unique(types_.begin(), types_.end()), types_.end());

  std::vector<std::vector<double>> raw;
  for (const std::string& m : profiles.models()) {
    const ModelFeatures* f = features_.find(m);
    if (!f) continue;
    std::map<std::string, double> r = measured_ratios(profiles, m, config_.reference_type, types_);
    if (r.empty()) continue;
    known_.push_back(m);
    known_ratios_.push_back(std::move(r));
    raw.push_back(raw_feature_vector(*f));
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
  for (const std::string& m : known_) known_vectors_.push_back(normalised(*features_.find(m)));
}

std::vector<double> SimilarityModel::normalised(const ModelFeatures& f) const {
  std::vector<double> v = raw_feature_vector(f);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = scale_[i] > 1e-12 ? (v[i] - mean_[i]) / scale_[i] : 0.0;
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
    out.ratios[t] = std::exp(log_sum);
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
