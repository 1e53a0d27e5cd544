// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/throughput.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace ringsched {
namespace {

// When a (model, type) has measurements at one size only, the ring's cost is unknown. Assume a
// modest one rather than perfect scaling: the bandwidth term 5% and the per-step latency 0.1% of
// the one-GPU iteration time. Measured points, once there, replace this.
constexpr double kDefaultBetaFraction = 0.05;
constexpr double kDefaultAlphaFraction = 0.001;

// Basis of the ring time model at n GPUs: t(n) = t_comp*b0 + beta*b1 + alpha*b2.
std::array<double, 3> basis(int n) {
  double dn = n;
  return {1.0 / dn, 2.0 * (dn - 1.0) / dn, 2.0 * (dn - 1.0)};
}

// Weighted least squares restricted to the variables in `mask`; false if singular.
bool solve_subset(const std::vector<ProfilePoint>& pts, unsigned mask, std::array<double, 3>& x,
                  double& residual) {
  int idx[3], k = 0;
  for (int i = 0; i < 3; ++i)
    if (mask & (1u << i)) idx[k++] = i;
  double A[3][3] = {{0}}, b[3] = {0};
  for (const ProfilePoint& p : pts) {
    double t = 1.0 / p.iters_per_s;
    double w = 1.0 / (t * t);  // relative error: every point counts the same
    auto f = basis(p.num_gpus);
    for (int r = 0; r < k; ++r) {
      b[r] += w * f[idx[r]] * t;
      for (int c = 0; c < k; ++c) A[r][c] += w * f[idx[r]] * f[idx[c]];
    }
  }
  // Gaussian elimination with partial pivoting on the k x k system.
  for (int c = 0; c < k; ++c) {
    int piv = c;
    for (int r = c + 1; r < k; ++r)
      if (std::fabs(A[r][c]) > std::fabs(A[piv][c])) piv = r;
    if (std::fabs(A[piv][c]) < 1e-300) return false;
    std::swap(A[c], A[piv]);
    std::swap(b[c], b[piv]);
    for (int r = c + 1; r < k; ++r) {
      double m = A[r][c] / A[c][c];
      for (int cc = c; cc < k; ++cc) A[r][cc] -= m * A[c][cc];
      b[r] -= m * b[c];
    }
  }
  double sol[3] = {0};
  for (int r = k - 1; r >= 0; --r) {
    double s = b[r];
    for (int c = r + 1; c < k; ++c) s -= A[r][c] * sol[c];
    sol[r] = s / A[r][r];
  }
  x = {0, 0, 0};
  for (int r = 0; r < k; ++r) x[idx[r]] = sol[r];
  residual = 0;
  for (const ProfilePoint& p : pts) {
    double t = 1.0 / p.iters_per_s;
    auto f = basis(p.num_gpus);
    double e = (x[0] * f[0] + x[1] * f[1] + x[2] * f[2] - t) / t;
    residual += e * e;
  }
  return true;
}

// Non-negative least squares over three variables: try every subset that contains t_comp and
// keep the best one whose coefficients are all non-negative.
RingFit fit_points(const std::vector<ProfilePoint>& pts) {
  RingFit best;
  best.points = static_cast<int>(pts.size());
  double best_res = INFINITY;
  for (unsigned mask = 1; mask < 8; ++mask) {
    if (!(mask & 1u)) continue;
    std::array<double, 3> x;
    double res;
    if (!solve_subset(pts, mask, x, res)) continue;
    if (x[0] <= 0 || x[1] < 0 || x[2] < 0) continue;
    if (res < best_res - 1e-12) {
      best_res = res;
      best.t_comp = x[0];
      best.beta = x[1];
      best.alpha = x[2];
    }
  }
  bool multi = false;
  for (const ProfilePoint& p : pts) multi = multi || p.num_gpus > 1;
  if (!multi) {
    best.beta = kDefaultBetaFraction * best.t_comp;
    best.alpha = kDefaultAlphaFraction * best.t_comp;
  }
  return best;
}

}  // namespace

double RingFit::t_iter(int n) const {
  auto f = basis(n);
  return t_comp * f[0] + beta * f[1] + alpha * f[2];
}

ThroughputModel::ThroughputModel(ProfileTable table) : table_(std::move(table)) {
  for (const std::string& m : table_.models())
    for (const std::string& t : table_.types_for(m)) refit(m, t);
}

void ThroughputModel::refit(const std::string& model, const std::string& type) {
  std::vector<ProfilePoint> pts = table_.points_for(model, type);
  if (pts.empty()) {
    auto it = curves_.find(model);
    if (it != curves_.end()) it->second.erase(type);
    return;
  }
  Curve& c = curves_[model][type];
  c.fit = fit_points(pts);
  c.points = std::move(pts);
}

const ThroughputModel::Curve* ThroughputModel::curve(const std::string& model,
                                                     const std::string& type) const {
  auto m = curves_.find(model);
  if (m == curves_.end()) return nullptr;
  auto t = m->second.find(type);
  return t == m->second.end() ? nullptr : &t->second;
}

const ThroughputModel::Prediction* ThroughputModel::prediction(const std::string& model,
                                                               const std::string& type) const {
  auto m = predictions_.find(model);
  if (m == predictions_.end()) return nullptr;
  auto t = m->second.find(type);
  return t == m->second.end() ? nullptr : &t->second;
}

