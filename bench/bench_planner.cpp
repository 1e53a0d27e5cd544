// SPDX-License-Identifier: GPL-2.0-or-later
// Decision cost of one planning pass as clusters and job counts grow (issue 2, point 7; issue 15,
// point 3). Clusters of 64, 1,000 and 10,000 GPUs with 3 to 5 GPU types, nodes of 1, 2, 4 and 8
// GPUs mixed as on real sites (--nodes uniform: 4 per node below 1,000 GPUs, else 8); 100, 1,000
// and 2,000 jobs. --cluster FILE times a site's own layout (ringsim's cluster CSV) instead; its
// types without a profile get the v100 curves.
// Speeds come from the real Gavel table (k80, p100, v100); the extra types t4 and a100 used for
// the 4- and 5-type clusters are the v100 curves scaled by a fixed factor (synthetic, only so
// that the planner sees more types; this program measures time, not schedule quality).
// Each cell: a first pass places every job from scratch (all waiting), then half the jobs are made
// running on the GPUs the plan gave them, and the timed passes plan that steady state.
//  - cold: the cell's first pass, timed once, with its page faults and kernel time. In the first
//    cell it is the process's first use of most of its heap (one fault per fresh 4 KiB page):
//    slurmctld's planning thread pays that once after a start, not on every burst.
//  - first: the same all-waiting snapshot planned again, median of the repeats: what the
//    planning thread meets when a burst of jobs arrives at a running daemon.
//  - steady: the steady state, median of the repeats.
// Wall and CPU milliseconds both: on a shared machine the wall time includes waiting for a core.
// --plans FILE writes every decision of each cell's first pass and first steady pass, numbers
// exact: two builds decide the same iff their files are equal (what a pure speed-up must keep).
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sys/resource.h>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ringsched/planner.h"

using namespace ringsched;

namespace {

struct Options {
  std::vector<int> gpus = {64, 1000, 10000};
  std::vector<int> jobs = {100, 1000, 2000};
  int repeats = 5;
  unsigned seed = 1;
  std::string policy = "combined";
  int samples = -1;
  double late_factor = -1;  // PlannerConfig::late_factor (< 0: its default)
  double replace_slower = -1;  // PlannerConfig::replace_slower (< 0: its default)
  std::string profiles = std::string(RINGSCHED_SRCDIR) + "/data/profiles/gavel.csv";
  std::string cluster;  // a cluster CSV instead of the generated clusters
  std::string plans;    // where to write the plans' decisions ("": nowhere)
  bool mixed_nodes = true;
};

void usage() {
  std::printf(
      "usage: bench_planner [--gpus N,N,...] [--jobs N,N,...] [--repeats R] [--seed S]\n"
      "                     [--policy static|doubling|hetero|combined] [--samples K]\n"
      "                     [--profiles FILE] [--cluster FILE] [--nodes mixed|uniform]\n"
      "                     [--plans FILE] [--late-factor X] [--replace-slower X]\n"
      "Prints wall and CPU milliseconds per planning pass for each (cluster size, job count): the\n"
      "cell's first (cold) pass with its page faults and kernel ms, the same all-waiting snapshot\n"
      "planned again (first, median of R) and the steady state (median of R), and the growth\n"
      "between sizes.\n"
      "Default: 64,1000,10000 GPUs x 100,1000,2000 jobs, combined policy, nodes of 1, 2, 4 and 8\n"
      "GPUs mixed. --cluster FILE: that cluster (node,gpu_type,gpus rows, as ringsim reads them)\n"
      "instead of --gpus; types without a profile run as v100.\n"
      "--replace-slower X: combined places again running jobs X times slower than on their fastest\n"
      "type (default 4; 0: off), which changes how many jobs the placement weighs.\n"
      "--late-factor X: combined's starvation bound (default 1.5; 0: off), which changes how many\n"
      "jobs the synthetic snapshots run.\n"
      "--plans FILE: every decision of each cell's first and first steady pass, numbers exact\n"
      "(compare two builds' files to check that a change keeps the decisions).\n");
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    char* end;
    long v = std::strtol(p, &end, 10);
    if (end == p || v <= 0) {
      std::fprintf(stderr, "bench_planner: bad list '%s'\n", s);
      std::exit(2);
    }
    out.push_back(static_cast<int>(v));
    p = *end == ',' ? end + 1 : end;
  }
  return out;
}

