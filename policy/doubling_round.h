// SPDX-License-Identifier: GPL-2.0-or-later
// Private header of the doubling round (policy/doubling*.cpp); not installed, not part of the
// library's interface (ringsched/doubling.h is). One class per round, its phases in one file each:
//   doubling_curves.cpp      input checks and the speed table (JobCurves)
//   doubling_round.cpp       the protocol (run), steps 1 and 2: admission and allocation
//   doubling_exact.cpp       the multiple-choice knapsack: step 2 when it is cheaper, optimal_static
//   doubling_improve.cpp     our local improvement after the greedy step 2
//   doubling_hysteresis.cpp  step 3 (exact and incremental) and the planning cost it compares
//   doubling_reasons.cpp     one sentence per job
//
// Doubling heuristic (DESIGN 3.2; Capes et al., arXiv 1908.08082) and the exact dynamic programme
// of the static problem.
//
// How a round works here (the paper restarts from minimums every round; so do we):
//  1. Admission. Jobs held by hysteresis ("pinned", see 3) keep their current size and are placed
//     first, then running jobs that may not be stopped (DoublingJob::stoppable) at their base
//     size. Then, in policy order, every other job gets its base size: inelastic jobs their
//     requested count, elastic jobs their minimum -- running elastic jobs included, so a running
//     job larger than its minimum gives its extra GPUs back whenever a waiting job needs them.
//     First fit: a job whose base does not fit waits, and later (smaller) jobs may still start.
//     Ours: a running job the starvation bound admitted (DoublingJob::admitted_late) goes before
//     the waiting jobs that are not starving, wherever the policy order puts them.
//     Ours, the fairness pass: of the GPUs admission left, the jobs that would miss their fair
//     deadline at their size (run time > DoublingJob::fair_time_s) double first (to the next
//     power of two that is faster: a slower size is stepped over), the furthest behind (run
//     time / fair time) first, up to their requested size (fair_max_gpus). Only
//     GPUs no admitted job needs: it never keeps a job from starting. Step 2 may grow them
//     further but never below (Assignment::low).
//  2. Doubling. Repeatedly double the admitted elastic job with the largest time improvement per
//     added GPU, TI = (cost(n) - cost(2n)) / n, where cost(n) = R / v(n) plus the restart cost C
//     when a running job's n differs from its current size; only while n GPUs are free, 2n is
//     within its maximum and v(2n) > 0; stop when no TI is positive. Ours: where the table is
//     small enough to be faster (DoublingSteps::exact_allocation), step 2 is instead the exact
//     optimum of the same objective -- the least sum of cost(n) over the admitted jobs, sizes at
//     or above their base, within the GPUs admission left -- by a multiple-choice knapsack.
//  3. Hysteresis. For every running job the plan resizes, the gain of the resize is what the plan
//     would lose if that job were held at its current size (re-planned with it pinned), before
//     its own restart cost. Below min_gain_multiple x C (except a grow the fairness pass asked
//     for: it serves fairness, not the sum), or within min_interval_s of its last
//     resize (or start), the job is pinned and the round re-planned. The interval holds every
//     resize, a shrink that would let a waiting job start included (except a job marked
//     DoublingJob::interval_yields, whose hold would keep a starving job waiting or squeeze a
//     job within its request: the planner marks jobs grown above their requests); so every
//     running job within the interval is pinned before any gain is valued
//     (plan_with_interval_pins()): a plan that values a hold must not count on GPUs the
//     interval keeps. Jobs are pinned one at a time
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
#pragma once

#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "ringsched/doubling.h"
#include "doubling_steps.h"

