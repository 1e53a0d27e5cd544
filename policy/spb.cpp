// SPDX-License-Identifier: GPL-2.0-or-later
#include "ringsched/spb.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace ringsched {
namespace {

void check_depth(double d, const std::string& what) {
  if (!(d > 0) || d > 1 || !std::isfinite(d))
    throw InputError("spb: " + what + " depth " + std::to_string(d) + " is outside (0, 1]");
}

// Workers that must run full depth so that every layer is computed by min_coverage of them.
int full_depth_workers(int n, const SpbConfig& config) {
  int m = static_cast<int>(std::ceil(config.min_coverage * n - 1e-9));
  return std::clamp(m, 1, n);
}

// Ring all-reduce bytes per worker for k participants, relative to the bytes of the bucket.
double ring_factor(int k) { return k <= 1 ? 0.0 : 2.0 * (k - 1) / k; }

}  // namespace

void SpbConfig::validate() const {
  if (!(backward_to_forward >= 0) || backward_to_forward > 100)
    throw InputError("spb: backward_to_forward must be in 0..100");
  check_depth(min_depth, "minimum");
  if (!(min_coverage > 0) || min_coverage > 1)
    throw InputError("spb: min_coverage must be in (0, 1]");
  if (!(quality_discount >= 0) || quality_discount > 1)
    throw InputError("spb: quality_discount must be in [0, 1]");
}

double spb_compute_factor(double depth, const SpbConfig& config) {
  check_depth(depth, "worker");
  double b = config.backward_to_forward;
  return (1.0 + b * depth) / (1.0 + b);
}

SpbIteration spb_iteration(const ThroughputModel& tm, const std::string& model,
                           const std::vector<SpbWorker>& workers, SpbShares shares,
                           const SpbConfig& config) {
  config.validate();
  if (workers.empty()) throw InputError("spb: model " + model + ": no workers");
  const int n = static_cast<int>(workers.size());
  std::vector<double> speed(n), factor(n);
  std::map<std::string, int> counts;
  double speed_sum = 0;
  for (int w = 0; w < n; ++w) {
    check_depth(workers[w].depth, "worker " + std::to_string(w));
    if (workers[w].depth < config.min_depth - 1e-12)
      throw InputError("spb: worker " + std::to_string(w) + " depth " +
                       std::to_string(workers[w].depth) + " is below the minimum " +
                       std::to_string(config.min_depth));
    speed[w] = tm.iters_per_s(model, workers[w].gpu_type, 1);
    if (!(speed[w] > 0))
      throw InputError("spb: no speed known for model " + model + " on type " + workers[w].gpu_type);
    factor[w] = spb_compute_factor(workers[w].depth, config);
    speed_sum += speed[w];
    counts[normalize_type(workers[w].gpu_type)]++;
  }

  SpbIteration it;
  it.batch_share.resize(n);
  double weight_sum = 0;
  for (int w = 0; w < n; ++w) {
    it.batch_share[w] = shares == SpbShares::Equal ? 1.0 : speed[w] / factor[w];
    weight_sum += it.batch_share[w];
  }
  for (double& s : it.batch_share) s /= weight_sum;
  for (int w = 0; w < n; ++w) {
    it.compute_s.push_back(it.batch_share[w] / speed[w] * factor[w]);
    it.act_fraction.push_back(it.batch_share[w] * workers[w].depth);
    it.compute_s_max = std::max(it.compute_s_max, it.compute_s.back());
    it.useful_fraction += it.batch_share[w] * workers[w].depth;
  }

  // Traffic: the layers between consecutive distinct depths are all-reduced among the workers
  // that reach them.
  std::vector<double> depths;
  for (const SpbWorker& w : workers) depths.push_back(w.depth);
  std::sort(depths.rbegin(), depths.rend());
  double traffic = 0;
  for (int j = 0; j < n; ++j) {
    double next = j + 1 < n ? depths[j + 1] : 0.0;
    traffic += (depths[j] - next) * ring_factor(j + 1);
  }
  int full = 0;
  for (double d : depths) full += d >= 1.0 - 1e-12;
  it.min_coverage = static_cast<double>(full) / n;
  it.traffic_fraction = n <= 1 ? 0.0 : config.traffic_follows_depth ? traffic / ring_factor(n) : 1.0;

  if (n > 1) {
    double v_set = counts.size() == 1 ? tm.iters_per_s(model, counts.begin()->first, n)
                                      : tm.iters_per_s_mixed(model, counts);
    if (!(v_set > 0))
      throw InputError("spb: no speed known for model " + model + " on this worker set");
    double comm_full = std::max(0.0, 1.0 / v_set - 1.0 / speed_sum);
    it.comm_s = comm_full * it.traffic_fraction;
  }
  it.iter_s = it.compute_s_max + it.comm_s;
  return it;
}

