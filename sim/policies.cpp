// SPDX-License-Identifier: GPL-2.0-or-later
#include "policies.h"
#include "ringsched/arrivals.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

namespace ringsim {

using ringsched::InputError;

using ringsched::FreeGpus;

namespace {

// Speed a type-blind policy expects: the cluster's types weighted by their GPU counts.
double blended_speed(const SimView& v, const SimJob& j, int n) {
  double s = 0, w = 0;
  for (const std::string& t : j.allowed_types) {
    double x = v.model->iters_per_s(j.spec->model, t, n);
    if (x > 0) {
      int c = v.gpus_by_type->at(t);
      s += c * x;
      w += c;
    }
  }
  return w > 0 ? s / w : 0;
}

// ---- fifo ----------------------------------------------------------------------------------
class FifoBackfill : public SchedulingPolicy {
 public:
  std::string name() const override { return "fifo"; }
  bool periodic() const override { return false; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    FreeGpus fm(*v.cluster);
    std::vector<std::pair<double, int>> ends;  // (expected end, GPUs) of running jobs
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& j = v.job(v.active[k]);
      out[k].proportional_split = false;
      if (j.state == SimJobState::Running) {
        out[k].gpus_by_node = j.alloc;
        fm.take(j.alloc);
        ends.emplace_back(j.expected_finish_s(v.now_s), j.gpus);
      }
    }
    bool blocked = false;
    double shadow = 0;
    int extra = 0;
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (j.state == SimJobState::Running) continue;
      if (fm.free_of({}) == 0) break;  // nothing more can start (the common case in a long queue)
      const int n = j.spec->gpus;
      if (blocked && fm.free_of(j.allowed_types) < n) continue;
      // Run-time estimate: remaining work at the blended speed.
      double est = blended_speed(v, j, n);
      double end = est > 0 ? v.now_s + j.remaining / est : std::numeric_limits<double>::infinity();
      if (blocked && !(end <= shadow || n <= extra)) continue;
      std::map<std::string, int> a = fm.place(n, j.allowed_types);
      if (!a.empty()) {
        out[k].gpus_by_node = a;
        ends.emplace_back(end, n);
        if (blocked && end > shadow) extra -= n;
        continue;
      }
      if (blocked) continue;
      // The head job waits: reserve the earliest time enough GPUs are free (EASY backfill).
      blocked = true;
      std::sort(ends.begin(), ends.end());
      int avail = fm.free_of(j.allowed_types);
      shadow = std::numeric_limits<double>::infinity();
      for (const auto& e : ends) {
        avail += e.second;
        if (avail >= n) {
          shadow = e.first;
          break;
        }
      }
      extra = avail - n;
    }
  }
};

// ---- tiresias --------------------------------------------------------------------------------
class TiresiasLas : public SchedulingPolicy {
 public:
  std::string name() const override { return "tiresias"; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    // Pending jobs' service does not change between events: without an event, the order changes
    // only if a running job crossed into a lower queue. Then the previous decision stands.
    if (!v.event) {
      bool crossed = false;
      for (int i : v.active) {
        const SimJob& j = v.job(i);
        if (j.state == SimJobState::Running && queue_of(j.attained_gpu_s) != queue_at_start(j)) crossed = true;
      }
      if (!crossed) {
        for (size_t k = 0; k < v.active.size(); ++k) {
          out[k].proportional_split = false;
          out[k].gpus_by_node = v.job(v.active[k]).alloc;
        }
        return;
      }
    }
    std::vector<std::pair<int, size_t>> order;
    for (size_t k = 0; k < v.active.size(); ++k) {
      int q = queue_of(v.job(v.active[k]).attained_gpu_s);
      order.emplace_back(q, k);  // k is submit order inside a queue
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    int pool = v.total_gpus;
    std::vector<bool> chosen(v.active.size(), false);
    for (const auto& o : order) {
      const SimJob& j = v.job(v.active[o.second]);
      if (j.spec->gpus <= pool) {
        chosen[o.second] = true;
        pool -= j.spec->gpus;
      }
    }
    FreeGpus fm(*v.cluster);
    for (size_t k = 0; k < v.active.size(); ++k) {
      out[k].proportional_split = false;
      const SimJob& j = v.job(v.active[k]);
      if (chosen[k] && j.state == SimJobState::Running) {
        out[k].gpus_by_node = j.alloc;
        fm.take(j.alloc);
      }
    }
    for (const auto& o : order) {
      const SimJob& j = v.job(v.active[o.second]);
      if (chosen[o.second] && j.state != SimJobState::Running)
        out[o.second].gpus_by_node = fm.place(j.spec->gpus, j.allowed_types);
    }
    queue_when_decided_.clear();
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (!out[k].gpus_by_node.empty()) queue_when_decided_[j.spec] = queue_of(j.attained_gpu_s);
    }
  }

