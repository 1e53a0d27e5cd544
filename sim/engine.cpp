// SPDX-License-Identifier: GPL-2.0-or-later
#include "engine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "ringsched/free_gpus.h"
#include "ringsched/spb.h"

namespace ringsim {

using ringsched::InputError;


double SimJob::expected_finish_s(double now_s) const {
  if (state != SimJobState::Running || !(speed > 0)) return std::numeric_limits<double>::infinity();
  return std::max(now_s, resume_s) + remaining / speed;
}

Engine::Engine(const ringsched::Cluster& cluster, const Trace& trace, const ringsched::ThroughputModel& truth,
               SimConfig config)
    : cluster_(cluster), trace_(trace), truth_(truth), config_(std::move(config)) {
  cluster_.validate();
  if (!(config_.round_s > 0)) throw InputError("round interval must be positive");
  if (config_.restart_s < 0) throw InputError("restart cost must not be negative");
  for (const ringsched::Node& n : cluster_.nodes) nodes_[n.name] = &n;
  for (const TraceJob& j : trace_.jobs) {
    std::vector<std::string> types;
    int capacity = 0;
    for (const std::string& t : cluster_.types())
      if (truth_.knows(j.model, t)) {
        types.push_back(t);
        capacity += cluster_.gpus_of_type(t);
      }
    if (types.empty())
      throw InputError(trace_.source, j.line,
                       "job " + j.id + ": model '" + j.model + "' has no profile on any GPU type of the cluster");
    if (j.gpus > capacity || j.min_gpus > capacity)
      throw InputError(trace_.source, j.line,
                       "job " + j.id + " asks for " + std::to_string(j.gpus) + " GPUs; the cluster has " +
                           std::to_string(capacity) + " of the types model '" + j.model + "' is profiled on");
    // Its fastest size on its fastest type (sizes: min, the powers of two between, max).
    double best = 0;
    for (const std::string& t : types) {
      int hi = std::min(j.max_gpus, cluster_.gpus_of_type(t));
      for (int n = j.min_gpus; n <= hi; n = n < hi && 2 * n > hi ? hi : 2 * n)
        best = std::max(best, truth_.iters_per_s(j.model, t, n));
    }
    if (best > 0 && !(j.iterations / best <= kMaxAloneS)) {  // 0: runs only over mixed types
      std::ostringstream m;
      m << "job " << j.id << ": " << j.iterations << " iterations of '" << j.model << "' take "
        << j.iterations / best << " s even at its fastest size; ringsim simulates jobs of up to "
        << kMaxAloneS << " s (3 years) alone";
      throw InputError(trace_.source, j.line, m.str());
    }
    allowed_.push_back(types);
  }
  std::vector<ringsched::PlacementLocality::Job> placed;
  for (size_t i = 0; i < trace_.jobs.size(); ++i) placed.push_back({trace_.jobs[i].model, allowed_[i]});
  locality_ = std::make_unique<ringsched::PlacementLocality>(cluster_, truth_, placed);
}

double Engine::speed_of(const SimJob& j, const std::map<std::string, int>& gpus_by_node,
                        const std::map<std::string, int>& by_type, bool proportional, double spb_depth) const {
  int n = 0;
  for (const auto& kv : by_type) n += kv.second;
  if (n == 0) return 0;
  double v = 0;
  if (by_type.size() == 1) {
    v = truth_.iters_per_s(j.spec->model, by_type.begin()->first, n);
  } else if (proportional) {
    v = truth_.iters_per_s_mixed(j.spec->model, by_type);
  } else {
    // Equal batch shares: every worker waits for the slowest type (what a type-blind ring gets).
    std::string slowest;
    double slowest_v = std::numeric_limits<double>::infinity();
    for (const auto& kv : by_type) {
      double v1 = truth_.iters_per_s(j.spec->model, kv.first, 1);
      if (v1 < slowest_v) { slowest_v = v1; slowest = kv.first; }
    }
    v = truth_.iters_per_s(j.spec->model, slowest, n);
  }
  if (j.spec->spb && spb_depth > 0 && spb_depth < 1) {
    // The library's SPB cost model (policy/spb.h): on one type, the planner's reduced-footprint
    // pattern with its useful-iteration discount; on mixed types, the compute factor alone.
    ringsched::SpbConfig spb;
    if (by_type.size() == 1)
      v = ringsched::spb_at_footprint(truth_, j.spec->model, by_type.begin()->first, n, spb).useful_iters_per_s;
    else
      v /= ringsched::spb_compute_factor(spb_depth, spb);
  }
  // A ring spread over nodes: the placement's locality factor (1 inside one node). It is the
  // factor of the proportional split; a type-blind ring over several types waits for its slowest
  // type, and its communication is charged by the same factor.
  if (gpus_by_node.size() > 1) v *= locality_->factor(static_cast<int>(j.spec - trace_.jobs.data()), gpus_by_node);
  return v;
}

double Engine::isolated_s(const TraceJob& j) const {
  // On the fewest nodes that hold it (the allocator's rule on the empty cluster), charged the
  // locality of those nodes as every allocation is (an 8-GPU ring on 4-GPU nodes spans two).
  const ptrdiff_t index = &j - trace_.jobs.data();
  const bool traced = index >= 0 && index < static_cast<ptrdiff_t>(trace_.jobs.size());
  auto on_fewest_nodes = [&](const std::map<std::string, int>& by_type, double v) {
    if (!traced || !(v > 0)) return v;
    ringsched::FreeGpus empty(cluster_);
    std::map<std::string, int> nodes;
    for (const auto& kv : by_type)
      for (const auto& nv : empty.place(kv.second, {kv.first})) nodes[nv.first] += nv.second;
    return nodes.size() > 1 ? v * locality_->factor(static_cast<int>(index), nodes) : v;
  };
  double best = 0;
  std::map<std::string, int> all;
  for (const std::string& t : cluster_.types()) {
    if (!truth_.knows(j.model, t)) continue;
    all[t] = cluster_.gpus_of_type(t);
    if (cluster_.gpus_of_type(t) >= j.gpus)
      best = std::max(best, on_fewest_nodes({{t, j.gpus}}, truth_.iters_per_s(j.model, t, j.gpus)));
  }
  if (best <= 0) {
    // Larger than any one type: the fastest types first, speeds split proportionally.
    std::vector<std::pair<double, std::string>> order;
    for (const auto& kv : all) order.emplace_back(-truth_.iters_per_s(j.model, kv.first, 1), kv.first);
    std::sort(order.begin(), order.end());
    std::map<std::string, int> take;
    int left = j.gpus;
    for (const auto& o : order) {
      int k = std::min(left, all[o.second]);
      if (k > 0) take[o.second] = k;
      left -= k;
    }
    best = on_fewest_nodes(take, truth_.iters_per_s_mixed(j.model, take));
  }
  return best > 0 ? j.iterations / best : std::numeric_limits<double>::infinity();
}

double Engine::ideal_s(const TraceJob& j) const {
  double best = 0;
  for (const std::string& t : cluster_.types()) {
    if (!truth_.knows(j.model, t)) continue;
    int top = std::min(j.max_gpus, cluster_.gpus_of_type(t));
    for (int n = 1; n <= top; ++n) best = std::max(best, truth_.iters_per_s(j.model, t, n));
  }
  return best > 0 ? j.iterations / best : std::numeric_limits<double>::infinity();
}

namespace {

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(p * v.size()));
  if (rank < 1) rank = 1;
  return v[std::min(rank, v.size()) - 1];
}

}  // namespace

