// SPDX-License-Identifier: GPL-2.0-or-later
// The planner's small steps (planner_steps.h).
#include "planner_steps.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <tuple>

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

std::vector<FloorFaster> floors_faster_over_nodes(const Cluster& cluster, const ThroughputModel& model,
                                                  FreeGpus& free,
                                                  const std::vector<FloorOverNodes>& candidates) {
  // The free GPUs do not change between candidates, so jobs of one model, types, minimum and
  // floor (most of a queue of thousands) get one answer: each is worked out once.
  using Key = std::tuple<const std::string&, const std::vector<std::string>&, int, int>;
  auto key = [](const FloorOverNodes& f) { return Key(f.model, f.types, f.lo, f.whole); };
  std::map<Key, size_t> first;  // -> the first candidate with that key
  std::vector<size_t> same(candidates.size());
  for (size_t c = 0; c < candidates.size(); ++c) same[c] = first.emplace(key(candidates[c]), c).first->second;
  // Only where the profile alone (a locality factor is at most 1) beats one node: the locality
  // model is built over the whole cluster (11,000 nodes at 50,000 GPUs).
  std::vector<std::pair<size_t, double>> maybe;  // (candidate, the best on one node)
  for (size_t c = 0; c < candidates.size(); ++c) {
    if (same[c] != c) continue;
    const FloorOverNodes& f = candidates[c];
    double local = 0, bound = 0;
    for (const std::string& t : f.types) {
      const int room = std::min(f.whole, free.most_on_one_node({t}));
      for (int n = std::max(1, f.lo); n <= room; n *= 2) local = std::max(local, model.iters_per_s(f.model, t, n));
      if (free.free_of_type(t) >= f.whole) bound = std::max(bound, model.iters_per_s(f.model, t, f.whole));
    }
    if (bound > local) maybe.push_back({c, local});
  }
  if (maybe.empty()) return {};
  std::vector<std::vector<std::string>> faster_on(candidates.size());  // by the first of a key
  std::vector<PlacementLocality::Job> jobs;
  for (const auto& [c, local] : maybe) jobs.push_back({candidates[c].model, candidates[c].types});
  PlacementLocality locality(cluster, model, jobs);
  for (size_t m = 0; m < maybe.size(); ++m) {
    const auto [c, local] = maybe[m];
    const FloorOverNodes& f = candidates[c];
    for (const std::string& t : f.types) {
      std::vector<Placement> pl;
      if (!take_of_type(free, t, f.whole, pl)) continue;
      std::map<std::string, int> on;
      for (const Placement& p : pl) {
        on[p.node] += p.gpus;
        free.take_at(free.node_index(p.node), -p.gpus);  // a trial: given back at once
      }
      if (model.iters_per_s(f.model, t, f.whole) * locality.factor(static_cast<int>(m), on) > local)
        faster_on[c].push_back(t);
    }
  }
  std::vector<FloorFaster> out;
  for (size_t c = 0; c < candidates.size(); ++c)
    if (!faster_on[same[c]].empty()) out.push_back({c, faster_on[same[c]]});
  return out;
}

int tail_guard_job(const Snapshot& snap, const std::vector<JobView>& views,
                   const ThroughputModel& model, const NodeIndex& nodes, bool power_of_two,
                   int cap) {
  std::map<std::string, long> stoppable_on;  // GPUs of each type held by stoppable running jobs
  for (const Job& j : snap.jobs)
    if (j.state == JobState::Running && j.stoppable)
      for (const auto& [type, g] : current_by_type(j, nodes)) stoppable_on[type] += g;
  int guarded = -1;
  double latest = 0;
  for (size_t i = 0; i < snap.jobs.size(); ++i) {
    const Job& j = snap.jobs[i];
    const JobView& v = views[i];
    if (j.state != JobState::Running || !j.stoppable || !v.known || j.current_gpus < 1 ||
        j.current_gpus > cap)
      continue;
    if (j.current_gpus > requested_size(j, v, power_of_two)) continue;  // lent GPUs to give back
    const double speed = model.iters_per_s(j.model, v.best_type, j.current_gpus);
    if (!(speed > 0)) continue;
    const double finish = snap.now_s - j.submit_s + j.remaining / speed;
    if (guarded >= 0 && (finish < latest ||
                         (finish == latest && j.submit_s >= snap.jobs[guarded].submit_s)))
      continue;
    long others = -j.current_gpus;  // what the other stoppable jobs hold on its types
    for (const auto& [type, g] : current_by_type(j, nodes)) others += stoppable_on[type];
    if (others < j.current_gpus) continue;
    guarded = static_cast<int>(i);
    latest = finish;
  }
  return guarded;
}