 private:
  static int queue_of(double attained_gpu_s) {
    static const double kThresholds[] = {3600.0, 36000.0};  // GPU-seconds: 1 and 10 GPU-hours
    return attained_gpu_s < kThresholds[0] ? 0 : attained_gpu_s < kThresholds[1] ? 1 : 2;
  }
  int queue_at_start(const SimJob& j) const {
    auto it = queue_when_decided_.find(j.spec);
    return it == queue_when_decided_.end() ? -1 : it->second;
  }
  std::map<const TraceJob*, int> queue_when_decided_;  // queue of each job it let run
};

// ---- optimus ---------------------------------------------------------------------------------
class OptimusGreedy : public SchedulingPolicy {
 public:
  explicit OptimusGreedy(double min_interval_s) : min_interval_s_(min_interval_s) {}
  std::string name() const override { return "optimus"; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    const size_t m = v.active.size();
    std::vector<int> count(m, 0);
    std::vector<bool> fixed(m, false);
    int pool = v.total_gpus;
    // Running jobs inside their minimum resize interval keep their size.
    for (size_t k = 0; k < m; ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (j.state == SimJobState::Running &&
          (!j.spec->elastic || v.now_s - j.last_resize_s < min_interval_s_)) {
        fixed[k] = true;
        count[k] = j.gpus;
        pool -= j.gpus;
      }
    }
    for (size_t k = 0; k < m; ++k) {
      if (fixed[k]) continue;
      const SimJob& j = v.job(v.active[k]);
      int need = j.spec->elastic ? j.spec->min_gpus : j.spec->gpus;
      if (need <= pool) {
        count[k] = need;
        pool -= need;
      }
    }
    auto gain = [&](size_t k) {
      const SimJob& j = v.job(v.active[k]);
      double a = blended_speed(v, j, count[k]), b = blended_speed(v, j, count[k] + 1);
      if (!(a > 0) || !(b > a)) return 0.0;
      return j.remaining / a - j.remaining / b;
    };
    std::priority_queue<std::pair<double, size_t>> heap;
    for (size_t k = 0; k < m; ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (!fixed[k] && count[k] > 0 && j.spec->elastic && count[k] < j.spec->max_gpus) {
        double g = gain(k);
        if (g > 0) heap.emplace(g, k);
      }
    }
    while (pool > 0 && !heap.empty()) {
      size_t k = heap.top().second;
      heap.pop();
      ++count[k];
      --pool;
      if (count[k] < v.job(v.active[k]).spec->max_gpus) {
        double g = gain(k);
        if (g > 0) heap.emplace(g, k);
      }
    }
    // Placement: keep what stays, trim what shrinks, then place what grows or starts.
    FreeGpus fm(*v.cluster);
    std::vector<size_t> to_place;
    for (size_t k = 0; k < m; ++k) {
      out[k].proportional_split = false;
      const SimJob& j = v.job(v.active[k]);
      if (j.state == SimJobState::Running && count[k] > 0 && count[k] <= j.gpus) {
        std::map<std::string, int> a = j.alloc;
        int drop = j.gpus - count[k];
        while (drop > 0) {
          auto smallest = std::min_element(a.begin(), a.end(),
                                           [](const auto& x, const auto& y) { return x.second < y.second; });
          int d = std::min(drop, smallest->second);
          smallest->second -= d;
          drop -= d;
          if (smallest->second == 0) a.erase(smallest);
        }
        out[k].gpus_by_node = a;
        fm.take(a);
      } else if (count[k] > 0) {
        to_place.push_back(k);
      }
    }
    for (size_t k : to_place) {
      const SimJob& j = v.job(v.active[k]);
      int lo = j.spec->elastic ? j.spec->min_gpus : j.spec->gpus;
      for (int c = count[k]; c >= lo && out[k].gpus_by_node.empty(); --c)
        out[k].gpus_by_node = fm.place(c, j.allowed_types);
    }
  }

 private:
  double min_interval_s_;
};

