// SPDX-License-Identifier: GPL-2.0-or-later
// eval_placement: how close the heterogeneity-aware placement comes to the exact MIP optima, and
// how much less time it takes, over a sweep of cluster sizes and shapes. Random instances built
// from the real Gavel profiles (k80, p100, v100; the 5-type shapes add t4 and a100 as scaled v100
// curves, as bench_planner does): per size (GPUs/jobs), per shape (number of GPU types x GPUs per
// node), per seed, with some nodes partly held by other jobs and some jobs running already.
//  - uniform links (intra = inter: locality costs nothing): against the MIP aggregated by GPU
//    type (our result evaluated without locality, as that MIP sees it);
//  - server links (intra 100, inter 12.5 GB/s): against the node-level MIP, which optimises the
//    same objective as ours, locality included.
// Every MIP runs under a time limit (GLPK's tm_lim). Where it proves optimality the gap is
// measured against its optimum; where it does not, against the best proven bound: GLPK's bound,
// and on server links also the type-level MIP with the locality each type's fewest nodes cannot
// avoid (a lower bound on the node-level optimum), whichever is higher. The table says which.
// "ours" is place_hetero (the product); "market" is place_market, the seed paper's scheme.
// Prints progress, a table per size and shape, a summary per size and MIP, and a JSON summary.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "ringsched/placement.h"

using namespace ringsched;

