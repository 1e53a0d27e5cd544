// SPDX-License-Identifier: GPL-2.0-or-later
// Doubling heuristic and the exact DP (policy/doubling.cpp): exactness against brute force, the
// heuristic never beating the optimum, restart cost, hysteresis, admission, a real speed curve
// that drops, and bad input.
#include <cppunit/extensions/HelperMacros.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ringsched/doubling.h"
#include "doubling_steps.h"
#include "ringsched/throughput.h"
#include "doubling_fixtures.h"

using namespace ringsched;
using namespace doubling_fixtures;

namespace {

ResizeCosts no_hysteresis(double restart_s) {
  ResizeCosts c;
  c.restart_s = restart_s;
  c.min_gain_multiple = 0;
  c.min_interval_s = 0;
  return c;
}

double plan_time(const std::vector<DoublingJob>& jobs, const std::vector<int>& gpus) {
  double t = 0;
  for (size_t j = 0; j < jobs.size(); ++j)
    if (gpus[j] > 0) t += jobs[j].remaining / jobs[j].speed(gpus[j]);
  return t;
}

// Random static instance: speed curves that may rise, flatten or drop; some inelastic jobs.
std::vector<DoublingJob> random_instance(std::mt19937& rng, int jobs, int* total_gpus) {
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<DoublingJob> out;
  int need = 0;
  for (int j = 0; j < jobs; ++j) {
    std::map<int, double> pts;
    double v = 0.5 + 5 * unit(rng);
    for (int n = 1; n <= 64; n *= 2) {
      pts[n] = v;
      v *= 0.6 + 1.4 * unit(rng);  // 0.6x (drop) .. 2x (perfect) per doubling
    }
    DoublingJob job;
    job.remaining = 100 + 10000 * unit(rng);
    if (unit(rng) < 0.25) {
      job.elastic = false;
      job.requested = 1 + static_cast<int>(rng() % 5);  // also non powers of two
      pts[job.requested] = 0.5 + 5 * unit(rng);
      job.min_gpus = 1;
      job.max_gpus = job.requested;
      need += job.requested;
    } else {
      job.min_gpus = 1 << (rng() % 3);
      job.max_gpus = job.min_gpus << (rng() % 4);
      need += job.min_gpus;
    }
    job.speed = curve(pts);
    out.push_back(job);
  }
  *total_gpus = need + static_cast<int>(rng() % 24);
  return out;
}

// Exhaustive search over every job's sizes.
double brute_force(const std::vector<DoublingJob>& jobs, int total_gpus) {
  double best = INFINITY;
  std::vector<int> gpus(jobs.size());
  std::function<void(size_t, int, double)> go = [&](size_t j, int used, double t) {
    if (j == jobs.size()) {
      best = std::min(best, t);
      return;
    }
    const DoublingJob& job = jobs[j];
    std::vector<int> sizes;
    if (!job.elastic)
      sizes = {job.requested};
    else
      for (int n = job.min_gpus; n <= job.max_gpus; n *= 2) sizes.push_back(n);
    for (int n : sizes) {
      double v = job.speed(n);
      if (v <= 0 || used + n > total_gpus) continue;
      go(j + 1, used + n, t + job.remaining / v);
    }
  };
  go(0, 0, 0);
  return best;
}

// The two ways step 3 can run (DoublingSteps::exact_hysteresis_max_jobs): full re-plans per
// running job, or the incremental repair of large rounds, whatever the number of jobs.
// Our heuristic with the local improvement, or the paper's steps alone (neither uses the knapsack).
DoublingSteps steps_of(bool local) { return local ? DoublingSteps::heuristic() : DoublingSteps::paper(); }

DoublingSteps exact_steps(bool local = true) {
  DoublingSteps s;
  s.local_improvement = local;
  s.exact_allocation = local;
  s.exact_hysteresis_max_jobs = 1 << 30;
  return s;
}
DoublingSteps incremental_steps(bool local = true) {
  DoublingSteps s;
  s.local_improvement = local;
  s.exact_allocation = local;
  s.exact_hysteresis_max_jobs = 0;
  return s;
}

// A random round in which about half the elastic jobs run (at a random allowed size, resized
// long ago or just now), the others pending; restart cost 30 s, gain > 2 x, interval 300 s.
std::vector<DoublingJob> random_running_round(std::mt19937& rng, int jobs, int* total_gpus) {
  std::vector<DoublingJob> out = random_instance(rng, jobs, total_gpus);
  std::uniform_real_distribution<double> unit(0, 1);
  for (DoublingJob& j : out) {
    if (!j.elastic || unit(rng) < 0.5) continue;
    int steps = 0;
    for (int n = j.min_gpus; 2 * n <= j.max_gpus; n *= 2) ++steps;
    j.remaining *= 20;  // long runs: resizes gain hundreds of seconds, near the threshold
    j = running(j, j.min_gpus << (rng() % (steps + 1)), unit(rng) < 0.2 ? 0.0 : -1e9);
  }
  return out;
}

// Checks that hold for any plan: within the cluster, inelastic jobs at their count, elastic
// jobs at an allowed size with a known speed.
std::string what_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

class DoublingTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(DoublingTest);
  CPPUNIT_TEST(dp_equals_brute_force);
  CPPUNIT_TEST(heuristic_never_beats_dp);
  CPPUNIT_TEST(default_round_reaches_the_optimum_where_the_knapsack_is_cheap);
  CPPUNIT_TEST(local_improvement_never_worse_than_paper);
  CPPUNIT_TEST(local_improvement_passes_dips_and_gathers_gpus);
  CPPUNIT_TEST(greedy_doubles_largest_improvement_first);
  CPPUNIT_TEST(restart_cost_counted);
  CPPUNIT_TEST(hysteresis_keeps_small_gain);
  CPPUNIT_TEST(min_interval_holds);
  CPPUNIT_TEST(running_job_shrinks_to_admit_waiting_job);
  CPPUNIT_TEST(inelastic_jobs_keep_their_count);
  CPPUNIT_TEST(jobs_that_do_not_fit_wait);
  CPPUNIT_TEST(dropping_speed_curve_not_doubled_into);
  CPPUNIT_TEST(bad_input_throws_naming_job);
  CPPUNIT_TEST(incremental_hysteresis_passes_the_hysteresis_cases);
  CPPUNIT_TEST(incremental_gain_equals_replanned_gain_for_one_running_job);
  CPPUNIT_TEST(incremental_hysteresis_close_to_exact);
  CPPUNIT_TEST(large_round_is_fast_and_valid);
  CPPUNIT_TEST(fairness_pass_serves_late_jobs_first);
  CPPUNIT_TEST(fairness_grow_not_held_for_small_gain);
  CPPUNIT_TEST(starving_job_not_kept_waiting_for_a_small_gain);
  CPPUNIT_TEST(gain_hold_does_not_count_on_gpus_of_a_job_within_its_interval);
  CPPUNIT_TEST_SUITE_END();