// ---- besttype --------------------------------------------------------------------------------
class BestTypeFirst : public SchedulingPolicy {
 public:
  std::string name() const override { return "besttype"; }
  bool periodic() const override { return false; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    FreeGpus fm(*v.cluster);
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (j.state == SimJobState::Running) {
        out[k].gpus_by_node = j.alloc;
        out[k].proportional_split = j.proportional_split;
        fm.take(j.alloc);
      }
    }
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& j = v.job(v.active[k]);
      if (j.state == SimJobState::Running) continue;
      if (fm.free_of({}) == 0) break;
      const int n = j.spec->gpus;
      if (fm.free_of(j.allowed_types) < n) continue;
      std::vector<std::pair<double, std::string>> types;
      for (const std::string& t : j.allowed_types) types.emplace_back(-v.model->iters_per_s(j.spec->model, t, n), t);
      std::sort(types.begin(), types.end());
      bool larger_than_any = true;
      for (const auto& t : types) {
        if (v.gpus_by_type->at(t.second) >= n) larger_than_any = false;
        std::map<std::string, int> a = fm.place(n, {t.second});
        if (!a.empty()) {
          out[k].gpus_by_node = a;
          break;
        }
      }
      if (out[k].gpus_by_node.empty() && larger_than_any) {
        // No single type is large enough: fastest types first, batch split by speed.
        std::map<std::string, int> a;
        int left = n;
        for (const auto& t : types) {
          int k2 = std::min(left, fm.free_of({t.second}));
          if (k2 <= 0) continue;
          for (const auto& kv : fm.place(k2, {t.second})) a[kv.first] += kv.second;
          left -= k2;
          if (left == 0) break;
        }
        out[k].gpus_by_node = a;
        out[k].proportional_split = true;
      }
    }
  }
};

// ---- ours: the Planner -----------------------------------------------------------------------
class PlannerPolicy : public SchedulingPolicy {
 public:
  PlannerPolicy(std::string name, ringsched::PlannerConfig cfg, const ringsched::ThroughputModel& model, int window,
                std::shared_ptr<const ringsched::SimilarityModel> similarity)
      : name_(std::move(name)), planner_(model, cfg), window_(window) {
    if (similarity) planner_.set_similarity(std::move(similarity));
  }
  std::string name() const override { return name_; }
  double wake_s() const override { return wake_s_; }
  void decide(const SimView& v, std::vector<Allocation>& out) override {
    ringsched::Snapshot s;
    s.cluster = *v.cluster;
    s.now_s = v.now_s;
    std::vector<size_t> index;  // snapshot job -> position in v.active
    int pending = 0;
    for (size_t k = 0; k < v.active.size(); ++k) {
      const SimJob& sj = v.job(v.active[k]);
      bool running = sj.state == SimJobState::Running;
      if (!running && window_ > 0 && pending >= window_) continue;
      if (!running) ++pending;
      ringsched::Job j;
      j.id = sj.spec->id;
      j.user = sj.spec->user;
      j.model = sj.spec->model;
      j.iterations = sj.spec->iterations;
      j.remaining = sj.remaining;
      j.elastic = sj.spec->elastic;
      j.requested_gpus = sj.spec->gpus;
      j.min_gpus = sj.spec->elastic ? sj.spec->min_gpus : sj.spec->gpus;
      j.max_gpus = sj.spec->elastic ? sj.spec->max_gpus : sj.spec->gpus;
      j.allowed_types = sj.allowed_types;
      j.spb = sj.spec->spb;
      j.submit_s = sj.spec->submit_s;
      j.attained_gpu_s = sj.attained_gpu_s;
      if (running) {
        j.state = ringsched::JobState::Running;
        j.gpus_by_node = sj.alloc;
        j.current_type = sj.by_type.size() == 1 ? sj.by_type.begin()->first : "";
        j.current_gpus = sj.gpus;
        j.last_resize_s = sj.last_resize_s;
      }
      s.jobs.push_back(std::move(j));
      index.push_back(k);
    }
    wake_s_ = std::numeric_limits<double>::infinity();
    if (s.jobs.empty()) return;
    s.arrival_gap_s = arrivals_.observe(s);
    ringsched::Plan plan = planner_.plan(s);
    wake_s_ = plan.wake_s > 0 ? plan.wake_s : std::numeric_limits<double>::infinity();
    if (plan.jobs.size() != s.jobs.size())
      throw std::logic_error(name_ + ": the planner returned " + std::to_string(plan.jobs.size()) + " job plans for " +
                             std::to_string(s.jobs.size()) + " jobs");
    FreeGpus fm(*v.cluster);
    std::vector<size_t> by_type_only;
    for (size_t p = 0; p < plan.jobs.size(); ++p) {
      const ringsched::JobPlan& jp = plan.jobs[p];
      Allocation& a = out[index[p]];
      a.proportional_split = true;
      a.spb_depth = jp.spb_depth;
      if (!jp.runs || jp.gpus <= 0) continue;
      for (const ringsched::Placement& pl : jp.placement)
        if (pl.gpus > 0) a.gpus_by_node[pl.node] += pl.gpus;
      if (a.gpus_by_node.empty()) by_type_only.push_back(p);
      else fm.take(a.gpus_by_node);
    }
    // A plan that names types but no nodes: place it on those types here.
    for (size_t p : by_type_only) {
      Allocation& a = out[index[p]];
      for (const auto& kv : plan.jobs[p].gpus_by_type)
        for (const auto& nv : fm.place(kv.second, {kv.first})) a.gpus_by_node[nv.first] += nv.second;
    }
  }

