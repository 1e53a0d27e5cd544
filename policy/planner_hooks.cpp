// SPDX-License-Identifier: GPL-2.0-or-later
#include "planner_hooks.h"

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ringsched/similarity.h"
#include "ringsched/spb.h"

namespace ringsched {

int predict_unseen_models(ThroughputModel& model, const SimilarityModel& similarity,
                          const std::vector<Job>& jobs, const std::vector<std::string>& types) {
  std::set<std::string> done;
  int predicted = 0;
  for (const Job& j : jobs) {
    if (!done.insert(j.model).second) continue;
    bool missing = false;
    for (const std::string& t : types) missing = missing || !model.knows(j.model, t);
    if (!missing) continue;
    predicted += static_cast<int>(similarity.register_predictions(model, j.model, types).size());
  }
  return predicted;
}

void apply_spb(const ThroughputModel& model, const Job& job, bool contention, JobPlan& jp) {
  jp.spb_depth = 1.0;
  if (!job.spb || !contention || !jp.runs || jp.gpus < 2 || jp.gpus_by_type.size() != 1) return;
  const std::string& type = jp.gpus_by_type.begin()->first;
  if (!model.knows(job.model, type)) return;
  SpbFootprint f = spb_at_footprint(model, job.model, type, jp.gpus, SpbConfig());
  if (f.speedup() <= 1.0) return;
  jp.spb_depth = f.mean_depth;
  jp.predicted_iters_per_s = f.useful_iters_per_s;
  char buf[96];
  std::snprintf(buf, sizeof buf, "; SPB under contention: mean depth %.2f, %.0f%% faster",
                f.mean_depth, 100.0 * (f.speedup() - 1.0));
  jp.reason += buf;
}

std::vector<std::string> types_worth_starting_on(const ThroughputModel& model, const Job& job,
                                                 const std::vector<std::string>& types, int n,
                                                 double waited_s) {
  double best = std::numeric_limits<double>::infinity();
  for (const std::string& t : types) {
    double v = model.iters_per_s(job.model, t, n);
    if (v > 0) best = std::min(best, job.remaining / v);
  }
  std::vector<std::string> out;
  for (const std::string& t : types) {
    double v = model.iters_per_s(job.model, t, n);
    if (v > 0 && job.remaining / v - best <= waited_s) out.push_back(t);
  }
  return out;
}

std::vector<char> hold_back_for_running(const std::vector<Job>& jobs, const std::vector<int>& placed,
                                        const FreeGpus& free, bool preempt, PlacementResult& pr) {
  std::vector<char> held(placed.size(), 0);
  std::vector<size_t> queue;  // running jobs that will keep the GPUs they hold
  for (size_t k = 0; k < placed.size(); ++k) {
    const Job& j = jobs[placed[k]];
    if (j.state == JobState::Running && !(preempt && j.stoppable) && pr.jobs[k].total == 0) queue.push_back(k);
  }
  if (queue.empty()) return held;
  // Per node: the GPUs the placement gives out there, those kept by running jobs, and the jobs
  // whose new placement uses it (pending ones first: undoing a running job's move puts it back
  // on its own GPUs, which may in turn hold back others).
  std::unordered_map<int, int> used, kept;
  std::unordered_map<int, std::vector<size_t>> on;
  for (size_t k = 0; k < placed.size(); ++k)
    for (const auto& [name, g] : pr.jobs[k].gpus_by_node) used[free.node_index(name)] += g;
  for (bool running : {false, true})
    for (size_t k = 0; k < placed.size(); ++k) {
      const Job& j = jobs[placed[k]];
      if ((j.state == JobState::Running) != running || (running && pr.jobs[k].gpus_by_node == j.gpus_by_node))
        continue;  // a running job that stays where it is keeps those GPUs either way
      for (const auto& [name, g] : pr.jobs[k].gpus_by_node)
        if (g > 0) on[free.node_index(name)].push_back(k);
    }
  for (size_t q = 0; q < queue.size(); ++q)
    for (const auto& [name, g] : jobs[placed[queue[q]]].gpus_by_node) {
      int node = free.node_index(name);
      if (node < 0) continue;
      kept[node] += g;
      for (size_t k : on[node]) {
        if (free.free(node) - used[node] >= kept[node]) break;
        if (held[k] || pr.jobs[k].total == 0) continue;
        held[k] = 1;
        for (const auto& [other, h] : pr.jobs[k].gpus_by_node) used[free.node_index(other)] -= h;
        pr.jobs[k] = JobPlacement{};
        if (jobs[placed[k]].state == JobState::Running) queue.push_back(k);
      }
    }
  return held;
}

int undo_placement_swaps(const PlacementProblem& pp, const std::vector<int>& seed_counts,
                         const std::vector<std::map<std::string, int>>& now, PlacementResult& pr) {
  using Shape = std::map<std::string, int>;  // GPUs per type
  const size_t n = std::min({pp.jobs.size(), pr.jobs.size(), seed_counts.size(), now.size()});
  std::map<std::pair<Shape, Shape>, std::vector<size_t>> by_move;  // (now, planned) -> jobs
  for (size_t k = 0; k < n; ++k)
    if (pp.jobs[k].running && !now[k].empty() && pr.jobs[k].total > 0 && now[k] != pr.jobs[k].gpus_by_type)
      by_move[{now[k], pr.jobs[k].gpus_by_type}].push_back(k);
  auto total = [](const Shape& shape) {
    int sum = 0;
    for (const auto& [t, g] : shape) sum += g;
    return sum;
  };
  // Whether job k may hold `shape`: its types, its size range, mixed only if it may mix.
  auto may_hold = [&](size_t k, const Shape& shape) {
    const PlacementJob& job = pp.jobs[k];
    for (const auto& [t, g] : shape)
      if (!job.allowed_types.empty() &&
          std::find(job.allowed_types.begin(), job.allowed_types.end(), t) == job.allowed_types.end())
        return false;
    const int gpus = total(shape);
    return gpus >= job.min_gpus && gpus <= job.max_gpus && (shape.size() <= 1 || job.allow_mixed);
  };
  // Whether the counts ask for the exchange: not where the jobs were counted alike, nor for two
  // of one model (the cluster's throughput is the same either way) whose totals now are at least
  // as close to their counts as after it. A transformer job placed again for a faster type
  // (counted 8, on 8 K80s) and one the count step shrank (2 -> 1, on 2 V100s) traded places
  // every 300 s: the placement counts the first's whole work and the second's only within the
  // lend horizon, so whichever was on the K80s took the V100s (Gavel's Philly trace on three
  // types, load 2, once step 2e's decisions led there: 2,337 -> 6,648 restarts; 2,785 with this).
  auto asked_for = [&](size_t a, size_t b) {
    if (seed_counts[a] == seed_counts[b]) return false;
    if (pp.jobs[a].model != pp.jobs[b].model) return true;
    const int na = total(now[a]), nb = total(now[b]), sa = seed_counts[a], sb = seed_counts[b];
    return std::abs(nb - sa) + std::abs(na - sb) < std::abs(na - sa) + std::abs(nb - sb);
  };
  std::vector<char> done(n, 0);
  int pairs = 0;
  for (auto& [move, jobs] : by_move) {
    auto other = by_move.find({move.second, move.first});
    if (other == by_move.end()) continue;
    for (size_t a : jobs) {
      if (done[a]) continue;
      for (size_t b : other->second) {
        if (done[b] || asked_for(a, b) || !may_hold(a, now[a]) ||
            !may_hold(b, now[b]))
          continue;
        JobPlacement& pa = pr.jobs[a];
        JobPlacement& pb = pr.jobs[b];
        std::swap(pa.gpus_by_node, pb.gpus_by_node);
        std::swap(pa.gpus_by_type, pb.gpus_by_type);
        std::swap(pa.total, pb.total);
        done[a] = done[b] = 1;
        ++pairs;
        break;
      }
    }
  }
  return pairs;
}

}  // namespace ringsched