// `gpus` GPUs of `types` types. Mixed: node sizes cycle 8, 8, 4, 4, 2, 1 (the shape of a real
// 6,212-GPU site with nodes of 1 to 8 GPUs), the last node taking what is left.
Cluster make_cluster(int gpus, int types, const std::vector<std::string>& type_names, bool mixed) {
  Cluster c;
  static const int kCycle[] = {8, 8, 4, 4, 2, 1};
  int uniform = gpus >= 1000 ? 8 : 4;
  for (int i = 0, left = gpus; left > 0 || i < types; ++i) {
    Node n;
    n.gpu_type = type_names[i % types];
    n.name = n.gpu_type + "-" + std::to_string(i);
    n.gpus = std::max(1, std::min(left, mixed ? kCycle[(i / types) % 6] : uniform));
    left -= n.gpus;
    c.nodes.push_back(n);
  }
  return c;
}

// Every decision of a plan, numbers exact (the time it took left out).
void write_plan(std::FILE* f, const char* pass, const Plan& plan) {
  std::fprintf(f, "%s %s objective %.17g\n", pass, plan.policy.c_str(), plan.objective_s);
  for (const JobPlan& j : plan.jobs) {
    std::fprintf(f, "%s order %d runs %d gpus %d resize %d spb %.17g speed %.17g finish %.17g",
                 j.job_id.c_str(), j.order, j.runs ? 1 : 0, j.gpus, j.resize ? 1 : 0, j.spb_depth,
                 j.predicted_iters_per_s, j.predicted_finish_s);
    for (const auto& [type, n] : j.gpus_by_type) std::fprintf(f, " %s:%d", type.c_str(), n);
    for (const Placement& p : j.placement)
      std::fprintf(f, " %s/%s/%d", p.node.c_str(), p.gpu_type.c_str(), p.gpus);
    std::fprintf(f, " | %s\n", j.reason.c_str());
  }
}

double cpu_ms() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