LateAdmission late_admission_size(const ThroughputModel& model, const PlannerConfig& config,
                                  const Job& j, const std::string& type, int lo, int want, int cap,
                                  double waited_s, double alone_s, bool one_type) {
  if (!j.elastic || !(config.late_factor > 0)) return {};
  int late = std::min(want, cap);
  if (j.state == JobState::Running) {
    late = std::min(late, j.current_gpus);
    if (config.power_of_two) late = floor_power_of_two(std::max(1, late));
  }
  if (late <= lo) return {};
  const double fair_s = config.fairness * alone_s;
  const double at_lo = model.iters_per_s(j.model, type, lo);
  if (!(at_lo > 0) || waited_s + j.remaining / at_lo <= config.late_factor * fair_s) return {};
  if (j.state == JobState::Running || !one_type) return {late, false};
  const double due_s = late_admission_target(config) * fair_s - waited_s;
  const double bound_s = config.late_factor * fair_s - waited_s;
  LateAdmission out{late, false, 0, false};
  for (int g = 2 * std::max(1, lo); g < late; g *= 2) {
    const double at_g = model.iters_per_s(j.model, type, g);
    if (!(at_g > 0)) continue;
    if (out.smallest_in_bound == 0 && j.remaining / at_g <= bound_s) out.smallest_in_bound = g;
    if (j.remaining / at_g <= due_s) {
      out.gpus = g;
      out.within_target = true;
      break;
    }
  }
  return out;
}

int largest_node_of(const std::vector<std::string>& types,
                    const std::map<std::string, int>& largest_node_of_type) {
  int node = 0;
  for (const std::string& t : types) {
    auto l = largest_node_of_type.find(t);
    if (l != largest_node_of_type.end()) node = std::max(node, l->second);
  }
  return node;
}

int late_cap_of(const std::vector<std::string>& types,
                const std::map<std::string, int>& gpus_by_type,
                const std::map<std::string, int>& largest_node_of_type, int cluster_cap,
                const PlannerConfig& config) {
  long pool = 0;
  for (const std::string& t : types) {
    auto g = gpus_by_type.find(t);
    if (g != gpus_by_type.end()) pool += g->second;
  }
  const int node = largest_node_of(types, largest_node_of_type);
  int cap = std::max(1, static_cast<int>(config.late_share * pool));
  cap = std::min(cluster_cap, std::max(cap, node));
  return config.power_of_two ? floor_power_of_two(cap) : cap;
}

double late_admission_target(const PlannerConfig& config) {
  return std::min(config.late_factor, 0.5 * (1 + config.late_factor));
}