 public:
  void dp_equals_brute_force() {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 300; ++trial) {
      int total;
      auto jobs = random_instance(rng, 1 + trial % 5, &total);
      DoublingResult dp = optimal_static(jobs, total);
      double bf = brute_force(jobs, total);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(bf, dp.objective_s, 1e-9 * bf);
      // The returned sizes are feasible and achieve the stated objective.
      int used = 0;
      for (size_t j = 0; j < jobs.size(); ++j) {
        used += dp.gpus[j];
        if (!jobs[j].elastic) CPPUNIT_ASSERT_EQUAL(jobs[j].requested, dp.gpus[j]);
      }
      CPPUNIT_ASSERT(used <= total);
      CPPUNIT_ASSERT_DOUBLES_EQUAL(dp.objective_s, plan_time(jobs, dp.gpus), 1e-9 * bf);
    }
  }

  void heuristic_never_beats_dp() {
    std::mt19937 rng(11);
    int compared = 0;
    for (int trial = 0; trial < 300; ++trial) {
      int total;
      auto jobs = random_instance(rng, 1 + trial % 8, &total);
      // Half of the instances have running jobs (restart cost, hysteresis): the DP ignores the
      // restart cost, so whenever every job runs the heuristic still cannot be below it.
      if (trial % 2)
        for (size_t j = 0; j < jobs.size(); j += 2)
          if (jobs[j].elastic) jobs[j] = running(jobs[j], jobs[j].min_gpus, -1e9);
      DoublingResult dp = optimal_static(jobs, total);
      for (bool local : {false, true}) {
        DoublingResult h = doubling_heuristic(jobs, identity(jobs.size()), total, ResizeCosts{},
                                              0.0, steps_of(local));
        int used = 0;
        bool all_run = true;
        for (int g : h.gpus) {
          used += g;
          all_run = all_run && g > 0;
        }
        CPPUNIT_ASSERT(used <= total);
        if (!all_run) continue;
        ++compared;
        CPPUNIT_ASSERT(h.objective_s >= dp.objective_s * (1 - 1e-12));
      }
    }
    CPPUNIT_ASSERT(compared > 500);  // the property was actually exercised
  }

  // Small rounds of pending jobs: the default steps solve step 2 by the knapsack (its table is
  // tiny), so wherever every job runs the plan is the static optimum, not just close to it. The
  // heuristic alone misses it on some of these instances (checked: at least one), which is the
  // point of using the knapsack there.
  void default_round_reaches_the_optimum_where_the_knapsack_is_cheap() {
    std::mt19937 rng(29);
    int compared = 0, heuristic_missed = 0;
    for (int trial = 0; trial < 400; ++trial) {
      int total;
      auto jobs = random_instance(rng, 2 + trial % 10, &total);
      DoublingResult dp = optimal_static(jobs, total);
      DoublingResult round = doubling_heuristic(jobs, identity(jobs.size()), total, ResizeCosts{}, 0.0);
      DoublingResult heur = doubling_heuristic(jobs, identity(jobs.size()), total, ResizeCosts{}, 0.0,
                                               DoublingSteps::heuristic());
      if (std::any_of(round.gpus.begin(), round.gpus.end(), [](int g) { return g == 0; })) continue;
      ++compared;
      CPPUNIT_ASSERT_DOUBLES_EQUAL(dp.objective_s, round.objective_s, 1e-9 * dp.objective_s);
      CPPUNIT_ASSERT(round.objective_s <= heur.objective_s * (1 + 1e-12));
      heuristic_missed += heur.objective_s > dp.objective_s * (1 + 1e-9);
    }
    CPPUNIT_ASSERT(compared > 300);
    CPPUNIT_ASSERT(heuristic_missed > 0);
  }

  void local_improvement_never_worse_than_paper() {
    std::mt19937 rng(13);
    int strictly_better = 0;
    for (int trial = 0; trial < 300; ++trial) {
      int total;
      auto jobs = random_instance(rng, 2 + trial % 8, &total);
      auto order = identity(jobs.size());
      DoublingResult paper = doubling_heuristic(jobs, order, total, ResizeCosts{}, 0, DoublingSteps::paper());
      DoublingResult ours = doubling_heuristic(jobs, order, total, ResizeCosts{}, 0, DoublingSteps::heuristic());
      CPPUNIT_ASSERT(ours.objective_s <= paper.objective_s * (1 + 1e-12));
      if (ours.objective_s < paper.objective_s * (1 - 1e-9)) ++strictly_better;
    }
    CPPUNIT_ASSERT(strictly_better > 0);
  }

  void local_improvement_passes_dips_and_gathers_gpus() {
    // A dip: 2 GPUs slower than 1, 4 much faster. The paper's greedy stops at 1; ours jumps.
    auto dip = elastic(1e4, 1, 4, curve({{1, 10.0}, {2, 8.0}, {4, 30.0}}));
    CPPUNIT_ASSERT_EQUAL(1, doubling_heuristic({dip}, {0}, 4, ResizeCosts{}, 0, DoublingSteps::paper()).gpus[0]);
    DoublingResult jumped = doubling_heuristic({dip}, {0}, 4, ResizeCosts{}, 0);
    CPPUNIT_ASSERT_EQUAL(4, jumped.gpus[0]);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1e4 / 30.0, jumped.objective_s, 1e-9);
    // Gathering: the big job needs 4 more GPUs; the optimum takes 1 from one job and 3 from
    // another (Gavel k80 speeds of eval instance seed 4 #245, rounded).
    std::vector<DoublingJob> jobs = {
        elastic(1639, 1, 64, curve({{1, 3.51}, {2, 5.1}, {4, 7.98}, {8, 13.9}, {16, 17.8}})),
        elastic(679060, 1, 8, curve({{1, 0.886}, {2, 1.67}, {4, 3.41}, {8, 6.98}})),
        elastic(132097, 1, 16, curve({{1, 32.9}, {2, 59.5}, {4, 99.3}, {8, 145}, {16, 176}})),
        elastic(155466, 1, 2, curve({{1, 17.1}, {2, 23.8}})),
        elastic(52147, 1, 8, curve({{1, 0.619}, {2, 1.26}, {4, 2.41}, {8, 4.57}})),
        elastic(1000, 1, 16, curve({{1, 11.5}, {2, 16.1}, {4, 23}, {8, 43.1}, {16, 53.8}}))};
    DoublingResult dp = optimal_static(jobs, 13);
    DoublingResult paper = doubling_heuristic(jobs, identity(6), 13, ResizeCosts{}, 0, DoublingSteps::paper());
    DoublingResult ours = doubling_heuristic(jobs, identity(6), 13, ResizeCosts{}, 0);
    CPPUNIT_ASSERT(paper.objective_s > dp.objective_s * 1.05);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(dp.objective_s, ours.objective_s, 1e-9 * dp.objective_s);
    CPPUNIT_ASSERT_EQUAL(8, ours.gpus[1]);
  }

  void greedy_doubles_largest_improvement_first() {
    // Two jobs, 3 GPUs: one doubling possible. Job 1 gains more per added GPU.
    std::vector<DoublingJob> jobs = {elastic(1000, 1, 4, scaling(1.0, 0.6)),
                                     elastic(1000, 1, 4, scaling(1.0, 0.9))};
    DoublingResult r = doubling_heuristic(jobs, {0, 1}, 3, ResizeCosts{}, 0);
    CPPUNIT_ASSERT_EQUAL(1, r.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(2, r.gpus[1]);
    // TI = (1000/1 - 1000/1.8) / 1 = 444.4 s per added GPU.
    CPPUNIT_ASSERT_EQUAL(std::string("doubled 1->2: saves 444 s per added GPU"), r.reasons[1]);
    CPPUNIT_ASSERT(contains(r.reasons[0], "starts at 1"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(1000.0 + 1000.0 / 1.8, r.objective_s, 1e-9);
  }

  void restart_cost_counted() {
    // A runs at 2, B waits; both have the same curve and 2 free GPUs after their minimums.
    // Without a restart cost, policy order breaks the tie for A; with one, B's doubling is
    // worth more because A would pay the restart.
    auto a = running(elastic(2000, 2, 4, scaling(1.0, 0.8)), 2, -1e9);
    auto b = elastic(2000, 2, 4, scaling(1.0, 0.8));
    DoublingResult free_restart = doubling_heuristic({a, b}, {0, 1}, 6, no_hysteresis(0), 0);
    CPPUNIT_ASSERT_EQUAL(4, free_restart.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(2, free_restart.gpus[1]);
    DoublingResult costly = doubling_heuristic({a, b}, {0, 1}, 6, no_hysteresis(60), 0);
    CPPUNIT_ASSERT_EQUAL(2, costly.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(4, costly.gpus[1]);
    // The objective charges the restart to a job that is resized.
    auto c = running(elastic(2000, 1, 4, scaling(1.0, 0.8)), 1, -1e9);
    DoublingResult grown = doubling_heuristic({c}, {0}, 4, no_hysteresis(60), 0);
    CPPUNIT_ASSERT_EQUAL(4, grown.gpus[0]);
    CPPUNIT_ASSERT_DOUBLES_EQUAL(2000 / (1.0 * 1.6 * 1.6) + 60, grown.objective_s, 1e-9);
    CPPUNIT_ASSERT(contains(grown.reasons[0], "grows 1->4"));
  }

  void hysteresis_keeps_small_gain() {
    // v = 0.9, 1.53, 2.601 on 1, 2, 4 GPUs. Growing 2->4 saves 2000/1.53 - 2000/2.601 = 538 s:
    // more than 2 x 250 s, less than 2 x 300 s.
    auto job = running(elastic(2000, 1, 4, scaling(0.9, 0.85)), 2, -1e9);
    ResizeCosts costs;
    costs.restart_s = 300;
    costs.min_gain_multiple = 2;
    costs.min_interval_s = 0;
    DoublingResult kept = doubling_heuristic({job}, {0}, 4, costs, 0);
    CPPUNIT_ASSERT_EQUAL(2, kept.gpus[0]);
    CPPUNIT_ASSERT(contains(kept.reasons[0], "kept at 2: gain 538 s < 2 x restart cost"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(2000 / 1.53, kept.objective_s, 1e-9);  // no restart charged
    costs.restart_s = 250;
    DoublingResult grown = doubling_heuristic({job}, {0}, 4, costs, 0);
    CPPUNIT_ASSERT_EQUAL(4, grown.gpus[0]);
    CPPUNIT_ASSERT(contains(grown.reasons[0], "grows 2->4: saves 538 s"));
  }

  void min_interval_holds() {
    auto job = running(elastic(1e6, 1, 8, scaling(1.0, 0.9)), 2, 1000.0);
    ResizeCosts costs;  // 30 s restart, gain x2, 300 s interval
    DoublingResult early = doubling_heuristic({job}, {0}, 8, costs, 1100.0);
    CPPUNIT_ASSERT_EQUAL(2, early.gpus[0]);
    CPPUNIT_ASSERT(contains(early.reasons[0], "kept at 2: started or resized 100 s ago, minimum interval 300 s"));
    DoublingResult later = doubling_heuristic({job}, {0}, 8, costs, 1300.0);
    CPPUNIT_ASSERT_EQUAL(8, later.gpus[0]);
  }

  void running_job_shrinks_to_admit_waiting_job() {
    // A holds all 8 GPUs and was resized (or started) just now; B arrives. The minimum interval
    // holds A at 8 although its shrink would let B start: a job that has just (re)started cannot
    // checkpoint yet (issue 14). Once the interval has passed, A gives GPUs back and B starts.
    auto a = running(elastic(1e5, 1, 8, scaling(1.0, 0.9)), 8, 0.0);
    auto b = elastic(1e5, 1, 8, scaling(1.0, 0.9));
    ResizeCosts costs;
    for (int exact_max : {16, 0}) {  // the exact re-planning rule and the incremental one
      DoublingSteps steps;
      steps.exact_hysteresis_max_jobs = exact_max;
      DoublingResult early = doubling_heuristic({a, b}, {0, 1}, 8, costs, 10.0, steps);
      CPPUNIT_ASSERT_EQUAL(8, early.gpus[0]);
      CPPUNIT_ASSERT_EQUAL(0, early.gpus[1]);
      CPPUNIT_ASSERT_MESSAGE(early.reasons[0], contains(early.reasons[0], "minimum interval 300 s"));
    }
    DoublingResult r = doubling_heuristic({a, b}, {0, 1}, 8, costs, 400.0);
    CPPUNIT_ASSERT_EQUAL(4, r.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(4, r.gpus[1]);
    CPPUNIT_ASSERT(contains(r.reasons[0], "shrinks 8->4"));
    // Growth alone still respects the interval: with 16 GPUs B fits beside A, A stays at 8.
    DoublingResult roomy = doubling_heuristic({a, b}, {0, 1}, 16, costs, 10.0);
    CPPUNIT_ASSERT_EQUAL(8, roomy.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(8, roomy.gpus[1]);
    // A almost done (5 s left at 8 GPUs): shrinking it gains B less than 2 x restart cost.
    auto nearly_done = running(elastic(5 * 1.0 * 1.8 * 1.8 * 1.8, 1, 8, scaling(1.0, 0.9)), 8, -1e9);
    auto short_b = elastic(10, 1, 8, scaling(1.0, 0.9));
    DoublingResult wait = doubling_heuristic({nearly_done, short_b}, {0, 1}, 8, costs, 10.0);
    CPPUNIT_ASSERT_EQUAL(8, wait.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(0, wait.gpus[1]);
    CPPUNIT_ASSERT(contains(wait.reasons[0], "kept at 8: gain"));
    CPPUNIT_ASSERT(contains(wait.reasons[1], "waits: no GPU left after higher-priority jobs"));
  }

  void inelastic_jobs_keep_their_count() {
    DoublingJob fixed = elastic(1e6, 1, 3, scaling(1.0, 1.0));
    fixed.elastic = false;
    fixed.requested = 3;
    fixed.speed = curve({{3, 2.0}});
    auto other = elastic(10, 1, 4, scaling(1.0, 1.0));
    for (bool local : {false, true}) {
      DoublingResult r = doubling_heuristic({fixed, other}, {0, 1}, 16, ResizeCosts{}, 0,
                                            steps_of(local));
      CPPUNIT_ASSERT_EQUAL(3, r.gpus[0]);
      CPPUNIT_ASSERT_EQUAL(4, r.gpus[1]);
      CPPUNIT_ASSERT(contains(r.reasons[0], "requested 3 GPUs (inelastic)"));
    }
    CPPUNIT_ASSERT_EQUAL(3, optimal_static({fixed, other}, 16).gpus[0]);
    // A running inelastic job is never resized either.
    auto held = running(fixed, 3, -1e9);
    CPPUNIT_ASSERT_EQUAL(3, doubling_heuristic({held}, {0}, 64, ResizeCosts{}, 0).gpus[0]);
  }

  void jobs_that_do_not_fit_wait() {
    std::vector<DoublingJob> jobs = {elastic(100, 4, 8, scaling(1, 0.9)),
                                     elastic(100, 2, 8, scaling(1, 0.9)),
                                     elastic(1, 1, 8, scaling(1, 0.9)),
                                     elastic(100, 8, 8, scaling(1, 0.9))};
    DoublingResult r = doubling_heuristic(jobs, {3, 0, 1, 2}, 9, ResizeCosts{}, 0);
    CPPUNIT_ASSERT_EQUAL(8, r.gpus[3]);  // first in order
    CPPUNIT_ASSERT_EQUAL(0, r.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(0, r.gpus[1]);
    CPPUNIT_ASSERT_EQUAL(1, r.gpus[2]);  // first fit: the 1-GPU job still starts
    CPPUNIT_ASSERT(contains(r.reasons[0], "waits: needs 4 GPUs, only 1 left after higher-priority jobs"));
    CPPUNIT_ASSERT(contains(r.reasons[1], "waits"));
    CPPUNIT_ASSERT_DOUBLES_EQUAL(100 / (1.8 * 1.8 * 1.8) + 1, r.objective_s, 1e-9);
    // More than the whole cluster, and no speed at the minimum.
    auto huge = elastic(100, 16, 16, scaling(1, 0.9));
    auto unknown = elastic(100, 1, 4, curve({}));
    DoublingResult w = doubling_heuristic({huge, unknown}, {0, 1}, 8, ResizeCosts{}, 0);
    CPPUNIT_ASSERT_EQUAL(0, w.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(0, w.gpus[1]);
    CPPUNIT_ASSERT(contains(w.reasons[0], "more than the 8 available"));
    CPPUNIT_ASSERT(contains(w.reasons[1], "no known speed"));
    // The DP refuses an instance whose minimums do not fit.
    CPPUNIT_ASSERT(contains(what_of([&] { optimal_static(jobs, 9); }), "need 15 GPUs, only 9"));
  }

  void dropping_speed_curve_not_doubled_into() {
    // ElasticFlow resnet50-b64 on A100: 22.7 it/s at 32 GPUs, 21.0 at 64.
    ThroughputModel model(ProfileTable::load_csv(std::string(RINGSCHED_SRCDIR) +
                                                 "/data/profiles/elasticflow.csv"));
    auto speed = [&model](int n) { return model.iters_per_s("resnet50-b64", "a100", n); };
    CPPUNIT_ASSERT(speed(64) < speed(32));
    auto job = elastic(50000, 1, 64, speed);
    for (bool local : {false, true}) {
      DoublingResult r = doubling_heuristic({job}, {0}, 64, ResizeCosts{}, 0, steps_of(local));
      CPPUNIT_ASSERT_EQUAL(32, r.gpus[0]);
    }
    CPPUNIT_ASSERT_EQUAL(32, optimal_static({job}, 64).gpus[0]);
    // The same job running at 32 stays there.
    auto at32 = running(job, 32, -1e9);
    DoublingResult kept = doubling_heuristic({at32}, {0}, 64, ResizeCosts{}, 0);
    CPPUNIT_ASSERT_EQUAL(32, kept.gpus[0]);
    CPPUNIT_ASSERT(contains(kept.reasons[0], "64 GPUs would not be faster") ||
                   contains(kept.reasons[0], "keeps 32"));
  }

  void bad_input_throws_naming_job() {
    auto ok = elastic(100, 1, 4, scaling(1, 0.9));
    auto min_over_max = elastic(100, 8, 4, scaling(1, 0.9));
    auto odd_min = elastic(100, 3, 8, scaling(1, 0.9));
    auto nan_speed = elastic(100, 1, 4, [](int) { return std::nan(""); });
    auto no_speed = elastic(100, 1, 4, nullptr);
    auto negative_remaining = elastic(-5, 1, 4, scaling(1, 0.9));
    auto bad_running = running(elastic(100, 1, 4, scaling(1, 0.9)), 0, 0);
    auto pending_not_stoppable = ok;
    pending_not_stoppable.stoppable = false;
    ResizeCosts costs;
    auto heuristic = [&](std::vector<DoublingJob> jobs, int total) {
      return what_of([&] { doubling_heuristic(jobs, identity(jobs.size()), total, costs, 0); });
    };
    auto dp = [&](std::vector<DoublingJob> jobs, int total) {
      return what_of([&] { optimal_static(jobs, total); });
    };
    for (auto run : {std::function<std::string(std::vector<DoublingJob>, int)>(heuristic),
                     std::function<std::string(std::vector<DoublingJob>, int)>(dp)}) {
      CPPUNIT_ASSERT(contains(run({ok, min_over_max}, 16), "job 1: min_gpus 8 > max_gpus 4"));
      CPPUNIT_ASSERT(contains(run({odd_min}, 16), "job 0: min_gpus 3 of an elastic job must be a power of two"));
      CPPUNIT_ASSERT(contains(run({ok}, -1), "total_gpus must be >= 0, got -1"));
      CPPUNIT_ASSERT(contains(run({ok, ok, nan_speed}, 16), "job 2: speed on 1 GPUs is nan"));
      CPPUNIT_ASSERT(contains(run({no_speed}, 16), "job 0: no speed function"));
      CPPUNIT_ASSERT(contains(run({ok, negative_remaining}, 16), "job 1: remaining iterations"));
      CPPUNIT_ASSERT(contains(run({bad_running}, 16), "job 0: a running job needs current_gpus"));
      CPPUNIT_ASSERT(contains(run({ok, pending_not_stoppable}, 16), "job 1: only a running job can be marked not stoppable"));
    }
    CPPUNIT_ASSERT(contains(what_of([&] { doubling_heuristic({ok, ok}, {0}, 4, costs, 0); }),
                            "order lists 1 jobs"));
    CPPUNIT_ASSERT(contains(what_of([&] { doubling_heuristic({ok, ok}, {1, 1}, 4, costs, 0); }),
                            "order lists job 1 twice"));
    CPPUNIT_ASSERT(contains(what_of([&] { doubling_heuristic({ok}, {5}, 4, costs, 0); }),
                            "order[0] = 5 is not a job index"));
    ResizeCosts negative = costs;
    negative.restart_s = -1;
    CPPUNIT_ASSERT(contains(what_of([&] { doubling_heuristic({ok}, {0}, 4, negative, 0); }),
                            "restart cost must be finite and >= 0"));
  }

  void incremental_hysteresis_passes_the_hysteresis_cases() {
    // The hand-checked cases above, with step 3 forced onto the incremental path.
    auto job = running(elastic(2000, 1, 4, scaling(0.9, 0.85)), 2, -1e9);
    ResizeCosts costs;
    costs.restart_s = 300;
    costs.min_gain_multiple = 2;
    costs.min_interval_s = 0;
    DoublingResult kept = doubling_heuristic({job}, {0}, 4, costs, 0, incremental_steps());
    CPPUNIT_ASSERT_EQUAL(2, kept.gpus[0]);
    CPPUNIT_ASSERT(contains(kept.reasons[0], "kept at 2: gain 538 s < 2 x restart cost"));
    costs.restart_s = 250;
    DoublingResult grown = doubling_heuristic({job}, {0}, 4, costs, 0, incremental_steps());
    CPPUNIT_ASSERT_EQUAL(4, grown.gpus[0]);
    CPPUNIT_ASSERT(contains(grown.reasons[0], "grows 2->4: saves 538 s"));

    auto early = running(elastic(1e6, 1, 8, scaling(1.0, 0.9)), 2, 1000.0);
    CPPUNIT_ASSERT_EQUAL(2, doubling_heuristic({early}, {0}, 8, ResizeCosts{}, 1100.0,
                                               incremental_steps()).gpus[0]);
    CPPUNIT_ASSERT_EQUAL(8, doubling_heuristic({early}, {0}, 8, ResizeCosts{}, 1300.0,
                                               incremental_steps()).gpus[0]);

    // A shrink that admits a waiting job waits for the interval too (issue 14); after it, it goes
    // through; one that gains too little does not.
    auto a = running(elastic(1e5, 1, 8, scaling(1.0, 0.9)), 8, 0.0);
    auto b = elastic(1e5, 1, 8, scaling(1.0, 0.9));
    CPPUNIT_ASSERT_EQUAL(8, doubling_heuristic({a, b}, {0, 1}, 8, ResizeCosts{}, 10.0, incremental_steps()).gpus[0]);
    DoublingResult r = doubling_heuristic({a, b}, {0, 1}, 8, ResizeCosts{}, 400.0, incremental_steps());
    CPPUNIT_ASSERT_EQUAL(4, r.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(4, r.gpus[1]);
    CPPUNIT_ASSERT(contains(r.reasons[0], "shrinks 8->4"));
    DoublingResult roomy = doubling_heuristic({a, b}, {0, 1}, 16, ResizeCosts{}, 10.0, incremental_steps());
    CPPUNIT_ASSERT_EQUAL(8, roomy.gpus[0]);
    auto nearly_done = running(elastic(5 * 1.0 * 1.8 * 1.8 * 1.8, 1, 8, scaling(1.0, 0.9)), 8, -1e9);
    auto short_b = elastic(10, 1, 8, scaling(1.0, 0.9));
    DoublingResult wait = doubling_heuristic({nearly_done, short_b}, {0, 1}, 8, ResizeCosts{},
                                             10.0, incremental_steps());
    CPPUNIT_ASSERT_EQUAL(8, wait.gpus[0]);
    CPPUNIT_ASSERT_EQUAL(0, wait.gpus[1]);
    CPPUNIT_ASSERT(contains(wait.reasons[0], "kept at 8: gain"));
  }

  void incremental_gain_equals_replanned_gain_for_one_running_job() {
    // One running job among pending ones, paper steps: holding it changes the plan only by
    // where its GPUs go, which is what the incremental repair computes. The plans equal those
    // of full re-plans, and so do the gains reported in the reasons but for a few rounds where
    // the greedy's re-plan packs the GPUs differently.
    std::mt19937 rng(17);
    std::uniform_real_distribution<double> unit(0, 1);
    int resized = 0, same_text = 0;
    for (int trial = 0; trial < 300; ++trial) {
      int total;
      auto jobs = random_instance(rng, 2 + trial % 6, &total);
      int r = -1;
      for (size_t j = 0; j < jobs.size() && r < 0; ++j)
        if (jobs[j].elastic && jobs[j].max_gpus > jobs[j].min_gpus) r = static_cast<int>(j);
      if (r < 0) continue;
      jobs[r].remaining *= 20;
      int steps = 0;
      for (int n = jobs[r].min_gpus; 2 * n <= jobs[r].max_gpus; n *= 2) ++steps;
      jobs[r] = running(jobs[r], jobs[r].min_gpus << (rng() % (steps + 1)), -1e9);
      auto order = identity(jobs.size());
      DoublingResult exact = doubling_heuristic(jobs, order, total, ResizeCosts{}, 0, exact_steps(false));
      DoublingResult inc = doubling_heuristic(jobs, order, total, ResizeCosts{}, 0, incremental_steps(false));
      check_valid(jobs, total, inc);
      bool asked = exact.gpus[r] != jobs[r].current_gpus || contains(exact.reasons[r], "kept at");
      if (!asked) continue;
      ++resized;
      same_text += exact.reasons[r] == inc.reasons[r];
      CPPUNIT_ASSERT_EQUAL(exact.gpus[r], inc.gpus[r]);
    }
    CPPUNIT_ASSERT(resized >= 50);  // the property was exercised
    CPPUNIT_ASSERT(same_text >= resized * 19 / 20);  // measured: 182 of 185
  }

  void incremental_hysteresis_close_to_exact() {
    // Several running jobs: the incremental path pins in sweeps on repaired plans, so it may
    // pick differently from the exact path; its plans stay valid and their objective close.
    std::mt19937 rng(19);
    int compared = 0, equal = 0;
    double ratio_sum = 0;
    for (int trial = 0; trial < 200; ++trial) {
      int total;
      auto jobs = random_running_round(rng, 4 + trial % 12, &total);
      auto order = identity(jobs.size());
      DoublingResult exact = doubling_heuristic(jobs, order, total, ResizeCosts{}, 100.0, exact_steps());
      DoublingResult inc = doubling_heuristic(jobs, order, total, ResizeCosts{}, 100.0, incremental_steps());
      check_valid(jobs, total, inc);
      // A job resized just now (last_resize_s 0, interval 300 s) only shrinks to admit a job.
      for (size_t j = 0; j < jobs.size(); ++j)
        if (jobs[j].running && jobs[j].last_resize_s == 0.0 && inc.gpus[j] > jobs[j].current_gpus)
          CPPUNIT_FAIL("job resized 100 s ago grew on the incremental path");
      bool all_run_exact = true, all_run_inc = true;
      for (size_t j = 0; j < jobs.size(); ++j) {
        all_run_exact = all_run_exact && exact.gpus[j] > 0;
        all_run_inc = all_run_inc && inc.gpus[j] > 0;
      }
      equal += exact.gpus == inc.gpus;
      if (!all_run_exact || !all_run_inc) continue;
      ++compared;
      ratio_sum += inc.objective_s / exact.objective_s;
    }
    CPPUNIT_ASSERT(compared >= 100);
    CPPUNIT_ASSERT(equal >= 180);                 // same plan in most rounds (measured: 192)
    CPPUNIT_ASSERT(ratio_sum / compared < 1.005); // and within 0.5% on average (measured: 1.0000)
  }

  void large_round_is_fast_and_valid() {
    // 2,000 jobs on 10,000 GPUs, half of them running where a first plan put them: the round
    // that took minutes with a full re-plan per resized job. Generous bound: a loaded machine.
    std::mt19937 rng(23);
    std::uniform_real_distribution<double> unit(0, 1);
    ThroughputModel model(ProfileTable::load_csv(std::string(RINGSCHED_SRCDIR) +
                                                 "/data/profiles/gavel.csv"));
    std::vector<std::string> models;
    for (const std::string& m : model.table().models())
      if (model.knows(m, "v100") && model.iters_per_s(m, "v100", 1) > 0) models.push_back(m);
    const int total = 10000;
    std::vector<DoublingJob> jobs;
    for (int k = 0; k < 2000; ++k) {
      std::string m = models[rng() % models.size()];
      auto speed = [&model, m](int n) { return model.iters_per_s(m, "v100", n); };
      DoublingJob j = elastic(1e3 + 1e6 * unit(rng), 1, 1 << (rng() % 7), speed);
      if (k % 5 == 0) {
        j.elastic = false;
        j.requested = j.max_gpus;
      }
      jobs.push_back(j);
    }
    auto order = identity(jobs.size());
    DoublingResult first = doubling_heuristic(jobs, order, total, ResizeCosts{}, 0);
    check_valid(jobs, total, first);
    for (size_t j = 0; j < jobs.size(); j += 2)
      if (first.gpus[j] > 0) jobs[j] = running(jobs[j], first.gpus[j], -1000);
    auto t0 = std::chrono::steady_clock::now();
    DoublingResult steady = doubling_heuristic(jobs, order, total, ResizeCosts{}, 60);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    check_valid(jobs, total, steady);
    CPPUNIT_ASSERT(s < 2.0);
    // Nothing changed but 60 s: every running job keeps its size.
    for (size_t j = 0; j < jobs.size(); ++j)
      if (jobs[j].running) CPPUNIT_ASSERT_EQUAL(jobs[j].current_gpus, steady.gpus[j]);
  }

  // Three jobs on 8 GPUs: A scales poorly, B and C perfectly; the sum of run times is least with
  // A on 2 GPUs (909 + 2000 + 1000). A job that would miss its fair deadline (fair_time_s) gets
  // the GPUs left after admission first, up to its requested size, whatever the sum says.
  static std::vector<DoublingJob> fairness_instance(double fair_time_s) {
    std::vector<DoublingJob> jobs = {elastic(1000, 1, 8, scaling(1, 0.55)),
                                     elastic(4000, 1, 8, scaling(1, 1.0)),
                                     elastic(4000, 1, 8, scaling(1, 1.0))};
    jobs[0].fair_time_s = fair_time_s;
    jobs[0].fair_max_gpus = 8;
    return jobs;
  }

  void fairness_pass_serves_late_jobs_first() {
    auto order = identity(3);
    // No deadline, or one it meets on 1 GPU: the sum decides (A on 2).
    for (double fair : {std::numeric_limits<double>::infinity(), 1e6}) {
      DoublingResult r = doubling_heuristic(fairness_instance(fair), order, 8, no_hysteresis(0), 0);
      CPPUNIT_ASSERT_EQUAL(2, r.gpus[0]);
      CPPUNIT_ASSERT_EQUAL(0, r.fair_gpus[0]);
    }
    // Behind (run time 1000 s > 100 s) or already late (<= 0): A doubles while GPUs are left
    // after admission (5: 1 -> 2 -> 4; 8 would need 4 more), then B and C share what remains.
    for (double fair : {100.0, 0.0, -50.0}) {
      auto jobs = fairness_instance(fair);
      DoublingResult r = doubling_heuristic(jobs, order, 8, no_hysteresis(0), 0);
      check_valid(jobs, 8, r);
      CPPUNIT_ASSERT_EQUAL(4, r.gpus[0]);
      CPPUNIT_ASSERT_EQUAL(4, r.fair_gpus[0]);
      CPPUNIT_ASSERT(r.gpus[1] > 0 && r.gpus[2] > 0);  // it never keeps a job from starting
      CPPUNIT_ASSERT(contains(r.reasons[0], "fair share"));
    }
    // Only up to its requested size.
    auto jobs = fairness_instance(100);
    jobs[0].fair_max_gpus = 2;
    CPPUNIT_ASSERT_EQUAL(2, doubling_heuristic(jobs, order, 8, no_hysteresis(0), 0).gpus[0]);
  }

  // A running job the fairness pass grows takes GPUs from jobs that gain more per GPU, so the
  // plan's sum of run times rises: the min-gain rule would hold it at its size for good. Only the
  // interval rule holds it.
  void fairness_grow_not_held_for_small_gain() {
    ResizeCosts costs;  // restart 30 s, gain >= 2 x 30 s, interval 300 s
    auto order = identity(3);
    auto jobs = fairness_instance(100);
    jobs[0] = running(jobs[0], 1, -1000);
    DoublingResult r = doubling_heuristic(jobs, order, 8, costs, 0);
    check_valid(jobs, 8, r);
    CPPUNIT_ASSERT_EQUAL(4, r.gpus[0]);
    // Its reason names fairness, not a gain below the rule's (once "saves -N s, at least ...").
    CPPUNIT_ASSERT_MESSAGE(r.reasons[0], contains(r.reasons[0], "grows 1->4: it would finish later "
                                                               "than its fair share"));
    jobs[0].last_resize_s = -100;  // resized 100 s ago: held
    CPPUNIT_ASSERT_EQUAL(1, doubling_heuristic(jobs, order, 8, costs, 0).gpus[0]);
  }

  void starving_job_not_kept_waiting_for_a_small_gain() {
    // A holds all 8 GPUs with 100 s left; B needs 20 s on 1 GPU. Shrinking A to let B start
    // gains the plan less than 2 x restart cost, so A is held and B waits -- unless B is
    // starving (already past its fair finish) and shorter than A: then the hold is refused, A
    // shrinks and B starts, by both hysteresis rules. A starving B longer than A still waits,
    // and the minimum interval still holds A (a job that has just restarted cannot checkpoint).
    ResizeCosts costs;
    auto a = running(elastic(100 * 1.0 * 1.8 * 1.8 * 1.8, 1, 8, scaling(1.0, 0.9)), 8, -1e9);
    auto b = elastic(20, 1, 8, scaling(1.0, 0.9));
    for (int exact_max : {16, 0}) {
      DoublingSteps steps;
      steps.exact_hysteresis_max_jobs = exact_max;
      DoublingResult waits = doubling_heuristic({a, b}, {0, 1}, 8, costs, 10.0, steps);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(waits.reasons[0], 8, waits.gpus[0]);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(waits.reasons[1], 0, waits.gpus[1]);
      auto starving = b;
      starving.starving = true;
      DoublingResult r = doubling_heuristic({a, starving}, {0, 1}, 8, costs, 10.0, steps);
      check_valid({a, starving}, 8, r);
      CPPUNIT_ASSERT_MESSAGE(r.reasons[0], r.gpus[0] < 8);
      CPPUNIT_ASSERT_MESSAGE(r.reasons[1], r.gpus[1] > 0);
      CPPUNIT_ASSERT_MESSAGE(r.reasons[0], contains(r.reasons[0], "a shorter job that is late"));
      auto nearly_done = a;
      nearly_done.remaining = 10 * 1.0 * 1.8 * 1.8 * 1.8;  // 10 s left: B (20 s) is longer
      DoublingResult after = doubling_heuristic({nearly_done, starving}, {0, 1}, 8, costs, 10.0, steps);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(after.reasons[0], 8, after.gpus[0]);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(after.reasons[1], 0, after.gpus[1]);
      auto recent = a;
      recent.last_resize_s = -100;  // resized 110 s ago
      DoublingResult held = doubling_heuristic({recent, starving}, {0, 1}, 8, costs, 10.0, steps);
      CPPUNIT_ASSERT_EQUAL(8, held.gpus[0]);
      CPPUNIT_ASSERT_EQUAL(0, held.gpus[1]);
      CPPUNIT_ASSERT_MESSAGE(held.reasons[0], contains(held.reasons[0], "minimum interval 300 s"));
    }
  }

  void gain_hold_does_not_count_on_gpus_of_a_job_within_its_interval() {
    // 8 GPUs. G runs on 4 (resized long ago, 100 s of work left there); R, fixed-size, started
    // on the other 4 just 10 s ago; S, late, needs 20 s on 1 GPU. The plan shrinks G so that S
    // starts. Holding G at 4 would stop R, which the interval forbids: so the hold is the one that
    // keeps S waiting, and is refused. When the hold's plan was valued with R's GPUs free, G was
    // held for a gain of 4.7 s, R was then held by the interval, and S waited (both ways step 3
    // runs).
    ResizeCosts costs;
    auto linear = [](int n) { return 0.9 * n + 0.1; };
    auto s = elastic(20, 1, 8, linear);
    s.starving = true;
    auto g = running(elastic(100, 1, 8, linear), 4, -1e9);
    auto r = running(elastic(50, 4, 4, linear), 4, 0.0);
    r.elastic = false;
    for (int exact_max : {16, 0}) {
      DoublingSteps steps;
      steps.exact_hysteresis_max_jobs = exact_max;
      DoublingResult res = doubling_heuristic({s, g, r}, {0, 1, 2}, 8, costs, 10.0, steps);
      check_valid({s, g, r}, 8, res);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(res.reasons[2], 4, res.gpus[2]);
      CPPUNIT_ASSERT_MESSAGE(res.reasons[0], res.gpus[0] > 0);
      CPPUNIT_ASSERT_MESSAGE(res.reasons[1], res.gpus[1] < 4);
      CPPUNIT_ASSERT_MESSAGE(res.reasons[1], contains(res.reasons[1], "a shorter job that is late"));
      // Not late: the hold, which costs the plan little, keeps G at 4, and S waits.
      auto on_time = s;
      on_time.starving = false;
      DoublingResult held = doubling_heuristic({on_time, g, r}, {0, 1, 2}, 8, costs, 10.0, steps);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(held.reasons[1], 4, held.gpus[1]);
      CPPUNIT_ASSERT_EQUAL_MESSAGE(held.reasons[0], 0, held.gpus[0]);
      CPPUNIT_ASSERT_MESSAGE(held.reasons[1], contains(held.reasons[1], "kept at 4: "));
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(DoublingTest);
