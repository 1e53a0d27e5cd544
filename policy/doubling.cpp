// Doubling heuristic (DESIGN 3.2; Capes et al., arXiv 1908.08082) and the exact dynamic programme
// of the static problem.
//
// How a round works here (the paper restarts from minimums every round; so do we):
//  1. Admission. Jobs held by hysteresis ("pinned", see 3) keep their current size and are placed
//     first. Then, in policy order, every other job gets its base size: inelastic jobs their
//     requested count, elastic jobs their minimum -- running elastic jobs included, so a running
//     job larger than its minimum gives its extra GPUs back whenever a waiting job needs them.
//     First fit: a job whose base does not fit waits, and later (smaller) jobs may still start.
//  2. Doubling. Repeatedly double the admitted elastic job with the largest time improvement per
//     added GPU, TI = (cost(n) - cost(2n)) / n, where cost(n) = R / v(n) plus the restart cost C
//     when a running job's n differs from its current size; only while n GPUs are free, 2n is
//     within its maximum and v(2n) > 0; stop when no TI is positive.
//  3. Hysteresis. For every running job the plan resizes, the gain of the resize is what the plan
//     would lose if that job were held at its current size (re-planned with it pinned), before
//     its own restart cost. Below min_gain_multiple x C, or within min_interval_s of its last
//     resize (or start), the job is pinned and the round re-planned. The interval holds every
//     resize, a shrink that would let a waiting job start included. Jobs are pinned one at a time
//     (the worst violation first) so that two jobs that could each make room are not both held.
//     That is n re-plans per pass and up to n passes; it is kept for rounds of up to
//     DoublingSteps::exact_hysteresis_max_jobs jobs. Larger rounds (the planner calls this with
//     every ring job of a 10,000-GPU cluster) estimate each gain by repairing the plan from its
//     marginal doublings instead of re-planning, and pin in sweeps: run_incremental().
//  For comparing plans in which different jobs wait, a waiting job counts as starting when the
//  planned jobs have freed enough GPUs for its base size (their predicted finish times), then
//  running at that size; objective_s itself sums only the jobs that run, as doubling.h says.
//  Ours, beyond the paper (DoublingSteps::local_improvement, on by default): after step 2, apply
//  the best move while the objective falls: resize one job to any of its sizes within the free
//  GPUs, or shrink one job (or several) to let another grow (by any number of doublings), within
//  a work budget that grows with the number of jobs.
#include "ringsched/doubling.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <queue>
#include <set>
#include <string>
#include <tuple>

#include "ringsched/doubling_steps.h"