SimResult Engine::run(SchedulingPolicy& policy, const ringsched::ThroughputModel& policy_model) {
  using clock = std::chrono::steady_clock;
  const auto wall0 = clock::now();
  const double inf = std::numeric_limits<double>::infinity();
  const size_t n = trace_.jobs.size();
  SimResult res;
  res.policy = policy.name();

  std::vector<SimJob> jobs(n);
  std::vector<std::map<std::string, int>> types_seen(n);
  for (size_t i = 0; i < n; ++i) {
    jobs[i].spec = &trace_.jobs[i];
    jobs[i].allowed_types = allowed_[i];
    jobs[i].remaining = trace_.jobs[i].iterations;
  }
  std::vector<bool> tracked(n, false);
  if (config_.job_series > 0)
    for (int k = 0; k < config_.job_series && static_cast<size_t>(k) < n; ++k)
      tracked[static_cast<size_t>(k) * n / std::min<size_t>(n, config_.job_series)] = true;

  std::map<std::string, int> used;
  for (const auto& kv : nodes_) used[kv.first] = 0;
  const int total_gpus = cluster_.total_gpus();
  int busy = 0;

  SimView view;
  view.cluster = &cluster_;
  view.model = &policy_model;
  view.jobs = &jobs;
  std::map<std::string, int> gpus_by_type;
  for (const std::string& t : cluster_.types()) gpus_by_type[t] = cluster_.gpus_of_type(t);
  view.gpus_by_type = &gpus_by_type;
  view.total_gpus = total_gpus;

  std::vector<double> decision_ms;
  std::vector<Allocation> out;
  size_t next_arrival = 0, done = 0;
  double now = n ? trace_.jobs[0].submit_s : 0;
  const double t0 = now;
  double next_round = now;
  bool event = true;
  double last_plan = -inf, deferred_until = inf, wake = inf;
  auto last_progress = wall0;

  auto record_busy = [&](double t) {
    if (!res.busy_gpus.empty() && res.busy_gpus.back().first == t) res.busy_gpus.back().second = busy;
    else res.busy_gpus.emplace_back(t, busy);
  };

  std::vector<int> running;  // indices of Running jobs (a subset of view.active)
  auto apply = [&]() {
    // Check the changes before applying anything: a bad policy must not corrupt state. Jobs whose
    // allocation stays as it is were checked when they got it; only the others are looked at, so
    // a decision costs O(changes), not O(allocated nodes), on 10,000-GPU runs.
    std::vector<char> changed(view.active.size(), 0);
    std::map<std::string, int> delta;
    for (size_t k = 0; k < view.active.size(); ++k) {
      const SimJob& j = jobs[view.active[k]];
      std::map<std::string, int>& a = out[k].gpus_by_node;
      for (auto it = a.begin(); it != a.end();) {
        if (it->second < 0) throw std::logic_error(policy.name() + ": negative GPU count for job " + j.spec->id);
        it = it->second == 0 ? a.erase(it) : std::next(it);
      }
      double depth = j.spec->spb && !a.empty() ? std::min(1.0, std::max(0.05, out[k].spb_depth)) : 1.0;
      out[k].spb_depth = depth;
      if (a == j.alloc && depth == j.spb_depth && (a.empty() || j.proportional_split == out[k].proportional_split))
        continue;
      changed[k] = 1;
      int total = 0;
      for (const auto& kv : a) {
        auto node = nodes_.find(kv.first);
        if (node == nodes_.end()) throw std::logic_error(policy.name() + ": unknown node " + kv.first);
        if (std::find(j.allowed_types.begin(), j.allowed_types.end(), node->second->gpu_type) == j.allowed_types.end())
          throw std::logic_error(policy.name() + ": job " + j.spec->id + " placed on type " + node->second->gpu_type +
                                 " its model has no profile for");
        delta[kv.first] += kv.second;
        total += kv.second;
      }
      for (const auto& kv : j.alloc) delta[kv.first] -= kv.second;
      if (total > 0) {
        bool ok = j.spec->elastic ? (total >= j.spec->min_gpus && total <= j.spec->max_gpus) : total == j.spec->gpus;
        if (!ok)
          throw std::logic_error(policy.name() + ": job " + j.spec->id + " given " + std::to_string(total) +
                                 " GPUs outside its range");
      }
    }
    for (const auto& kv : delta) {
      int after = used[kv.first] + kv.second;
      if (after > nodes_[kv.first]->gpus)
        throw std::logic_error(policy.name() + ": node " + kv.first + " over-allocated (" + std::to_string(after) +
                               " of " + std::to_string(nodes_[kv.first]->gpus) + " GPUs)");
    }
    for (size_t k = 0; k < view.active.size(); ++k) {
      if (!changed[k]) continue;
      SimJob& j = jobs[view.active[k]];
      const std::map<std::string, int>& alloc = out[k].gpus_by_node;
      const double depth = out[k].spb_depth;
      for (const auto& kv : j.alloc) used[kv.first] -= kv.second;
      busy -= j.gpus;
      j.alloc = alloc;
      j.by_type.clear();
      j.gpus = 0;
      for (const auto& kv : alloc) {
        used[kv.first] += kv.second;
        j.by_type[nodes_[kv.first]->gpu_type] += kv.second;
        types_seen[view.active[k]][nodes_[kv.first]->gpu_type] += kv.second;
        j.gpus += kv.second;
      }
      busy += j.gpus;
      j.spb_depth = depth;
      j.proportional_split = out[k].proportional_split;
      if (alloc.empty()) {
        if (j.state == SimJobState::Running) ++j.stops;
        j.state = SimJobState::Pending;  // preempted; it pays the restart when it resumes
        j.speed = 0;
      } else {
        j.state = SimJobState::Running;
        if (j.start_s < 0) {
          j.start_s = now;
          j.resume_s = now;
        } else {
          ++j.restarts;
          j.resume_s = now + config_.restart_s;
        }
        j.last_resize_s = now;
        j.speed = speed_of(j, j.alloc, j.by_type, j.proportional_split, j.spb_depth);
        if (!(j.speed > 0))
          throw std::logic_error(policy.name() + ": job " + j.spec->id + " placed where it has no speed");
        j.max_gpus_seen = std::max(j.max_gpus_seen, j.gpus);
      }
      if (tracked[view.active[k]]) res.job_gpus[j.spec->id].emplace_back(now, j.gpus);
    }
    // Guard the engine's own bookkeeping on the nodes this decision touched.
    for (const auto& kv : delta)
      if (used[kv.first] < 0 || used[kv.first] > nodes_[kv.first]->gpus)
        throw std::logic_error("engine: node accounting broke on " + kv.first);
    if (busy < 0 || busy > total_gpus) throw std::logic_error("engine: GPU accounting broke");
    record_busy(now);
    running.clear();
    for (int i : view.active)
      if (jobs[i].state == SimJobState::Running) running.push_back(i);
  };

  while (done < n) {
    while (next_arrival < n && trace_.jobs[next_arrival].submit_s <= now) {
      jobs[next_arrival].state = SimJobState::Pending;
      view.active.push_back(static_cast<int>(next_arrival));
      ++next_arrival;
      event = true;
    }
    const bool round_due = now >= next_round - 1e-9 && (policy.periodic() || !config_.plan_on_events);
    const bool wake_due = now >= wake - 1e-9;
    bool plan_now = (event && config_.plan_on_events) || round_due || wake_due;
    if (plan_now && !round_due && now < last_plan + config_.min_plan_gap_s - 1e-9) {
      plan_now = false;  // coalesce: this event (or wake) is planned for at last_plan + gap
      deferred_until = last_plan + config_.min_plan_gap_s;
      if (wake_due) wake = deferred_until;
    }
    if (plan_now) {
      last_plan = now;
      deferred_until = inf;
      view.now_s = now;
      view.event = event;
      out.assign(view.active.size(), Allocation());
      auto d0 = clock::now();
      policy.decide(view, out);
      decision_ms.push_back(std::chrono::duration<double, std::milli>(clock::now() - d0).count());
      if (out.size() != view.active.size()) throw std::logic_error(policy.name() + ": wrong number of decisions");
      apply();
      wake = policy.wake_s();
      if (!(wake > now + 1e-9)) wake = inf;  // never a wake that is not later
      while (next_round <= now + 1e-9) next_round += config_.round_s;
      event = false;
    }
    double t_arrival = next_arrival < n ? trace_.jobs[next_arrival].submit_s : inf;
    double t_finish = inf;
    for (int i : running) {
        t_finish = std::min(t_finish, std::max(now, jobs[i].resume_s) + jobs[i].remaining / jobs[i].speed);
      }
    // (Not while a coalesced plan is due: the events it waits for may start the waiting jobs.)
    if (running.empty() && next_arrival == n && !view.active.empty() && deferred_until == inf) {
      const SimJob& j = jobs[view.active.front()];
      throw std::runtime_error(policy.name() + " leaves " + std::to_string(view.active.size()) +
                               " jobs waiting on an idle cluster with no arrivals left (first: job " + j.spec->id +
                               ", " + std::to_string(j.spec->gpus) + " GPUs of model " + j.spec->model + ")");
    }
    double t_next = std::min(std::min(std::min(t_arrival, t_finish), deferred_until), wake);
    if (!view.active.empty() && (policy.periodic() || !config_.plan_on_events)) t_next = std::min(t_next, next_round);
    if (t_next == inf) break;
    if (t_next - t0 > config_.max_sim_s)
      throw std::runtime_error(policy.name() + ": simulated time passed the limit of " +
                               std::to_string(config_.max_sim_s) + " s");
    // Integrate progress exactly: constant speed on [max(now, resume), t_next].
    std::vector<int> finished;
    for (int i : running) {
      SimJob& j = jobs[i];
      double dt = t_next - now;
      double work_from = std::max(now, j.resume_s);
      double work_dt = std::max(0.0, t_next - work_from);
      double finish_at = work_from + j.remaining / j.speed;
      j.attained_gpu_s += j.gpus * dt;
      if (finish_at <= t_next + 1e-9 * std::max(1.0, std::fabs(t_next))) {
        j.useful_gpu_s += j.gpus * std::max(0.0, finish_at - work_from);
        j.remaining = 0;
        finished.push_back(i);
      } else {
        j.useful_gpu_s += j.gpus * work_dt;
        j.remaining -= j.speed * work_dt;
      }
    }
    now = t_next;
    for (int i : finished) {
      SimJob& j = jobs[i];
      j.state = SimJobState::Done;
      j.finish_s = now;
      for (const auto& kv : j.alloc) used[kv.first] -= kv.second;
      busy -= j.gpus;
      if (tracked[i]) res.job_gpus[j.spec->id].emplace_back(now, 0);
      ++done;
      event = true;
    }
    if (!finished.empty()) {
      std::vector<int> keep;
      keep.reserve(view.active.size());
      for (int i : view.active)
        if (jobs[i].state != SimJobState::Done) keep.push_back(i);
      view.active.swap(keep);
      keep.clear();
      for (int i : running)
        if (jobs[i].state == SimJobState::Running) keep.push_back(i);
      running.swap(keep);
      record_busy(now);
    }
    if (config_.progress) {
      auto w = clock::now();
      if (std::chrono::duration<double>(w - last_progress).count() >= 1.0 || done == n) {
        last_progress = w;
        std::fprintf(stderr, "\r%s: %zu/%zu jobs done, %zu queued, sim time %.0f h, %.1f s wall   ",
                     config_.label.empty() ? res.policy.c_str() : config_.label.c_str(), done, n,
                     view.active.size(), (now - t0) / 3600.0,
                     std::chrono::duration<double>(w - wall0).count());
        if (done == n) std::fprintf(stderr, "\n");
      }
    }
  }

  // Summaries.
  std::vector<double> jct;
  double attained = 0, useful = 0, iters = 0, last_finish = t0;
  for (size_t i = 0; i < n; ++i) {
    const SimJob& j = jobs[i];
    JobRow r;
    r.id = j.spec->id;
    r.model = j.spec->model;
    r.submit_s = j.spec->submit_s;
    r.start_s = j.start_s;
    r.finish_s = j.finish_s;
    r.jct_s = j.finish_s - j.spec->submit_s;
    r.ideal_s = isolated_s(*j.spec);
    r.requested = j.spec->gpus;
    r.max_gpus = j.max_gpus_seen;
    r.restarts = j.restarts;
    r.gpu_s = j.attained_gpu_s;
    r.types = ringsched::type_set_name(types_seen[i]);
    res.jobs.push_back(r);
    jct.push_back(r.jct_s);
    res.restarts += j.restarts;
    res.stops += j.stops;
    res.ftf_max = std::max(res.ftf_max, r.jct_s / r.ideal_s);
    attained += j.attained_gpu_s;
    useful += j.useful_gpu_s;
    iters += j.spec->iterations;
    last_finish = std::max(last_finish, j.finish_s);
  }
  double sum = 0;
  for (double x : jct) sum += x;
  res.avg_jct_s = n ? sum / n : 0;
  res.p50_jct_s = percentile(jct, 0.50);
  res.p99_jct_s = percentile(jct, 0.99);
  res.makespan_s = last_finish - t0;
  if (res.makespan_s > 0) {
    res.gpu_util = attained / (total_gpus * res.makespan_s);
    res.useful_util = useful / (total_gpus * res.makespan_s);
  }
  res.iters_per_gpu_hour = attained > 0 ? iters / (attained / 3600.0) : 0;
  res.decisions = static_cast<long>(decision_ms.size());
  res.decision_ms_p50 = percentile(decision_ms, 0.50);
  res.decision_ms_p99 = percentile(decision_ms, 0.99);
  res.wall_s = std::chrono::duration<double>(clock::now() - wall0).count();
  return res;
}

}  // namespace ringsim