int fit_counts_to_types(const Snapshot& snap, const std::vector<JobView>& views,
                        const std::vector<std::string>& types, const NodeIndex& nodes,
                        const std::vector<int>& order, std::vector<int>& counts,
                        std::vector<std::string>& reasons, const CountRound& round) {
  const size_t n = views.size(), nt = types.size();
  if (nt < 2 || nt > 64) return 0;  // one type: the round's pool is that type
  std::vector<long> usable_of_type(nt, 0);
  for (const Node& nd : nodes.cluster.nodes) usable_of_type[type_position(types, nd.gpu_type)] += nd.usable();
  std::vector<uint64_t> mask(n, 0);
  std::map<uint64_t, long> demand_of_mask;  // GPUs counted for the jobs of each set of types
  // Running jobs planned at their size that hold GPUs of several types: (mask, GPUs per type).
  std::vector<std::pair<uint64_t, std::vector<long>>> kept_mixed;
  for (size_t i = 0; i < n; ++i) {
    const Job& j = snap.jobs[i];
    if (counts[i] > 0 && j.state == JobState::Running && counts[i] == j.current_gpus &&
        !j.gpus_by_node.empty()) {
      std::vector<long> held(nt, 0);
      for (const auto& [t, g] : current_by_type(j, nodes))
        if (g > 0) {
          mask[i] |= uint64_t{1} << type_position(types, t);
          held[type_position(types, t)] += g;
        }
      if (__builtin_popcountll(mask[i]) > 1) kept_mixed.emplace_back(mask[i], std::move(held));
    } else {
      for (const std::string& t : views[i].types) mask[i] |= uint64_t{1} << type_position(types, t);
    }
    if (counts[i] > 0) demand_of_mask[mask[i]] += counts[i];
  }
  const uint64_t all = nt == 64 ? ~uint64_t{0} : (uint64_t{1} << nt) - 1;
  std::vector<uint64_t> sets;
  if (nt <= 12) {
    for (uint64_t s = 1; s < all; ++s) sets.push_back(s);
  } else {
    for (const auto& [m, d] : demand_of_mask)
      if (m != all) sets.push_back(m);
  }
  // Small sets first; the jobs of a set planned alone keep their counts in a larger set's round
  // (its GPUs less theirs), so no job is planned twice.
  std::stable_sort(sets.begin(), sets.end(), [](uint64_t a, uint64_t b) {
    return __builtin_popcountll(a) < __builtin_popcountll(b);
  });
  std::vector<char> settled(n, 0);
  int changed = 0;
  for (uint64_t s : sets) {
    long demand = 0, cap = 0;
    for (const auto& [m, d] : demand_of_mask)
      if ((m & ~s) == 0) demand += d;
    for (size_t p = 0; p < nt; ++p)
      if (s >> p & 1) cap += usable_of_type[p];
    // A job kept on types of S and others keeps its GPUs of S too, though it counts in a larger
    // set's round: they are not S's to plan.
    for (const auto& [m, held] : kept_mixed)
      if ((m & s) != 0 && (m & ~s) != 0)
        for (size_t p = 0; p < nt; ++p)
          if (s >> p & 1) cap -= held[p];
    if (demand <= cap) continue;
    std::vector<int> members;
    long left = cap;  // what the jobs of smaller sets planned already leave
    for (int i : order) {
      if (mask[i] == 0 || (mask[i] & ~s) != 0) continue;
      if (settled[i]) left -= counts[i];
      else members.push_back(i);
    }
    std::vector<int> before(members.size());
    for (size_t k = 0; k < members.size(); ++k) before[k] = counts[members[k]];
    round(members, static_cast<int>(std::max(0L, left)));
    std::string on;
    for (size_t p = 0; p < nt; ++p)
      if (s >> p & 1) on += (on.empty() ? "" : ",") + types[p];
    for (size_t k = 0; k < members.size(); ++k) {
      const int i = members[k];
      demand_of_mask[mask[i]] += counts[i] - before[k];
      settled[i] = 1;
      changed += counts[i] != before[k];
      reasons[i] += "; counted again with the jobs that can run only on " + on +
                    ": the first count gave them more than its " + std::to_string(cap) + " GPUs";
    }
  }
  return changed;
}

AloneAtRequest alone_at_request(const ThroughputModel& model, const Job& j, const JobView& v,
                                bool pow2, double now_s) {
  AloneAtRequest a;
  a.speed = model.iters_per_s(j.model, v.best_type, requested_size(j, v, pow2));
  a.work = j.iterations > 0 ? j.iterations : j.remaining;
  a.waited = std::max(0.0, now_s - j.submit_s);
  return a;
}

int yield_lent_gpus_within_interval(std::vector<DoublingJob>& jobs, const ResizeCosts& costs,
                                    double now_s) {
  int marked = 0;
  for (DoublingJob& d : jobs) {
    const double since_s = now_s - d.last_resize_s;
    const int floor = d.request();
    if (!d.running || !d.elastic || d.fair_max_gpus <= 0 || d.current_gpus <= floor ||
        !(since_s < costs.min_interval_s))
      continue;
    d.min_gpus = d.requested = floor;
    d.max_gpus = d.current_gpus;
    d.interval_yields = true;
    ++marked;
  }
  return marked;
}