std::vector<double> balanced_depths(const ThroughputModel& tm, const std::string& model,
                                    const std::vector<std::string>& worker_types,
                                    const SpbConfig& config) {
  config.validate();
  const int n = static_cast<int>(worker_types.size());
  if (n == 0) throw InputError("spb: model " + model + ": no workers");
  // Full-depth compute time of an equal share on each worker.
  std::vector<double> full_time(n);
  for (int w = 0; w < n; ++w) {
    double v = tm.iters_per_s(model, worker_types[w], 1);
    if (!(v > 0))
      throw InputError("spb: no speed known for model " + model + " on type " + worker_types[w]);
    full_time[w] = 1.0 / (n * v);
  }
  std::vector<int> order(n);
  for (int w = 0; w < n; ++w) order[w] = w;
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return full_time[a] < full_time[b]; });
  const int m = full_depth_workers(n, config);
  const double target = full_time[order[m - 1]];
  const double b = config.backward_to_forward;
  std::vector<double> depth(n, 1.0);
  for (int i = m; i < n; ++i) {
    int w = order[i];
    // (1 + b d) / (1 + b) * full_time = target
    double d = b > 0 ? ((1.0 + b) * target / full_time[w] - 1.0) / b : 1.0;
    depth[w] = std::clamp(d, config.min_depth, 1.0);
  }
  return depth;
}

std::vector<double> rotating_depths(int workers, const std::vector<double>& cycle, long iteration) {
  if (workers < 1) throw InputError("spb: a depth pattern needs at least one worker");
  if (cycle.empty()) throw InputError("spb: empty depth cycle");
  for (double d : cycle) check_depth(d, "pattern");
  if (iteration < 0) throw InputError("spb: negative iteration");
  std::vector<double> out(workers);
  const long c = static_cast<long>(cycle.size());
  for (int w = 0; w < workers; ++w) out[w] = cycle[(w + iteration) % c];
  return out;
}

SpbFootprint spb_at_footprint(const ThroughputModel& tm, const std::string& model,
                              const std::string& type, int gpus, const SpbConfig& config) {
  config.validate();
  if (gpus < 1) throw InputError("spb: model " + model + ": footprint of " + std::to_string(gpus) +
                                 " GPUs");
  SpbFootprint out;
  out.gpus = gpus;
  out.full_depth_iters_per_s = tm.iters_per_s(model, type, gpus);
  if (!(out.full_depth_iters_per_s > 0))
    throw InputError("spb: no speed known for model " + model + " on type " + type);
  const int m = full_depth_workers(gpus, config);
  std::vector<double> cycle(gpus, config.min_depth);
  for (int i = 0; i < m; ++i) cycle[i] = 1.0;
  out.depths = rotating_depths(gpus, cycle, 0);
  std::vector<SpbWorker> workers;
  for (double d : out.depths) workers.push_back({type, d});
  SpbIteration it = spb_iteration(tm, model, workers, SpbShares::Proportional, config);
  out.spb_iters_per_s = it.iters_per_s();
  out.useful_fraction = it.useful_fraction;
  double sum = 0;
  for (double d : out.depths) sum += d;
  out.mean_depth = sum / gpus;
  out.useful_iters_per_s =
      out.spb_iters_per_s * (1.0 - config.quality_discount * (1.0 - out.useful_fraction));
  return out;
}

}  // namespace ringsched