namespace ringsched {
namespace doubling_internal {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr int kMaxTotalGpus = 1000000;  // bounds the DP's table and every loop over sizes
// Work budget of the local improvement pass per planning round (see improve_locally): a base
// that the evaluation's instances (up to 30 jobs, 256 GPUs; at most ~1e5 used) stay below,
// plus a share per job: 250 bounds the pass to a few ms at 10,000 jobs (issue 15.3), where the
// greedy's plan is already within 0.1% of the knapsack's (eval_doubling --scale).
constexpr double kImproveWorkBase = 1e6;
constexpr double kImproveWorkPerJob = 250;
// Step 3 for large rounds: sweeps of estimate-and-pin, each followed by one full re-plan.
constexpr int kMaxSweeps = 32;

std::string job_name(size_t j);
std::string seconds(double s);  // "12.5 s", "340 s"
std::string number(double x);   // %g

// Validated jobs with their speeds at every size a round can use, evaluated once (the speed
// functions may be costly: the throughput model interpolates measured points).
class JobCurves {
 public:
  // Checks every job (InputError naming it) and evaluates its speeds at the sizes a round uses.
  JobCurves(const std::vector<DoublingJob>& jobs, int total_gpus);

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
  void eval(size_t j, int n);

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
  std::vector<int> low;          // least size step 2 may leave the job at (admitted, fair pass)
  std::vector<int> fair;         // size the fairness pass raised the job to (0: it did not)
  int free = 0;
  int admitted = 0;
};

// The doubling heuristic for one round. One object per call; run() does the protocol.
class DoublingRound {
 public:
  DoublingRound(const std::vector<DoublingJob>& jobs, const std::vector<int>& order, int total_gpus,
                const ResizeCosts& costs, double now_s, const DoublingSteps& steps);

  DoublingResult run();

 private:

  // Step 3 with a full re-plan per running job the plan resizes, and one pin per pass: at most
  // n passes of n re-plans. The reference for small rounds (DoublingSteps).
  DoublingResult run_exact();

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
  DoublingResult run_incremental();

  // Steps 1 and 2 with every running job within the minimum interval held (kept_anyway: those
  // the plan would not have resized), and what describe() is told of the pins.
  Assignment plan_with_interval_pins(std::vector<char>& pinned,
                                     std::vector<char>& pinned_for_interval,
                                     std::vector<char>& kept_anyway) const;
  static std::vector<char> described_pins(const std::vector<char>& pinned,
                                          const std::vector<char>& kept_anyway);
  // release_lender()'s marks in `released`: why the lender was let go.
  static constexpr char kReleasedForSqueeze = 1, kReleasedForShort = 2;

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
  bool next_doubling(size_t j, int size, bool resizable, double* ti) const;

  // The doubling that brought j to `size`, if j is resizable and above its base.
  bool last_doubling(size_t j, int size, bool resizable, double* ti) const;

  void index_job(Margins& m, size_t j, int size, bool resizable, bool add) const;

  Margins index_margins(const Assignment& a, const std::vector<char>& pinned) const;

  // A plan with one more job held, as changes to the plan it was repaired from.
  struct Held {
    int job = -1;                            // the job held
    std::vector<std::pair<int, int>> sizes;  // (job, new size; 0: waits for room)
    int free = 0;
    int admitted = 0;
    double cost = 0;  // planning_cost of the repaired plan
  };

  enum class Squeeze { None, Shrinks, Stops };  // ordered: the worse, the larger

  // The interval rule: resized (or started) too recently. It holds whatever the resize would
  // bring, a waiting job's start included: a job that has just started or restarted cannot
  // checkpoint yet, so a request then costs a restart and gains nothing (issue 14).
  bool too_soon(size_t j) const {
    return now_s_ - curves_.job(j).last_resize_s < costs_.min_interval_s;
  }

  // The interval rule as step 3 applies it to the plan: a job marked interval_grows is held
  // only against a shrink or a stop.
  bool interval_holds(const Assignment& plan, size_t j) const {
    const DoublingJob& d = curves_.job(j);
    return too_soon(j) && !(d.interval_grows && plan.gpus[j] > d.current_gpus);
  }

  // A running job the fairness pass grows: its resize is not held for a small gain (it moves
  // GPUs from jobs that gain more per GPU, so the sum of finish times often rises), only by the
  // interval rule.
  bool fair_grow(const Assignment& a, size_t j) const {
    return j < a.fair.size() && a.fair[j] > curves_.job(j).current_gpus &&
           a.gpus[j] > curves_.job(j).current_gpus;
  }