namespace {

const char* kUsage =
    "usage: eval_placement [--sizes G:J,...] [--shapes TxN,...] [--seeds N] [--seed N]\n"
    "                      [--mip-time-limit S] [--samples K] [--repeats R] [--running F]\n"
    "                      [--no-market] [--no-large] [--worst] [--profiles CSV]\n"
    "  Size sweep of the placement against the GLPK MIP optima: for every size (G GPUs, J jobs),\n"
    "  cluster shape (T GPU types, N GPUs per node) and seed, a random instance from the Gavel\n"
    "  profiles with uniform links (against the type-level MIP) and with server links, intra 100\n"
    "  and inter 12.5 GB/s (against the node-level MIP). Prints ours (place_hetero) and the\n"
    "  market (place_market) ms, the MIP ms, whether it proved optimality, its bound, and the\n"
    "  gaps (mean and worst); then the time of 1,000-GPU/100-job and 10,000-GPU/2,000-job rounds.\n"
    "  --sizes LIST       G:J pairs (default 16:6,32:8,64:12,128:24,256:48,512:48)\n"
    "  --shapes LIST      TxN pairs, T in 2..5 types, N GPUs per node (default 2x4,2x8,3x4,3x8,5x4,5x8)\n"
    "  --seeds N          instances per size, shape and link setting (default 1)\n"
    "  --seed N           first random seed (default 1)\n"
    "  --mip-time-limit S seconds per MIP solve (default 5)\n"
    "  --samples K        K of place_hetero and place_market (default 64, the planner's)\n"
    "  --repeats R        time our solves as the median of R runs (default 3)\n"
    "  --running F        share of jobs already running, with a restart cost (default 0.25)\n"
    "  --no-market        do not run the market (place_market)\n"
    "  --no-large         skip the 1,000- and 10,000-GPU timings\n"
    "  --worst            print the instance with the worst gap of each size\n"
    "  --profiles CSV     profile table (default data/profiles/gavel.csv of the source tree)\n";

const std::vector<std::string> kTypes = {"k80", "p100", "v100", "t4", "a100"};

struct Size {
  int gpus, jobs;
};
struct Shape {
  int types, node;
};

// The Gavel table plus the synthetic t4 (0.55x v100) and a100 (1.7x v100) of the 5-type shapes.
ThroughputModel load_model(const std::string& path) {
  ProfileTable table = ProfileTable::load_csv(path);
  std::vector<ProfilePoint> base = table.points();
  for (const auto& [name, factor] : {std::pair<const char*, double>{"t4", 0.55}, {"a100", 1.7}})
    for (const ProfilePoint& p : base)
      if (p.gpu_type == "v100") {
        ProfilePoint q = p;
        q.gpu_type = name;
        q.iters_per_s *= factor;
        table.add(q);
      }
  return ThroughputModel(table);
}

// Which types a shape of t types uses: the three Gavel types, two of them picked at random for
// 2-type shapes, plus t4 and a100 for 5 (4: plus t4).
std::vector<std::string> shape_types(int t, std::mt19937& rng) {
  std::vector<std::string> out;
  if (t == 2) {
    int drop = static_cast<int>(rng() % 3);
    for (int i = 0; i < 3; ++i)
      if (i != drop) out.push_back(kTypes[i]);
  } else {
    out.assign(kTypes.begin(), kTypes.begin() + t);
  }
  return out;
}

// G GPUs split at random over the types (each at least one node), in nodes of `node` GPUs (the
// last node of a type may be smaller); one node in five is partly held by other jobs.
Cluster make_cluster(int gpus, const Shape& shape, const std::vector<std::string>& types,
                     std::mt19937& rng) {
  int T = static_cast<int>(types.size());
  std::vector<double> w(T);
  double sum = 0;
  for (double& x : w) sum += x = 0.5 + std::uniform_real_distribution<double>(0, 1)(rng);
  std::vector<int> per(T);
  int left = gpus;
  for (int t = 0; t < T; ++t) {
    per[t] = t + 1 == T ? left : std::max(shape.node, static_cast<int>(gpus * w[t] / sum));
    per[t] = std::max(1, std::min(per[t], left - (T - 1 - t)));
    left -= per[t];
  }
  Cluster c;
  for (int t = 0; t < T; ++t)
    for (int k = 0, rest = per[t]; rest > 0; ++k) {
      Node n;
      n.name = types[t] + "-" + std::to_string(k);
      n.gpu_type = types[t];
      n.gpus = std::min(shape.node, rest);
      rest -= n.gpus;
      if (rng() % 5 == 0) n.free_gpus = static_cast<int>(rng() % n.gpus);
      c.nodes.push_back(n);
    }
  return c;
}

// J jobs of random Gavel models, 1e3-1e5 iterations, up to 1-32 GPUs (16 on 5 types, whose
// MIPs enumerate every mix), one in five limited to some of the types; a share `running` of them
// running already, on GPUs the free-GPU allocator picks for a random allowed type and size.
std::vector<PlacementJob> make_jobs(int count, const Cluster& cluster,
                                    const std::vector<std::string>& types,
                                    const ThroughputModel& model, double running,
                                    std::mt19937& rng) {
  const std::vector<std::string> models = model.table().models();
  int cap = std::min(types.size() > 3 ? 16 : 32, std::max(1, cluster.usable_gpus() / 2));
  std::vector<int> free(cluster.nodes.size());
  for (size_t n = 0; n < free.size(); ++n) free[n] = cluster.nodes[n].usable();
  std::vector<PlacementJob> jobs;
  for (int i = 0; i < count; ++i) {
    PlacementJob j;
    j.model = models[rng() % models.size()];
    j.remaining = std::exp(std::uniform_real_distribution<double>(std::log(1e3), std::log(1e5))(rng));
    j.min_gpus = 1;
    int sizes = 1;
    while ((1 << sizes) <= cap) ++sizes;
    j.max_gpus = 1 << (rng() % sizes);
    if (types.size() > 1 && rng() % 5 == 0) {
      size_t keep = 1 + rng() % (types.size() - 1);
      std::vector<std::string> some = types;
      std::shuffle(some.begin(), some.end(), rng);
      j.allowed_types.assign(some.begin(), some.begin() + static_cast<long>(keep));
    }
    if (std::uniform_real_distribution<double>(0, 1)(rng) < running) {
      // On one allowed type: the smallest node that holds it, else the fullest first.
      const std::string& t = j.allowed_types.empty() ? types[rng() % types.size()]
                                                     : j.allowed_types[rng() % j.allowed_types.size()];
      int want = 1 << (rng() % sizes);
      std::vector<int> ids;
      int have = 0;
      for (size_t n = 0; n < free.size(); ++n)
        if (cluster.nodes[n].gpu_type == t && free[n] > 0) {
          ids.push_back(static_cast<int>(n));
          have += free[n];
        }
      if (have >= want && want <= j.max_gpus) {
        std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return free[a] > free[b]; });
        int single = -1;
        for (int n : ids)
          if (free[n] >= want && (single < 0 || free[n] < free[single])) single = n;
        if (single >= 0) ids = {single};
        for (int n : ids) {
          int x = std::min(want, free[n]);
          if (x <= 0) break;
          j.current[cluster.nodes[n].name] = x;
          free[n] -= x;
          want -= x;
        }
        j.running = true;
      }
    }
    jobs.push_back(j);
  }
  return jobs;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

