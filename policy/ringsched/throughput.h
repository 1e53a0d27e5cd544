// SPDX-License-Identifier: GPL-2.0-or-later
// Throughput model (DESIGN 3.1): how many iterations per second a job makes on a set of GPUs.
// Measured points win; between and beyond them a ring time model fitted per (model, type):
//   t_iter(n) = t_comp/n + 2(n-1)/n * beta + 2(n-1) * alpha      (beta = S / B_link)
// Mixed types: each worker gets a batch share proportional to its single-GPU speed, so compute
// time is 1 / sum_w v(type_w, 1); communication is paid at the slowest link of the ring.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ringsched/model.h"

namespace ringsched {

struct RingFit {
  double t_comp = 0;  // seconds per iteration of compute on one GPU
  double beta = 0;    // seconds: S / B_link (bandwidth term of the ring)
  double alpha = 0;   // seconds: per-step latency
  int points = 0;     // measured points the fit used
  double t_iter(int n) const;
};

class ThroughputModel {
  struct Curve;

 public:
  ThroughputModel() = default;
  explicit ThroughputModel(ProfileTable table);

  const ProfileTable& table() const { return table_; }
  // Replaces/merges measured points (e.g. reported by running jobs) and refits what changed.
  void add_measurement(const ProfilePoint& p);

  // (model, type) looked up once, for callers that ask its speed at many sizes (the planner's
  // doubling rounds). Valid while the model is not changed; an empty one gives 0.
  class Speed {
   public:
    double operator()(int n) const;
   private:
    friend class ThroughputModel;
    const Curve* curve_ = nullptr;  // the measured curve the speed comes from
    double ratio_ = 0;              // x the prediction chain's ratios
  };
  Speed speed(const std::string& model, const std::string& type) const;
  // iterations/s of `model` on n GPUs of `type`; 0 if nothing is known of (model, type).
  double iters_per_s(const std::string& model, const std::string& type, int n) const;
  // Mixed worker set: counts per type (types with count 0 ignored). 0 if any type is unknown.
  double iters_per_s_mixed(const std::string& model, const std::map<std::string, int>& counts) const;
  // The same from what it is made of, for callers that keep the speeds at hand (the placement
  // values thousands of mixes): per type used, its GPU count, its speed on one GPU and on the
  // mix's total count. 0 if a speed is unknown (0).
  struct MixedPart {
    int count;
    double one_gpu;   // iters_per_s(model, type, 1)
    double at_total;  // iters_per_s(model, type, total GPUs of the mix)
  };
  static double mixed_speed(const std::vector<MixedPart>& parts);
  bool knows(const std::string& model, const std::string& type) const;
  std::optional<RingFit> fit(const std::string& model, const std::string& type) const;

  // Registers a prediction for a (model, type) without measurements (model similarity fills
  // this): v(model, type, n) = v(source_model, source_type, n) * ratio. Measured points of
  // (model, type), when they arrive, replace it.
  void add_prediction(const std::string& model, const std::string& type,
                      const std::string& source_model, const std::string& source_type,
                      double ratio);
  bool is_predicted(const std::string& model, const std::string& type) const;

 private:
  // One (model, type): its measured points (sorted by GPU count) and the fit through them. Kept
  // together because the planner asks for speeds millions of times per pass.
  struct Curve {
    RingFit fit;
    std::vector<ProfilePoint> points;
  };
  struct Prediction {
    std::string source_model, source_type;
    double ratio;
  };
  void refit(const std::string& model, const std::string& type);
  const Curve* curve(const std::string& model, const std::string& type) const;
  const Prediction* prediction(const std::string& model, const std::string& type) const;
  static double curve_speed(const Curve& c, int n);

  ProfileTable table_;
  // model -> type -> ...; std::less<> lets lookups use the caller's strings without copies.
  std::map<std::string, std::map<std::string, Curve, std::less<>>, std::less<>> curves_;
  std::map<std::string, std::map<std::string, Prediction, std::less<>>, std::less<>> predictions_;
};

}  // namespace ringsched