  // Whether holding running job j would keep a starving job waiting (DoublingJob::starving)
  // that the plan starts and that needs less time at its base size than j at its current one.
  // Such a hold is refused for a small gain, as a fairness grow is; only the interval rule holds
  // j then. Shorter only: a late 5-minute job should not wait for jobs of days, but a late job
  // of days displacing another (Philly's) cost up to 11% of avg JCT on the default sweep.
  // (Refusing also holds that take from a job what the fairness pass raised it to: grants move
  // from job to job round after round: on the 2,000-job burst restarts 3,324 -> 12,708 and max
  // FTF 70.6 -> 120.6. Not kept; docs/combined-sweep.md.)
  bool starves(const Assignment& plan, const Assignment& held, size_t j) const {
    return keeps_waiting(plan, held, [&](size_t k) { return starving_before(k, j); });
  }
  bool starves(const Assignment& plan, const Held& held) const {
    const size_t j = static_cast<size_t>(held.job);
    return keeps_waiting(plan, held, [&](size_t k) { return starving_before(k, j); });
  }
  // Whether the hold (a full re-plan `held`, or hold()'s repair) keeps waiting a job that the
  // plan starts and for which which(k) holds: the one walk behind the rules below.
  template <typename Which>
  bool keeps_waiting(const Assignment& plan, const Assignment& held, Which which) const {
    for (size_t k = 0; k < plan.gpus.size(); ++k)
      if (plan.gpus[k] > 0 && held.gpus[k] == 0 && which(k)) return true;
    return false;
  }
  template <typename Which>
  bool keeps_waiting(const Assignment& plan, const Held& held, Which which) const {
    for (const auto& [k, size] : held.sizes)
      if (size == 0 && plan.gpus[k] > 0 && which(static_cast<size_t>(k))) return true;
    return false;
  }

  // Whether running job j holds GPUs above its request (lent) and, shrunk to its request now
  // and restarted, would still finish before it would have alone at its request: then its lead
  // pays for the restart, and a hold that keeps a waiting job waiting is refused as one that
  // keeps a starving job waiting is (DoublingJob::alone_left_s). The lead keeps the lend-back
  // from making a lender itself finish later than alone; on the held-out sweeps, with the
  // horizon, every lender given back instead made the same misses and up to 0.8% more restarts
  // (docs/combined-robustness.md).
  bool lends_with_lead(size_t j) const {
    const DoublingJob& d = curves_.job(j);
    return d.running && d.lend_horizon_s > 0 && d.fair_max_gpus > 0 && d.current_gpus > d.request() &&
           costs_.restart_s + curves_.run_time(j, d.request()) <= d.alone_left_s;
  }
  // Whether the hold keeps a waiting job waiting that the plan starts.
  template <typename HeldPlan>
  bool keeps_arrival_waiting(const Assignment& plan, const HeldPlan& held) const {
    return keeps_waiting(plan, held, [&](size_t k) { return !curves_.job(k).running; });
  }