int grow_short_jobs_within_interval(std::vector<DoublingJob>& jobs, const std::vector<JobView>& views,
                                    const ResizeCosts& costs, double now_s) {
  int marked = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    DoublingJob& d = jobs[i];
    const double since_s = now_s - d.last_resize_s;
    const int request = std::min(d.request(), d.max_gpus);
    // A lender (interval_yields) is above its request: the first test leaves it out.
    if (!d.running || !d.elastic || d.current_gpus >= request || request > views[i].largest_node ||
        !is_power_of_two(d.current_gpus) || d.current_gpus < d.min_gpus ||
        !(since_s >= costs.grace_s()) || !(since_s < costs.min_interval_s))
      continue;
    d.min_gpus = d.current_gpus;
    d.max_gpus = request;
    d.interval_grows = true;
    ++marked;
  }
  return marked;
}

double wake_after_holds(const Plan& plan, const std::vector<char>& starving,
                        const std::vector<double>& grace_end_s, double now_s) {
  bool waits = false;
  for (size_t i = 0; i < plan.jobs.size() && !waits; ++i) waits = starving[i] && !plan.jobs[i].runs;
  if (!waits) return 0;
  double wake = 0;
  for (size_t i = 0; i < plan.jobs.size(); ++i)
    if (plan.jobs[i].runs && grace_end_s[i] > now_s && (wake == 0 || grace_end_s[i] < wake))
      wake = grace_end_s[i];
  return wake;
}

std::map<std::string, int> current_by_type(const Job& j, const NodeIndex& nodes) {
  std::map<std::string, int> out;
  for (const auto& [node, n] : j.gpus_by_node) {
    int i = nodes.find(node);
    out[i >= 0 ? nodes.cluster.nodes[i].gpu_type : j.current_type] += n;
  }
  return out;
}

SlowerHere slower_here_than(const ThroughputModel& model, const Job& j,
                            const std::map<std::string, int>& held_by_type,
                            const std::vector<std::string>& types, int size, double factor) {
  SlowerHere out;
  const double v_held = model.iters_per_s_mixed(j.model, held_by_type);
  if (!(v_held > 0) || !(factor > 0)) return out;
  double v_best = 0;
  for (const std::string& t : types) {
    const double v = model.iters_per_s(j.model, t, size);
    if (v > v_best) {
      v_best = v;
      out.fastest = t;
    }
  }
  if (!(v_best >= factor * v_held)) return {};
  out.factor = v_best / v_held;
  out.held = type_set_name(held_by_type);
  return out;
}

std::string slower_here_reason(const SlowerHere& slower, const PlannerConfig& config) {
  char f[32], k[32];
  std::snprintf(f, sizeof f, "%.3g", slower.factor);
  std::snprintf(k, sizeof k, "%g", config.replace_slower);
  return std::string("; placed again with the others: ") + slower.held + " runs it " + f +
         "x slower than " + slower.fastest + " (ReplaceSlower " + k + ")";
}

