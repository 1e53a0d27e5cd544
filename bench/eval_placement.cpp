// eval_placement: how close the heterogeneity-aware placement (categories + market + sampling)
// comes to the exact MIP optimum, and how much less time it takes, on random instances built
// from the real Gavel profiles (k80/p100/v100): up to 16 GPUs of the 3 types, up to 6 jobs.
// The market's result is evaluated as the MIP sees it (no locality) so that the gap is like for
// like. Two link settings: uniform links (intra = inter, locality costs nothing, the market and
// the MIP optimise the same thing) and server links (intra 100, inter 12.5 GB/s, 4-GPU nodes:
// the market also pays for locality, the MIP does not). Plus the time of two planning-size
// instances (1,000 GPUs / 100 jobs and 10,000 GPUs / 2,000 jobs). Prints progress, a table and a JSON summary.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ringsched/placement.h"
#include "ringsched/placement_support.h"

using namespace ringsched;

namespace {

const char* kUsage =
    "usage: eval_placement [--seed N] [--instances N] [--samples K] [--profiles CSV]\n"
    "  Random placement instances (<= 16 GPUs of k80/p100/v100, <= 6 jobs) from the Gavel\n"
    "  profiles: gap of place_hetero to the GLPK MIP optimum and the MIP/ours time ratio, for\n"
    "  uniform and server links; then the time of 1,000-GPU/100-job and 10,000-GPU/2,000-job\n"
    "  instances.\n"
    "  --seed N        random seed (default 1)\n"
    "  --instances N   instances per link setting (default 200)\n"
    "  --samples K     categories place_hetero evaluates (default 64, the planner's)\n"
    "  --profiles CSV  profile table (default data/profiles/gavel.csv of the source tree)\n";

const std::vector<std::string> kTypes = {"k80", "p100", "v100"};
const std::vector<std::string> kModels = {"resnet18-b64",  "resnet50-b64",         "transformer-b128",
                                          "lm-b20",        "recommendation-b1024", "a3c",
                                          "cyclegan",      "resnet18-b16",         "transformer-b32"};

Cluster make_cluster(std::mt19937& rng, const std::vector<int>& per_type, int node_size,
                     bool server_links) {
  Cluster c;
  (void)rng;
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

struct Stats {
  std::vector<double> gaps, ratios, ours_ms, mip_ms, seed_gaps;
  int mip_not_optimal = 0;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}
double maxv(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }
double minv(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }

}  // namespace

int main(int argc, char** argv) {
  unsigned seed = 1;
  int instances = 200, samples = 64;
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
  if (instances < 1 || samples < 1) {
    std::fprintf(stderr, "eval_placement: --instances and --samples must be at least 1\n");
    return 2;
  }
  ThroughputModel model;
  try {
    model = ThroughputModel(ProfileTable::load_csv(profiles));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "eval_placement: %s\n", e.what());
    return 1;
  }

  const char* setting_names[] = {"uniform links", "server links"};
  Stats stats[2];
  for (int setting = 0; setting < 2; ++setting) {
    std::mt19937 rng(seed + 7919u * setting);
    for (int i = 0; i < instances; ++i) {
      PlacementProblem p;
      p.model = &model;
      int jobs = 2 + static_cast<int>(rng() % 5);
      int gpus = std::max(jobs, 4) + static_cast<int>(rng() % (17 - std::max(jobs, 4)));
      std::vector<int> per_type(3, 1);
      for (int g = 3; g < gpus; ++g) per_type[rng() % 3]++;
      p.cluster = make_cluster(rng, per_type, 4, setting == 1);
      for (int j = 0; j < jobs; ++j) p.jobs.push_back(make_job(rng, model, gpus));
      std::vector<int> seed_counts = placement_seed_counts(p);
      PlacementResult ours = place_hetero(p, seed_counts, samples, seed + i);
      // The market on the seed alone (K = 1), for reference; the seed may not be matchable.
      double seed_obj = -1;
      try {
        seed_obj = placement_objective_without_locality(p, market_match(p, seed_counts));
      } catch (const InputError&) {
      }
      PlacementResult opt = optimal_placement_mip(p, 60);
      bool all_run = true;
      for (const JobPlacement& jp : ours.jobs) all_run = all_run && jp.total > 0;
      if (!all_run) {
        std::fprintf(stderr, "instance %d: a job waits in our result; skipped\n", i);
        continue;
      }
      double ours_obj = placement_objective_without_locality(p, ours);
      if (opt.solve_ms > 59000) stats[setting].mip_not_optimal++;
      stats[setting].gaps.push_back(100.0 * (ours_obj - opt.objective_s) / opt.objective_s);
      if (seed_obj > 0)
        stats[setting].seed_gaps.push_back(100.0 * (seed_obj - opt.objective_s) / opt.objective_s);
      stats[setting].ours_ms.push_back(ours.solve_ms);
      stats[setting].mip_ms.push_back(opt.solve_ms);
      stats[setting].ratios.push_back(opt.solve_ms / std::max(ours.solve_ms, 1e-6));
      if ((i + 1) % std::max(1, instances / 10) == 0 || i + 1 == instances) {
        std::fprintf(stderr, "[%s] %d/%d instances, mean gap so far %.3f%%\n",
                     setting_names[setting], i + 1, instances, mean(stats[setting].gaps));
      }
    }
  }

