// SPDX-License-Identifier: GPL-2.0-or-later
// Heterogeneity-aware multi-job placement, the product (place_hetero; DESIGN 3.3): GPU counts per
// type for every job first, by an exact-where-affordable type-level search, then the nodes.
//
//  1. Who runs: the jobs of the seed category (e.g. the doubling result; the built-in doubling
//     seed when none is given). If their smallest sizes cannot fit the cluster's types (Hall's
//     condition, or a dive that finds no room), the last of them waits, until they fit.
//  2. Columns (placement_columns.cpp): every (size, mix) of every such job, valued at the type
//     level -- the finish time with the locality each type's fewest nodes cannot avoid, plus
//     the restart cost of a running job whose per-type counts change.
//  3. A dive at zero prices (every job its fastest column that fits, largest regret first), prices
//     per type by Lagrangian relaxation (placement_prices.cpp; a lower bound on the type-level
//     optimum), a dive at those prices, local search (one job, every pair of jobs;
//     placement_search.cpp).
//  4. Branch and bound with the Lagrangian bound (placement_search.cpp), within its share of the
//     work: on most instances up to 512 GPUs and 48 jobs it proves the incumbent within 0.01% of
//     the type-level optimum; elsewhere it often improves it.
//  5. Packing onto nodes (placement_packing.cpp): the free-GPU allocator's rule inside each
//     type, running jobs that keep their per-type counts on the nodes they hold, the largest
//     demands first. The type-level finish time is a lower bound of the one on the nodes; it is
//     reached when every job lands on its types' fewest nodes. Where the packing spreads a job
//     (partly held nodes, too few whole ones), other columns of it and pairs with another job
//     are re-packed and kept when the node-level sum falls (placement_nodes.cpp).
// Every phase counts its work (columns valued or visited) against placement_work_budget(), linear
// in the jobs and K and independent of the cluster size (the phases' shares: prices 25%, local
// search 15%, branch and bound 45%, node repair 15%); the columns are thinned (sizes around the
// seed count, a coarser grid of mixes) when the budget cannot pay for all of them.
// Deterministic. The seed paper's market (place_market, placement_market.cpp) is kept as a
// measured option.
#include <algorithm>
#include <chrono>

#include "placement_search.h"

namespace ringsched {
namespace {

// Work budget (columns valued or visited), see placement_work_budget().
constexpr long kWorkBase = 400000;
constexpr long kWorkPerJob = 1000;
constexpr long kWorkPerSample = 10000;

// The jobs whose smallest sizes the category can hold: those with count > 0, less the last ones
// while Hall's condition fails.
std::vector<int> running_jobs(const PlacementProblem& p, const CategoryFit& fit,
                              const std::vector<std::vector<int>>& sizes,
                              const std::vector<int>& counts) {
  std::vector<int> runs, smallest(p.jobs.size(), 0);
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j] > 0 && !sizes[j].empty()) {
      runs.push_back(static_cast<int>(j));
      smallest[j] = sizes[j].front();
    }
  while (!runs.empty() && !fit.fits(smallest)) {
    smallest[runs.back()] = 0;
    runs.pop_back();
  }
  return runs;
}

}  // namespace

long placement_work_budget(int jobs, int types, int samples) {
  (void)types;  // the columns are thinned to the budget whatever the number of types
  return kWorkBase + kWorkPerJob * std::max(0, jobs) + kWorkPerSample * std::max(0, samples);
}

PlacementResult place_hetero(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed) {
  (void)seed;  // deterministic: no sampling
  auto t0 = std::chrono::steady_clock::now();
  PlacementSetup setup(problem, seed_counts, samples);
  PlacementSpeeds& speeds = setup.speeds;
  const PlacementTopology& topo = setup.topo;
  int J = static_cast<int>(problem.jobs.size());
  std::vector<int> runs = running_jobs(problem, setup.fit, setup.sizes, setup.counts);
  long budget = placement_work_budget(J, speeds.num_types(), samples);

  PlacementResult out;
  out.jobs.assign(J, JobPlacement{});
  out.bound_s = -std::numeric_limits<double>::infinity();
  long work = 0;
  NodePacker packer(problem, topo);
  while (!runs.empty()) {
    TypeLevelSearch search(problem, speeds, topo, setup.fit, setup.sizes, runs, setup.counts,
                           budget - work);
    if (!search.make_columns() || !search.dive()) {
      // Jobs that may not mix types can fail where Hall's condition holds: the last one waits.
      work += search.work();
      runs.pop_back();
      continue;
    }
    search.allow(0.25);
    search.price();
    search.dive();
    search.allow(0.15);
    search.improve();
    search.allow(0.45);
    search.branch_and_bound();
    search.allow(0.15);
    search.improve_on_nodes(packer);
    work += search.work();
    fill_placement_result(problem, speeds, topo, search.package(), out);
    out.bound_s = search.bound();
    out.optimal = false;  // proven for the type level at most, not on the nodes
    out.categories_evaluated = search.assignments();
    break;
  }
  out.work = work;
  out.solve_ms = placement_elapsed_ms(t0);
  return out;
}

}  // namespace ringsched