std::vector<int> grows_no_faster(const Cluster& cluster, const ThroughputModel& model,
                                 const NodeIndex& nodes, const Snapshot& snap, const Plan& plan,
                                 const std::vector<JobView>& views,
                                 const std::vector<int>& fair_floor) {
  std::vector<int> spread;  // candidates: the locality model is built only when there are some
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const Job& j = snap.jobs[i];
    const JobPlan& jp = plan.jobs[i];
    if (views[i].known && j.state == JobState::Running && jp.runs && jp.gpus > j.current_gpus &&
        jp.placement.size() > 1 && !j.gpus_by_node.empty())
      spread.push_back(static_cast<int>(i));
  }
  if (spread.empty()) return {};
  std::vector<PlacementLocality::Job> jobs;
  for (int i : spread) jobs.push_back({snap.jobs[i].model, views[i].types});
  PlacementLocality locality(cluster, model, jobs);
  std::vector<int> out;
  for (size_t s = 0; s < spread.size(); ++s) {
    const int i = spread[s];
    const Job& j = snap.jobs[i];
    const JobPlan& jp = plan.jobs[i];
    std::map<std::string, int> planned;
    for (const Placement& p : jp.placement) planned[p.node] += p.gpus;
    bool known_nodes = true;
    for (const auto& [node, g] : j.gpus_by_node) known_nodes = known_nodes && nodes.find(node) >= 0;
    if (!known_nodes) continue;
    const std::map<std::string, int> held = current_by_type(j, nodes);
    const double now = model.iters_per_s_mixed(j.model, held) *
                       locality.factor(static_cast<int>(s), j.gpus_by_node);
    const double then = model.iters_per_s_mixed(j.model, jp.gpus_by_type) *
                        locality.factor(static_cast<int>(s), planned);
    // A job behind its fair share (its floor above what it holds) may go through a slower spread
    // ring on the way (recommendation-b8192 on 2 + 2 V100s runs at 3.1 iterations/s, on its 2 at
    // 5.1: kept on its 2, it waited there for a node with 4 free GPUs that never came, max FTF
    // 1.61 in phillyd v100x4 L0.5 s1): for it, only a ring slower than one GPU of its types is
    // not made. Any other job keeps its GPUs where the grow runs it no faster than now: a
    // resnet50 on 16 A100s of two 8-GPU nodes grew to 32 over nodes of 8, 4 and 2 GPUs, ran
    // there at 55% of its speed on 4 GPUs of one node, and went 16 <-> 32 39 times (itp02 on
    // A100 nodes of 8, 4 and 2, L0.5 s13: 1.072x Optimus's avg JCT; 0.82x with this).
    double one = 0;
    for (const auto& [t, g] : held) one = std::max(one, model.iters_per_s(j.model, t, 1));
    const bool behind = fair_floor[i] > j.current_gpus;
    if (now > 0 && (then <= std::min(now, one) || (!behind && then <= now))) out.push_back(i);
  }
  return out;
}

int fit_late_admissions(const std::vector<JobView>& views,
                        const std::map<std::string, int>& usable_by_type,
                        const std::vector<int>& order, std::vector<LateAdmission>& late) {
  std::map<std::string, long> asked;  // the late sizes of the jobs of one type, by type
  for (size_t i = 0; i < views.size(); ++i)
    if (late[i].gpus > 0 && views[i].types.size() == 1) asked[views[i].best_type] += late[i].gpus;
  int halved = 0;
  for (auto& [type, sum] : asked) {
    auto found = usable_by_type.find(type);
    const long gpus = found == usable_by_type.end() ? 0 : found->second;
    // Lowest priority first, one halving per job per sweep: the late jobs share the cut.
    for (bool again = true; sum > gpus && again;) {
      again = false;
      for (auto o = order.rbegin(); o != order.rend() && sum > gpus; ++o) {
        LateAdmission& a = late[*o];
        const int half = a.gpus / 2;
        if (a.gpus == 0 || views[*o].best_type != type || a.smallest_in_bound == 0 ||
            half < a.smallest_in_bound)
          continue;
        sum -= a.gpus - half;
        a.gpus = half;
        a.within_target = false;
        a.fitted = true;
        again = true;
        ++halved;
      }
    }
  }
  return halved;
}

std::string late_admission_reason(const PlannerConfig& config, const LateAdmission& late) {
  char factor[32];
  std::snprintf(factor, sizeof factor, "%g", config.late_factor);
  std::string out = "; admitted at " + std::to_string(late.gpus) +
                    " GPUs, not its minimum: there it would finish later than " + factor +
                    " x its fair share (its requested size alone) allows";
  if (late.fitted) {
    out += ", " + std::to_string(late.gpus) + " finish it within that, and the late jobs of its "
           "type ask for more than its GPUs";
  } else if (late.within_target) {
    std::snprintf(factor, sizeof factor, "%g", late_admission_target(config));
    out += ", " + std::to_string(late.gpus) + " finish it within " + factor + " x";
  }
  return out;
}

