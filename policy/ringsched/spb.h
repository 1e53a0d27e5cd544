// SPDX-License-Identifier: GPL-2.0-or-later
// Structured partial backpropagation (SPB) cost model (DESIGN 3.5; after Kumar et al.,
// arXiv 2111.10672). A worker with depth d in (0, 1] back-propagates through the fraction d of
// the layers nearest the loss. Per iteration, relative to full depth:
//   compute     (1 + b*d) / (1 + b)        b = backward/forward FLOPs ratio (default 2)
//   activations d                          only the back-propagated layers keep theirs
//   gradients   d or 1                     see SpbConfig::traffic_follows_depth
// Layers are assumed uniform in FLOPs, activations and parameters along the depth. A layer's
// gradient is averaged over the workers that computed it. As the paper has it, the gradient
// bucket at depth x is all-reduced in a ring of the k(x) workers with depth >= x, costing
// 2(k-1)/k of its bytes each; libringrt's ringrt_allreduce_spb packs every bucket (zeros where
// a worker did not compute it) and all-reduces the whole packet among all workers, so there
// every iteration moves what a full-depth one does (measured on PyTorch, docs/pytorch.md).
// Quality: the model assumes none is lost (an SPB iteration counts as a full one), as the paper
// reports; SpbConfig::quality_discount lets a caller count only the computed share instead. The
// real training check belongs to the runtime.
#pragma once

#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/throughput.h"

namespace ringsched {

struct SpbConfig {
  double backward_to_forward = 2.0;  // b: backward FLOPs per forward FLOP
  double min_depth = 0.25;           // no worker goes shallower
  double min_coverage = 0.5;         // every layer computed by at least this fraction of workers
  double quality_discount = 0.0;     // 0: SPB iterations count in full; 1: by computed share
  // true: each bucket is all-reduced among its contributors only (the paper's assumption);
  // false: every bucket among all workers, as libringrt does it -- the default, since that is
  // what the jobs this model plans for run on.
  bool traffic_follows_depth = false;
  // Throws InputError("spb: ...") for values out of range.
  void validate() const;
};

// Relative compute of one worker at depth d: (1 + b*d) / (1 + b). Throws InputError for d
// outside (0, 1].
double spb_compute_factor(double depth, const SpbConfig& config);

// How each worker's share of the global batch is set.
enum class SpbShares {
  Equal,         // B / n each: balance must come from the depths (balanced_depths)
  Proportional,  // share ~ speed / compute factor: no straggler whatever the depths (DESIGN 3.1)
};

struct SpbWorker {
  std::string gpu_type;
  double depth = 1.0;
};

struct SpbIteration {
  std::vector<double> batch_share;    // per worker, sums to 1
  std::vector<double> compute_s;      // per worker: forward + partial backward of its share
  std::vector<double> act_fraction;   // per worker: activation memory / (full batch, full depth)
  double compute_s_max = 0;           // the slowest worker
  double comm_s = 0;                  // gradient all-reduce of the computed layers
  double iter_s = 0;                  // compute_s_max + comm_s (no overlap, as in the ring model)
  double traffic_fraction = 0;        // ring bytes relative to every worker at full depth
  double min_coverage = 0;            // smallest fraction of workers computing a layer
  double useful_fraction = 0;         // mean over layers of the batch share whose gradient counts
  double iters_per_s() const { return iter_s > 0 ? 1.0 / iter_s : 0; }
};

// Cost of one iteration of `model` on the given workers. Single-GPU speeds and the ring's
// communication time come from `tm` (measured or predicted): compute of worker w is
// share_w / v(type_w, 1) * compute factor; communication at full depth is
// 1 / v(worker set) - 1 / sum v(type, 1), scaled by the depth-dependent traffic. Throws
// InputError for an empty worker set, a bad depth, or a type `tm` knows nothing of.
SpbIteration spb_iteration(const ThroughputModel& tm, const std::string& model,
                           const std::vector<SpbWorker>& workers, SpbShares shares,
                           const SpbConfig& config);

// Depth per worker for equal batch shares on a mixed-type worker set so that all finish their
// compute together: the ceil(min_coverage * n) fastest workers run full depth (every layer stays
// covered), the others the depth at which their compute matches the slowest of those, never
// below min_depth (a worker that would need less stays at min_depth and is the straggler).
std::vector<double> balanced_depths(const ThroughputModel& tm, const std::string& model,
                                    const std::vector<std::string>& worker_types,
                                    const SpbConfig& config);

// A per-job depth pattern for n identical workers, rotating each iteration so that every worker
// computes every layer in turn: worker w at iteration i gets cycle[(w + i) % cycle.size()].
// E.g. cycle {1.0, 0.5}: half the workers full depth, half half depth. Throws InputError for an
// empty cycle or a bad depth.
std::vector<double> rotating_depths(int workers, const std::vector<double>& cycle, long iteration);

// Planner hook: a job run at a reduced footprint. Compares full depth on `gpus` GPUs of `type`
// with SPB on the same GPUs: ceil(min_coverage * gpus) workers at full depth, the rest at
// min_depth, rotating, shares proportional (no straggler).
struct SpbFootprint {
  int gpus = 0;
  double full_depth_iters_per_s = 0;
  double spb_iters_per_s = 0;     // iterations/s with SPB
  double useful_iters_per_s = 0;  // spb_iters_per_s discounted by quality_discount
  double mean_depth = 1.0;
  double useful_fraction = 1.0;
  std::vector<double> depths;     // iteration 0 of the rotation
  double speedup() const {
    return full_depth_iters_per_s > 0 ? useful_iters_per_s / full_depth_iters_per_s : 0;
  }
};
SpbFootprint spb_at_footprint(const ThroughputModel& tm, const std::string& model,
                              const std::string& type, int gpus, const SpbConfig& config);

}  // namespace ringsched
