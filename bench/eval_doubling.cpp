// SPDX-License-Identifier: GPL-2.0-or-later
// eval_doubling: how far the doubling heuristic lands from the exact optimum of the static
// problem (DESIGN 3.2), on random instances built from the real throughput tables.
//
// Instances cycle over three pools: ElasticFlow A100, ElasticFlow T4 (data/profiles/
// elasticflow.csv) and Gavel (data/profiles/gavel.csv; one of k80, p100, v100 per instance).
// Each has 2..30 jobs (at most one per GPU), models drawn from the pool's table, min 1 GPU, max a
// power of two up to 64, remaining iterations log-uniform in [1e3, 1e6], 10% inelastic jobs of 1,
// 2, 4 or 8 GPUs, on a cluster of 8..256 GPUs. Speeds come from ThroughputModel (measured points,
// ring-model fit beyond them). Every job is pending, so the static problem is the whole problem.
// Prints a progress line, a table per pool and overall, and a JSON summary (jansson). Times are
// CPU time of the process (see CpuClock).
//
// --scale times doubling_heuristic alone at planner sizes instead (issue 2 point 7: 64, 1,000
// and 10,000 GPUs x 100, 1,000 and 2,000 jobs), on jobs drawn as bench/bench_planner draws them
// (Gavel models, each on one of k80/p100/v100; min 1, max 1..64; 20% inelastic at their maximum):
// a first call with every job pending, then every other job that got GPUs is made running at
// that size and the steady-state call (60 s later) is timed, paper steps and with the local
// improvement pass. Where every job ran in the first call, the first plan's gap to the DP is
// printed too. A second round, the burst, times a harder case for step 3: the first half of the
// jobs planned alone and all running, then the second half arriving at once.
#include <jansson.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

#include "ringsched/doubling.h"
#include "doubling_steps.h"
#include "ringsched/throughput.h"

using namespace ringsched;

namespace {

// CPU time of this (single-threaded) process: on a machine shared with other work the wall clock
// also counts time spent waiting for a core, which swamps the sub-millisecond calls timed here.
struct CpuClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<CpuClock>;
  static constexpr bool is_steady = true;
  static time_point now() {
    timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return time_point(duration(static_cast<rep>(t.tv_sec) * 1000000000 + t.tv_nsec));
  }
};

struct Pool {
  std::string name;
  const ThroughputModel* model;
  std::vector<std::string> types;  // one drawn per instance
};

struct Stats {
  int instances = 0;
  double paper_sum = 0, paper_worst = 0, ours_sum = 0, ours_worst = 0;
  int paper_optimal = 0, ours_optimal = 0;
  double dp_us = 0, paper_us = 0, ours_us = 0, ours_us_max = 0;
  void add(double paper_gap, double ours_gap, double dp, double p, double o) {
    ++instances;
    paper_sum += paper_gap;
    ours_sum += ours_gap;
    paper_worst = std::max(paper_worst, paper_gap);
    ours_worst = std::max(ours_worst, ours_gap);
    paper_optimal += paper_gap < 1e-9;
    ours_optimal += ours_gap < 1e-9;
    dp_us += dp;
    paper_us += p;
    ours_us += o;
    ours_us_max = std::max(ours_us_max, o);
  }
  double mean(double sum) const { return instances ? sum / instances : 0; }
};