bool start_at_base_past_a_stop(std::vector<DoublingJob>& jobs, const std::vector<int>& members,
                               int usable, const std::vector<int>& counts,
                               const std::vector<std::string>& impossible, const CountRound& round,
                               std::vector<char>& capped, std::vector<std::string>& reasons) {
  auto base = [&](int i) {
    return std::min(jobs[i].max_gpus, std::max(jobs[i].request(), jobs[i].min_gpus));
  };
  bool stops = false, lends = false;
  for (int i : members) {
    const DoublingJob& d = jobs[i];
    if (d.running && d.starving && d.type_set >= 0 && d.current_gpus > 0 &&
        d.current_gpus <= d.request() && counts[i] == 0 && impossible[i].empty())
      stops = true;
    if (!d.running && counts[i] > base(i)) lends = true;
  }
  if (!stops) return false;
  for (int i : members)
    if (!jobs[i].running) capped[i] = 1;
  if (!lends) return false;
  std::vector<int> max_gpus;  // restored after the round: the placement and later rounds see them
  for (int i : members) {
    DoublingJob& d = jobs[i];
    max_gpus.push_back(d.max_gpus);
    if (!d.running)
      d.max_gpus = base(i);
    else if (d.elastic)  // nor does a running job grow past its size
      d.max_gpus = std::max(d.min_gpus, std::min(d.max_gpus, std::max(d.current_gpus, base(i))));
  }
  round(members, usable);
  for (size_t k = 0; k < members.size(); ++k) {
    const int i = members[k];
    if (counts[i] > 0 && counts[i] == jobs[i].max_gpus && jobs[i].max_gpus < max_gpus[k])
      reasons[i] += "; no more this round: a starving job it stops takes GPUs lent now back "
                    "as their grace ends";
    jobs[i].max_gpus = max_gpus[k];
  }
  return true;
}

int start_spread_lends_at_request(const Cluster& cluster, const ThroughputModel& model,
                                  const NodeIndex& nodes, const Snapshot& snap, Plan& plan,
                                  const std::vector<JobView>& views,
                                  const std::vector<int>& request, FreeGpus& free,
                                  double horizon_s, double restart_s, double min_gain) {
  std::vector<int> spread;  // candidates: the locality model is built only when there are some
  for (size_t i = 0; i < plan.jobs.size(); ++i) {
    const JobPlan& jp = plan.jobs[i];
    if (views[i].known && snap.jobs[i].state != JobState::Running && jp.runs &&
        jp.gpus > request[i] && request[i] > 0 && jp.placement.size() > 1)
      spread.push_back(static_cast<int>(i));
  }
  if (spread.empty()) return 0;
  std::vector<PlacementLocality::Job> jobs;
  for (int i : spread) jobs.push_back({snap.jobs[i].model, views[i].types});
  PlacementLocality locality(cluster, model, jobs);
  int cut = 0;
  for (size_t s = 0; s < spread.size(); ++s) {
    const int i = spread[s];
    const Job& j = snap.jobs[i];
    JobPlan& jp = plan.jobs[i];
    std::map<std::string, int> planned;
    for (const Placement& p : jp.placement) planned[p.node] += p.gpus;
    const double then = model.iters_per_s_mixed(j.model, jp.gpus_by_type) *
                        locality.factor(static_cast<int>(s), planned);
    // The request on one node, of the fastest type one node of which has room for it once the
    // job's planned GPUs are back.
    FreeGpus room = free;
    for (const Placement& p : jp.placement) room.take_at(nodes.find(p.node), -p.gpus);
    std::string best;
    double alone = 0;
    for (const std::string& t : views[i].types) {
      const double v = model.iters_per_s(j.model, t, request[i]);
      if (v > alone && room.most_on_one_node({t}) >= request[i]) {
        best = t;
        alone = v;
      }
    }
    if (!(alone > 0) || !(then > 0)) continue;
    const double saves = std::min(j.remaining / alone - j.remaining / then,
                                  horizon_s * (then / alone - 1) - restart_s);
    std::vector<Placement> one;
    if (saves >= min_gain || !take_of_type(room, best, request[i], one))
      continue;
    const std::string was = std::to_string(jp.gpus) + " GPUs over " +
                            std::to_string(jp.placement.size()) + " nodes";
    free = room;
    set_from_placement(jp, one);
    char saved[32];
    std::snprintf(saved, sizeof saved, "%.0f", saves);
    jp.reason = "starts at its request of " + std::to_string(request[i]) + " on " + best +
                ": the " + was + " planned would save " + saved +
                " s against it, over its run or until the lent GPUs come back less that restart";
    ++cut;
  }
  return cut;
}

}  // namespace planner_detail
}  // namespace ringsched
