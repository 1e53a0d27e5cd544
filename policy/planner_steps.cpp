// SPDX-License-Identifier: GPL-2.0-or-later
// The planner's small steps (planner_steps.h).
#include "planner_steps.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "ringsched/doubling.h"

namespace ringsched {
namespace planner_detail {

std::vector<int> policy_order(const std::vector<JobView>& views, const ThroughputModel& model,
                              double now_s, double aging) {
  std::vector<double> key(views.size());
  for (size_t i = 0; i < views.size(); ++i) {
    const Job& j = *views[i].job;
    double v = views[i].known ? model.iters_per_s(j.model, views[i].best_type, views[i].lo) : 0;
    double t = v > 0 ? j.remaining / v : 1e12;
    double waited = std::max(0.0, now_s - j.submit_s);
    key[i] = t > 0 ? t * t / (t + aging * waited) : 0.0;
  }
  std::vector<int> order(views.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    const Job& ja = *views[a].job;
    const Job& jb = *views[b].job;
    if (ja.priority_boost != jb.priority_boost) return ja.priority_boost > jb.priority_boost;
    if (key[a] != key[b]) return key[a] < key[b];
    return ja.submit_s < jb.submit_s;
  });
  return order;
}

size_t type_position(const std::vector<std::string>& types, const std::string& t) {
  return std::lower_bound(types.begin(), types.end(), t) - types.begin();
}

std::vector<int> type_groups(const std::vector<JobView>& views, const std::vector<std::string>& types) {
  std::vector<int> parent(types.size());
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int t) {
    while (parent[t] != t) t = parent[t] = parent[parent[t]];
    return t;
  };
  for (const JobView& v : views)
    for (size_t k = 1; k < v.types.size(); ++k)
      parent[root(static_cast<int>(type_position(types, v.types[k])))] =
          root(static_cast<int>(type_position(types, v.types[0])));
  std::vector<int> group(views.size() + types.size(), -1);
  for (size_t i = 0; i < views.size(); ++i)
    if (!views[i].types.empty()) group[i] = root(static_cast<int>(type_position(types, views[i].types[0])));
  for (size_t p = 0; p < types.size(); ++p) group[views.size() + p] = root(static_cast<int>(p));
  return group;
}

bool take_of_type(FreeGpus& free, const std::string& type, int n, std::vector<Placement>& out) {
  std::vector<std::pair<int, int>> got = free.take(n, {type});
  for (const auto& [node, g] : got) out.push_back(Placement{free.node_name(node), type, g});
  return !got.empty();
}

void set_from_placement(JobPlan& jp, const std::vector<Placement>& placement) {
  jp.placement = placement;
  jp.gpus = 0;
  jp.gpus_by_type.clear();
  for (const Placement& p : placement) {
    jp.gpus += p.gpus;
    jp.gpus_by_type[p.gpu_type] += p.gpus;
  }
  jp.runs = jp.gpus > 0;
}

double floor_speed(const ThroughputModel& model, const std::string& name,
                   const std::vector<std::string>& types, const FreeGpus& free, int floor) {
  double v = 0;
  for (const std::string& t : types)
    if (free.most_on_one_node({t}) >= floor) v = std::max(v, model.iters_per_s(name, t, floor));
  return v;
}

std::vector<std::string> types_faster_than(const ThroughputModel& model, const std::string& name,
                                           const std::vector<std::string>& types, const FreeGpus& free,
                                           int lo, int floor, double speed) {
  std::vector<std::string> out;
  for (const std::string& t : types)
    for (int n = std::max(1, lo); n <= floor; n *= 2)
      if (free.free_of_type(t) >= n && model.iters_per_s(name, t, n) > speed) {
        out.push_back(t);
        break;
      }
  return out;
}

double lend_gain(const PlacementResult& capped, const PlacementResult& spread,
                 const std::vector<char>& late) {
  double h = 0;
  for (size_t k = 0; k < late.size(); ++k) {
    if (!late[k]) continue;
    if (spread.jobs[k].total <= 0) return -std::numeric_limits<double>::infinity();
    h = std::max(h, spread.jobs[k].finish_s);
  }
  double gain = 0;
  for (size_t k = 0; k < late.size(); ++k) {
    const JobPlacement &a = capped.jobs[k], &b = spread.jobs[k];
    if (late[k]) {
      gain += a.total > 0 ? a.finish_s - b.finish_s : h;
    } else if (a.total > 0 && b.total > 0) {
      if (a.iters_per_s > 0) gain -= std::min({h, a.finish_s, b.finish_s}) * (1 - b.iters_per_s / a.iters_per_s);
    } else if (a.total > 0) {
      gain -= h;
    } else if (b.total > 0) {
      gain += std::min(h, b.finish_s);
    }
  }
  return gain;
}

int late_admission_size(const ThroughputModel& model, const PlannerConfig& config, const Job& j,
                        const std::string& type, int lo, int want, int cap, double waited_s,
                        double alone_s) {
  if (!j.elastic || !(config.late_factor > 0)) return 0;
  int late = std::min(want, cap);
  if (j.state == JobState::Running) {
    late = std::min(late, j.current_gpus);
    if (config.power_of_two) late = floor_power_of_two(std::max(1, late));
  }
  if (late <= lo) return 0;
  const double at_lo = model.iters_per_s(j.model, type, lo);
  if (!(at_lo > 0)) return 0;
  return waited_s + j.remaining / at_lo > config.late_factor * config.fairness * alone_s ? late : 0;
}

std::map<std::string, int> current_by_type(const Job& j, const NodeIndex& nodes) {
  std::map<std::string, int> out;
  for (const auto& [node, n] : j.gpus_by_node) {
    int i = nodes.find(node);
    out[i >= 0 ? nodes.cluster.nodes[i].gpu_type : j.current_type] += n;
  }
  return out;
}

}  // namespace planner_detail
}  // namespace ringsched