PlacementResult timed(int repeats, const std::function<PlacementResult()>& solve) {
  PlacementResult first = solve();
  std::vector<double> ms = {first.solve_ms};
  for (int r = 1; r < repeats; ++r) ms.push_back(solve().solve_ms);
  first.solve_ms = median(ms);
  return first;
}

bool all_run(const PlacementResult& r) {
  for (const JobPlacement& jp : r.jobs)
    if (jp.total <= 0) return false;
  return !r.jobs.empty();
}

// The instance and both placements, a job per line.
std::string describe(const PlacementProblem& p, const PlacementResult& ours,
                     const PlacementResult& opt) {
  std::ostringstream s;
  s << "  cluster:";
  for (const Node& n : p.cluster.nodes) s << " " << n.name << "(" << n.usable() << "/" << n.gpus << ")";
  s << "\n";
  char line[256];
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const PlacementJob& job = p.jobs[j];
    std::string allowed;
    for (const std::string& t : job.allowed_types) allowed += (allowed.empty() ? "" : ",") + t;
    std::snprintf(line, sizeof line, "  job %2zu %-20s %7.0f it, max %2d, %-9s%s", j,
                  job.model.c_str(), job.remaining, job.max_gpus,
                  allowed.empty() ? "any" : allowed.c_str(), job.running ? " running" : "");
    s << line;
    for (const PlacementResult* r : {&ours, &opt}) {
      s << (r == &ours ? " | ours" : " | MIP");
      if (j >= r->jobs.size()) continue;
      for (const auto& [node, g] : r->jobs[j].gpus_by_node) s << " " << node << ":" << g;
      std::snprintf(line, sizeof line, " %.0f s", r->jobs[j].finish_s);
      s << line;
    }
    s << "\n";
  }
  return s.str();
}

// Gaps and times of one (size, shape, link setting), or of a whole size.
struct Cell {
  std::vector<double> gaps, market_gaps, ours_ms, market_ms, mip_ms, mip_gap;
  std::vector<double> speedups;  // MIP ms / ours ms where the MIP took over 1 s
  // Not measured: the MIPs' problem has no solution (some job cannot run at its smallest size),
  // or no MIP bound within the time limit. Failed: ours leaves a job waiting where the MIPs'
  // problem has a solution (every job runs): counted apart, never hidden among the skips.
  int proven = 0, against_bound = 0, infeasible = 0, no_bound = 0, ours_waits = 0;
  double worst = -INFINITY;
  std::string worst_text;

  void merge(const Cell& o) {
    for (auto [to, from] : {std::pair{&gaps, &o.gaps}, {&market_gaps, &o.market_gaps},
                            {&ours_ms, &o.ours_ms}, {&market_ms, &o.market_ms},
                            {&mip_ms, &o.mip_ms}, {&mip_gap, &o.mip_gap}, {&speedups, &o.speedups}})
      to->insert(to->end(), from->begin(), from->end());
    proven += o.proven;
    against_bound += o.against_bound;
    infeasible += o.infeasible;
    no_bound += o.no_bound;
    ours_waits += o.ours_waits;
    if (o.worst > worst) {
      worst = o.worst;
      worst_text = o.worst_text;
    }
  }
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? NAN : s / v.size();
}
double maxv(const std::vector<double>& v) {
  return v.empty() ? NAN : *std::max_element(v.begin(), v.end());
}
double minv(const std::vector<double>& v) {
  return v.empty() ? NAN : *std::min_element(v.begin(), v.end());
}