void ThroughputModel::add_measurement(const ProfilePoint& p) {
  table_.add(p);
  std::string t = normalize_type(p.gpu_type);
  refit(p.model, t);
  auto m = predictions_.find(p.model);
  if (m != predictions_.end()) m->second.erase(t);
}

bool ThroughputModel::knows(const std::string& model, const std::string& type) const {
  std::string t = normalize_type(type);
  return curve(model, t) || prediction(model, t);
}

bool ThroughputModel::is_predicted(const std::string& model, const std::string& type) const {
  std::string t = normalize_type(type);
  return !curve(model, t) && prediction(model, t);
}

std::optional<RingFit> ThroughputModel::fit(const std::string& model,
                                            const std::string& type) const {
  const Curve* c = curve(model, normalize_type(type));
  if (!c) return std::nullopt;
  return c->fit;
}

void ThroughputModel::add_prediction(const std::string& model, const std::string& type,
                                     const std::string& source_model,
                                     const std::string& source_type, double ratio) {
  if (!(ratio > 0) || !std::isfinite(ratio))
    throw InputError("prediction for " + model + " on " + type + ": ratio must be positive");
  std::string t = normalize_type(type), st = normalize_type(source_type);
  if (source_model == model && st == t)
    throw InputError("prediction for " + model + " on " + type + ": cannot be its own source");
  predictions_[model][t] = Prediction{source_model, st, ratio};
}

double ThroughputModel::curve_speed(const Curve& c, int n) {
  double fitted = 1.0 / c.fit.t_iter(n);
  // Measured points win: scale the fit by the measured/fitted ratio, interpolated in log2(n)
  // between the neighbouring measured sizes and held constant beyond them.
  const ProfilePoint* lo = nullptr;
  const ProfilePoint* hi = nullptr;
  for (const ProfilePoint& p : c.points) {
    if (p.num_gpus == n) return p.iters_per_s;
    if (p.num_gpus < n) lo = &p;
    if (p.num_gpus > n && !hi) hi = &p;
  }
  auto correction = [&](const ProfilePoint* p) { return p->iters_per_s * c.fit.t_iter(p->num_gpus); };
  double k;
  if (lo && hi) {
    double x = (std::log2(n) - std::log2(lo->num_gpus)) /
               (std::log2(hi->num_gpus) - std::log2(lo->num_gpus));
    k = correction(lo) * (1 - x) + correction(hi) * x;
  } else {
    k = correction(lo ? lo : hi);
  }
  return fitted * k;
}

ThroughputModel::Speed ThroughputModel::speed(const std::string& model, const std::string& type_in) const {
  Speed s;
  // Types are stored normalized; only normalize (and allocate) when the caller's is not.
  bool plain = true;
  for (char ch : type_in) plain = plain && !std::isupper(static_cast<unsigned char>(ch)) &&
                                  !std::isspace(static_cast<unsigned char>(ch));
  std::string normalized;
  if (!plain) normalized = normalize_type(type_in);
  const std::string& type = plain ? type_in : normalized;
  if (const Curve* c = curve(model, type)) {
    s.curve_ = c;
    s.ratio_ = 1;
    return s;
  }
  // Predictions chain at most a few steps; the bound stops a cycle of predictions.
  const Prediction* p = prediction(model, type);
  double ratio = 1;
  for (int depth = 0; p && depth < 8; ++depth) {
    ratio *= p->ratio;
    if (const Curve* c = curve(p->source_model, p->source_type)) {
      s.curve_ = c;
      s.ratio_ = ratio;
      return s;
    }
    p = prediction(p->source_model, p->source_type);
  }
  return s;
}

double ThroughputModel::Speed::operator()(int n) const {
  if (n <= 0 || !curve_) return 0;
  return ratio_ * curve_speed(*curve_, n);
}

double ThroughputModel::iters_per_s(const std::string& model, const std::string& type, int n) const {
  return n <= 0 ? 0 : speed(model, type)(n);
}

double ThroughputModel::iters_per_s_mixed(const std::string& model,
                                          const std::map<std::string, int>& counts) const {
  int total = 0, kinds = 0;
  std::string only;
  for (const auto& [t, c] : counts)
    if (c > 0) {
      total += c;
      ++kinds;
      only = t;
    }
  if (total == 0) return 0;
  if (kinds == 1) return iters_per_s(model, only, total);
  std::vector<MixedPart> parts;
  for (const auto& [t, c] : counts)
    if (c > 0) parts.push_back(MixedPart{c, iters_per_s(model, t, 1), iters_per_s(model, t, total)});
  return mixed_speed(parts);
}

double ThroughputModel::mixed_speed(const std::vector<MixedPart>& parts) {
  int total = 0;
  for (const MixedPart& p : parts) total += p.count;
  if (total == 0) return 0;
  if (parts.size() == 1) return parts[0].at_total;
  // Proportional batch split: each worker's share matches its single-GPU speed, so compute time
  // is 1 / sum of single-GPU speeds. The ring is as slow as its slowest link: take the largest
  // communication term of the types involved, at the ring's full size.
  double speed_sum = 0, comm = 0;
  for (const MixedPart& p : parts) {
    if (p.one_gpu <= 0 || p.at_total <= 0) return 0;
    speed_sum += p.count * p.one_gpu;
    double t_total = 1.0 / p.at_total;
    double t_comp = 1.0 / (total * p.one_gpu);
    comm = std::max(comm, std::max(0.0, t_total - t_comp));
  }
  return 1.0 / (1.0 / speed_sum + comm);
}

}  // namespace ringsched