namespace ringsched {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxTotalGpus = 1000000;  // bounds the DP's table and every loop over sizes
// Work budget of the local improvement pass per planning round (see improve_locally): a base
// that the evaluation's instances (up to 30 jobs, 256 GPUs; at most ~1e5 used) stay below,
// plus a share per job.
constexpr double kImproveWorkBase = 1e6;
constexpr double kImproveWorkPerJob = 2e3;
// Step 3 for large rounds: sweeps of estimate-and-pin, each followed by one full re-plan.
constexpr int kMaxSweeps = 32;

std::string job_name(size_t j) { return "job " + std::to_string(j); }

std::string seconds(double s) {
  char buf[64];
  if (std::fabs(s) >= 100)
    std::snprintf(buf, sizeof buf, "%.0f s", s);
  else
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}

std::string number(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// Validated jobs with their speeds at every size a round can use, evaluated once (the speed
// functions may be costly: the throughput model interpolates measured points).
class JobCurves {
 public:
  JobCurves(const std::vector<DoublingJob>& jobs, int total_gpus) : jobs_(jobs), total_(total_gpus) {
    if (total_gpus < 0)
      throw InputError("doubling: total_gpus must be >= 0, got " + std::to_string(total_gpus));
    if (total_gpus > kMaxTotalGpus)
      throw InputError("doubling: total_gpus over " + std::to_string(kMaxTotalGpus));
    speeds_.resize(jobs.size());
    pow2_speeds_.resize(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      const DoublingJob& job = jobs[j];
      std::string who = job_name(j);
      if (!job.speed) throw InputError(who + ": no speed function");
      if (!(job.remaining >= 0) || !std::isfinite(job.remaining))
        throw InputError(who + ": remaining iterations must be finite and >= 0, got " +
                         number(job.remaining));
      if (job.min_gpus < 1)
        throw InputError(who + ": min_gpus must be >= 1, got " + std::to_string(job.min_gpus));
      if (job.max_gpus < job.min_gpus)
        throw InputError(who + ": min_gpus " + std::to_string(job.min_gpus) + " > max_gpus " +
                         std::to_string(job.max_gpus));
      if (job.elastic && !is_power_of_two(job.min_gpus))
        throw InputError(who + ": min_gpus " + std::to_string(job.min_gpus) +
                         " of an elastic job must be a power of two");
      if (!job.elastic && (job.requested < 1 || job.requested > kMaxTotalGpus))
        throw InputError(who + ": requested must be 1.." + std::to_string(kMaxTotalGpus) +
                         " for an inelastic job, got " + std::to_string(job.requested));
      if (job.running && (job.current_gpus < 1 || job.current_gpus > kMaxTotalGpus))
        throw InputError(who + ": a running job needs current_gpus 1.." +
                         std::to_string(kMaxTotalGpus) + ", got " +
                         std::to_string(job.current_gpus));
      if (std::isnan(job.last_resize_s))
        throw InputError(who + ": last_resize_s is not a number");
      for (int n : choices(j)) eval(j, n);
      eval(j, base(j));
      if (job.running) eval(j, job.current_gpus);
    }
  }

  size_t size() const { return jobs_.size(); }
  const DoublingJob& job(size_t j) const { return jobs_[j]; }
  int total() const { return total_; }
  // The size step 1 gives the job: requested (inelastic) or the minimum (elastic).
  int base(size_t j) const { return jobs_[j].elastic ? jobs_[j].min_gpus : jobs_[j].requested; }
  // Largest size a doubling may reach.
  int cap(size_t j) const { return std::min(jobs_[j].max_gpus, std::max(total_, 1)); }

  // Sizes the static problem allows and the cluster could hold, whether or not v(n) > 0.
  std::vector<int> choices(size_t j) const {
    const DoublingJob& job = jobs_[j];
    if (!job.elastic) return {job.requested};
    std::vector<int> out;
    for (long n = job.min_gpus; n <= cap(j); n *= 2) out.push_back(static_cast<int>(n));
    if (out.empty()) out.push_back(job.min_gpus);
    return out;
  }

  double speed(size_t j, int n) const {
    if (n > 0 && is_power_of_two(n)) {
      size_t k = log2_of(n);
      if (k < pow2_speeds_[j].size()) return pow2_speeds_[j][k];
    }
    auto it = speeds_[j].find(n);
    return it != speeds_[j].end() ? it->second : 0.0;
  }
  // R / v(n); infinite where the job cannot run on n GPUs.
  double run_time(size_t j, int n) const {
    double v = speed(j, n);
    if (!(v > 0)) return kInf;
    return jobs_[j].remaining / v;
  }
  // Whether the current size of a running job is one the round may keep.
  bool current_is_valid(size_t j) const {
    const DoublingJob& job = jobs_[j];
    if (!job.running) return false;
    int c = job.current_gpus;
    bool allowed = job.elastic ? (is_power_of_two(c) && c >= job.min_gpus && c <= job.max_gpus)
                               : c == job.requested;
    // A job running on more GPUs than the round has (the cluster shrank) cannot be held there.
    return allowed && c <= total_ && speed(j, c) > 0;
  }

 private:
  void eval(size_t j, int n) {
    if (speeds_[j].count(n)) return;
    double v = jobs_[j].speed(n);
    if (!(v >= 0) || !std::isfinite(v))
      throw InputError(job_name(j) + ": speed on " + std::to_string(n) + " GPUs is " + number(v) +
                       " iterations/s; must be finite and >= 0");
    speeds_[j][n] = v;
    // Powers of two, the sizes every round asks for most, also go to a flat table.
    if (n > 0 && is_power_of_two(n)) {
      size_t k = log2_of(n);
      if (pow2_speeds_[j].size() <= k) pow2_speeds_[j].resize(k + 1, 0.0);
      pow2_speeds_[j][k] = v;
    }
  }

  static size_t log2_of(int n) {
    size_t k = 0;
    while ((1 << k) < n) ++k;
    return k;
  }

  const std::vector<DoublingJob>& jobs_;
  int total_;
  std::vector<std::map<int, double>> speeds_;
  std::vector<std::vector<double>> pow2_speeds_;  // [j][k]: v(2^k), 0 where not evaluated
};

// Why a job waits after admission.
enum class WaitWhy { None, NoSpeed, TooBig, NoRoom };

struct Assignment {
  std::vector<int> gpus;         // 0 = waits
  std::vector<WaitWhy> wait_why;
  std::vector<int> free_at_turn; // free GPUs when admission reached the job
  int free = 0;
  int admitted = 0;
};

// The doubling heuristic for one round. One object per call; run() does the protocol.
class DoublingRound {
 public:
  DoublingRound(const std::vector<DoublingJob>& jobs, const std::vector<int>& order, int total_gpus,
                const ResizeCosts& costs, double now_s, const DoublingSteps& steps)
      : curves_(jobs, total_gpus), costs_(costs), now_s_(now_s), steps_(steps) {
    if (!(costs.restart_s >= 0) || !std::isfinite(costs.restart_s))
      throw InputError("doubling: restart cost must be finite and >= 0, got " +
                       number(costs.restart_s));
    if (!(costs.min_gain_multiple >= 0) || !std::isfinite(costs.min_gain_multiple))
      throw InputError("doubling: min_gain_multiple must be finite and >= 0");
    if (!(costs.min_interval_s >= 0) || std::isnan(costs.min_interval_s))
      throw InputError("doubling: min_interval_s must be >= 0");
    if (std::isnan(now_s)) throw InputError("doubling: now_s is not a number");
    if (order.size() != jobs.size())
      throw InputError("doubling: order lists " + std::to_string(order.size()) +
                       " jobs, expected every one of the " + std::to_string(jobs.size()));
    std::vector<char> seen(jobs.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) {
      int j = order[k];
      if (j < 0 || static_cast<size_t>(j) >= jobs.size())
        throw InputError("doubling: order[" + std::to_string(k) + "] = " + std::to_string(j) +
                         " is not a job index");
      if (seen[j]) throw InputError("doubling: order lists " + job_name(j) + " twice");
      seen[j] = 1;
    }
    order_ = order;
    scratch_.assign(jobs.size(), -1);
    rank_.assign(jobs.size(), 0);
    for (size_t k = 0; k < order.size(); ++k) rank_[order[k]] = static_cast<int>(k);
    // planning_cost() walks every waiting job for each plan it values (thousands per round on a
    // long queue): their constant terms side by side, not spread over the job records
    base_.resize(jobs.size());
    wait_run_.resize(jobs.size());
    for (size_t j = 0; j < jobs.size(); ++j) {
      base_[j] = curves_.base(j);
      double run = curves_.run_time(j, base_[j]);
      if (curves_.job(j).running) run += costs_.restart_s;  // it resumes later
      wait_run_[j] = run;
    }
  }

  DoublingResult run() {
    if (curves_.size() <= static_cast<size_t>(std::max(0, steps_.exact_hysteresis_max_jobs)))
      return run_exact();
    return run_incremental();
  }

 private:
  // Step 3 with a full re-plan per running job the plan resizes, and one pin per pass: at most
  // n passes of n re-plans. The reference for small rounds (DoublingSteps).
  DoublingResult run_exact() {
    size_t n = curves_.size();
    std::vector<char> pinned(n, 0);
    std::vector<double> resize_gain(n, kInf);  // measured gain of each running job's resize
    std::vector<char> pinned_for_interval(n, 0);
    Assignment plan = plan_round(pinned);
    // Step 3: pin the worst violator, re-plan, until no running job is resized against the rules.
    for (size_t pass = 0; pass <= n; ++pass) {
      int worst = -1;
      bool worst_interval = false;
      double worst_gain = kInf;
      double base_cost = planning_cost(plan);
      for (size_t j = 0; j < n; ++j) {
        const DoublingJob& job = curves_.job(j);
        if (!job.running || pinned[j] || !curves_.current_is_valid(j)) continue;
        if (plan.gpus[j] == job.current_gpus) continue;
        std::vector<char> held = pinned;
        held[j] = 1;
        Assignment alt = plan_round(held);
        // Gross gain: what holding the job would cost the plan, before this job's restart.
        double gain = planning_cost(alt) - base_cost + costs_.restart_s;
        resize_gain[j] = gain;
        bool too_soon = now_s_ - job.last_resize_s < costs_.min_interval_s;
        bool too_small = gain < costs_.min_gain_multiple * costs_.restart_s;
        if (!too_soon && !too_small) continue;
        // Interval violations first, then the smallest gain; ties by policy order.
        if (worst < 0 || (too_soon && !worst_interval) ||
            (too_soon == worst_interval &&
             (gain < worst_gain || (gain == worst_gain && rank_[j] > rank_[worst])))) {
          worst = static_cast<int>(j);
          worst_interval = too_soon;
          worst_gain = gain;
        }
      }
      if (worst < 0) break;
      pinned[worst] = 1;
      pinned_for_interval[worst] = worst_interval;
      plan = plan_round(pinned);
    }
    return describe(plan, pinned, pinned_for_interval, resize_gain);
  }

  // Step 3 for large rounds. A plan with job j held at its current size differs from the plan
  // only in what j's GPUs do: when j grew, the GPUs it would not take go to the next doublings
  // the greedy had no room for (best TI first, or a waiting job that now fits); when j shrank,
  // the GPUs it keeps come from the doublings that save least per GPU (undone, smallest TI
  // first), then from the lowest-priority jobs, which wait. hold() builds that repaired plan from
  // an index of those marginal doublings in O(moves x log n) plus one cost evaluation, instead
  // of a full re-plan. A sweep estimates every resized running job, visits them worst first
  // (interval violations, then the smallest gain; ties: lowest priority first) and pins each
  // one that still violates a rule on the plan as repaired by the pins before it -- so two jobs
  // that could each make room are not both held. Then one full re-plan with all the pins, and
  // another sweep, until a sweep pins nothing.
  DoublingResult run_incremental() {
    size_t n = curves_.size();
    std::vector<char> pinned(n, 0);
    std::vector<double> resize_gain(n, kInf);
    std::vector<char> pinned_for_interval(n, 0);
    Assignment plan = plan_round(pinned);
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
      Assignment w = plan;  // the plan as repaired by this sweep's pins
      Margins m = index_margins(w, pinned);
      double w_cost = planning_cost(w);
      struct Candidate {
        bool too_soon;
        double gain;
        int job;
      };
      std::vector<Candidate> candidates;
      for (size_t j = 0; j < n; ++j) {
        if (!is_resized(w, pinned, j)) continue;
        Held h = hold(w, pinned, m, static_cast<int>(j), w_cost);
        double gain = h.cost - w_cost + costs_.restart_s;
        candidates.push_back({too_soon(j), gain, static_cast<int>(j)});
      }
      std::sort(candidates.begin(), candidates.end(), [this](const Candidate& x, const Candidate& y) {
        if (x.too_soon != y.too_soon) return x.too_soon;
        if (x.gain != y.gain) return x.gain < y.gain;
        return rank_[x.job] > rank_[y.job];
      });
      bool pinned_any = false;
      for (const Candidate& c : candidates) {
        size_t j = static_cast<size_t>(c.job);
        if (!is_resized(w, pinned, j)) continue;  // an earlier pin's repair moved it back
        Held h = hold(w, pinned, m, c.job, w_cost);
        double gain = h.cost - w_cost + costs_.restart_s;
        resize_gain[j] = gain;
        bool soon = too_soon(j);
        bool too_small = gain < costs_.min_gain_multiple * costs_.restart_s;
        if (!soon && !too_small) continue;
        pinned[j] = 1;
        pinned_for_interval[j] = soon;
        pinned_any = true;
        apply(h, w, m, pinned);
        w_cost = h.cost;
      }
      if (!pinned_any) break;
      plan = plan_round(pinned);
    }
    return describe(plan, pinned, pinned_for_interval, resize_gain);
  }

  // A running job, not held, whose planned size differs from its current one.
  bool is_resized(const Assignment& a, const std::vector<char>& pinned, size_t j) const {
    const DoublingJob& job = curves_.job(j);
    return job.running && !pinned[j] && curves_.current_is_valid(j) &&
           a.gpus[j] != job.current_gpus;
  }

  // The marginal doublings of a plan, indexed. grow[k]: next doublings of jobs now at 2^k GPUs
  // (a doubling needs 2^k free GPUs), best TI first, ties by policy order as in step 2. undo:
  // each resizable job's last doubling above its base, least TI first, ties lowest priority
  // first. Keys are recomputed from (job, size), so an entry is removed by recomputing it.
  using Key = std::tuple<double, int, int>;
  struct Margins {
    std::vector<std::set<Key>> grow;
    std::set<Key> undo;
    int waiting = 0;  // jobs that wait for room (WaitWhy::NoRoom)
  };

  static int size_class(int size) {
    int k = 0;
    while ((1 << k) < size) ++k;
    return k;
  }

  // Step 2's candidate: doubling j from `size` (same conditions as plan_round's push).
  bool next_doubling(size_t j, int size, bool resizable, double* ti) const {
    if (size <= 0 || !resizable) return false;
    long next = 2L * size;
    if (next > curves_.cap(j) || curves_.speed(j, static_cast<int>(next)) <= 0) return false;
    *ti = (cost(j, size) - cost(j, static_cast<int>(next))) / size;
    return *ti > 0;
  }

  // The doubling that brought j to `size`, if j is resizable and above its base.
  bool last_doubling(size_t j, int size, bool resizable, double* ti) const {
    if (!resizable || size <= curves_.base(j) || size % 2) return false;
    *ti = (cost(j, size / 2) - cost(j, size)) / (size / 2);
    return true;
  }

  void index_job(Margins& m, size_t j, int size, bool resizable, bool add) const {
    double ti;
    if (next_doubling(j, size, resizable, &ti)) {
      Key k{-ti, rank_[j], static_cast<int>(j)};
      auto& set = m.grow[size_class(size)];
      if (add) set.insert(k); else set.erase(k);
    }
    if (last_doubling(j, size, resizable, &ti)) {
      Key k{ti, -rank_[j], static_cast<int>(j)};
      if (add) m.undo.insert(k); else m.undo.erase(k);
    }
  }

  Margins index_margins(const Assignment& a, const std::vector<char>& pinned) const {
    Margins m;
    m.grow.resize(size_class(std::max(1, curves_.total())) + 2);
    for (size_t j = 0; j < curves_.size(); ++j) {
      if (a.gpus[j] > 0) index_job(m, j, a.gpus[j], may_resize(j, pinned), true);
      else if (a.wait_why[j] == WaitWhy::NoRoom) ++m.waiting;
    }
    return m;
  }

  // A plan with one more job held, as changes to the plan it was repaired from.
  struct Held {
    int job = -1;                            // the job held
    std::vector<std::pair<int, int>> sizes;  // (job, new size; 0: waits for room)
    int free = 0;
    int admitted = 0;
    double cost = 0;  // planning_cost of the repaired plan
  };

  // The interval rule: resized (or started) too recently. It holds whatever the resize would
  // bring, a waiting job's start included: a job that has just started or restarted cannot
  // checkpoint yet, so a request then costs a restart and gains nothing (issue 14).
  bool too_soon(size_t j) const { return now_s_ - curves_.job(j).last_resize_s < costs_.min_interval_s; }

  // The plan `a` with job j held at its current size, repaired as run_incremental() describes.
  Held hold(const Assignment& a, const std::vector<char>& pinned, const Margins& m, int j,
            double a_cost) const {
    Held h;
    h.job = j;
    h.free = a.free;
    h.admitted = a.admitted;
    std::vector<int> touched;
    auto size_of = [&](int k) { return scratch_[k] >= 0 ? scratch_[k] : a.gpus[k]; };
    auto set_size = [&](int k, int size) {
      if (scratch_[k] < 0) touched.push_back(k);
      scratch_[k] = size;
    };
    auto resizable = [&](int k) { return k != j && may_resize(k, pinned); };
    int now = a.gpus[j], keep = curves_.job(j).current_gpus;
    set_size(j, keep);
    h.free += now - keep;
    if (now == 0) ++h.admitted;
    // 1. Room for what j keeps: undo the doublings that save least, then stop low-priority jobs.
    std::priority_queue<Key, std::vector<Key>, std::greater<Key>> undo_more;  // re-halvings
    auto undo_it = m.undo.begin();
    while (h.free < 0) {
      while (undo_it != m.undo.end() && scratch_[std::get<2>(*undo_it)] >= 0) ++undo_it;  // stale
      bool from_set = undo_it != m.undo.end() && (undo_more.empty() || *undo_it < undo_more.top());
      if (!from_set && undo_more.empty()) break;
      int k = from_set ? std::get<2>(*undo_it) : std::get<2>(undo_more.top());
      if (from_set) ++undo_it; else undo_more.pop();
      int size = size_of(k);
      set_size(k, size / 2);
      h.free += size / 2;
      double ti;
      if (last_doubling(k, size / 2, resizable(k), &ti)) undo_more.emplace(ti, -rank_[k], k);
    }
    bool stopped = false;
    for (size_t r = order_.size(); h.free < 0 && r-- > 0;) {
      int k = order_[r];
      if (k == j || pinned[k] || size_of(k) <= 0) continue;
      h.free += size_of(k);
      set_size(k, 0);
      --h.admitted;
      stopped = true;
    }
    // 2. Use what is free: admission comes before doubling, so waiting jobs first (policy
    // order), then the greedy's next doublings that fit.
    std::vector<Key> grow_more;  // doublings of jobs this repair changed
    auto push_grow = [&](int k, int size) {
      double ti;
      if (next_doubling(k, size, resizable(k), &ti)) grow_more.emplace_back(-ti, rank_[k], k);
    };
    if (h.free > 0 && m.waiting > 0)
      for (int k : order_) {
        if (h.free <= 0) break;
        if (scratch_[k] >= 0 || pinned[k] || a.gpus[k] > 0 || a.wait_why[k] != WaitWhy::NoRoom)
          continue;
        int b = curves_.base(k);
        if (b > h.free) continue;
        set_size(k, b);
        h.free -= b;
        ++h.admitted;
      }
    // The jobs this repair changed (halved, started) have new next doublings.
    for (int k : touched)
      if (size_of(k) > 0) push_grow(k, size_of(k));
    std::vector<std::set<Key>::const_iterator> heads(m.grow.size());
    for (size_t c = 0; c < m.grow.size(); ++c) heads[c] = m.grow[c].begin();
    while (h.free > 0) {
      const Key* best = nullptr;
      int best_size = 0;
      for (size_t c = 0; c < m.grow.size() && (1 << c) <= h.free; ++c) {
        auto& it = heads[c];
        while (it != m.grow[c].end() && scratch_[std::get<2>(*it)] >= 0) ++it;  // stale
        if (it != m.grow[c].end() && (!best || *it < *best)) {
          best = &*it;
          best_size = 1 << c;
        }
      }
      size_t more = grow_more.size();
      for (size_t x = 0; x < grow_more.size(); ++x) {
        int k = std::get<2>(grow_more[x]);
        int size = size_of(k);
        if (size > h.free) continue;
        if (!best || grow_more[x] < *best) {
          best = &grow_more[x];
          best_size = size;
          more = x;
        }
      }
      if (!best) break;
      int k = std::get<2>(*best);
      if (more < grow_more.size()) {
        grow_more.erase(grow_more.begin() + more);
      } else {
        ++heads[size_class(best_size)];
      }
      if (size_of(k) != best_size) continue;  // stale overlay entry
      set_size(k, 2 * best_size);
      h.free -= best_size;
      push_grow(k, 2 * best_size);
    }
    if (m.waiting == 0 && !stopped) {
      // No job waits for room in either plan: the cost changes only by the jobs changed.
      h.cost = a_cost;
      for (int k : touched) h.cost += cost(k, scratch_[k]) - cost(k, a.gpus[k]);
    } else {
      h.cost = planning_cost(a, [&](size_t k) { return size_of(static_cast<int>(k)); }, h.free,
                             [&](size_t k) { return a.wait_why[k] == WaitWhy::NoRoom || a.gpus[k] > 0; });
    }
    for (int k : touched) {
      h.sizes.emplace_back(k, scratch_[k]);
      scratch_[k] = -1;
    }
    return h;
  }

  // Makes the repaired plan the working plan: sizes, free GPUs, admissions and the index.
  void apply(const Held& h, Assignment& a, Margins& m, const std::vector<char>& pinned) const {
    // The index keys of a job depend on whether it may be resized: unindex every changed job
    // as it was indexed (the job just held was still resizable), then index it as it is now.
    for (const auto& [k, size] : h.sizes) {
      if (a.gpus[k] > 0)
        index_job(m, k, a.gpus[k], k == h.job ? curves_.job(k).elastic : may_resize(k, pinned),
                  false);
      if (a.gpus[k] == 0 && a.wait_why[k] == WaitWhy::NoRoom) --m.waiting;
      a.gpus[k] = size;
      if (size > 0) {
        a.wait_why[k] = WaitWhy::None;
        index_job(m, k, size, may_resize(k, pinned), true);
      } else {
        a.wait_why[k] = WaitWhy::NoRoom;
        ++m.waiting;
      }
    }
    a.free = h.free;
    a.admitted = h.admitted;
  }

  // cost(n): R / v(n), plus C when a running job's size changes.
  double cost(size_t j, int n) const {
    double t = curves_.run_time(j, n);
    const DoublingJob& job = curves_.job(j);
    if (job.running && n != job.current_gpus) t += costs_.restart_s;
    return t;
  }

  bool may_resize(size_t j, const std::vector<char>& pinned) const {
    return curves_.job(j).elastic && !pinned[j];
  }

  // Steps 1 and 2 (and our local improvement) with `pinned` jobs held at their current size.
  Assignment plan_round(const std::vector<char>& pinned) const {
    size_t n = curves_.size();
    Assignment a;
    a.gpus.assign(n, 0);
    a.wait_why.assign(n, WaitWhy::None);
    a.free_at_turn.assign(n, 0);
    a.free = curves_.total();
    auto admit = [&](size_t j, int size) {
      a.free_at_turn[j] = a.free;
      if (curves_.speed(j, size) <= 0) {
        a.wait_why[j] = WaitWhy::NoSpeed;
      } else if (size > curves_.total()) {
        a.wait_why[j] = WaitWhy::TooBig;
      } else if (size > a.free) {
        a.wait_why[j] = WaitWhy::NoRoom;
      } else {
        a.gpus[j] = size;
        a.free -= size;
        ++a.admitted;
      }
    };
    // Step 1: held jobs first, then everyone else at its base size, in policy order.
    for (int j : order_)
      if (pinned[j]) admit(j, curves_.job(j).current_gpus);
    for (int j : order_)
      if (!pinned[j]) admit(j, curves_.base(j));

    // Step 2: greedy doubling by time improvement per added GPU.
    using Candidate = std::tuple<double, int, int, int>;  // TI, -rank, job, size when pushed
    std::priority_queue<Candidate> heap;
    auto push = [&](size_t j) {
      int cur = a.gpus[j];
      if (cur <= 0 || !may_resize(j, pinned)) return;
      long next = 2L * cur;
      if (next > curves_.cap(j) || curves_.speed(j, static_cast<int>(next)) <= 0) return;
      double ti = (cost(j, cur) - cost(j, static_cast<int>(next))) / cur;
      if (ti > 0) heap.emplace(ti, -rank_[j], static_cast<int>(j), cur);
    };
    for (size_t j = 0; j < n; ++j) push(j);
    while (!heap.empty()) {
      auto [ti, neg_rank, j, size] = heap.top();
      heap.pop();
      (void)ti;
      (void)neg_rank;
      if (a.gpus[j] != size || size > a.free) continue;  // stale, or no longer fits (free only falls)
      a.gpus[j] = 2 * size;
      a.free -= size;
      push(j);
    }

    if (steps_.local_improvement) improve_locally(a, pinned);
    return a;
  }

  // Ours: best-improvement local search while the objective falls. A move changes one job to
  // any of its sizes within the free GPUs, or shrinks one job to let another grow. Jumping
  // several doublings at once gets past dips in a speed curve (a measured 2-GPU point slower
  // than 1 GPU), where the greedy's one-step look-ahead stops.
  void improve_locally(Assignment& a, const std::vector<char>& pinned) const {
    size_t n = curves_.size();
    std::vector<std::vector<int>> sizes(n);
    double scale = 0;
    for (size_t j = 0; j < n; ++j) {
      if (a.gpus[j] <= 0) continue;
      scale += cost(j, a.gpus[j]);
      if (!may_resize(j, pinned)) continue;
      for (int s : curves_.choices(j))
        if (curves_.speed(j, s) > 0) sizes[j].push_back(s);
    }
    const double eps = 1e-9 * std::max(1.0, scale);
    struct Change {
      double delta;  // change of the objective
      int job, size;
      int release;   // GPUs it frees (> 0: a shrink)
    };
    // Each move strictly lowers the objective over a finite set of plans; the cap is a guard.
    // The work budget (moves looked at plus knapsack cells) grows with the number of jobs, so
    // that a round of thousands of jobs stops improving after a bounded time instead of applying
    // one best move per full scan for as long as moves help; small rounds never reach it.
    double budget = kImproveWorkBase + kImproveWorkPerJob * static_cast<double>(n);
    size_t options = 0;
    for (const auto& s : sizes) options += s.size();
    // Per-scan tables, kept across scans so that a scan allocates nothing per job.
    std::vector<Change> shrinks, grows;
    std::vector<std::vector<const Change*>> options_of(n);
    std::vector<std::vector<int>> grows_of(n);  // indices into grows, per growing job
    std::vector<long> need_of(n, 0);            // most GPUs a grow of the job needs freed
    std::vector<int> donors;                    // jobs with a shrink, in job order
    std::vector<int> growers;                   // jobs with a grow, in job order
    std::vector<char> growers_mark(n, 0);
    for (int iter = 0; iter < 100000; ++iter) {
      // One scan costs about options * log(options) (the sort of the shrinks).
      double scan = static_cast<double>(options) * (1 + std::log2(1.0 + options));
      if (scan > budget) break;
      budget -= scan;
      Change best_single{-eps, -1, 0, 0};
      shrinks.clear();
      grows.clear();
      for (size_t j = 0; j < n; ++j) {
        int g = a.gpus[j];
        for (int s : sizes[j]) {
          if (s == g) continue;
          Change c{cost(j, s) - cost(j, g), static_cast<int>(j), s, g - s};
          if (s - g <= a.free && c.delta < best_single.delta) best_single = c;
          if (s < g) shrinks.push_back(c);
          else if (s - g > a.free) grows.push_back(c);
        }
      }
      // Pair moves: the best shrink that frees enough for each grow. Shrinks sorted by GPUs freed,
      // most first; prefix holds the best two of different jobs among those freeing at least that.
      std::sort(shrinks.begin(), shrinks.end(),
                [](const Change& x, const Change& y) { return x.release > y.release; });
      std::vector<std::pair<int, int>> prefix(shrinks.size(), {-1, -1});  // indices into shrinks
      int b1 = -1, b2 = -1;
      for (size_t k = 0; k < shrinks.size(); ++k) {
        const Change& c = shrinks[k];
        if (b1 < 0 || c.delta < shrinks[b1].delta) {
          if (b1 >= 0 && shrinks[b1].job != c.job) b2 = b1;
          b1 = static_cast<int>(k);
        } else if (c.job != shrinks[b1].job && (b2 < 0 || c.delta < shrinks[b2].delta)) {
          b2 = static_cast<int>(k);
        }
        prefix[k] = {b1, b2};
      }
      double best_pair = best_single.delta;
      int pair_shrink = -1, pair_grow = -1;
      for (size_t k = 0; k < grows.size(); ++k) {
        const Change& g = grows[k];
        int need = -g.release - a.free;  // GPUs some other job must give up
        // Last shrink freeing at least `need` (shrinks are sorted by release, descending).
        auto end = std::partition_point(shrinks.begin(), shrinks.end(),
                                        [need](const Change& c) { return c.release >= need; });
        if (end == shrinks.begin()) continue;
        auto [x, y] = prefix[(end - shrinks.begin()) - 1];
        int donor = shrinks[x].job != g.job ? x : y;
        if (donor < 0) continue;
        double d = g.delta + shrinks[donor].delta;
        if (d < best_pair) {
          best_pair = d;
          pair_shrink = donor;
          pair_grow = static_cast<int>(k);
        }
      }
      // Many-donor moves: one job grows with GPUs from several shrinks, the donors chosen exactly
      // (least total loss freeing enough GPUs; a small knapsack per growing job). Skipped when the
      // table would be too large (thousands of jobs and GPUs), leaving the pair moves.
      for (int d : donors) options_of[d].clear();
      donors.clear();
      for (const Change& c : shrinks) {
        if (options_of[c.job].empty()) donors.push_back(c.job);
        options_of[c.job].push_back(&c);
      }
      std::sort(donors.begin(), donors.end());
      growers.clear();
      for (const Change& g : grows) {
        if (growers_mark[g.job]) continue;
        growers_mark[g.job] = 1;
        grows_of[g.job].clear();
        need_of[g.job] = 0;
        growers.push_back(g.job);
      }
      std::sort(growers.begin(), growers.end());
      for (int j : growers) growers_mark[j] = 0;
      for (size_t k = 0; k < grows.size(); ++k) {
        const Change& g = grows[k];
        grows_of[g.job].push_back(static_cast<int>(k));
        need_of[g.job] = std::max<long>(need_of[g.job], -g.release - a.free);
      }
      std::vector<std::pair<int, int>> many_moves;  // (job, size) of each donor of the best move
      int many_grow = -1;
      double work_left = 2e7;  // knapsack cells per round of moves, so large rounds stay fast
      for (int grower : growers) {
        size_t j = static_cast<size_t>(grower);
        long need_max = need_of[j];
        if (need_max <= 0) continue;
        double work = static_cast<double>(shrinks.size() + donors.size()) * (need_max + 1);
        if (work > work_left || work > budget) continue;
        work_left -= work;
        budget -= work;
        int cap_n = static_cast<int>(need_max);
        // least[x]: least loss freeing x GPUs (x = cap_n: at least cap_n), over the donors so far.
        std::vector<double> least(cap_n + 1, kInf);
        least[0] = 0;
        struct Step { int from = -1; const Change* change = nullptr; };
        std::vector<std::vector<Step>> steps;  // per donor job considered, per state
        for (int d : donors) {
          if (d == static_cast<int>(j)) continue;
          std::vector<double> next = least;
          std::vector<Step> step(cap_n + 1);
          for (const Change* c : options_of[d])
            for (int x = 0; x <= cap_n; ++x) {
              if (least[x] == kInf) continue;
              int y = static_cast<int>(std::min<long>(cap_n, static_cast<long>(x) + c->release));
              double v = least[x] + c->delta;
              if (v < next[y]) {
                next[y] = v;
                step[y] = {x, c};
              }
            }
          least.swap(next);
          steps.push_back(std::move(step));
        }
        // at_least[x]: least loss freeing x or more, and the state that achieves it.
        std::vector<int> arg(cap_n + 1);
        for (int x = cap_n, b = cap_n; x >= 0; --x) {
          if (least[x] < least[b]) b = x;
          arg[x] = b;
        }
        for (int k : grows_of[j]) {
          const Change& g = grows[k];
          int need = -g.release - a.free;
          int state = arg[need];
          if (least[state] == kInf) continue;
          double d = g.delta + least[state];
          if (d < best_pair) {
            best_pair = d;
            many_grow = k;
            many_moves.clear();
            for (size_t t = steps.size(); t-- > 0;) {
              const Step& st = steps[t][state];
              if (st.change == nullptr) continue;  // this donor job gave nothing at this state
              many_moves.emplace_back(st.change->job, st.change->size);
              state = st.from;
            }
          }
        }
      }
      if (many_grow >= 0) {
        const Change& g = grows[many_grow];
        for (auto [job, size] : many_moves) {
          a.free += a.gpus[job] - size;
          a.gpus[job] = size;
        }
        a.free -= g.size - a.gpus[g.job];
        a.gpus[g.job] = g.size;
      } else if (pair_grow >= 0) {
        const Change& s = shrinks[pair_shrink];
        const Change& g = grows[pair_grow];
        a.free += a.gpus[s.job] - s.size;
        a.gpus[s.job] = s.size;
        a.free -= g.size - a.gpus[g.job];
        a.gpus[g.job] = g.size;
      } else if (best_single.job >= 0) {
        a.free -= best_single.size - a.gpus[best_single.job];
        a.gpus[best_single.job] = best_single.size;
      } else {
        break;
      }
    }
#ifdef DOUBLING_WORK_TRACE
    std::fprintf(stderr, "WORK %zu %.0f\n", n, kImproveWorkBase + kImproveWorkPerJob * n - budget);
#endif
  }

  // Sum of costs of the jobs that run plus, for waiting jobs, an estimate of when they could
  // start (the planned jobs' finish times free GPUs) and their run at base size. Only used to
  // compare plans of the same round.
  double planning_cost(const Assignment& a) const {
    return planning_cost(a, [&](size_t j) { return a.gpus[j]; }, a.free,
                         [&](size_t j) { return a.wait_why[j] == WaitWhy::NoRoom; });
  }

  // The same for sizes given by size_of(j), `free` GPUs left, and waits_for_room(j) telling
  // whether a job with size 0 waits for room. O(n log n): finish times sorted once, then a
  // binary search over the GPUs they free per waiting job.
  template <typename SizeOf, typename WaitsForRoom>
  double planning_cost(const Assignment& a, SizeOf size_of, int free,
                       WaitsForRoom waits_for_room) const {
    size_t n = a.gpus.size();
    double total = 0;
    std::vector<std::pair<double, int>>& finishes = finishes_;  // finish time, GPUs freed
    finishes.clear();
    for (size_t j = 0; j < n; ++j) {
      int g = size_of(j);
      if (g > 0) {
        double c = cost(j, g);
        total += c;
        finishes.emplace_back(c, g);
      }
    }
    std::sort(finishes.begin(), finishes.end());
    std::vector<long>& freed = freed_;  // GPUs free once the first k+1 have finished
    freed.resize(finishes.size());
    long sum = free;
    for (size_t k = 0; k < finishes.size(); ++k) freed[k] = sum += finishes[k].second;
    for (size_t j = 0; j < n; ++j) {
      if (size_of(j) > 0 || !waits_for_room(j)) continue;
      int need = base_[j];
      double start = 0;
      if (free < need && !finishes.empty()) {
        size_t k = std::lower_bound(freed.begin(), freed.end(), static_cast<long>(need)) -
                   freed.begin();
        start = finishes[std::min(k, finishes.size() - 1)].first;
      }
      total += start + wait_run_[j];
    }
    return total;
  }

  DoublingResult describe(const Assignment& a, const std::vector<char>& pinned,
                          const std::vector<char>& pinned_for_interval,
                          const std::vector<double>& resize_gain) const {
    size_t n = curves_.size();
    DoublingResult r;
    r.gpus = a.gpus;
    r.reasons.resize(n);
    std::string multiple = number(costs_.min_gain_multiple) + " x restart cost";
    for (size_t j = 0; j < n; ++j) {
      const DoublingJob& job = curves_.job(j);
      int g = a.gpus[j];
      int b = curves_.base(j);
      std::string& why = r.reasons[j];
      if (g == 0) {
        std::string lead = job.running ? "stopped: " : "waits: ";
        switch (a.wait_why[j]) {
          case WaitWhy::NoSpeed:
            why = lead + "no known speed on its minimum of " + std::to_string(b) + " GPUs";
            break;
          case WaitWhy::TooBig:
            why = lead + "needs " + std::to_string(b) + " GPUs, more than the " +
                  std::to_string(curves_.total()) + " available";
            break;
          default:
            why = a.free_at_turn[j] == 0
                      ? lead + "no GPU left after higher-priority jobs"
                      : lead + "needs " + std::to_string(b) + " GPUs, only " +
                            std::to_string(a.free_at_turn[j]) + " left after higher-priority jobs";
        }
        continue;
      }
      r.objective_s += cost(j, g);
      if (!job.elastic) {
        why = "runs at its requested " + std::to_string(g) + " GPUs (inelastic)";
        continue;
      }
      if (job.running && pinned[j]) {
        if (pinned_for_interval[j])
          why = "kept at " + std::to_string(g) + ": resized " +
                seconds(now_s_ - job.last_resize_s) + " ago, minimum interval " +
                seconds(costs_.min_interval_s);
        else
          why = "kept at " + std::to_string(g) + ": gain " + seconds(resize_gain[j]) + " < " +
                multiple;
        continue;
      }
      if (job.running && g != job.current_gpus) {
        std::string move = std::to_string(job.current_gpus) + "->" + std::to_string(g);
        if (!curves_.current_is_valid(j))
          why = "resized " + move + ": " + std::to_string(job.current_gpus) +
                " GPUs is not one of its allowed sizes";
        else if (g > job.current_gpus)
          why = "grows " + move + ": saves " + seconds(resize_gain[j]) + ", at least " + multiple;
        else
          why = "shrinks " + move + ": the plan gains " + seconds(resize_gain[j]) +
                " from its GPUs, at least " + multiple;
        continue;
      }
      std::string verb = job.running ? "keeps " : "starts at ";
      if (g > b) {
        double ti = (cost(j, g / 2) - cost(j, g)) / (g / 2);
        if (job.running)
          why = "keeps " + std::to_string(g) + ": its last doubling still saves " + seconds(ti) +
                " per added GPU";
        else
          why = "doubled " + std::to_string(g / 2) + "->" + std::to_string(g) + ": saves " +
                seconds(ti) + " per added GPU";
        continue;
      }
      // At its base size: say what stopped the doubling.
      long next = 2L * g;
      if (next > job.max_gpus)
        why = verb + std::to_string(g) + ": its maximum";
      else if (next > curves_.total() || curves_.speed(j, static_cast<int>(next)) <= 0)
        why = verb + std::to_string(g) + ": no known speed on " + std::to_string(next) + " GPUs";
      else if (cost(j, static_cast<int>(next)) >= cost(j, g))
        why = verb + std::to_string(g) + ": " + std::to_string(next) + " GPUs would not be faster";
      else if (a.free < g)
        why = verb + std::to_string(g) + ": doubling needs " + std::to_string(g) +
              " more GPUs, " + std::to_string(a.free) + " free after larger gains";
      else
        why = verb + std::to_string(g) + ": its GPUs save more time in other jobs";
    }
    return r;
  }

  JobCurves curves_;
  ResizeCosts costs_;
  double now_s_;
  DoublingSteps steps_;
  std::vector<int> order_;
  std::vector<int> rank_;
  std::vector<int> base_;         // curves_.base(j)
  std::vector<double> wait_run_;  // a waiting job's run time once started at its base, resume included
  mutable std::vector<int> scratch_;  // hold(): sizes it changed, -1 elsewhere (reset on return)
  // planning_cost()'s work space, kept between its many calls per round
  mutable std::vector<std::pair<double, int>> finishes_;
  mutable std::vector<long> freed_;
};


}  // namespace

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s,
                                  const DoublingSteps& steps) {
  return DoublingRound(jobs, order, total_gpus, costs, now_s, steps).run();
}