  // Planning-size instances: 1,000 GPUs (125 nodes of 8) with 100 jobs, and 10,000 GPUs (1,250
  // nodes of 8) with 2,000 jobs, both three types; jobs of 1 to 64 GPUs.
  struct Large {
    int gpus, jobs, seed_gpus = 0;
    double seed_ms = 0;
    PlacementResult market, ours;
  };
  std::vector<Large> large = {{1000, 100}, {10000, 2000}};
  for (Large& l : large) {
    std::mt19937 rng(seed);
    PlacementProblem big;
    big.model = &model;
    int third = l.gpus / 3;
    big.cluster = make_cluster(rng, {l.gpus - 2 * third, third, third}, 8, true);
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

  std::printf("\nPlacement vs the GLPK MIP optimum (%d instances per setting, K = %d, seed %u)\n",
              instances, samples, seed);
  std::printf("%-14s %9s %9s %11s %11s %11s %11s %10s %10s\n", "links", "mean gap", "worst gap",
              "seed gap", "ours ms", "MIP ms", "ratio mean", "ratio min", "instances");
  for (int s = 0; s < 2; ++s) {
    const Stats& st = stats[s];
    std::printf("%-14s %8.3f%% %8.3f%% %10.3f%% %11.3f %11.3f %10.1fx %9.1fx %10zu\n", setting_names[s],
                mean(st.gaps), maxv(st.gaps), mean(st.seed_gaps), mean(st.ours_ms), mean(st.mip_ms),
                mean(st.ratios), minv(st.ratios), st.gaps.size());
  }
  std::printf("(gap: our sum of finish times without locality vs the optimum; seed gap: the market on "
              "the doubling seed alone, K = 1)\n");
  for (const Large& l : large) {
    std::printf("\nLarge instance: %d GPUs (%d nodes of 8, 3 types), %d jobs, %d GPUs in the seed\n",
                l.gpus, l.gpus / 8, l.jobs, l.seed_gpus);
    std::printf("  seed (doubling) %.2f ms, one market %.2f ms (%d fallbacks), place_hetero K=%d "
                "%.2f ms (%d categories, work %ld of budget %ld, %d fallbacks)\n",
                l.seed_ms, l.market.solve_ms, l.market.auction_fallbacks, samples, l.ours.solve_ms,
                l.ours.categories_evaluated, l.ours.work, placement_work_budget(l.jobs, 3, samples),
                l.ours.auction_fallbacks);
  }
  std::printf("\n{\"instances\": %d, \"samples\": %d, \"seed\": %u", instances, samples, seed);
  const char* keys[] = {"uniform_links", "server_links"};
  for (int s = 0; s < 2; ++s) {
    const Stats& st = stats[s];
    std::printf(", \"%s\": {\"evaluated\": %zu, \"mean_gap_pct\": %.4f, \"worst_gap_pct\": %.4f, "
                "\"seed_mean_gap_pct\": %.4f, \"ours_mean_ms\": %.4f, \"mip_mean_ms\": %.4f, "
                "\"time_ratio_mean\": %.2f, \"time_ratio_min\": %.2f, \"mip_time_limited\": %d}",
                keys[s], st.gaps.size(), mean(st.gaps), maxv(st.gaps), mean(st.seed_gaps),
                mean(st.ours_ms), mean(st.mip_ms), mean(st.ratios), minv(st.ratios), st.mip_not_optimal);
  }
  for (const Large& l : large)
    std::printf(", \"large_%d_%d\": {\"market_ms\": %.3f, \"place_hetero_ms\": %.3f, "
                "\"categories\": %d, \"work\": %ld, \"work_budget\": %ld, \"fallbacks\": %d}",
                l.gpus, l.jobs, l.market.solve_ms, l.ours.solve_ms, l.ours.categories_evaluated,
                l.ours.work, placement_work_budget(l.jobs, 3, samples), l.ours.auction_fallbacks);
  std::printf("}\n");
  return 0;
}