  // Within the interval, whether holding lender j (DoublingJob::interval_yields) is refused:
  // when the hold keeps a starving job waiting or squeezes (stops or shrinks) a running job
  // within its request on j's set of types, but within the grace after j's own restart (the
  // gain multiple x the restart cost) only to keep such a job from stopping. Without the
  // squeeze, a lender held by the interval let the plan stop or shrink a job that asked for its
  // GPUs, which the next plan, once the interval passed, gave back: held-out phillyd on v100x4
  // (seeds 21-60, 120 scenarios) missed Tiresias's p99 or max FTF in 13, 5 with it
  // (docs/combined-fairness.md). A yield for a starving job within the grace raised restarts 22%.
  //
  // Within the grace, also to keep waiting a starving job that the rest of the grace would make
  // late by more than kGraceWaitFraction of its time alone (starves_short()): a 269 s resnet18
  // waited 35 s there behind lenders that had just restarted (finish-time fairness 1.13,
  // Tiresias's 1.09; phillyd v100x4 L0.5 s2 with links of 100 GB/s). Only such short jobs: the
  // grace keeps the restarts that a yield to every starving job costs.
  bool interval_yields(size_t j, bool starving_waits, Squeeze squeeze,
                       bool short_starving_waits) const {
    if (!curves_.job(j).interval_yields) return false;
    if (now_s_ - curves_.job(j).last_resize_s < costs_.grace_s())
      return squeeze == Squeeze::Stops || short_starving_waits;
    return starving_waits || squeeze != Squeeze::None;
  }
  static constexpr double kGraceWaitFraction = 0.05;
  // Whether the hold of j (a full re-plan or hold()'s repair) keeps waiting a starving job,
  // shorter than j (starving_before()), for which the wait until j's grace ends is more than
  // kGraceWaitFraction of its time alone (DoublingJob::alone_s).
  template <typename HeldPlan>
  bool starves_short(const Assignment& plan, const HeldPlan& held, size_t j) const {
    const double wait = curves_.job(j).last_resize_s + costs_.grace_s() - now_s_;
    if (!(wait > 0)) return false;
    return keeps_waiting(plan, held, [&](size_t k) {
      return starving_before(k, j) && curves_.job(k).alone_s * kGraceWaitFraction < wait;
    });
  }
  // What holding j does to the running jobs within their requests (at most their requested size
  // or the base the starvation bound raised it to) on j's set of types: the worst of stopping
  // one, shrinking one (below the plan's size and its current one), or neither.
  Squeeze squeezes_within_request(const Assignment& plan, const Assignment& held, size_t j) const {
    Squeeze worst = Squeeze::None;
    for (size_t k = 0; k < plan.gpus.size(); ++k)
      if (k != j) worst = std::max(worst, squeeze_of(k, j, plan.gpus[k], held.gpus[k]));
    return worst;
  }
  Squeeze squeezes_within_request(const Assignment& plan, const Held& held) const {
    Squeeze worst = Squeeze::None;
    for (const auto& [k, size] : held.sizes)
      if (k != held.job)
        worst = std::max(worst, squeeze_of(static_cast<size_t>(k), static_cast<size_t>(held.job),
                                           plan.gpus[k], size));
    return worst;
  }
  Squeeze squeeze_of(size_t k, size_t j, int planned, int held) const {
    if (curves_.job(k).type_set != curves_.job(j).type_set || !(held < planned))
      return Squeeze::None;
    return loses_within_request(k, held);
  }
  // What running job k, at or below its request (its requested size, or the base the starvation
  // bound raised it to) and on a numbered set of types, suffers at `size`: stopped (0), shrunk,
  // or nothing. The one test of both the lend-back (release_lender()) and the interval's yield.
  Squeeze loses_within_request(size_t k, int size) const {
    const DoublingJob& d = curves_.job(k);
    const int request = d.request();
    if (!d.running || d.type_set < 0 || !curves_.current_is_valid(k) || d.current_gpus > request ||
        size >= d.current_gpus)
      return Squeeze::None;
    return size == 0 ? Squeeze::Stops : Squeeze::Shrinks;
  }
  // Whether the plan shrinks running job k (at or below its request, on a numbered set of types:
  // loses_within_request()) from a size where it finishes within its fair share to `size`,
  // where it would not (DoublingJob::fair_time_s, with the restart). Step 3 holds such a job
  // whatever the plan gains, unless the hold keeps a starving job or a shorter waiting job
  // waiting, or one it makes later than j (fair_hold_yields()): the fairness pass grows it back
  // as soon as GPUs free up, and the gain was never made. An ncf job that asked for 4 T4s went
  // 4 -> 1 -> 4 -> 1 -> 4 for plan gains of 1,427 and 4,655 s (max finish-time fairness 1.184x
  // Tiresias's, efd t4x4 L1 s109).
  bool shrinks_into_late(size_t k, int size) const {
    const DoublingJob& d = curves_.job(k);
    if (loses_within_request(k, size) != Squeeze::Shrinks || !(d.fair_time_s < kInf)) return false;
    return curves_.run_time(k, d.current_gpus) <= d.fair_time_s &&
           costs_.restart_s + curves_.run_time(k, size) > d.fair_time_s;
  }
  // Whether shrinks_into_late()'s hold of j yields: it keeps waiting a job that the plan starts
  // and that needs less time at its base size than j at its current one (shorter(): the waiting
  // job's own fair share is as much at stake and it is the shorter, as for a starving job,
  // starves()), or one it makes later past its fair deadline than the shrink makes j
  // (later_than()). Shorter: traced on itp01 a100t4x4 L2 s4 with links of 100 GB/s, a 64-GPU
  // vgg16 on 32 A100s was held there for a plan gain of 49,763 s while a 5-hour job waited
  // 14,940 s, until it was itself late; doubling shrank vgg16, which still finished 267 s
  // earlier (its GPUs came back). Later: two 64-GPU deepspeech2 jobs on 64 A100s (itp01
  // a100t4x8 L0.5 s20); the one running was held at 64 for a plan gain of 32,638 s, 32 taking
  // it past its fair deadline, while the other, longer at its base size, waited 21,113 s (JCT
  // 41,039 s, 2.24 x its time alone). Shared 32 + 32, as the doubling does, they took 33,296 s
  // and 20,484 s: avg JCT 1.027x doubling's -> 0.971x; -0.05% to -0.28% per set of seeds over
  // sim/sweep.sh and the cluster shapes (docs/combined-later-waiting.md).
  bool fair_hold_yields(const Assignment& plan, const Assignment& held, size_t j) const {
    return keeps_waiting(plan, held, [&](size_t k) { return yields_to(plan, k, j); });
  }
  bool fair_hold_yields(const Assignment& plan, const Held& held) const {
    const size_t j = static_cast<size_t>(held.job);
    return keeps_waiting(plan, held, [&](size_t k) { return yields_to(plan, k, j); });
  }
  bool yields_to(const Assignment& plan, size_t k, size_t j) const {
    return !curves_.job(k).running &&
           (shorter(k, j) || later_than(k, plan.gpus[k], j, plan.gpus[j]));
  }
  // Whether waiting job k, started at `k_size` once running job j ends at its current size,
  // would be later past its fair deadline than j would be past its own shrunk to `j_size` now.
  bool later_than(size_t k, int k_size, size_t j, int j_size) const {
    const DoublingJob& w = curves_.job(k);
    const DoublingJob& d = curves_.job(j);
    if (!(w.fair_time_s < kInf)) return false;
    const double k_late =
        curves_.run_time(j, d.current_gpus) + curves_.run_time(k, k_size) - w.fair_time_s;
    const double j_late = costs_.restart_s + curves_.run_time(j, j_size) - d.fair_time_s;
    return k_late > j_late;
  }
  // Whether job k at its base size needs less time than job j at its current size.
  bool shorter(size_t k, size_t j) const {
    return curves_.run_time(k, curves_.base(k)) < curves_.run_time(j, curves_.job(j).current_gpus);
  }
  bool starving_before(size_t k, size_t j) const { return curves_.job(k).starving && shorter(k, j); }