double micros_since(CpuClock::time_point t0);

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// --scale: milliseconds per doubling_heuristic call at planner sizes (see the top comment).
int run_scale(const ThroughputModel& gavel, const std::vector<int>& gpu_sizes,
              const std::vector<int>& job_counts, int repeats, unsigned seed) {
  const std::vector<std::string> types = {"k80", "p100", "v100"};
  std::vector<std::pair<std::string, std::string>> curves;  // (model, type) with a speed
  for (const std::string& m : gavel.table().models())
    for (const std::string& t : types)
      if (gavel.knows(m, t) && gavel.iters_per_s(m, t, 1) > 0) curves.emplace_back(m, t);
  ResizeCosts costs;  // defaults: 30 s restart, gain > 2 x restart, 300 s interval
  std::printf("# doubling_heuristic alone: median of %d calls, ms; default ResizeCosts\n", repeats);
  std::printf("%8s %6s %9s %9s %10s %10s %9s %9s %8s %8s %8s %9s %9s %10s %10s %8s %8s\n", "gpus",
              "jobs", "first_ms", "dp_ms", "paper_ms", "ours_ms", "knap_ms", "auto_ms", "knap%",
              "running", "resized", "paper%", "ours%", "bpaper_ms", "bours_ms", "brunning",
              "bresized");
  for (int total : gpu_sizes)
    for (int n_jobs : job_counts) {
      std::mt19937_64 rng(seed + 7919u * total + 104729u * n_jobs);
      std::uniform_real_distribution<double> unit(0, 1);
      std::vector<DoublingJob> jobs(n_jobs);
      for (DoublingJob& job : jobs) {
        const auto& [model, type] = curves[rng() % curves.size()];
        const ThroughputModel* tm = &gavel;
        std::string m = model, t = type;
        job.speed = [tm, m, t](int n) { return tm->iters_per_s(m, t, n); };
        job.remaining = (1e3 + unit(rng) * (1e6 - 1e3)) * (0.1 + 0.9 * unit(rng));
        job.min_gpus = 1;
        job.max_gpus = std::min(total, 1 << (rng() % 7));
        job.elastic = unit(rng) >= 0.2;
        job.requested = job.max_gpus;
        if (job.elastic) job.max_gpus = std::max(1, job.max_gpus);
      }
      // Policy order: shortest remaining run time on one GPU first.
      std::vector<int> order(jobs.size());
      std::vector<double> key(jobs.size());
      for (size_t j = 0; j < jobs.size(); ++j) {
        order[j] = static_cast<int>(j);
        double v = jobs[j].speed(1);
        key[j] = v > 0 ? jobs[j].remaining / v : 1e300;
      }
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key[a] < key[b]; });
      double now = 100000;
      auto t0 = CpuClock::now();
      DoublingResult first = doubling_heuristic(jobs, order, total, costs, now);
      double first_ms = micros_since(t0) / 1000;
      // Gap of the first (all pending) plan to the optimum, where the DP's problem is the same.
      bool all_ran = std::all_of(first.gpus.begin(), first.gpus.end(), [](int g) { return g > 0; });
      double dp_ms = -1, ours_gap = -1, paper_gap = -1;
      if (all_ran) {
        t0 = CpuClock::now();
        DoublingResult dp = optimal_static(jobs, total);
        dp_ms = micros_since(t0) / 1000;
        DoublingResult paper =
            doubling_heuristic(jobs, order, total, costs, now, DoublingSteps::paper());
        ours_gap = 100 * (first.objective_s / dp.objective_s - 1);
        paper_gap = 100 * (paper.objective_s / dp.objective_s - 1);
      }
      int running = 0;
      for (size_t j = 0; j < jobs.size(); j += 2)
        if (first.gpus[j] > 0) {
          jobs[j].running = true;
          jobs[j].current_gpus = first.gpus[j];
          jobs[j].last_resize_s = now - 1000;
          ++running;
        }
      now += 60;
      std::vector<double> paper_ms, ours_ms, knap_ms, auto_ms;
      DoublingSteps always_knapsack;
      always_knapsack.exact_max_cells = 1e18;
      double ours_obj = 0, knap_obj = 0;
      int resized = 0;
      for (int r = 0; r < repeats; ++r) {
        t0 = CpuClock::now();
        DoublingResult p = doubling_heuristic(jobs, order, total, costs, now, DoublingSteps::paper());
        paper_ms.push_back(micros_since(t0) / 1000);
        t0 = CpuClock::now();
        DoublingResult o = doubling_heuristic(jobs, order, total, costs, now, DoublingSteps::heuristic());
        ours_ms.push_back(micros_since(t0) / 1000);
        // Step 2 by the knapsack whatever its size, and the default rule's choice.
        t0 = CpuClock::now();
        DoublingResult k = doubling_heuristic(jobs, order, total, costs, now, always_knapsack);
        knap_ms.push_back(micros_since(t0) / 1000);
        t0 = CpuClock::now();
        doubling_heuristic(jobs, order, total, costs, now);
        auto_ms.push_back(micros_since(t0) / 1000);
        ours_obj = o.objective_s;
        knap_obj = k.objective_s;
        if (r == 0)
          for (size_t j = 0; j < jobs.size(); ++j)
            resized += jobs[j].running && o.gpus[j] != jobs[j].current_gpus;
      }
      // Burst: the first half of the jobs planned alone and all running where that plan put
      // them (resized long ago); then the second half arrives, and most running jobs should
      // give GPUs back -- the round where step 3 has the most resizes to judge.
      std::vector<DoublingJob> early(jobs.begin(), jobs.begin() + n_jobs / 2);
      for (DoublingJob& job : early) job.running = false;
      std::vector<int> early_order;
      for (int j : order)
        if (j < n_jobs / 2) early_order.push_back(j);
      DoublingResult early_plan = doubling_heuristic(early, early_order, total, costs, now);
      std::vector<DoublingJob> burst = jobs;
      int burst_running = 0;
      for (int j = 0; j < n_jobs; ++j) {
        burst[j].running = j < n_jobs / 2 && early_plan.gpus[j] > 0;
        burst[j].current_gpus = burst[j].running ? early_plan.gpus[j] : 0;
        burst[j].last_resize_s = now - 1000;
        burst_running += burst[j].running;
      }
      std::vector<double> burst_paper_ms, burst_ours_ms;
      int burst_resized = 0;
      for (int r = 0; r < repeats; ++r) {
        t0 = CpuClock::now();
        doubling_heuristic(burst, order, total, costs, now, DoublingSteps::paper());
        burst_paper_ms.push_back(micros_since(t0) / 1000);
        t0 = CpuClock::now();
        DoublingResult o = doubling_heuristic(burst, order, total, costs, now, DoublingSteps::heuristic());
        burst_ours_ms.push_back(micros_since(t0) / 1000);
        if (r == 0)
          for (int j = 0; j < n_jobs; ++j)
            burst_resized += burst[j].running && o.gpus[j] != burst[j].current_gpus;
      }
      std::printf("%8d %6d %9.2f %9.2f %10.2f %10.2f %9.2f %9.2f %8.3f %8d %8d ", total, n_jobs,
                  first_ms, dp_ms, median(paper_ms), median(ours_ms), median(knap_ms),
                  median(auto_ms), 100 * (knap_obj / ours_obj - 1), running, resized);
      if (all_ran)
        std::printf("%9.3f %9.3f", paper_gap, ours_gap);
      else
        std::printf("%9s %9s", "-", "-");
      std::printf(" %10.2f %10.2f %8d %8d\n", median(burst_paper_ms), median(burst_ours_ms),
                  burst_running, burst_resized);
      std::fflush(stdout);
    }
  std::printf("(first: the all-pending call with the local improvement pass; paper/ours: the\n"
              " steady-state call, paper steps / greedy with the local improvement; knap: step 2 by\n"
              " the knapsack whatever its size; auto: the default, the knapsack where its rule says\n"
              " it is cheaper (the crossover: auto should track min(ours, knap)); knap%%: objective of\n"
              " knap vs ours (negative: the knapsack's plan is better);\n"
              " resized: running jobs the plan resizes; %%: gap of the first plan\n"
              " to the DP optimum, '-' where some job waits and the DP's problem differs;\n"
              " b...: the burst round, half the jobs running as planned alone, the rest arriving)\n");
  return 0;
}

