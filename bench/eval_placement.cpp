// eval_placement: how close the heterogeneity-aware placement (categories + market + sampling +
// local improvement) comes to the exact MIP optimum, and how much less time it takes, on random
// instances built from the real Gavel profiles (k80/p100/v100): up to 16 GPUs of the 3 types in
// 4-GPU nodes, up to 6 jobs (--max-gpus, --max-jobs). Each comparison is like for like:
//  - uniform links (intra = inter: locality costs nothing): against the MIP aggregated by GPU
//    type (our result evaluated without locality, as that MIP sees it), and against the
//    node-level MIP (the same optimum, found with node variables);
//  - server links (intra 100, inter 12.5 GB/s): against the node-level MIP, which optimises the
//    same objective as ours, locality included.
// Our time includes the doubling seed; each solve is timed as the median of --repeats runs.
// Plus the time of two planning-size instances (1,000 GPUs / 100 jobs and 10,000 GPUs / 2,000
// jobs). Prints progress, a table and a JSON summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "ringsched/placement.h"
#include "ringsched/placement_support.h"

using namespace ringsched;

namespace {

const char* kUsage =
    "usage: eval_placement [--seed N] [--instances N] [--samples K] [--repeats R] [--worst]\n"
    "                      [--max-gpus G] [--max-jobs J] [--profiles CSV]\n"
    "  Random placement instances (<= 16 GPUs of k80/p100/v100 in 4-GPU nodes, <= 6 jobs) from\n"
    "  the Gavel profiles: gap of place_hetero to the GLPK MIP optimum and the MIP/ours time\n"
    "  ratio -- uniform links against the aggregated and the node-level MIP, server links\n"
    "  (intra 100, inter 12.5 GB/s) against the node-level MIP; then the time of\n"
    "  1,000-GPU/100-job and 10,000-GPU/2,000-job instances.\n"
    "  --seed N        random seed (default 1)\n"
    "  --instances N   instances per link setting (default 200)\n"
    "  --samples K     categories place_hetero evaluates (default 64, the planner's)\n"
    "  --repeats R     time each solve as the median of R runs (default 3)\n"
    "  --worst         print the instance with the worst gap of each comparison\n"
    "  --max-gpus G    GPUs per instance at most (default 16; at least 4)\n"
    "  --max-jobs J    jobs per instance at most (default 6; 2 to G)\n"
    "  --profiles CSV  profile table (default data/profiles/gavel.csv of the source tree)\n";

const std::vector<std::string> kTypes = {"k80", "p100", "v100"};
const std::vector<std::string> kModels = {"resnet18-b64",  "resnet50-b64",         "transformer-b128",
                                          "lm-b20",        "recommendation-b1024", "a3c",
                                          "cyclegan",      "resnet18-b16",         "transformer-b32"};

Cluster make_cluster(const std::vector<int>& per_type, int node_size, bool server_links) {
  Cluster c;
  for (size_t t = 0; t < per_type.size(); ++t) {
    int left = per_type[t], k = 0;
    while (left > 0) {
      Node n;
      n.name = kTypes[t] + "-" + std::to_string(k++);
      n.gpu_type = kTypes[t];
      n.gpus = std::min(node_size, left);
      left -= n.gpus;
      n.intra_gbps = 100.0;
      n.inter_gbps = server_links ? 12.5 : 100.0;
      c.nodes.push_back(n);
    }
  }
  return c;
}

PlacementJob make_job(std::mt19937& rng, const ThroughputModel& model, int max_cap) {
  PlacementJob j;
  for (;;) {
    j.model = kModels[rng() % kModels.size()];
    if (model.knows(j.model, "k80") && model.knows(j.model, "p100") && model.knows(j.model, "v100"))
      break;
  }
  j.remaining = std::exp(std::uniform_real_distribution<double>(std::log(1e3), std::log(1e5))(rng));
  j.min_gpus = 1;
  int maxes[] = {1, 2, 4, 8, 16};
  j.max_gpus = std::min(max_cap, maxes[1 + rng() % 4]);
  if (rng() % 5 == 0) {  // restricted to two of the three types
    int drop = static_cast<int>(rng() % 3);
    for (int t = 0; t < 3; ++t)
      if (t != drop) j.allowed_types.push_back(kTypes[t]);
  }
  return j;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
double maxv(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
double minv(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

// One solve repeated: the first result, its solve_ms replaced by the median over the runs.
PlacementResult timed(int repeats, const std::function<PlacementResult()>& solve) {
  PlacementResult first = solve();
  std::vector<double> ms = {first.solve_ms};
  for (int r = 1; r < repeats; ++r) ms.push_back(solve().solve_ms);
  first.solve_ms = median(ms);
  return first;
}

// The instance and both placements, a job per line.
std::string describe(const PlacementProblem& p, const PlacementResult& ours,
                     const PlacementResult& opt) {
  std::string s = "  cluster:";
  for (const Node& n : p.cluster.nodes)
    s += " " + n.name + "(" + std::to_string(n.gpus) + ")";
  s += "\n";
  char line[256];
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const PlacementJob& job = p.jobs[j];
    std::string allowed;
    for (const std::string& t : job.allowed_types) allowed += (allowed.empty() ? "" : ",") + t;
    std::snprintf(line, sizeof line, "  job %zu %-20s remaining %7.0f max %2d types %-9s", j,
                  job.model.c_str(), job.remaining, job.max_gpus,
                  allowed.empty() ? "any" : allowed.c_str());
    s += line;
    for (const auto* r : {&ours, &opt}) {
      s += r == &ours ? " | ours" : " | optimum";
      for (const auto& [node, g] : r->jobs[j].gpus_by_node) s += " " + node + ":" + std::to_string(g);
      std::snprintf(line, sizeof line, " %.0f s", r->jobs[j].finish_s);
      s += line;
    }
    s += "\n";
  }
  return s;
}

struct Comparison {
  Comparison(const char* n, const char* k) : name(n), key(k) {}
  const char* name;
  const char* key;
  std::vector<double> gaps, seed_gaps, ours_ms, mip_ms, ratios;
  int mip_time_limited = 0;
  double worst = -INFINITY;
  std::string worst_text;

  void add(double gap, double seed_gap, double ours, double mip, const std::string& text) {
    gaps.push_back(gap);
    if (!std::isnan(seed_gap)) seed_gaps.push_back(seed_gap);
    ours_ms.push_back(ours);
    mip_ms.push_back(mip);
    ratios.push_back(mip / std::max(ours, 1e-6));
    if (mip > 59000) ++mip_time_limited;
    if (gap > worst) {
      worst = gap;
      worst_text = text;
    }
  }
  double total_ratio() const {
    double o = 0, m = 0;
    for (double x : ours_ms) o += x;
    for (double x : mip_ms) m += x;
    return m / std::max(o, 1e-6);
  }
};

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  int instances = 200, samples = 64, repeats = 3, max_gpus = 16, max_jobs = 6;
  bool show_worst = false;
  std::string profiles = std::string(RINGSCHED_SRCDIR) + "/data/profiles/gavel.csv";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "eval_placement: %s needs a value\n%s", a.c_str(), kUsage);
        std::exit(2);
      }
      return argv[++i];
    };
    try {
      if (a == "--help" || a == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
      } else if (a == "--seed") {
        seed = static_cast<unsigned>(std::stoul(value()));
      } else if (a == "--instances") {
        instances = std::stoi(value());
      } else if (a == "--samples") {
        samples = std::stoi(value());
      } else if (a == "--repeats") {
        repeats = std::stoi(value());
      } else if (a == "--max-gpus") {
        max_gpus = std::stoi(value());
      } else if (a == "--max-jobs") {
        max_jobs = std::stoi(value());
      } else if (a == "--worst") {
        show_worst = true;
      } else if (a == "--profiles") {
        profiles = value();
      } else {
        std::fprintf(stderr, "eval_placement: unknown option %s\n%s", a.c_str(), kUsage);
        return 2;
      }
    } catch (const std::logic_error&) {
      std::fprintf(stderr, "eval_placement: %s needs a number\n", a.c_str());
      return 2;
    }
  }
  if (instances < 1 || samples < 1 || repeats < 1 || repeats > 100 || max_gpus < 4 ||
      max_gpus > 1024 || max_jobs < 2 || max_jobs > max_gpus) {
    std::fprintf(stderr, "eval_placement: --instances and --samples must be at least 1, "
                         "--repeats between 1 and 100, --max-gpus between 4 and 1024, "
                         "--max-jobs between 2 and --max-gpus\n");
    return 2;
  }
  ThroughputModel model;
  try {
    model = ThroughputModel(ProfileTable::load_csv(profiles));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_placement: %s\n", e.what());
    return 1;
  }

  Comparison cmp[3] = {{"uniform links, aggregated MIP", "uniform_links_aggregated_mip"},
                       {"uniform links, node-level MIP", "uniform_links_node_mip"},
                       {"server links, node-level MIP", "server_links_node_mip"}};
  int mip_disagreements = 0;  // uniform links: the two MIPs' optima differ
  for (int setting = 0; setting < 2; ++setting) {
    bool server = setting == 1;
    std::mt19937 rng(seed + 7919u * setting);
    for (int i = 0; i < instances; ++i) {
      PlacementProblem p;
      p.model = &model;
      int jobs = 2 + static_cast<int>(rng() % (max_jobs - 1));
      int gpus = std::max(jobs, 4) + static_cast<int>(rng() % (max_gpus + 1 - std::max(jobs, 4)));
      std::vector<int> per_type(3, 1);
      for (int g = 3; g < gpus; ++g) per_type[rng() % 3]++;
      p.cluster = make_cluster(per_type, 4, server);
      for (int j = 0; j < jobs; ++j) p.jobs.push_back(make_job(rng, model, gpus));
      PlacementResult ours =
          timed(repeats, [&] { return place_hetero(p, {}, samples, seed + static_cast<unsigned>(i)); });
      bool all_run = true;
      for (const JobPlacement& jp : ours.jobs) all_run = all_run && jp.total > 0;
      if (!all_run) {
        std::fprintf(stderr, "[%s] instance %d: a job waits in our result; skipped\n",
                     server ? "server links" : "uniform links", i);
        continue;
      }
      // The market on the doubling seed alone (K = 1), for reference; it may not be matchable.
      PlacementResult market;
      try {
        market = market_match(p, placement_seed_counts(p));
      } catch (const InputError&) {
        market.jobs.clear();
      }
      auto seed_gap = [&](double optimum, bool without_locality) -> double {
        if (market.jobs.empty()) return NAN;
        double v = without_locality ? placement_objective_without_locality(p, market)
                                    : market.objective_s;
        return 100.0 * (v - optimum) / optimum;
      };
      PlacementResult node = timed(repeats, [&] { return optimal_placement_node_mip(p, 60); });
      double node_gap = 100.0 * (ours.objective_s - node.objective_s) / node.objective_s;
      if (!server) {
        PlacementResult agg = timed(repeats, [&] { return optimal_placement_mip(p, 60); });
        double ours_obj = placement_objective_without_locality(p, ours);
        cmp[0].add(100.0 * (ours_obj - agg.objective_s) / agg.objective_s,
                   seed_gap(agg.objective_s, true), ours.solve_ms, agg.solve_ms,
                   describe(p, ours, agg));
        if (std::fabs(agg.objective_s - node.objective_s) > 1e-6 * agg.objective_s)
          ++mip_disagreements;
      }
      Comparison& c = cmp[server ? 2 : 1];
      c.add(node_gap, seed_gap(node.objective_s, false), ours.solve_ms, node.solve_ms,
            describe(p, ours, node));
      if ((i + 1) % std::max(1, instances / 10) == 0 || i + 1 == instances)
        std::fprintf(stderr, "[%s] %d/%d instances, mean gap to the node-level MIP so far %.3f%%\n",
                     server ? "server links" : "uniform links", i + 1, instances, mean(c.gaps));
    }
  }

  // Planning-size instances: 1,000 GPUs (125 nodes of 8) with 100 jobs, and 10,000 GPUs (1,250
  // nodes of 8) with 2,000 jobs, both three types; jobs of 1 to 64 GPUs.
  struct Large {
    int gpus, jobs, seed_gpus = 0;
    double seed_ms = 0;
    PlacementResult market, ours;
  };
  std::vector<Large> large = {{1000, 100, 0, 0, {}, {}}, {10000, 2000, 0, 0, {}, {}}};
  for (Large& l : large) {
    std::mt19937 rng(seed);
    PlacementProblem big;
    big.model = &model;
    int third = l.gpus / 3;
    big.cluster = make_cluster({l.gpus - 2 * third, third, third}, 8, true);
    for (int j = 0; j < l.jobs; ++j) {
      PlacementJob job = make_job(rng, model, 64);
      job.max_gpus = 1 << (rng() % 7);  // 1..64
      big.jobs.push_back(job);
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<int> big_seed = placement_seed_counts(big);
    l.seed_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    l.market = market_match(big, big_seed);
    l.ours = place_hetero(big, big_seed, samples, seed);
    for (int c : big_seed) l.seed_gpus += c;
    std::fprintf(stderr, "[large] %d GPUs, %d jobs: place_hetero %.2f ms\n", l.gpus, l.jobs,
                 l.ours.solve_ms);
  }

  std::printf("\nPlacement vs the GLPK MIP optimum (%d instances per link setting of <= %d GPUs and "
              "<= %d jobs, K = %d, seed %u, times: median of %d runs)\n",
              instances, max_gpus, max_jobs, samples, seed, repeats);
  std::printf("%-30s %9s %9s %9s %9s %9s %10s %10s %9s %5s\n", "comparison", "mean gap",
              "worst gap", "seed gap", "ours ms", "MIP ms", "MIP/ours", "MIP/ours", "MIP/ours",
              "n");
  std::printf("%-30s %9s %9s %9s %9s %9s %10s %10s %9s %5s\n", "", "", "", "", "median",
              "median", "median", "totals", "min", "");
  for (const Comparison& c : cmp)
    std::printf("%-30s %8.3f%% %8.3f%% %8.3f%% %9.3f %9.3f %9.2fx %9.2fx %8.2fx %5zu\n", c.name,
                mean(c.gaps), maxv(c.gaps), mean(c.seed_gaps), median(c.ours_ms), median(c.mip_ms),
                median(c.ratios), c.total_ratio(), minv(c.ratios), c.gaps.size());
  std::printf("(gap: our sum of finish times vs the optimum, without locality against the "
              "aggregated MIP;\n seed gap: the market on the doubling seed alone, K = 1; our "
              "time includes the seed)\n");
  std::printf("uniform links: the aggregated and the node-level MIP disagree on %d instances\n",
              mip_disagreements);
  if (show_worst)
    for (const Comparison& c : cmp)
      std::printf("\nWorst instance, %s: gap %.3f%%\n%s", c.name, c.worst, c.worst_text.c_str());
  for (const Large& l : large) {
    std::printf("\nLarge instance: %d GPUs (%d nodes of 8, 3 types), %d jobs, %d GPUs in the seed\n",
                l.gpus, l.gpus / 8, l.jobs, l.seed_gpus);
    std::printf("  seed (doubling) %.2f ms, one market %.2f ms (%d fallbacks), place_hetero K=%d "
                "%.2f ms (%d categories, work %ld of budget %ld, %d fallbacks)\n",
                l.seed_ms, l.market.solve_ms, l.market.auction_fallbacks, samples, l.ours.solve_ms,
                l.ours.categories_evaluated, l.ours.work, placement_work_budget(l.jobs, 3, samples),
                l.ours.auction_fallbacks);
  }
  std::printf("\n{\"instances\": %d, \"max_gpus\": %d, \"max_jobs\": %d, \"samples\": %d, "
              "\"seed\": %u, \"repeats\": %d, \"mip_disagreements\": %d",
              instances, max_gpus, max_jobs, samples, seed, repeats, mip_disagreements);
  for (const Comparison& c : cmp)
    std::printf(", \"%s\": {\"evaluated\": %zu, \"mean_gap_pct\": %.4f, \"worst_gap_pct\": %.4f, "
                "\"seed_mean_gap_pct\": %.4f, \"ours_median_ms\": %.4f, \"ours_mean_ms\": %.4f, "
                "\"mip_median_ms\": %.4f, \"mip_mean_ms\": %.4f, \"time_ratio_median\": %.3f, "
                "\"time_ratio_totals\": %.3f, \"time_ratio_min\": %.3f, \"mip_time_limited\": %d}",
                c.key, c.gaps.size(), mean(c.gaps), maxv(c.gaps), mean(c.seed_gaps),
                median(c.ours_ms), mean(c.ours_ms), median(c.mip_ms), mean(c.mip_ms),
                median(c.ratios), c.total_ratio(), minv(c.ratios), c.mip_time_limited);
  for (const Large& l : large)
    std::printf(", \"large_%d_%d\": {\"market_ms\": %.3f, \"place_hetero_ms\": %.3f, "
                "\"categories\": %d, \"work\": %ld, \"work_budget\": %ld, \"fallbacks\": %d}",
                l.gpus, l.jobs, l.market.solve_ms, l.ours.solve_ms, l.ours.categories_evaluated,
                l.ours.work, placement_work_budget(l.jobs, 3, samples), l.ours.auction_fallbacks);
  std::printf("}\n");
  return 0;
}