  // Lent GPUs come back (DoublingJob::type_set): when the plan stops or shrinks a running job
  // within its requested size (loses_within_request()), of the jobs held by step 3 for their
  // gain (not the interval) above their own requests on the same set of types, the one whose
  // shrink the plan gains most from (the largest resize_gain, the hold it values least) is let
  // go (unpinned) and marked `released`, never to be held again this round. Also when the plan
  // leaves a job that waits or runs below its request below both that request and its size in
  // `first_gpus` (the plan with the interval's pins alone): then of those held lenders the ones
  // with a lead (lends_with_lead()), on any set of types. Each hold is weighed on a plan that
  // the holds before it repaired, so lends_with_lead() alone missed a group: with room for a
  // 1-GPU arrival while other lenders were unpinned, each of four lenders that asked for 1 GPU
  // and held 4-8 was held in turn, the last GPUs went to a lender within its interval, and the
  // arrival, of 291 s, waited 70 s (finish-time fairness 1.24, Tiresias's 1.02; efd t4x8 L0.5
  // s46). Running jobs below their requests too: an 8-GPU job that the placement had started on
  // 4 stayed there for 1,300 s while two jobs that asked for 4 held 8 each (FTF 1.68, Tiresias's
  // 1.10; phillyd v100x8 L0.5 s30, once arrivals took lent GPUs back). False if there is none;
  // the caller re-plans otherwise.
  bool release_lender(const Assignment& plan, const std::vector<int>& first_gpus,
                      std::vector<char>& pinned,
                      const std::vector<char>& pinned_for_interval,
                      const std::vector<char>& kept_anyway, const std::vector<double>& resize_gain,
                      std::vector<char>& released) const;

  // The plan `a` with job j held at its current size, repaired as run_incremental() describes.
  Held hold(const Assignment& a, const std::vector<char>& pinned, const Margins& m, int j,
            double a_cost) const;

  // Makes the repaired plan the working plan: sizes, free GPUs, admissions and the index.
  void apply(const Held& h, Assignment& a, Margins& m, const std::vector<char>& pinned) const;

  // cost(n): R / v(n), plus C when a running job's size changes.
  double cost(size_t j, int n) const {
    double t = curves_.run_time(j, n);
    const DoublingJob& job = curves_.job(j);
    // Above its request for longer than the lend horizon: H seconds at n, the rest of the work at
    // the request, and the restart of that return (DoublingJob::lend_horizon_s).
    const double h = job.lend_horizon_s;
    if (h > 0 && job.fair_max_gpus > 0 && t > h) {
      const int request = job.request();
      if (n > request) {
        const double at_request = curves_.speed(j, request);
        if (at_request > 0) t = h + (job.remaining - h * curves_.speed(j, n)) / at_request + costs_.restart_s;
      }
    }
    if (job.running && n != job.current_gpus) t += costs_.restart_s;
    return t;
  }

