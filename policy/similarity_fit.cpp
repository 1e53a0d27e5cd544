// SPDX-License-Identifier: GPL-2.0-or-later
// Choosing the model-similarity configuration from the known models alone (DESIGN 3.4): feature
// weights from correlations with the measured ratios, and k, weights and fallback by
// leave-one-group-out over the known models.
#include <cmath>
#include <set>

#include "ringsched/similarity.h"

namespace ringsched {
namespace {

// Pearson correlation; 0 when either side is constant.
double correlation(const std::vector<double>& a, const std::vector<double>& b) {
  double n = static_cast<double>(a.size()), ma = 0, mb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ma += a[i] / n;
    mb += b[i] / n;
  }
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    sab += (a[i] - ma) * (b[i] - mb);
    saa += (a[i] - ma) * (a[i] - ma);
    sbb += (b[i] - mb) * (b[i] - mb);
  }
  if (saa < 1e-12 || sbb < 1e-12) return 0.0;
  return sab / std::sqrt(saa * sbb);
}

// The type with the largest ratio among `among`'s types (first by name on ties).
std::string best_type(const std::map<std::string, double>& ratios,
                      const std::map<std::string, double>& among) {
  std::string best;
  double v = -1;
  for (const auto& [t, unused] : among) {
    auto it = ratios.find(t);
    if (it != ratios.end() && it->second > v) {
      v = it->second;
      best = t;
    }
  }
  return best;
}

}  // namespace

std::vector<double> learn_feature_weights(const FeatureTable& features, const KnownRatios& ratios,
                                          const std::string& reference_type) {
  const std::string ref = normalize_type(reference_type);
  const size_t dims = feature_names().size();
  std::vector<std::vector<double>> x;
  std::vector<const std::map<std::string, double>*> y;
  std::set<std::string> types;
  for (const auto& [m, r] : ratios) {
    const ModelFeatures* f = features.find(m);
    if (!f || !r.count(ref)) continue;
    x.push_back(raw_feature_vector(*f));
    y.push_back(&r);
    for (const auto& [t, v] : r)
      if (t != ref) types.insert(t);
  }
  std::vector<double> w(dims, 0.0);
  int scored_types = 0;
  for (const std::string& t : types) {
    std::vector<double> target;
    std::vector<std::vector<double>> column(dims);
    for (size_t j = 0; j < y.size(); ++j) {
      auto it = y[j]->find(t);
      if (it == y[j]->end()) continue;
      target.push_back(std::log(it->second / y[j]->at(ref)));
      for (size_t i = 0; i < dims; ++i) column[i].push_back(x[j][i]);
    }
    if (target.size() < 3) continue;  // a correlation of two points says nothing
    for (size_t i = 0; i < dims; ++i) {
      double c = correlation(column[i], target);
      w[i] += c * c;
    }
    ++scored_types;
  }
  double sum = 0;
  for (double& v : w) {
    v = scored_types ? std::sqrt(v / scored_types) : 0.0;
    sum += v;
  }
  if (sum < 1e-12) return std::vector<double>(dims, 1.0);
  for (double& v : w) v *= dims / sum;
  return w;
}

SimilarityFit fit_similarity(const FeatureTable& features, const KnownRatios& ratios,
                             const SimilarityConfig& base,
                             const std::function<std::string(const std::string&)>& group,
                             const FitGrid& grid) {
  base.validate();
  if (!group) throw InputError("similarity fit: no grouping of the models given");
  SimilarityFit fit;
  fit.config = base;
  const std::string ref = normalize_type(base.reference_type);
  std::map<std::string, std::vector<std::string>> groups;
  for (const auto& [m, r] : ratios)
    if (features.find(m) && r.count(ref)) groups[group(m)].push_back(m);
  if (groups.size() < 2) return fit;  // nothing would be left to predict from

  for (int k : grid.k)
    for (bool learned : {false, true}) {
      if (learned && !grid.try_learned_weights) continue;
      for (double scale : grid.fallback_scale) {
        FitCandidate c;
        c.k = k;
        c.learned_weights = learned;
        c.fallback_scale = scale;
        fit.candidates.push_back(c);
      }
    }
  if (fit.candidates.empty()) return fit;  // an empty grid: nothing to choose from
  std::vector<double> log_error(fit.candidates.size(), 0.0);
  std::vector<int> errors_counted(fit.candidates.size(), 0);

  for (const auto& [name, left_out] : groups) {
    std::set<std::string> out(left_out.begin(), left_out.end());
    KnownRatios train;
    for (const auto& [m, r] : ratios)
      if (!out.count(m)) train[m] = r;
    // Learned from the training groups only, as the left-out group is unseen.
    std::vector<double> learned =
        grid.try_learned_weights ? learn_feature_weights(features, train, ref) : std::vector<double>();
    for (size_t ci = 0; ci < fit.candidates.size(); ++ci) {
      FitCandidate& c = fit.candidates[ci];
      SimilarityConfig cfg = base;
      cfg.k = c.k;
      cfg.feature_weights = c.learned_weights ? learned : std::vector<double>();
      cfg.fallback_scale = c.fallback_scale;
      SimilarityModel sim(features, train, cfg);
      for (const std::string& m : left_out) {
        const std::map<std::string, double>& truth = ratios.at(m);
        if (truth.size() < 2) continue;  // only the reference: no best type to get right
        SpeedPrediction p = sim.predict(m);
        ++c.evaluated;
        if (best_type(p.ratios, truth) == best_type(truth, truth)) ++c.top1;
        for (const auto& [t, v] : truth) {
          if (t == ref || !p.ratios.count(t)) continue;
          log_error[ci] += std::fabs(std::log(p.ratios.at(t) / (v / truth.at(ref))));
          ++errors_counted[ci];
        }
      }
    }
  }
  for (size_t ci = 0; ci < fit.candidates.size(); ++ci) {
    FitCandidate& c = fit.candidates[ci];
    c.mean_abs_log_error = errors_counted[ci] ? log_error[ci] / errors_counted[ci] : 0.0;
    if (fit.chosen < 0) {
      fit.chosen = static_cast<int>(ci);
      continue;
    }
    const FitCandidate& best = fit.candidates[fit.chosen];
    if (c.top1 > best.top1 ||
        (c.top1 == best.top1 && c.mean_abs_log_error < best.mean_abs_log_error - 1e-12))
      fit.chosen = static_cast<int>(ci);
  }
  const FitCandidate& won = fit.candidates[fit.chosen];
  fit.config.k = won.k;
  fit.config.fallback_scale = won.fallback_scale;
  fit.config.feature_weights = won.learned_weights ? learn_feature_weights(features, ratios, ref)
                                                   : std::vector<double>();
  return fit;
}

}  // namespace ringsched