struct Options {
  std::vector<Size> sizes = {{16, 6}, {32, 8}, {64, 12}, {128, 24}, {256, 48}, {512, 48}};
  std::vector<Shape> shapes = {{2, 4}, {2, 8}, {3, 4}, {3, 8}, {5, 4}, {5, 8}};
  int seeds = 1, samples = 64, repeats = 3;
  unsigned seed = 1;
  double mip_limit_s = 5, running = 0.25;
  bool market = true, large = true, show_worst = false;
  std::string profiles = std::string(RINGSCHED_SRCDIR) + "/data/profiles/gavel.csv";
};

// One instance on one link setting into `cell`.
void evaluate(const Options& o, const ThroughputModel& model, const Size& size, const Shape& shape,
              unsigned seed, bool server, Cell& cell) {
  std::mt19937 rng(seed);
  PlacementProblem p;
  p.model = &model;
  std::vector<std::string> types = shape_types(shape.types, rng);
  p.cluster = make_cluster(size.gpus, shape, types, rng);
  for (Node& n : p.cluster.nodes) n.inter_gbps = server ? 12.5 : n.intra_gbps;
  p.jobs = make_jobs(size.jobs, p.cluster, types, model, o.running, rng);
  PlacementResult ours = timed(o.repeats, [&] { return place_hetero(p, {}, o.samples, seed); });
  PlacementResult market;
  if (o.market) market = place_market(p, {}, o.samples, seed);
  PlacementResult mip;
  try {
    mip = server ? optimal_placement_node_mip(p, o.mip_limit_s)
                 : optimal_placement_mip(p, o.mip_limit_s);
  } catch (const InputError& e) {  // not every job can run: the MIPs' problem has no solution
    std::fprintf(stderr, "  seed %u: %s; skipped\n", seed, e.what());
    ++cell.infeasible;
    return;
  }
  double ref = mip.objective_s;
  if (!mip.optimal) {
    ref = mip.bound_s;
    if (server) {  // the type-level optimum with unavoidable locality bounds the node level
      PlacementResult lower =
          optimal_placement_mip(p, o.mip_limit_s, TypeLevelCosts::UnavoidableLocality);
      ref = std::max(ref, lower.optimal ? lower.objective_s : lower.bound_s);
    }
    ++cell.against_bound;
  } else {
    ++cell.proven;
  }
  if (!all_run(ours)) {
    std::fprintf(stderr, "  seed %u: a job waits in ours, every job runs in the MIP's problem: "
                 "FAILED\n", seed);
    ++cell.ours_waits;
    return;
  }
  if (!(ref > 0) || !std::isfinite(ref)) {
    std::fprintf(stderr, "  seed %u: no MIP bound within the time limit; skipped\n", seed);
    ++cell.no_bound;
    return;
  }
  auto value = [&](const PlacementResult& r) {
    return server ? r.objective_s : placement_objective_without_locality(p, r);
  };
  double gap = 100.0 * (value(ours) - ref) / ref;
  cell.gaps.push_back(gap);
  cell.ours_ms.push_back(ours.solve_ms);
  cell.mip_ms.push_back(mip.solve_ms);
  if (std::isfinite(mip.objective_s)) cell.mip_gap.push_back(100.0 * (mip.objective_s - ref) / ref);
  if (mip.solve_ms > 1000) cell.speedups.push_back(mip.solve_ms / std::max(ours.solve_ms, 1e-6));
  if (o.market && all_run(market)) {
    cell.market_gaps.push_back(100.0 * (value(market) - ref) / ref);
    cell.market_ms.push_back(market.solve_ms);
  }
  if (gap > cell.worst) {
    cell.worst = gap;
    char head[160];
    std::snprintf(head, sizeof head, "%d GPUs, %d jobs, %d types x %d, %s links, seed %u: gap %.3f%%\n",
                  size.gpus, size.jobs, shape.types, shape.node, server ? "server" : "uniform",
                  seed, gap);
    cell.worst_text = head + describe(p, ours, mip);
  }
}