  bool may_resize(size_t j, const std::vector<char>& pinned) const {
    return curves_.job(j).elastic && !pinned[j];
  }

  // Steps 1 and 2 (and our local improvement) with `pinned` jobs held at their current size.
  Assignment plan_round(const std::vector<char>& pinned) const;

  // The fairness pass between steps 1 and 2 (see the top of this file).
  void grant_fair_shares(Assignment& a, const std::vector<char>& pinned) const;

  // Step 2 by the exact multiple-choice knapsack over the admitted resizable jobs (sizes >= their
  // base, within the GPUs admission left free), when its table is small enough to beat the
  // greedy and the local improvement (DoublingSteps::exact_allocation). False: not attempted.
  bool allocate_exactly(Assignment& a, const std::vector<char>& pinned) const;

  // Ours: best-improvement local search while the objective falls. A move changes one job to
  // any of its sizes within the free GPUs, or shrinks one job to let another grow. Jumping
  // several doublings at once gets past dips in a speed curve (a measured 2-GPU point slower
  // than 1 GPU), where the greedy's one-step look-ahead stops.
  void improve_locally(Assignment& a, const std::vector<char>& pinned) const;

  // Sum of costs of the jobs that run plus, for waiting jobs, an estimate of when they could
  // start (the planned jobs' finish times free GPUs) and their run at base size. Only used to
  // compare plans of the same round.
  double planning_cost(const Assignment& a) const;

  // The same for sizes given by size_of(j), `free` GPUs left, and waits_for_room(j) telling
  // whether a job with size 0 waits for room. O(n log n): finish times sorted once, then a
  // binary search over the GPUs they free per waiting job.
  template <typename SizeOf, typename WaitsForRoom>
  double planning_cost(const Assignment& a, SizeOf size_of, int free,
                       WaitsForRoom waits_for_room) const;
  template <typename SizeOf, typename WaitsForRoom>
  double planning_cost(const Assignment& a, SizeOf size_of, int free, WaitsForRoom waits_for_room,
                       const std::vector<std::pair<double, int>>& finishes) const;
  void merge_finishes(const std::vector<std::pair<double, int>>& sorted, const Assignment& a,
                      const std::vector<std::pair<int, int>>& sizes,
                      std::vector<std::pair<double, int>>& out) const;

  DoublingResult describe(const Assignment& a, const std::vector<char>& pinned,
                          const std::vector<char>& pinned_for_interval,
                          const std::vector<double>& resize_gain,
                          const std::vector<char>& released) const;

  JobCurves curves_;
  ResizeCosts costs_;
  double now_s_;
  DoublingSteps steps_;
  std::vector<int> order_;
  std::vector<int> rank_;
  std::vector<int> base_;         // curves_.base(j)
  std::vector<double> wait_run_;  // a waiting job's run time from its start at base, resume included
  mutable std::vector<int> scratch_;  // hold(): sizes it changed, -1 elsewhere (reset on return)
  // planning_cost()'s work space, kept between its many calls per round
  mutable std::vector<std::pair<double, int>> finishes_;
  // run_incremental()'s working plan's finishes, sorted, and hold()'s merge of its changes
  mutable std::vector<std::pair<double, int>> working_finishes_;
  mutable std::vector<std::pair<double, int>> held_finishes_;
  mutable std::vector<long> freed_;
};

// Multiple-choice knapsack: every item takes exactly one of its options (weight, value), weights
// summing to at most `capacity`; least total value. Options with an infinite value are never taken;
// returns the option index per item, or an empty vector if no choice fits. Ties: the first option
// found and the smallest total weight. O(options x (capacity + 1)) time, items x capacity bytes.
std::vector<int> choose_options(const std::vector<std::vector<std::pair<int, double>>>& items,
                                int capacity);
// Cells choose_options() fills for these items and capacity (its cost).
double knapsack_cells(const std::vector<std::vector<std::pair<int, double>>>& items, int capacity);

}  // namespace doubling_internal
}  // namespace ringsched