void usage(FILE* out) {
  std::fprintf(out,
               "usage: eval_doubling [--seed N] [--instances N] [--profiles DIR]\n"
               "       eval_doubling --scale [--gpus N,..] [--jobs N,..] [--repeats N]\n"
               "Gap of the doubling heuristic (paper steps, and with our local improvement) to\n"
               "the exact DP optimum on random instances from the ElasticFlow and Gavel tables.\n"
               "  --seed N        random seed (default 1)\n"
               "  --instances N   number of instances, 1..1000000 (default 1000)\n"
               "  --show N        also print instance N: jobs, speeds and the three plans\n"
               "  --profiles DIR  folder with elasticflow.csv and gavel.csv\n"
               "                  (default: the source tree's data/profiles)\n"
               "  --per-instance  also print one line per instance: objectives of dp, paper, ours\n"
               "                  (%%.17g, to compare two builds exactly)\n"
               "  --scale         instead: time doubling_heuristic alone at planner sizes\n"
               "  --gpus N,N,...  cluster sizes for --scale (default 64,1000,10000)\n"
               "  --jobs N,N,...  job counts for --scale (default 100,1000,2000)\n"
               "  --repeats N     timed calls per --scale cell, median printed (default 3)\n"
               "  --help          this text\n");
}

long parse_long(const std::string& option, const char* text, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    std::fprintf(stderr, "eval_doubling: %s needs an integer in %ld..%ld, got '%s'\n",
                 option.c_str(), lo, hi, text);
    std::exit(2);
  }
  return v;
}