void print_row(const char* size, const char* shape, const char* links, const Cell& c, bool market) {
  std::printf("%-8s %-6s %-8s %3zu %9.2f %9.2f %10.1f %3d/%-3d %8.3f%% %8.3f%%", size, shape, links,
              c.gaps.size(), median(c.ours_ms), maxv(c.ours_ms), maxv(c.mip_ms), c.proven,
              c.proven + c.against_bound, mean(c.gaps), maxv(c.gaps));
  std::printf(" %8.3f%%", maxv(c.mip_gap));
  if (market) std::printf(" %8.3f%% %8.3f%% %9.2f", mean(c.market_gaps), maxv(c.market_gaps), median(c.market_ms));
  std::printf("\n");
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, sep);) out.push_back(item);
  return out;
}

int parse_int(const std::string& s, const char* what) {
  size_t used = 0;
  long v = 0;
  try {
    v = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != s.size() || v < 0 || v > 1000000) {
    std::fprintf(stderr, "eval_placement: %s: '%s' is not a number\n", what, s.c_str());
    std::exit(2);
  }
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "eval_placement: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    auto pairs = [&](char sep) {
      std::vector<std::pair<int, int>> out;
      for (const std::string& item : split(value(), ',')) {
        std::vector<std::string> two = split(item, sep);
        if (two.size() != 2) {
          std::fprintf(stderr, "eval_placement: %s: '%s' is not N%cM\n", a.c_str(), item.c_str(), sep);
          std::exit(2);
        }
        out.push_back({parse_int(two[0], a.c_str()), parse_int(two[1], a.c_str())});
      }
      return out;
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--sizes") {
      o.sizes.clear();
      for (auto [g, j] : pairs(':')) o.sizes.push_back({g, j});
    } else if (a == "--shapes") {
      o.shapes.clear();
      for (auto [t, n] : pairs('x')) o.shapes.push_back({t, n});
    } else if (a == "--seeds") {
      o.seeds = parse_int(value(), "--seeds");
    } else if (a == "--seed") {
      o.seed = static_cast<unsigned>(parse_int(value(), "--seed"));
    } else if (a == "--mip-time-limit") {
      o.mip_limit_s = parse_int(value(), "--mip-time-limit");
    } else if (a == "--samples") {
      o.samples = parse_int(value(), "--samples");
    } else if (a == "--repeats") {
      o.repeats = parse_int(value(), "--repeats");
    } else if (a == "--running") {
      o.running = std::atof(value().c_str());
    } else if (a == "--no-market") {
      o.market = false;
    } else if (a == "--no-large") {
      o.large = false;
    } else if (a == "--worst") {
      o.show_worst = true;
    } else if (a == "--profiles") {
      o.profiles = value();
    } else {
      std::fprintf(stderr, "eval_placement: unknown option %s\n%s", a.c_str(), kUsage);
      std::exit(2);
    }
  }
  bool ok = o.seeds >= 1 && o.samples >= 1 && o.repeats >= 1 && o.repeats <= 100 &&
            o.mip_limit_s >= 1 && o.running >= 0 && o.running <= 1 && !o.sizes.empty() &&
            !o.shapes.empty();
  for (const Size& s : o.sizes) ok = ok && s.gpus >= 4 && s.gpus <= 4096 && s.jobs >= 1 && s.jobs <= s.gpus;
  for (const Shape& s : o.shapes) ok = ok && s.types >= 2 && s.types <= 5 && s.node >= 1 && s.node <= 64;
  if (!ok) {
    std::fprintf(stderr, "eval_placement: --seeds, --samples, --repeats (<= 100) and "
                         "--mip-time-limit must be at least 1, --running in [0, 1]; sizes need "
                         "4..4096 GPUs and 1..G jobs; shapes 2..5 types and 1..64 GPUs per node\n");
    std::exit(2);
  }
  return o;
}