 private:
  std::string name_;
  ringsched::Planner planner_;
  ringsched::ArrivalClock arrivals_;  // as the plugin's planning thread keeps one
  double wake_s_ = std::numeric_limits<double>::infinity();  // the last plan's Plan::wake_s
  int window_;
};

}  // namespace

std::unique_ptr<SchedulingPolicy> make_fifo() { return std::make_unique<FifoBackfill>(); }
std::unique_ptr<SchedulingPolicy> make_tiresias() { return std::make_unique<TiresiasLas>(); }
std::unique_ptr<SchedulingPolicy> make_optimus(double min_resize_interval_s) {
  return std::make_unique<OptimusGreedy>(min_resize_interval_s);
}
std::unique_ptr<SchedulingPolicy> make_besttype() { return std::make_unique<BestTypeFirst>(); }

std::unique_ptr<SchedulingPolicy> make_planner_policy(const std::string& name, ringsched::PlannerConfig cfg,
                                                      const ringsched::ThroughputModel& model, int window,
                                                      std::shared_ptr<const ringsched::SimilarityModel> similarity) {
  return std::make_unique<PlannerPolicy>(name, cfg, model, window, std::move(similarity));
}

std::vector<std::string> policy_names() {
  return {"fifo", "tiresias", "optimus", "besttype", "static", "doubling", "hetero", "combined", "combined+spb",
          "combined-naive", "combined-nopreempt", "combined-noguard", "combined-nohorizon"};
}

std::unique_ptr<SchedulingPolicy> make_policy(const std::string& name, const PolicyOptions& opt,
                                              const ringsched::ThroughputModel& model) {
  if (name == "fifo") return make_fifo();
  if (name == "tiresias") return make_tiresias();
  if (name == "optimus") return make_optimus(opt.costs.min_interval_s);
  if (name == "besttype") return make_besttype();
  ringsched::PlannerConfig cfg;
  cfg.costs = opt.costs;
  cfg.samples = opt.samples;
  cfg.seed = opt.seed;
  cfg.fairness = opt.fairness;
  cfg.late_factor = opt.late_factor;
  cfg.lend_horizon_s = opt.lend_horizon_s;
  cfg.lend_arrivals = opt.lend_arrivals;
  cfg.replace_slower = opt.replace_slower;
  cfg.fair_placement = opt.fair_placement;
  cfg.spb_packing = false;
  cfg.use_similarity = true;
  std::string base = name;
  if (name == "combined+spb") {
    base = "combined";
    cfg.spb_packing = true;
  } else if (name == "combined-naive") {
    base = "combined";
    cfg.use_similarity = false;
  } else if (name == "combined-nopreempt") {
    base = "combined";
    cfg.preempt = false;
  } else if (name == "combined-noguard") {
    base = "combined";
    cfg.tail_guard = false;
  } else if (name == "combined-nohorizon") {
    base = "combined";
    cfg.placement_horizon = false;
  }
  if (base != "static" && base != "doubling" && base != "hetero" && base != "combined") {
    std::string all;
    for (const std::string& p : policy_names()) all += (all.empty() ? "" : ", ") + p;
    throw InputError("unknown policy '" + name + "' (one of: " + all + ")");
  }
  cfg.policy = ringsched::parse_policy(base);
  return make_planner_policy(name, cfg, model, opt.window, opt.similarity);
}

}  // namespace ringsim