// Page faults so far (minor: fresh heap pages the kernel zeroes) and the process's kernel CPU
// time. A pass that touches memory the process never used pays one fault per 4 KiB page: about
// 1 us on bare metal, 5-15 us on some VMs, where they are a third of a cold pass (its sys_ms).
struct Usage {
  long faults;
  double sys_ms;
};
Usage resources() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return {u.ru_minflt + u.ru_majflt, u.ru_stime.tv_sec * 1e3 + u.ru_stime.tv_usec / 1e3};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_planner: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      usage();
      return 0;
    } else if (a == "--gpus") {
      o.gpus = parse_list(next());
    } else if (a == "--jobs") {
      o.jobs = parse_list(next());
    } else if (a == "--repeats") {
      o.repeats = std::max(1, std::atoi(next()));
    } else if (a == "--seed") {
      o.seed = static_cast<unsigned>(std::strtoul(next(), nullptr, 10));
    } else if (a == "--policy") {
      o.policy = next();
    } else if (a == "--samples") {
      o.samples = std::atoi(next());
    } else if (a == "--late-factor") {
      const char* v = next();
      char* end = nullptr;
      o.late_factor = std::strtod(v, &end);
      if (end == v || *end || !(o.late_factor >= 0) || !std::isfinite(o.late_factor)) {
        std::fprintf(stderr, "bench_planner: --late-factor takes a number >= 0, not %s\n", v);
        return 2;
      }
    } else if (a == "--replace-slower") {
      const char* v = next();
      char* end = nullptr;
      o.replace_slower = std::strtod(v, &end);
      if (end == v || *end || !(o.replace_slower == 0 || o.replace_slower >= 1) || !std::isfinite(o.replace_slower)) {
        std::fprintf(stderr, "bench_planner: --replace-slower takes 0 or a number >= 1, not %s\n", v);
        return 2;
      }
    } else if (a == "--profiles") {
      o.profiles = next();
    } else if (a == "--cluster") {
      o.cluster = next();
    } else if (a == "--plans") {
      o.plans = next();
    } else if (a == "--nodes") {
      std::string v = next();
      if (v != "mixed" && v != "uniform") {
        std::fprintf(stderr, "bench_planner: --nodes takes mixed or uniform, not %s\n", v.c_str());
        return 2;
      }
      o.mixed_nodes = v == "mixed";
    } else {
      std::fprintf(stderr, "bench_planner: unknown option %s\n", a.c_str());
      usage();
      return 2;
    }
  }
  try {
    ProfileTable table = ProfileTable::load_csv(o.profiles);
    // Synthetic types: the v100 curves scaled (t4 and a100 for the 4- and 5-type clusters; a
    // site's types without a profile at 1.0).
    std::vector<ProfilePoint> v100;
    for (const ProfilePoint& p : table.points())
      if (p.gpu_type == "v100") v100.push_back(p);
    auto add_scaled_v100 = [&](const std::string& type, double factor) {
      for (ProfilePoint q : v100) {
        q.gpu_type = type;
        q.iters_per_s *= factor;
        table.add(q);
      }
    };
    add_scaled_v100("t4", 0.55);
    add_scaled_v100("a100", 1.7);
    std::vector<std::string> type_names = {"v100", "p100", "k80", "t4", "a100"};
    Cluster site;
    if (!o.cluster.empty()) {
      site = Cluster::load_csv(o.cluster);
      o.gpus = {site.total_gpus()};
      type_names = site.types();
      std::vector<std::string> profiled = table.types();
      for (const std::string& t : type_names)
        if (std::find(profiled.begin(), profiled.end(), t) == profiled.end()) add_scaled_v100(t, 1.0);
    }
    std::vector<std::string> models = table.models();

    PlannerConfig cfg;
    cfg.policy = parse_policy(o.policy);
    cfg.seed = o.seed;
    if (o.samples >= 0) cfg.samples = o.samples;
    if (o.late_factor >= 0) cfg.late_factor = o.late_factor;
    if (o.replace_slower >= 0) cfg.replace_slower = o.replace_slower;
    Planner planner(ThroughputModel(table), cfg);
    std::FILE* plans = nullptr;
    if (!o.plans.empty() && !(plans = std::fopen(o.plans.c_str(), "w")))
      throw std::runtime_error("cannot write " + o.plans + ": " + std::strerror(errno));

    std::printf("# planner decision cost: policy %s, K=%d samples, median of %d passes, %s\n",
                o.policy.c_str(), cfg.samples, o.repeats,
                !o.cluster.empty() ? o.cluster.c_str()
                                   : o.mixed_nodes ? "nodes of 1-8 GPUs" : "uniform nodes");
    std::printf("%8s %6s %6s %6s %9s %8s %8s %10s %10s %10s %10s %8s %8s\n", "gpus", "nodes",
                "types", "jobs", "cold_ms", "faults", "sys_ms", "first_ms", "first_cpu", "steady_ms",
                "steady_cpu", "running", "waiting");
    std::vector<std::vector<double>> table_ms(o.gpus.size(), std::vector<double>(o.jobs.size()));
    for (size_t gi = 0; gi < o.gpus.size(); ++gi) {
      int types = !o.cluster.empty() ? static_cast<int>(type_names.size())
                  : o.gpus[gi] >= 10000 ? 5 : o.gpus[gi] >= 1000 ? 4 : 3;
      for (size_t ji = 0; ji < o.jobs.size(); ++ji) {
        std::mt19937 rng(o.seed + 7919u * gi + 104729u * ji);
        Snapshot snap;
        snap.cluster = !o.cluster.empty() ? site : make_cluster(o.gpus[gi], types, type_names, o.mixed_nodes);
        snap.now_s = 100000;
        std::uniform_int_distribution<size_t> pick(0, models.size() - 1);
        std::uniform_real_distribution<double> iters(1e3, 1e6);
        std::uniform_int_distribution<int> maxexp(0, 6);
        for (int k = 0; k < o.jobs[ji]; ++k) {
          Job j;
          j.id = std::to_string(k + 1);
          j.user = "u" + std::to_string(k % 17);
          j.model = models[pick(rng)];
          j.iterations = iters(rng);
          j.remaining = j.iterations * std::uniform_real_distribution<double>(0.1, 1.0)(rng);
          j.min_gpus = 1;
          j.max_gpus = 1 << maxexp(rng);
          j.requested_gpus = j.max_gpus;
          j.elastic = k % 5 != 0;
          j.submit_s = snap.now_s - std::uniform_real_distribution<double>(0, 50000)(rng);
          snap.jobs.push_back(j);
        }
        auto t0 = std::chrono::steady_clock::now();
        Usage u0 = resources();
        Plan first = planner.plan(snap);
        Usage u1 = resources();
        long cold_faults = u1.faults - u0.faults;
        double cold_sys = u1.sys_ms - u0.sys_ms;
        double cold_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
        std::vector<double> first_ms, first_cpu;
        for (int r = 0; r < o.repeats; ++r) {
          auto t1 = std::chrono::steady_clock::now();
          double c1 = cpu_ms();
          planner.plan(snap);
          first_cpu.push_back(cpu_ms() - c1);
          first_ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
        }
        std::string cell = std::to_string(o.gpus[gi]) + "x" + std::to_string(o.jobs[ji]);
        if (plans) write_plan(plans, (cell + " first").c_str(), first);
        // Steady state: every other planned job is now running where the plan put it.
        int running = 0;
        for (size_t k = 0; k < snap.jobs.size(); ++k) {
          const JobPlan& jp = first.jobs[k];
          if (!jp.runs || k % 2) continue;
          Job& j = snap.jobs[k];
          j.state = JobState::Running;
          j.current_gpus = jp.gpus;
          for (const Placement& p : jp.placement) j.gpus_by_node[p.node] += p.gpus;
          j.current_type = jp.gpus_by_type.size() == 1 ? jp.gpus_by_type.begin()->first : "";
          j.last_resize_s = snap.now_s - 1000;
          ++running;
        }
        snap.now_s += 60;
        std::vector<double> ms, cpu;
        int waiting = 0;
        for (int r = 0; r < o.repeats; ++r) {
          auto t1 = std::chrono::steady_clock::now();
          double c1 = cpu_ms();
          Plan p = planner.plan(snap);
          cpu.push_back(cpu_ms() - c1);
          ms.push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
          if (r == 0) {
            for (const JobPlan& jp : p.jobs) waiting += !jp.runs;
            if (plans) write_plan(plans, (cell + " steady").c_str(), p);
          }
        }
        table_ms[gi][ji] = median(cpu);
        std::printf("%8d %6zu %6d %6d %9.2f %8ld %8.1f %10.2f %10.2f %10.2f %10.2f %8d %8d\n",
                    snap.cluster.total_gpus(), snap.cluster.nodes.size(), types, o.jobs[ji], cold_ms,
                    cold_faults, cold_sys, median(first_ms), median(first_cpu), median(ms),
                    table_ms[gi][ji], running, waiting);
        std::fflush(stdout);
      }
    }
    std::printf("# growth of steady-state CPU time (ratio to the previous size)\n");
    for (size_t ji = 0; ji < o.jobs.size(); ++ji)
      for (size_t gi = 1; gi < o.gpus.size(); ++gi)
        std::printf("#   %d jobs: %d -> %d GPUs (x%.1f): time x%.2f\n", o.jobs[ji], o.gpus[gi - 1],
                    o.gpus[gi], double(o.gpus[gi]) / o.gpus[gi - 1],
                    table_ms[gi][ji] / std::max(1e-9, table_ms[gi - 1][ji]));
    for (size_t gi = 0; gi < o.gpus.size(); ++gi)
      for (size_t ji = 1; ji < o.jobs.size(); ++ji)
        std::printf("#   %d GPUs: %d -> %d jobs (x%.1f): time x%.2f\n", o.gpus[gi], o.jobs[ji - 1],
                    o.jobs[ji], double(o.jobs[ji]) / o.jobs[ji - 1],
                    table_ms[gi][ji] / std::max(1e-9, table_ms[gi][ji - 1]));
    if (plans && std::fclose(plans) != 0)
      throw std::runtime_error("cannot write " + o.plans + ": " + std::strerror(errno));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_planner: %s\n", e.what());
    return 1;
  }
  return 0;
}
