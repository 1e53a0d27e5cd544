// SPDX-License-Identifier: GPL-2.0-or-later
// The planning pass, Planner::plan() (DESIGN 3): 1. how many GPUs each job gets (the doubling
// round, the fairness pass, the starvation bound); 2. where (running jobs keep their GPUs, the
// placement puts the rest); 3. the per-job rows and reasons. Its small steps are in
// planner_steps.cpp, the gathering of spread rings in planner_gather.cpp, the model-similarity,
// SPB and no-stop rules in planner_hooks.cpp, the configuration's checks and the policy names in
// planner_config.cpp.
#include "ringsched/planner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_set>

#include "ringsched/doubling.h"
#include "ringsched/free_gpus.h"
#include "ringsched/placement.h"
#include "planner_gather.h"
#include "planner_hooks.h"
#include "planner_steps.h"

namespace ringsched {

using namespace planner_detail;

Plan Planner::plan(const Snapshot& snap) const {
  auto t0 = std::chrono::steady_clock::now();
  snap.cluster.validate();
  if (!(snap.arrival_gap_s >= 0) || !std::isfinite(snap.arrival_gap_s))
    throw InputError("snapshot: arrival_gap_s must be a finite number of seconds >= 0");
  std::unordered_set<std::string_view> ids;
  ids.reserve(snap.jobs.size());
  for (const Job& j : snap.jobs) {
    j.validate();
    if (!ids.insert(j.id).second) throw InputError("job " + j.id + ": listed twice");
  }

  // Unseen models get predictions from similar models before anything is decided. The model is
  // copied only when some job's model lacks a type: most rounds plan known models only.
  const ThroughputModel* speeds = &model_;
  std::optional<ThroughputModel> with_predictions;
  if (config_.use_similarity && similarity_) {
    const std::vector<std::string> types = snap.cluster.types();
    bool unseen = false;
    for (const Job& j : snap.jobs)
      for (const std::string& t : types) unseen = unseen || !model_.knows(j.model, t);
    if (unseen) {
      with_predictions = model_;
      predict_unseen_models(*with_predictions, *similarity_, snap.jobs, types);
      speeds = &*with_predictions;
    }
  }
  const ThroughputModel& model = *speeds;


  const Cluster& cluster = snap.cluster;
  const int n = static_cast<int>(snap.jobs.size());
  // The lend horizon of combined's elastic jobs (PlannerConfig::lend_horizon_s); 0: none.
  const double lend_horizon_s =
      config_.policy == Policy::Combined && config_.fairness > 0 && config_.lend_horizon_s > 0
          ? std::max({config_.lend_horizon_s, config_.lend_arrivals * snap.arrival_gap_s,
                      kLendHorizonRestarts * config_.costs.restart_s})
          : 0;
  // Whether the plan may stop running job i, or move it at its size (PlannerConfig::preempt).
  auto may_stop = [&](int i) { return config_.preempt && snap.jobs[i].stoppable; };
  // Walked once here, not once per job: clusters have thousands of nodes.
  const std::vector<std::string> cluster_types = cluster.types();
  const int total_gpus = cluster.total_gpus();
  std::map<std::string, int> gpus_by_type, usable_by_type, largest_node_of_type;
  for (const Node& nd : cluster.nodes) {
    gpus_by_type[nd.gpu_type] += nd.gpus;
    usable_by_type[nd.gpu_type] += nd.usable();
    largest_node_of_type[nd.gpu_type] = std::max(largest_node_of_type[nd.gpu_type], nd.gpus);
  }
  int late_cap = std::max(1, static_cast<int>(config_.late_share * total_gpus));
  if (config_.power_of_two) late_cap = floor_power_of_two(late_cap);
  std::vector<JobView> views(n);
  // Jobs of one model and allowed types see the same types (thousands of jobs, a few tens of
  // models): worked out for the first, copied to the others.
  using ViewKey = std::pair<const std::string*, const std::vector<std::string>*>;
  auto view_less = [](const ViewKey& a, const ViewKey& b) {
    return *a.first != *b.first ? *a.first < *b.first : *a.second < *b.second;
  };
  std::map<ViewKey, int, decltype(view_less)> first_view(view_less);
  for (int i = 0; i < n; ++i) {
    JobView& v = views[i];
    const Job& j = snap.jobs[i];
    v.job = &j;
    auto [same, fresh] = first_view.emplace(ViewKey{&j.model, &j.allowed_types}, i);
    if (!fresh) {
      const JobView& w = views[same->second];
      v.types = w.types;
      v.best_type = w.best_type;
      v.known = w.known;
      v.predicted = w.predicted;
      v.late_cap = w.late_cap;
      v.largest_node = w.largest_node;
    } else {
      std::vector<std::pair<double, const std::string*>> by_speed;  // at 1 GPU, fastest first
      for (const std::string& t : cluster_types)
        if (j.allows(t) && model.knows(j.model, t)) by_speed.emplace_back(model.iters_per_s(j.model, t, 1), &t);
      std::stable_sort(by_speed.begin(), by_speed.end(),
                       [](const auto& a, const auto& b) { return a.first > b.first; });
      for (const auto& entry : by_speed) v.types.push_back(*entry.second);
      v.known = !v.types.empty();
      if (v.known) {
        v.best_type = v.types.front();
        v.predicted = model.is_predicted(j.model, v.best_type);
      } else {
        // Unknown everywhere: it still runs, on any allowed type, at its requested size.
        for (const std::string& t : cluster_types)
          if (j.allows(t)) v.types.push_back(t);
      }
      v.late_cap = late_cap_of(v.types, gpus_by_type, largest_node_of_type, late_cap, config_);
      v.largest_node = largest_node_of(v.types, largest_node_of_type);
    }
    int cap = total_gpus;
    if (j.elastic) {
      v.lo = std::min(round_range_min(j.min_gpus, config_.power_of_two), cap);
      v.hi = std::min(j.max_gpus, cap);
      if (config_.power_of_two) v.hi = floor_power_of_two(std::max(1, v.hi));
      v.hi = std::max(v.hi, v.lo);
    } else {
      v.lo = v.hi = j.requested_gpus;
    }
  }

  Plan plan;
  plan.policy = policy_name(config_.policy);
  plan.jobs.resize(n);
  for (int i = 0; i < n; ++i) plan.jobs[i].job_id = snap.jobs[i].id;
  std::vector<int> order = policy_order(views, model, snap.now_s, config_.aging);
  std::vector<std::string> impossible(n);
  for (int i = 0; i < n; ++i) impossible[i] = why_impossible(snap.jobs[i], gpus_by_type);

  NodeIndex nodes(cluster);

  // 1. How many GPUs each job gets.
  std::vector<int> counts(n, 0);
  std::vector<std::string> count_reason(n);
  std::vector<int> fair_floor(n, 0);  // size the fairness pass or the starvation bound set
  std::vector<LateAdmission> late(n);  // the size the starvation bound admits a late job at
  const int guarded = config_.policy == Policy::Combined && config_.tail_guard && config_.preempt
                          ? tail_guard_job(snap, views, model, nodes, config_.power_of_two, late_cap)
                          : -1;
  bool resizes = config_.policy == Policy::Doubling || config_.policy == Policy::Combined;
  std::vector<char> starving(n, 0);     // wake_after_holds's inputs
  std::vector<double> grace_end_s(n, 0);
  std::vector<char> start_capped(n, 0);  // start_at_base_past_a_stop()'s
  if (resizes) {
    std::vector<DoublingJob> dj(n);
    std::map<std::set<std::string>, int> type_sets;  // DoublingJob::type_set's numbering
    for (int i = 0; i < n; ++i) {
      const Job& j = snap.jobs[i];
      const JobView& v = views[i];
      dj[i].remaining = j.remaining;
      dj[i].min_gpus = v.lo;
      dj[i].max_gpus = v.hi;
      dj[i].elastic = j.elastic;
      dj[i].requested = v.lo;
      dj[i].running = j.state == JobState::Running;
      dj[i].stoppable = !dj[i].running || (may_stop(i) && i != guarded);
      dj[i].current_gpus = j.current_gpus;
      dj[i].last_resize_s = j.last_resize_s;
      if (config_.policy == Policy::Combined && dj[i].running && v.known) {
        std::set<std::string> on;
        for (const auto& [type, g] : current_by_type(j, nodes)) on.insert(type);
        dj[i].type_set = type_sets.emplace(on, static_cast<int>(type_sets.size())).first->second;
      }
      if (!impossible[i].empty()) {
        // It cannot run here at all: never give it GPUs.
        dj[i].stoppable = true;
        dj[i].elastic = false;
        dj[i].min_gpus = dj[i].max_gpus = dj[i].requested = 1;
        dj[i].speed = [](int) { return 0.0; };
      } else if (v.known) {
        dj[i].speed = model.speed(j.model, v.best_type);
        if (config_.fairness > 0) {
          const int want = requested_size(j, v, config_.power_of_two);
          const AloneAtRequest at_request = alone_at_request(model, j, v, config_.power_of_two, snap.now_s);
          const double alone = at_request.speed, work = at_request.work;
          if (alone > 0) {
            const double waited = at_request.waited;
            double fair_run_s = config_.fairness * work / alone - waited;
            if (j.elastic) {
              dj[i].fair_max_gpus = want;
              dj[i].fair_time_s = fair_run_s;
              if (lend_horizon_s > 0) {
                dj[i].lend_horizon_s = lend_horizon_s;
                dj[i].alone_left_s = work / alone - waited;
              }
            }
            if (lend_horizon_s > 0) dj[i].alone_s = work / alone;  // fixed-size jobs too
            // Waiting, and late even if it started now at its base size: a running job that
            // needs longer is not held for a small gain when that would keep it waiting
            // (doubling_round.h, starves()). Without this, elastic jobs grown over a 64-GPU
            // cluster were each held (the sum of finish times gains little from a shrink), and
            // 1-GPU jobs of 5 minutes queued behind them for 25 minutes: max finish-time
            // fairness 6.2 where Tiresias's is 1.2 (issue 15.2).
            if (config_.policy == Policy::Combined) {
              late[i] = late_admission_size(model, config_, j, v.best_type, v.lo, want, v.late_cap,
                                            waited, work / alone, v.types.size() == 1);
              if (late[i].gpus > 0) {
                dj[i].min_gpus = dj[i].requested = late[i].gpus;
                dj[i].admitted_late = dj[i].running;
              }
            }
            double at_base = model.iters_per_s(j.model, v.best_type, v.lo);
            // Late already, or a short job that a hold until the next resize chance (the
            // minimum interval) would make late by more than half its fair share: counted only
            // once late, a 283 s job waited 204 s behind holds worth 15-45 s each (FTF 1.72,
            // Tiresias 1.13). Not every job at once: jobs of hours displaced each other (Philly
            // +3.7% avg JCT). Running jobs too, as if they waited: a hold that stopped such a
            // job made it a starving waiting job, which the next plan, seconds later, started
            // again by refusing that hold (a restart and a wait for nothing; FTF 1.78 against
            // Tiresias's 1.21 on phillyd v100x4 L0.5 s1, 7 restarts of a 2.5-hour job).
            const double run_s = at_base > 0 ? j.remaining / at_base : 0;
            dj[i].starving = at_base > 0 &&
                             (run_s > fair_run_s ||
                              run_s + config_.costs.min_interval_s >
                                  fair_run_s + 0.5 * config_.fairness * work / alone);
          }
        }
      } else {
        // No speed known: treat as perfectly inelastic so doubling never grows it blindly.
        dj[i].elastic = false;
        dj[i].min_gpus = dj[i].max_gpus = dj[i].requested =
            std::min(total_gpus, std::max(1, j.requested_gpus));
        dj[i].speed = [](int) { return 1.0; };
      }
    }
    if (config_.policy == Policy::Combined && fit_late_admissions(views, usable_by_type, order, late) > 0)
      for (int i = 0; i < n; ++i)
        if (late[i].fitted) dj[i].min_gpus = dj[i].requested = late[i].gpus;
    yield_lent_gpus_within_interval(dj, config_.costs, snap.now_s);
    if (config_.policy == Policy::Combined) grow_short_jobs_within_interval(dj, views, config_.costs, snap.now_s);
    for (int i = 0; i < n; ++i) {
      starving[i] = dj[i].starving;
      if (dj[i].interval_yields)
        grace_end_s[i] = dj[i].last_resize_s + config_.costs.grace_s();
    }
    // One round per group of GPU types that jobs share, on that group's GPUs: a job's count is
    // planned against the GPUs it can use (on an A100 + T4 cluster whose models are each
    // profiled on one of them, an A100 job's against the A100s, not both). Types are grouped when
    // some job allows both; one group, the common case, is one round over the whole cluster.
    std::vector<int> group = type_groups(views, cluster_types);
    std::map<int, int> usable_of_group;
    for (const Node& nd : cluster.nodes)
      usable_of_group[group[n + type_position(cluster_types, nd.gpu_type)]] += nd.usable();
    // One doubling round over `members` (policy order) on `usable` GPUs.
    auto count_round = [&](const std::vector<int>& members, int usable) {
      std::vector<DoublingJob> sub;
      std::vector<int> sub_order;
      for (int i : members) {
        sub_order.push_back(static_cast<int>(sub.size()));
        sub.push_back(dj[i]);
      }
      DoublingResult dr = doubling_heuristic(sub, sub_order, usable, config_.costs, snap.now_s);
      for (size_t k = 0; k < members.size(); ++k) {
        const int i = members[k];
        counts[i] = dr.gpus[k];
        count_reason[i] = dr.reasons[k];
        // The starvation bound's size is a floor as the fairness pass's is.
        fair_floor[i] = std::max(dr.fair_gpus[k], late[i].gpus);
        if (late[i].gpus > 0 && dr.gpus[k] > 0) count_reason[i] += late_admission_reason(config_, late[i]);
      }
    };
    for (const auto& [g, usable] : usable_of_group) {
      std::vector<int> members;  // this group's jobs, in policy order
      for (int i : order)
        if (group[i] == g || (group[i] < 0 && g == usable_of_group.begin()->first)) members.push_back(i);
      if (members.empty()) continue;
      count_round(members, usable);
      if (config_.policy == Policy::Combined)
        start_at_base_past_a_stop(dj, members, usable, counts, impossible, count_round, start_capped,
                                  count_reason);
    }
    // Each group was one pool: a set of its types that the jobs able to use only those types
    // overfill gets a round of its own (planner_steps.h).
    fit_counts_to_types(snap, views, cluster_types, nodes, order, counts, count_reason, count_round);
    if (guarded >= 0 && counts[guarded] > 0)
      count_reason[guarded] += "; tail guard: of the running jobs within their requests it would "
                               "finish last counted from submission, so this plan does not stop it";
  } else {
    // Static and Hetero: requested sizes (clamped to the job's range). These policies never
    // resize or preempt: running jobs keep their GPUs before any pending job is considered.
    int left = cluster.usable_gpus();
    std::vector<int> running_first;
    for (int i : order)
      if (snap.jobs[i].state == JobState::Running) running_first.push_back(i);
    for (int i : order)
      if (snap.jobs[i].state != JobState::Running) running_first.push_back(i);
    for (int i : running_first) {
      const Job& j = snap.jobs[i];
      int want = j.state == JobState::Running ? j.current_gpus
                                              : std::clamp(j.requested_gpus, views[i].lo, views[i].hi);
      if (!impossible[i].empty()) continue;
      if (want <= left) {
        counts[i] = want;
        left -= want;
        count_reason[i] = "requested size " + std::to_string(want);
      } else {
        count_reason[i] = "waits: " + std::to_string(want) + " GPUs requested, " +
                          std::to_string(left) + " left after higher-priority jobs";
      }
    }
  }

  // 2. Where: running jobs that keep their size keep their GPUs (Slurm cannot move a job without
  // a restart); the others are placed on what is left.
  FreeGpus free_gpus(cluster);
  std::vector<bool> frozen(n, false);
  // Keeps running job i on the GPUs it holds, if they are still free.
  auto keep_in_place = [&](int i) {
    const Job& j = snap.jobs[i];
    if (j.state != JobState::Running || j.gpus_by_node.empty()) return false;
    for (const auto& [node, g] : j.gpus_by_node) {
      int k = nodes.find(node);
      if (k < 0 || free_gpus.free(k) < g) return false;
    }
    frozen[i] = true;
    std::vector<Placement> pl;
    for (const auto& [node, g] : j.gpus_by_node) {
      int k = nodes.find(node);
      free_gpus.take_at(k, g);
      pl.push_back(Placement{node, cluster.nodes[k].gpu_type, g});
    }
    set_from_placement(plan.jobs[i], pl);
    return true;
  };
  // A running job the placement put elsewhere, back on the GPUs it holds where they are still
  // free (the plan's GPUs given back); else it stays as planned.
  auto back_in_place = [&](int i) {
    const std::vector<Placement> planned = plan.jobs[i].placement;
    for (const Placement& p : planned) free_gpus.take_at(nodes.find(p.node), -p.gpus);
    if (keep_in_place(i)) return true;
    for (const Placement& p : planned) free_gpus.take_at(nodes.find(p.node), p.gpus);
    return false;
  };
  // Whether a running job may move: Slurm's plugin moves elastic jobs (ringrun requeues them at
  // the new shape), and fixed-size ones only where the plan may preempt them.
  auto movable = [&](int i) { return may_stop(i) || snap.jobs[i].elastic; };
  // Combined: a running job whose GPUs run it replace_slower times slower than the fastest type
  // it may use is placed again with the others, not kept where it is (PlannerConfig::
  // replace_slower); outside its minimum interval only.
  std::vector<SlowerHere> slower_here(n);
  for (int i = 0; i < n; ++i)
    if (config_.policy == Policy::Combined && config_.replace_slower > 0 && views[i].known &&
        snap.jobs[i].state == JobState::Running && counts[i] == snap.jobs[i].current_gpus &&
        movable(i) && snap.now_s - snap.jobs[i].last_resize_s >= config_.costs.min_interval_s)
      slower_here[i] = slower_here_than(model, snap.jobs[i], current_by_type(snap.jobs[i], nodes),
                                        views[i].types, counts[i], config_.replace_slower);
  for (int i = 0; i < n; ++i) {
    if (counts[i] != snap.jobs[i].current_gpus || slower_here[i].factor > 0 || !keep_in_place(i))
      continue;
    plan.jobs[i].reason = count_reason[i].empty() ? "keeps its " + std::to_string(plan.jobs[i].gpus) + " GPUs"
                                                  : count_reason[i];
  }

  bool hetero = config_.policy == Policy::Hetero || config_.policy == Policy::Combined;
  std::vector<int> todo;
  for (int i : order) {
    if (!impossible[i].empty()) {
      counts[i] = 0;
      count_reason[i] = "cannot run: " + impossible[i];
    }
    if (!frozen[i] && counts[i] > 0) todo.push_back(i);
  }
  // The placement lets the last of its jobs wait while their sizes do not fit: running jobs
  // that may not be stopped (or that the tail guard keeps) first.
  std::stable_partition(todo.begin(), todo.end(), [&](int i) {
    return snap.jobs[i].state == JobState::Running && (!may_stop(i) || i == guarded);
  });

  // Late or behind jobs whose floor one node's free GPUs capped below their size (sparse).
  std::map<int, int> floor_capped;
  if (hetero && !todo.empty()) {
    PlacementProblem pp;
    pp.model = &model;
    pp.costs = config_.costs;
    pp.power_of_two = config_.power_of_two;
    pp.fair_weight = config_.policy == Policy::Combined ? config_.fair_placement : 0.0;
    pp.cluster = cluster;
    for (size_t k = 0; k < pp.cluster.nodes.size(); ++k)
      pp.cluster.nodes[k].free_gpus = free_gpus.free(static_cast<int>(k));
    std::vector<int> seed;
    std::vector<int> known_todo;
    // Why a late job's floor was left out this round; sparse: n strings alive across the
    // placement put a later first pass (50,000 GPUs x 2,000 jobs) on 890 fresh heap pages.
    std::map<int, std::string> floor_note;
    // Late or behind jobs whose whole floor no node has free, but their types have: (index in
    // pp.jobs, whole floor).
    std::vector<std::pair<size_t, int>> over_nodes;
    // Fixed-size jobs whose types types_worth_starting_on() narrowed (their reason says why).
    std::vector<char> narrowed(n, 0);
    const std::string narrowed_note =
        "; it is not moved once started, so it waits for a type on which it loses no more than it "
        "has waited";
    for (int i : todo) {
      if (!views[i].known) continue;  // placed below by the simple rule
      const Job& j = snap.jobs[i];
      PlacementJob pj;
      pj.model = j.model;
      pj.remaining = j.remaining;
      pj.min_gpus = j.elastic ? views[i].lo : counts[i];
      pj.max_gpus = j.elastic ? std::max(views[i].hi, counts[i]) : counts[i];
      // Placed again only to find it a faster type (replace_slower), a job keeps its counted
      // size: grown past it on free GPUs of its slow type, it was shrunk back by the next count
      // round for a waiting job the placement then did not start there, every 600 s. Gavel's
      // Philly trace at loads 0.5, 1, 2 on K80 + V100 and on three types: restarts -12% to -59%,
      // avg JCT -0.9% to +1.1% (V100 alone: unchanged).
      if (slower_here[i].factor > 0) pj.max_gpus = counts[i];
      if (start_capped[i] && j.elastic) pj.max_gpus = std::max(pj.min_gpus, counts[i]);
      if (config_.policy == Policy::Hetero) pj.min_gpus = pj.max_gpus = counts[i];
      // The fairness pass's size is a floor, but never above the most GPUs one node of the job's
      // types has free: a floor of 8 on 4-GPU nodes forced the placement to spread a late job
      // over two nodes (slower rings, and, running, it kept them), and cost more JCT, p99 and
      // finish-time fairness on the default sweep than it saved (docs/combined-sweep.md, "The
      // fairness floor capped at one node"; issue 15.2).
      // Where only its slow types have room for the floor and fewer GPUs of a faster type would
      // run it faster, it runs on those types this round, from its minimum (floor_speed()).
      pj.allowed_types = views[i].types;
      int over_nodes_whole = 0;
      if (j.elastic && fair_floor[i] > 0) {
        const int whole = std::min(counts[i], fair_floor[i]);
        int floor = std::min(whole, free_gpus.most_on_one_node(views[i].types));
        // A size the ring may run at: one node with 3 free GPUs gave a floor of 3, the placement
        // ran the job on 3 and the next round resized it to 2, a restart for nothing (phillyd
        // v100x4 L1 s32: a job asked for 4 went 2 -> 3 -> 2 -> 3 -> 4 -> 3 -> 2 in 4,000 s).
        if (config_.power_of_two && floor > 0) floor = floor_power_of_two(floor);
        if (floor < whole && whole > pj.min_gpus && free_gpus.free_of(views[i].types) >= whole)
          over_nodes_whole = whole;
        if (floor > pj.min_gpus) {
          double v = floor_speed(model, j.model, views[i].types, free_gpus, floor);
          std::vector<std::string> faster =
              types_faster_than(model, j.model, views[i].types, free_gpus, pj.min_gpus, floor / 2, v);
          if (faster.empty()) {
            pj.min_gpus = floor;
            if (floor < whole) floor_capped[i] = floor;
          } else {
            pj.allowed_types = faster;
            floor_note[i] = "; no floor of " + std::to_string(floor) +
                            " GPUs this round: only slower types have room for it";
          }
        }
      }
      // The floor as a speed, not only a count (PlannerConfig::fair_placement): its floor this
      // round, or its minimum where it runs from there on faster types (types_faster_than()).
      if (j.elastic && fair_floor[i] > 0) pj.fair_gpus = pj.min_gpus;
      if (!j.elastic && j.state != JobState::Running && !may_stop(i)) {
        const size_t all = pj.allowed_types.size();
        pj.allowed_types = types_worth_starting_on(model, j, pj.allowed_types, counts[i],
                                                   std::max(0.0, snap.now_s - j.submit_s));
        narrowed[i] = pj.allowed_types.size() < all;
        // Not handed to the placement where those types have no room: it would wait there
        // only after the jobs behind it in order (the placement lets the last one wait).
        if (free_gpus.free_of(pj.allowed_types) < pj.min_gpus) {
          plan.jobs[i].reason = "waits: no room on the types it would start on" +
                                (narrowed[i] ? narrowed_note : std::string());
          continue;
        }
      }
      pj.allow_mixed = config_.allow_mixed_types;
      pj.running = j.state == JobState::Running;
      pj.current = j.gpus_by_node;
      // A running job's work counted only as far as its fastest type runs it within the lend
      // horizon (PlannerConfig::placement_horizon), but not a job placed again to find it a
      // faster type.
      if (config_.placement_horizon && pj.running && lend_horizon_s > 0 &&
          slower_here[i].factor == 0) {
        const double v = model.iters_per_s(j.model, views[i].best_type, counts[i]);
        if (v > 0) pj.remaining = std::min(j.remaining, lend_horizon_s * v);
      }
      if (over_nodes_whole > 0) over_nodes.push_back({pp.jobs.size(), over_nodes_whole});
      pp.jobs.push_back(pj);
      seed.push_back(counts[i]);
      known_todo.push_back(i);
    }
    if (!pp.jobs.empty()) {
      // A floor capped at one node's free GPUs is whole again, spread over nodes, where that runs
      // the job faster than any size one node of its types holds (floors_faster_over_nodes()).
      std::vector<FloorOverNodes> candidates;
      for (const auto& [k, whole] : over_nodes)
        candidates.push_back({pp.jobs[k].model, views[known_todo[k]].types, views[known_todo[k]].lo, whole});
      for (FloorFaster& ff : floors_faster_over_nodes(cluster, model, free_gpus, candidates)) {
        const auto [k, whole] = over_nodes[ff.candidate];
        const int i = known_todo[k];
        std::string on;
        for (const std::string& t : ff.types) on += (on.empty() ? "" : ", ") + t;
        pp.jobs[k].min_gpus = pp.jobs[k].fair_gpus = whole;
        pp.jobs[k].allowed_types = std::move(ff.types);
        floor_capped.erase(i);
        floor_note[i] = "; its floor of " + std::to_string(whole) + " GPUs over nodes of " + on +
                        ": there it runs faster than on any one node's free GPUs";
      }
      PlacementResult pr = place_hetero(pp, seed, config_.samples, config_.seed);
      // Running jobs counted alike do not trade places.
      std::vector<std::map<std::string, int>> held_types(known_todo.size());
      for (size_t k = 0; k < known_todo.size(); ++k)
        if (snap.jobs[known_todo[k]].state == JobState::Running)
          held_types[k] = current_by_type(snap.jobs[known_todo[k]], nodes);
      undo_placement_swaps(pp, seed, held_types, pr);
      std::vector<char> held_back(known_todo.size(), 0);
      held_back = hold_back_for_running(snap.jobs, known_todo, free_gpus, config_.preempt, pr);
      for (size_t k = 0; k < known_todo.size(); ++k) {
        int i = known_todo[k];
        const JobPlacement& jpl = pr.jobs[k];
        std::vector<Placement> pl;
        for (const auto& [node, g] : jpl.gpus_by_node) {
          if (g <= 0) continue;
          int k = nodes.find(node);
          pl.push_back(Placement{node, cluster.nodes[k].gpu_type, g});
          free_gpus.take_at(k, g);
        }
        set_from_placement(plan.jobs[i], pl);
        std::string how;
        for (const auto& [t, g] : plan.jobs[i].gpus_by_type)
          how += (how.empty() ? "" : " + ") + std::to_string(g) + "x " + t;
        if (plan.jobs[i].runs) {
          // The count step's size is the placement's seed, not a promise: say when it differs,
          // so that "grows 4->8" followed by 4 GPUs does not read as a contradiction.
          std::string differs;
          if (plan.jobs[i].gpus != counts[i])
            differs = "; " + std::to_string(plan.jobs[i].gpus) + " GPUs, not the " +
                      std::to_string(counts[i]) +
                      " counted: the placement's sum of finish times, with locality and GPU "
                      "types, is lower so" +
                      (floor_capped.count(i)
                           ? " (its floor is " + std::to_string(floor_capped[i]) +
                                 ", the most one node of its types has free, as a ring size)"
                           : std::string());
          plan.jobs[i].reason = count_reason[i] + "; placed on " + how +
                                (plan.jobs[i].gpus_by_type.size() > 1
                                     ? " with the batch split by GPU speed"
                                     : "") +
                                " by the placement (" +
                                std::to_string(pr.categories_evaluated) + " assignments)" +
                                differs + (floor_note.count(i) ? floor_note[i] : std::string());
        } else if (held_back[k]) {
          plan.jobs[i].reason = "waits: GPUs the placement gave it stay with a running job, "
                                "which is not stopped";
        } else {
          plan.jobs[i].reason = "waits: the placement found no GPUs for it this round" +
                                (!narrowed.empty() && narrowed[i] ? narrowed_note : std::string());
        }
      }
    }
  }

  // Jobs not yet placed (policies without the placement, unknown models). Counts were decided on the
  // pooled cluster, so a count may not fit the GPU types and nodes that are left: then the job
  // takes the largest smaller size that fits (halving, down to its minimum) rather than waiting.
  for (int i : todo) {
    JobPlan& jp = plan.jobs[i];
    if (jp.runs || (hetero && views[i].known)) continue;
    const Job& j = snap.jobs[i];
    std::vector<Placement> pl;
    int placed_size = 0;
    std::vector<int> sizes;
    for (int sz = counts[i]; sz >= views[i].lo && sz > 0; sz = sz > 1 ? sz / 2 : 0) sizes.push_back(sz);
    if (sizes.empty() || sizes.back() != views[i].lo) sizes.push_back(std::min(views[i].lo, counts[i]));
    for (int size : sizes) {
      if (size <= 0) continue;
      pl.clear();
      // A running job first tries the nodes it already holds: no move, no lost locality.
      if (j.state == JobState::Running && j.gpus_by_node.size() == 1) {
        const auto& [node, g] = *j.gpus_by_node.begin();
        int k = nodes.find(node);
        if (k >= 0 && size <= g && free_gpus.free(k) >= size) {
          free_gpus.take_at(k, size);
          pl.push_back(Placement{node, cluster.nodes[k].gpu_type, size});
          placed_size = size;
          break;
        }
      }
      // Rank the types at the size being placed: real curves cross (resnet50-b64 is fastest on
      // v100 alone but on p100 at 4 GPUs in Gavel's measurements).
      std::vector<std::string> types = views[i].types;
      if (views[i].known)
        std::stable_sort(types.begin(), types.end(), [&](const std::string& a, const std::string& b) {
          return model.iters_per_s(j.model, a, size) > model.iters_per_s(j.model, b, size);
        });
      for (const std::string& t : types)
        if (take_of_type(free_gpus, t, size, pl)) {
          placed_size = size;
          break;
        }
      if (placed_size) break;
      if (config_.allow_mixed_types && views[i].known) {
        int need = size;
        FreeGpus trial = free_gpus;
        std::vector<Placement> mixed;
        for (const std::string& t : types) {
          int k = std::min(need, trial.free_of_type(t));
          if (k > 0 && take_of_type(trial, t, k, mixed)) need -= k;
        }
        if (need == 0) {
          free_gpus = trial;
          pl = mixed;
          placed_size = size;
          break;
        }
      }
    }
    if (placed_size) {
      set_from_placement(jp, pl);
      std::string why = count_reason[i];
      if (placed_size != counts[i])
        why = "planned " + std::to_string(counts[i]) + " GPUs, " + std::to_string(placed_size) +
              " fit the GPU types and nodes left";
      jp.reason = why + "; on " + pl.front().gpu_type +
                  (views[i].known ? (views[i].predicted ? " (speed predicted from similar models)"
                                                        : " (fastest allowed type with room)")
                                  : " (no profile for this model: requested size)");
    } else {
      jp.reason = "waits: no room for " + std::to_string(std::min(views[i].lo, counts[i])) +
                  " GPUs of an allowed type";
    }
  }

  // Combined: a grow the placement spread over nodes where the job's ring runs no faster than
  // now (behind its fair share: than one GPU) is not made (grows_no_faster()). ncf on T4s, grown
  // 1 -> 4 for its fair share onto 2 + 2 GPUs of two nodes (9 iterations/s by the locality
  // charge, 47 on its one GPU), ran so for 19,400 s until a node had 4 free (efd t4x4 L1 s13:
  // max FTF 1.98 of its time alone).
  if (config_.policy == Policy::Combined)
    for (int i : grows_no_faster(cluster, model, nodes, snap, plan, views, fair_floor)) {
      JobPlan& jp = plan.jobs[i];
      const std::string was = std::to_string(jp.gpus) + " GPUs over " +
                              std::to_string(jp.placement.size()) + " nodes";
      if (back_in_place(i))
        jp.reason = "keeps its " + std::to_string(jp.gpus) + " GPUs: the " + was +
                    " planned would run its ring no faster";
    }

  // Combined: likewise a start above the request spread over nodes where the lent GPUs save less
  // than a restart, net of the one that takes them back: a3c, 297 s alone, started on 1 + 1
  // V100s of two nodes (1.07x its speed on one), was shrunk back 177 s later for an arrival and
  // finished at 1.059x its time alone (phillyd v100x8 L0.5 s35; Tiresias's worst 1.045x). Two
  // restarts as the bar: the same 2 misses gone, and 1 new (itp02 a100x8 L0.5 s5, restart 120).
  if (config_.policy == Policy::Combined && lend_horizon_s > 0) {
    std::vector<int> request(n);
    for (int i = 0; i < n; ++i)
      request[i] = std::max(requested_size(snap.jobs[i], views[i], config_.power_of_two), fair_floor[i]);
    start_spread_lends_at_request(cluster, model, nodes, snap, plan, views, request, free_gpus,
                                  lend_horizon_s, config_.costs.restart_s, config_.costs.restart_s);
  }

  // A running job that may not be stopped, left without GPUs (no room for its planned size),
  // keeps those it holds; hold_back_for_running() freed them above (the burst of
  // bench/ringsim_burst.sh: 0 stops, 1,344 with preempt). Not where a drained node took them.
  for (int i : todo)
    if (!may_stop(i) && !plan.jobs[i].runs && keep_in_place(i))
      plan.jobs[i].reason = "keeps its " + std::to_string(plan.jobs[i].gpus) +
                            " GPUs: no room for its planned size, and it may not be stopped";

  // 2a. A running job that the placement gave its own count and types on other nodes stays on
  // the GPUs it holds, where they are still free: a move would be a restart for nothing. It then
  // counts as keeping its GPUs, so that 2b may gather it onto fewer nodes when that pays. (Left
  // to step 3 alone, such a job kept a 4-GPU ring spread over two V100 nodes for 178 hours, the
  // last of them alone on an idle cluster: the placement, whose restart cost looks at GPU types
  // only, kept re-placing it at 4 while its count asked for more.)
  for (int i = 0; i < n; ++i) {
    JobPlan& jp = plan.jobs[i];
    const Job& j = snap.jobs[i];
    if (frozen[i] || !jp.runs || j.state != JobState::Running || jp.gpus != j.current_gpus ||
        jp.gpus_by_type != current_by_type(j, nodes))
      continue;
    back_in_place(i);
  }

  // 2b. Combined: a running job that keeps its count keeps its nodes above, even one spread over
  // more nodes than it needs; it gathers onto GPUs nobody got this round where that pays.
  std::vector<bool> moved(n, false);  // by 2b, 2c or 2d: a restart at the same count
  const std::function<bool(int)> may_move = movable;
  GatherPass gather{cluster, model, nodes, snap, views, config_.costs, frozen, may_move,
                    free_gpus, plan, moved, config_.power_of_two};
  if (config_.policy == Policy::Combined) gather_onto_free_gpus(gather);

  // 2c. Combined: likewise a running job that keeps its count keeps its GPU type above, even one
  // far slower than a type it may use that nobody got this round: a job put on K80s in a burst
  // stayed there for 57 hours after the burst had drained, alone on a cluster of idle V100s and
  // A100s (bench/ringsim_burst.sh). When no job waits, it moves to the fastest such type that
  // holds it on no more nodes than it has now, if it gains more than min_gain_multiple restarts
  // there, and not within min_interval_s of its last resize; jobs in policy order get the room
  // first. (Also while jobs wait: the same on --full, seed 1, and more restarts on the burst;
  // a job far slower than on its fastest type is placed again instead, above: replace_slower.)
  // A job on several types (it runs at its slowest's pace) may move to one of them or another: an
  // 8-GPU resnet18 on K80s and P100s ran 11 hours at a thirty-fourth of its speed alone.
  // A job waits that could run somewhere (also step 3's SPB packing: 2c moves only running jobs).
  bool contention = false;
  for (int i = 0; i < n; ++i)
    contention = contention || (!plan.jobs[i].runs && impossible[i].empty());
  if (config_.policy == Policy::Combined && !contention) {
    for (int i : order) {
      JobPlan& jp = plan.jobs[i];
      const Job& j = snap.jobs[i];
      if (!frozen[i] || !movable(i) || moved[i] || !views[i].known || jp.gpus_by_type.empty() ||
          snap.now_s - j.last_resize_s < config_.costs.min_interval_s)
        continue;
      const std::string now_type = type_set_name(jp.gpus_by_type);  // a copy: jp changes below
      const bool mixed = jp.gpus_by_type.size() > 1;
      double v_now = model.iters_per_s_mixed(j.model, jp.gpus_by_type);
      if (!(v_now > 0)) continue;
      std::string best;
      double v_best = v_now;
      for (const std::string& t : views[i].types) {
        double v = model.iters_per_s(j.model, t, jp.gpus);
        if ((mixed || t != now_type) && v > v_best && free_gpus.free_of_type(t) >= jp.gpus) {
          best = t;
          v_best = v;
        }
      }
      const double r = j.remaining, c = config_.costs.restart_s;
      if (best.empty() || r / v_now - r / v_best - c <= config_.costs.min_gain_multiple * c)
        continue;
      std::vector<Placement> pl;
      if (!take_of_type(free_gpus, best, jp.gpus, pl)) continue;
      if (pl.size() > jp.placement.size()) {  // more nodes: a slower ring than the type says
        for (const Placement& p : pl) free_gpus.take_at(nodes.find(p.node), -p.gpus);
        continue;
      }
      for (const Placement& p : jp.placement) free_gpus.take_at(nodes.find(p.node), -p.gpus);
      set_from_placement(jp, pl);
      moved[i] = true;
      jp.reason += "; moves from " + now_type + " to " + best + ", idle this round: done " +
                   std::to_string(static_cast<long>(r / v_now - r / v_best - c)) + " s sooner";
    }
  }

  // 2d. Combined: a ring still spread over nodes gathers on one of them, the small jobs there moved
  // to the GPUs it leaves, where it gains more than their restarts and its own (planner_gather.h).
  // A transformer placed 4 + 4 over two full 8-GPU V100 nodes at its start ran 2.4x its time
  // alone (phillyd L0.5 s7; max FTF 2.35x Tiresias's). On cluster shapes the sweep had not seen
  // (docs/combined-gather-swaps.md) misses 13 -> 10 of 1,140, worst FTF 2.35x -> 1.08x; on the
  // sweep's 2,700, avg JCT -0.4% to -0.6% per set of seeds, -2.2% on --full, restarts +1.7% to
  // +3.4%.
  if (config_.policy == Policy::Combined) gather_by_swaps(gather, order);

  // 2e. Combined: a late job that one node's free GPUs capped below its floor grows to it on that
  // node, the small jobs there moved to other nodes' free GPUs (planner_gather.h). A 517 s
  // recommendation job admitted at 8 on 8-GPU V100 nodes started at 4 beside a 4-GPU job while
  // another node had 4 free, and grew with a restart: 732 s (phillyd v100x8 L0.5 s8); now 517 s.
  // On the eleven shapes of data/clusters/ (seeds 1-40), misses 10 -> 8 and avg JCT -0.6% to
  // +0.2% per family and ten seeds; on seeds 41-50, not used to make it, the same misses and
  // -0.1% to +0.1% (docs/combined-grow-whole.md). Where that node cannot be cleared, it grows on
  // another node of its type, the jobs there moved and lenders shrunk towards their requests
  // (the recall; docs/combined-recall.md).
  if (config_.policy == Policy::Combined && !floor_capped.empty()) {
    std::map<int, int> whole;  // the size each capped job's floor asked for
    for (const auto& [i, floor] : floor_capped) whole[i] = std::min(counts[i], fair_floor[i]);
    grow_whole_by_swaps(gather, order, whole);
  }

  for (int i = 0; i < n; ++i)
    if (slower_here[i].factor > 0) plan.jobs[i].reason += slower_here_reason(slower_here[i], config_);

  // 3. Finish the per-job rows: speed, resize, SPB depth, order, reasons for waiting jobs.
  double objective = 0;
  int rank = 0;
  for (int i : order) {
    const Job& j = snap.jobs[i];
    JobPlan& jp = plan.jobs[i];
    jp.order = rank++;
    if (!jp.runs) {
      if (jp.reason.empty()) jp.reason = count_reason[i].empty() ? "waits" : count_reason[i];
      continue;
    }
    jp.predicted_iters_per_s = views[i].known ? model.iters_per_s_mixed(j.model, jp.gpus_by_type) : 0;
    if (j.state == JobState::Running) {
      jp.resize = moved[i] || (!frozen[i] && (jp.gpus != j.current_gpus ||
                                                 jp.gpus_by_type != current_by_type(j, nodes)));
      if (!jp.resize && !frozen[i]) {
        // Its own shape on other nodes: 2a kept it where it is when its GPUs were free.
        jp.resize = true;
        jp.reason += "; moves: GPUs it holds went to other jobs";
      }
    }
    if (config_.spb_packing && views[i].known) apply_spb(model, j, contention, jp);
    if (jp.predicted_iters_per_s > 0) {
      jp.predicted_finish_s = j.remaining / jp.predicted_iters_per_s +
                              (jp.resize ? config_.costs.restart_s : 0.0);
      objective += jp.predicted_finish_s;
    }
  }
  // Invariant: no node gives more GPUs than it has free. A violation is a planner bug; say which
  // jobs, rather than hand Slurm or the simulator an impossible plan.
  {
    std::vector<int> used(cluster.nodes.size(), 0);
    for (const JobPlan& jp : plan.jobs)
      for (const Placement& p : jp.placement) {
        int k = nodes.find(p.node);
        if (k < 0) throw std::logic_error("planner: job " + jp.job_id + " placed on unknown node " + p.node);
        used[k] += p.gpus;
      }
    for (size_t k = 0; k < used.size(); ++k)
      if (used[k] > cluster.nodes[k].usable()) {
        std::string who;
        for (const JobPlan& jp : plan.jobs)
          for (const Placement& p : jp.placement)
            if (p.node == cluster.nodes[k].name)
              who += " " + jp.job_id + "(" + std::to_string(p.gpus) + ": " + jp.reason + ")";
        throw std::logic_error("planner: node " + cluster.nodes[k].name + " over-allocated (" +
                               std::to_string(used[k]) + " of " +
                               std::to_string(cluster.nodes[k].usable()) + "):" + who);
      }
  }
  plan.objective_s = objective;
  plan.lend_horizon_s = lend_horizon_s;
  if (config_.policy == Policy::Combined) plan.wake_s = wake_after_holds(plan, starving, grace_end_s, snap.now_s);
  plan.decision_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return plan;
}

}  // namespace ringsched