DoublingResult doubling_heuristic(const std::vector<DoublingJob>& jobs, const std::vector<int>& order,
                                  int total_gpus, const ResizeCosts& costs, double now_s) {
  return doubling_heuristic(jobs, order, total_gpus, costs, now_s, DoublingSteps{});
}

// Multiple-choice knapsack: best[g] = least sum of run times of the jobs so far using exactly g
// GPUs; each job picks one of its sizes. Restart costs are not part of the static problem.
DoublingResult optimal_static(const std::vector<DoublingJob>& jobs, int total_gpus) {
  JobCurves curves(jobs, total_gpus);
  size_t n = curves.size();
  std::vector<std::vector<int>> options(n);
  long need = 0, reach = 0;
  for (size_t j = 0; j < n; ++j) {
    for (int s : curves.choices(j))
      if (s <= total_gpus && curves.speed(j, s) > 0) options[j].push_back(s);
    if (options[j].empty())
      throw InputError(job_name(j) + ": cannot run on any allowed size within " +
                       std::to_string(total_gpus) + " GPUs (no size with a known speed fits)");
    need += options[j].front();
    reach += options[j].back();
  }
  if (need > total_gpus)
    throw InputError("doubling: the jobs' minimum sizes need " + std::to_string(need) +
                     " GPUs, only " + std::to_string(total_gpus) + " available");
  int cap = static_cast<int>(std::min<long>(total_gpus, reach));
  std::vector<double> best(cap + 1, kInf), next(cap + 1);
  best[0] = 0;
  // pick[j][g]: index into options[j] of the size job j takes when the first j+1 use g GPUs.
  std::vector<std::vector<int8_t>> pick(n, std::vector<int8_t>(cap + 1, -1));
  for (size_t j = 0; j < n; ++j) {
    std::fill(next.begin(), next.end(), kInf);
    for (size_t k = 0; k < options[j].size(); ++k) {
      int s = options[j][k];
      double t = curves.run_time(j, s);
      for (int g = s; g <= cap; ++g) {
        if (best[g - s] == kInf) continue;
        double v = best[g - s] + t;
        if (v < next[g]) {
          next[g] = v;
          pick[j][g] = static_cast<int8_t>(k);
        }
      }
    }
    best.swap(next);
  }
  int g = static_cast<int>(std::min_element(best.begin(), best.end()) - best.begin());
  DoublingResult r;
  r.objective_s = best[g];
  r.gpus.assign(n, 0);
  r.reasons.resize(n);
  for (size_t j = n; j-- > 0;) {
    int s = options[j][pick[j][g]];
    r.gpus[j] = s;
    r.reasons[j] = "runs at " + std::to_string(s) + " GPUs in the exact optimum";
    g -= s;
  }
  return r;
}

}  // namespace ringsched