// A comma-separated list of integers, each in lo..hi.
std::vector<int> parse_list(const std::string& option, const char* text, long lo, long hi) {
  std::vector<int> out;
  std::string s = text;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string item = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    out.push_back(static_cast<int>(parse_long(option, item.c_str(), lo, hi)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

double micros_since(CpuClock::time_point t0) {
  return std::chrono::duration<double, std::micro>(CpuClock::now() - t0).count();
}

json_t* stats_json(const Stats& s) {
  return json_pack("{s:i, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:f, s:f, s:f}", "instances",
                   s.instances, "paper_mean_gap_pct", 100 * s.mean(s.paper_sum),
                   "paper_worst_gap_pct", 100 * s.paper_worst, "ours_mean_gap_pct",
                   100 * s.mean(s.ours_sum), "ours_worst_gap_pct", 100 * s.ours_worst,
                   "paper_optimal", s.paper_optimal, "ours_optimal", s.ours_optimal, "dp_mean_us",
                   s.mean(s.dp_us), "paper_mean_us", s.mean(s.paper_us), "ours_mean_us",
                   s.mean(s.ours_us), "ours_max_us", s.ours_us_max);
}

void print_row(const std::string& name, const Stats& s) {
  std::printf("%-18s %6d %8.3f %8.3f %8.3f %8.3f %7d %7d %9.1f %9.1f %9.1f\n", name.c_str(),
              s.instances, 100 * s.mean(s.paper_sum), 100 * s.paper_worst, 100 * s.mean(s.ours_sum),
              100 * s.ours_worst, s.paper_optimal, s.ours_optimal, s.mean(s.dp_us),
              s.mean(s.paper_us), s.mean(s.ours_us));
}

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  long instances = 1000;
  std::string profiles = std::string(RINGSCHED_SRCDIR) + "/data/profiles";
  long show = -1;
  bool scale = false;
  bool per_instance = false;
  long repeats = 3;
  std::vector<int> scale_gpus = {64, 1000, 10000}, scale_jobs = {100, 1000, 2000};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      usage(stdout);
      return 0;
    }
    if (a == "--scale") {
      scale = true;
      continue;
    }
    if (a == "--per-instance") {
      per_instance = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "eval_doubling: unknown option or missing value: %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
    if (a == "--seed")
      seed = static_cast<unsigned>(parse_long(a, argv[++i], 0, 4294967295L));
    else if (a == "--instances")
      instances = parse_long(a, argv[++i], 1, 1000000);
    else if (a == "--show")
      show = parse_long(a, argv[++i], 0, 1000000);
    else if (a == "--profiles")
      profiles = argv[++i];
    else if (a == "--gpus")
      scale_gpus = parse_list(a, argv[++i], 1, 1000000);
    else if (a == "--jobs")
      scale_jobs = parse_list(a, argv[++i], 1, 100000);
    else if (a == "--repeats")
      repeats = parse_long(a, argv[++i], 1, 1000);
    else {
      std::fprintf(stderr, "eval_doubling: unknown option %s\n", a.c_str());
      usage(stderr);
      return 2;
    }
  }

  ThroughputModel elasticflow, gavel;
  try {
    elasticflow = ThroughputModel(ProfileTable::load_csv(profiles + "/elasticflow.csv"));
    gavel = ThroughputModel(ProfileTable::load_csv(profiles + "/gavel.csv"));
  } catch (const InputError& e) {
    std::fprintf(stderr, "eval_doubling: %s\n", e.what());
    return 1;
  }
  if (scale) return run_scale(gavel, scale_gpus, scale_jobs, static_cast<int>(repeats), seed);
  std::vector<Pool> pools = {{"elasticflow-a100", &elasticflow, {"a100"}},
                             {"elasticflow-t4", &elasticflow, {"t4"}},
                             {"gavel", &gavel, {"k80", "p100", "v100"}}};

  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<Stats> per_pool(pools.size());
  Stats overall;
  struct Worst { double gap = -1; long instance = 0; std::string pool, type; int gpus = 0, jobs = 0; };
  Worst worst_paper, worst_ours;
  ResizeCosts costs;  // no job runs yet, so restart cost and hysteresis do not enter
  auto started = CpuClock::now();

  for (long inst = 0; inst < instances; ++inst) {
    const Pool& pool = pools[inst % pools.size()];
    std::string type = pool.types[rng() % pool.types.size()];
    std::vector<std::string> models;
    for (const std::string& m : pool.model->table().models())
      if (pool.model->knows(m, type) && pool.model->iters_per_s(m, type, 1) > 0) models.push_back(m);
    int total = 8 + static_cast<int>(rng() % 249);
    int n_jobs = 2 + static_cast<int>(rng() % (std::min(30, total) - 1));
    std::vector<DoublingJob> jobs;
    int need = 0;
    while (static_cast<int>(jobs.size()) < n_jobs) {
      DoublingJob job;
      std::string model = models[rng() % models.size()];
      const ThroughputModel* tm = pool.model;
      job.speed = [tm, model, type](int n) { return tm->iters_per_s(model, type, n); };
      job.remaining = std::exp(std::log(1e3) + unit(rng) * (std::log(1e6) - std::log(1e3)));
      job.min_gpus = 1;
      job.max_gpus = 1 << (rng() % 7);
      if (unit(rng) < 0.1) {
        job.elastic = false;
        job.requested = 1 << (rng() % 4);
        job.max_gpus = std::max(job.max_gpus, job.requested);
      }
      int base = job.elastic ? job.min_gpus : job.requested;
      // Keep the static problem feasible (every later job needs at least 1 GPU): redraw.
      int later = n_jobs - static_cast<int>(jobs.size()) - 1;
      if (need + base + later > total) continue;
      need += base;
      jobs.push_back(std::move(job));
    }
    std::vector<int> order(jobs.size());
    for (size_t j = 0; j < order.size(); ++j) order[j] = static_cast<int>(j);

    auto t0 = CpuClock::now();
    DoublingResult dp = optimal_static(jobs, total);
    double dp_us = micros_since(t0);
    t0 = CpuClock::now();
    DoublingResult paper = doubling_heuristic(jobs, order, total, costs, 0, DoublingSteps::paper());
    double paper_us = micros_since(t0);
    t0 = CpuClock::now();
    DoublingResult ours = doubling_heuristic(jobs, order, total, costs, 0, DoublingSteps::heuristic());
    double ours_us = micros_since(t0);
    for (const DoublingResult* r : {&paper, &ours})
      for (int g : r->gpus)
        if (g <= 0) {
          std::fprintf(stderr, "eval_doubling: instance %ld: a job waits although all fit\n", inst);
          return 1;
        }

    double paper_gap = paper.objective_s / dp.objective_s - 1;
    double ours_gap = ours.objective_s / dp.objective_s - 1;
    if (paper_gap < -1e-9 || ours_gap < -1e-9) {
      std::fprintf(stderr, "eval_doubling: instance %ld: heuristic below the optimum (%g, %g)\n",
                   inst, paper_gap, ours_gap);
      return 1;
    }
    if (per_instance)
      std::printf("instance %ld %.17g %.17g %.17g\n", inst, dp.objective_s, paper.objective_s,
                  ours.objective_s);
    if (inst == show) {
      std::printf("instance %ld: %s/%s, %d GPUs; objective dp %.1f s, paper %.1f s, ours %.1f s\n",
                  inst, pool.name.c_str(), type.c_str(), total, dp.objective_s, paper.objective_s,
                  ours.objective_s);
      for (size_t j = 0; j < jobs.size(); ++j) {
        std::printf("  job %zu: R %.0f, %s %d..%d; dp %d, paper %d, ours %d; speeds", j,
                    jobs[j].remaining, jobs[j].elastic ? "elastic" : "inelastic", jobs[j].min_gpus,
                    jobs[j].elastic ? jobs[j].max_gpus : jobs[j].requested, dp.gpus[j],
                    paper.gpus[j], ours.gpus[j]);
        for (int n = 1; n <= 64; n *= 2) std::printf(" %d:%.3g", n, jobs[j].speed(n));
        std::printf("\n    paper: %s\n    ours: %s\n", paper.reasons[j].c_str(),
                    ours.reasons[j].c_str());
      }
    }
    paper_gap = std::max(0.0, paper_gap);
    ours_gap = std::max(0.0, ours_gap);
    per_pool[inst % pools.size()].add(paper_gap, ours_gap, dp_us, paper_us, ours_us);
    overall.add(paper_gap, ours_gap, dp_us, paper_us, ours_us);
    if (paper_gap > worst_paper.gap)
      worst_paper = {paper_gap, inst, pool.name, type, total, static_cast<int>(jobs.size())};
    if (ours_gap > worst_ours.gap)
      worst_ours = {ours_gap, inst, pool.name, type, total, static_cast<int>(jobs.size())};
    if ((inst + 1) % 100 == 0 || inst + 1 == instances)
      std::fprintf(stderr, "eval_doubling: %ld/%ld instances, mean gap paper %.3f%% ours %.3f%%\n",
                   inst + 1, instances, 100 * overall.mean(overall.paper_sum),
                   100 * overall.mean(overall.ours_sum));
  }
  double wall_s = micros_since(started) / 1e6;

  std::printf("\nGap to the exact DP optimum (sum of remaining run times), seed %u, %ld instances\n",
              seed, instances);
  std::printf("%-18s %6s %8s %8s %8s %8s %7s %7s %9s %9s %9s\n", "pool", "inst", "paper%",
              "paperMax", "ours%", "oursMax", "paperOK", "oursOK", "dp_us", "paper_us", "ours_us");
  for (size_t p = 0; p < pools.size(); ++p) print_row(pools[p].name, per_pool[p]);
  print_row("overall", overall);
  std::printf("(paper: DESIGN 3.2 steps 1-2; ours: plus the local improvement pass; %%: mean gap,\n"
              " Max: worst gap, OK: instances at the optimum, _us: mean microseconds per call)\n");
  std::printf("worst paper instance: #%ld %s/%s, %d GPUs, %d jobs, gap %.3f%%\n", worst_paper.instance,
              worst_paper.pool.c_str(), worst_paper.type.c_str(), worst_paper.gpus, worst_paper.jobs,
              100 * worst_paper.gap);
  std::printf("worst ours instance:  #%ld %s/%s, %d GPUs, %d jobs, gap %.3f%%\n", worst_ours.instance,
              worst_ours.pool.c_str(), worst_ours.type.c_str(), worst_ours.gpus, worst_ours.jobs,
              100 * worst_ours.gap);
  bool goal = overall.mean(overall.ours_sum) <= 0.01 && overall.ours_worst <= 0.05;
  std::printf("goal (mean <= 1%%, worst <= 5%%): %s\n", goal ? "met" : "NOT met");

  json_t* pools_json = json_object();
  for (size_t p = 0; p < pools.size(); ++p)
    json_object_set_new(pools_json, pools[p].name.c_str(), stats_json(per_pool[p]));
  json_t* summary = json_pack("{s:s, s:I, s:I, s:o, s:o, s:b, s:f}", "eval", "doubling", "seed",
                              static_cast<json_int_t>(seed), "instances",
                              static_cast<json_int_t>(instances), "pools", pools_json, "overall",
                              stats_json(overall), "goal_met", goal, "wall_s", wall_s);
  char* text = json_dumps(summary, JSON_COMPACT);
  std::printf("%s\n", text);
  std::free(text);
  json_decref(summary);
  return 0;
}