// Planning-size rounds (timing only): 1,000 GPUs / 100 jobs and 10,000 GPUs / 2,000 jobs, three
// types in 8-GPU nodes, server links, jobs of 1 to 64 GPUs.
void time_large(const Options& o, const ThroughputModel& model) {
  for (auto [gpus, jobs] : {std::pair{1000, 100}, {10000, 2000}}) {
    std::mt19937 rng(o.seed);
    PlacementProblem p;
    p.model = &model;
    std::vector<std::string> types(kTypes.begin(), kTypes.begin() + 3);
    p.cluster = make_cluster(gpus, Shape{3, 8}, types, rng);
    for (Node& n : p.cluster.nodes) n.free_gpus = -1;
    p.jobs = make_jobs(jobs, p.cluster, types, model, 0.25, rng);
    for (PlacementJob& j : p.jobs) j.max_gpus = std::max(j.max_gpus, 1 << (rng() % 7));
    std::vector<int> seed = placement_seed_counts(p);
    PlacementResult ours = timed(o.repeats, [&] { return place_hetero(p, seed, o.samples, o.seed); });
    std::printf("%d GPUs, %d jobs: place_hetero %.2f ms (work %ld of budget %ld", gpus, jobs,
                ours.solve_ms, ours.work, placement_work_budget(jobs, 3, o.samples));
    if (std::isfinite(ours.bound_s))  // known when every count vector was a column
      std::printf(", %.3f%% above its bound", 100.0 * (ours.objective_s - ours.bound_s) / ours.bound_s);
    std::printf(")");
    if (o.market) {
      PlacementResult market = timed(o.repeats, [&] { return place_market(p, seed, o.samples, o.seed); });
      std::printf(", place_market %.2f ms (objective %+.3f%% vs ours)", market.solve_ms,
                  100.0 * (market.objective_s - ours.objective_s) / ours.objective_s);
    }
    std::printf("\n");
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  ThroughputModel model;
  try {
    model = load_model(o.profiles);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_placement: %s\n", e.what());
    return 1;
  }
  std::printf("Placement vs the GLPK MIPs: %d seed(s) from %u per size, shape and link setting; "
              "K = %d; MIP time limit %.0f s; %.0f%% of jobs running; ours timed as the median "
              "of %d runs\n",
              o.seeds, o.seed, o.samples, o.mip_limit_s, 100 * o.running, o.repeats);
  std::printf("gap: ours vs the MIP's optimum where proven (proven k/n), else vs the best proven "
              "bound; mip gap: the MIP's own\nsolution vs that reference (0: optimal); uniform "
              "links: type-level MIP; server links: node-level MIP\n\n");
  std::printf("%-8s %-6s %-8s %3s %9s %9s %10s %7s %9s %9s %9s", "size", "shape", "links", "n",
              "ours ms", "ours max", "MIP ms max", "proven", "gap mean", "gap worst", "mip gap");
  if (o.market) std::printf(" %9s %9s %9s", "mkt mean", "mkt worst", "mkt ms");
  std::printf("\n");
  std::vector<Cell> by_size(o.sizes.size());
  std::vector<std::array<Cell, 2>> by_mip(o.sizes.size());  // [size][server links]
  Cell all;
  for (size_t si = 0; si < o.sizes.size(); ++si) {
    const Size& size = o.sizes[si];
    char size_name[32];
    std::snprintf(size_name, sizeof size_name, "%d/%d", size.gpus, size.jobs);
    for (const Shape& shape : o.shapes) {
      char shape_name[16];
      std::snprintf(shape_name, sizeof shape_name, "%dx%d", shape.types, shape.node);
      for (bool server : {false, true}) {
        Cell cell;
        for (int s = 0; s < o.seeds; ++s) {
          unsigned seed = o.seed + static_cast<unsigned>(s) * 7919u +
                          static_cast<unsigned>(size.gpus * 31 + shape.types * 7 + shape.node);
          std::fprintf(stderr, "[%s %s %s] seed %u\n", size_name, shape_name,
                       server ? "server" : "uniform", seed);
          evaluate(o, model, size, shape, seed, server, cell);
        }
        print_row(size_name, shape_name, server ? "server" : "uniform", cell, o.market);
        std::fflush(stdout);
        by_size[si].merge(cell);
        by_mip[si][server].merge(cell);
      }
    }
    all.merge(by_size[si]);
  }
  std::printf("\nPer size and MIP (all shapes; type: uniform links vs the type-level MIP, node: "
              "server links vs the node-level MIP):\n");
  std::printf("%-8s %-4s %3s %9s %9s %10s %10s %9s %9s %12s", "size", "MIP", "n", "ours ms",
              "ours max", "MIP ms med", "MIP ms max", "gap mean", "gap worst", "MIP/ours >1s");
  if (o.market) std::printf(" %9s %9s", "mkt mean", "mkt worst");
  std::printf("\n");
  for (size_t si = 0; si < o.sizes.size(); ++si)
    for (bool server : {false, true}) {
      const Cell& c = by_mip[si][server];
      char name[32];
      std::snprintf(name, sizeof name, "%d/%d", o.sizes[si].gpus, o.sizes[si].jobs);
      std::printf("%-8s %-4s %3zu %9.2f %9.2f %10.1f %10.1f %8.3f%% %8.3f%% %11.0fx", name,
                  server ? "node" : "type", c.gaps.size(), median(c.ours_ms), maxv(c.ours_ms),
                  median(c.mip_ms), maxv(c.mip_ms), mean(c.gaps), maxv(c.gaps), minv(c.speedups));
      if (o.market) std::printf(" %8.3f%% %8.3f%%", mean(c.market_gaps), maxv(c.market_gaps));
      std::printf("\n");
    }
  std::printf("(MIP/ours >1s: the smallest ratio over instances where the MIP took over 1 s; nan: "
              "none did)\nNot measured: %d instance(s) where not every job can run (the MIPs need "
              "that), %d with no MIP bound in time; failed: %d where ours leaves a job waiting\n",
              all.infeasible, all.no_bound, all.ours_waits);
  if (o.show_worst)
    for (size_t si = 0; si < o.sizes.size(); ++si)
      std::printf("\nWorst instance of size %d/%d: %s", o.sizes[si].gpus, o.sizes[si].jobs,
                  by_size[si].worst_text.c_str());
  if (o.large) {
    std::printf("\nPlanning-size rounds:\n");
    time_large(o, model);
  }
  std::printf("\n{\"seeds\": %d, \"seed\": %u, \"samples\": %d, \"mip_time_limit_s\": %.0f, "
              "\"evaluated\": %zu, \"infeasible\": %d, \"no_bound\": %d, \"ours_waits\": %d, "
              "\"mip_proven\": %d, \"against_bound\": %d, "
              "\"gap_mean_pct\": %.4f, \"gap_worst_pct\": %.4f, \"market_gap_mean_pct\": %.4f, "
              "\"market_gap_worst_pct\": %.4f, \"min_speedup_over_1s_mips\": %.1f}\n",
              o.seeds, o.seed, o.samples, o.mip_limit_s, all.gaps.size(), all.infeasible,
              all.no_bound, all.ours_waits, all.proven, all.against_bound, mean(all.gaps),
              maxv(all.gaps), mean(all.market_gaps),
              maxv(all.market_gaps), minv(all.speedups));
  return 0;
}
