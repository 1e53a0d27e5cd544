// Exact optimum of the placement problem by MIP (GLPK), to measure the market's gap (DESIGN 3.3
// step 4). One binary per job and feasible per-type count vector (sizes from placement_sizes;
// single-type vectors only for jobs that may not mix); every job takes exactly one vector; the
// GPUs of each type used stay within its usable GPUs; minimise the sum of finish times.
// Locality is ignored (nodes are not variables): the cost of a vector is remaining / speed from
// ThroughputModel::iters_per_s_mixed, plus the restart cost for a running job whose per-type
// counts change -- placement_objective_without_locality() evaluates the market the same way.
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <stdexcept>

#include "ringsched/placement.h"
#include "ringsched/placement_support.h"

#ifdef HAVE_GLPK
#include <glpk.h>
#endif

namespace ringsched {

#ifdef HAVE_GLPK
namespace {

struct Column {
  int job;
  std::vector<int> counts;
  double cost;
};

struct ProbDeleter {
  void operator()(glp_prob* p) const { glp_delete_prob(p); }
};

}  // namespace

PlacementResult optimal_placement_mip(const PlacementProblem& problem, double time_limit_s) {
  auto t0 = std::chrono::steady_clock::now();
  if (!(time_limit_s > 0) || !std::isfinite(time_limit_s))
    throw InputError("placement MIP: the time limit must be positive");
  PlacementSpeeds speeds(problem);
  int J = static_cast<int>(problem.jobs.size());
  int T = speeds.num_types();
  // Per-type counts each running job holds now (restart cost when they change).
  std::vector<std::vector<int>> current(J, std::vector<int>(T, 0));
  for (int j = 0; j < J; ++j)
    for (const auto& [name, g] : problem.jobs[j].current) {
      const Node* n = problem.cluster.find(name);
      if (!n || g <= 0) continue;
      auto it = std::lower_bound(speeds.types().begin(), speeds.types().end(), n->gpu_type);
      current[j][it - speeds.types().begin()] += g;
    }

  std::vector<Column> columns;
  for (int j = 0; j < J; ++j) {
    const PlacementJob& job = problem.jobs[j];
    size_t before = columns.size();
    std::vector<int> types;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t)) types.push_back(t);
    auto add = [&](const std::vector<int>& c) {
      double v = speeds.speed(j, c);
      if (v <= 0) return;
      double cost = job.remaining / v;
      if (job.running && c != current[j]) cost += problem.costs.restart_s;
      columns.push_back(Column{j, c, cost});
    };
    std::vector<int> c(T, 0);
    for (int n : placement_sizes(problem, speeds, j)) {
      if (!job.allow_mixed) {
        for (int t : types)
          if (speeds.usable()[t] >= n) {
            c.assign(T, 0);
            c[t] = n;
            add(c);
          }
        continue;
      }
      std::function<void(size_t, int)> rec = [&](size_t i, int left) {
        int t = types[i];
        if (i + 1 == types.size()) {
          if (left <= speeds.usable()[t]) {
            c[t] = left;
            add(c);
            c[t] = 0;
          }
          return;
        }
        for (int x = 0; x <= std::min(left, speeds.usable()[t]); ++x) {
          c[t] = x;
          rec(i + 1, left - x);
        }
        c[t] = 0;
      };
      c.assign(T, 0);
      rec(0, n);
    }
    if (columns.size() == before)
      throw InputError("placement MIP: job " + std::to_string(j) + " (" + job.model +
                       ") has no size its allowed GPU types can hold");
  }

  std::unique_ptr<glp_prob, ProbDeleter> lp(glp_create_prob());
  glp_set_obj_dir(lp.get(), GLP_MIN);
  glp_add_rows(lp.get(), J + T);
  for (int j = 0; j < J; ++j) glp_set_row_bnds(lp.get(), j + 1, GLP_FX, 1.0, 1.0);
  for (int t = 0; t < T; ++t)
    glp_set_row_bnds(lp.get(), J + t + 1, GLP_UP, 0.0, speeds.usable()[t]);
  int ncols = static_cast<int>(columns.size());
  glp_add_cols(lp.get(), ncols);
  std::vector<int> ia{0}, ja{0};
  std::vector<double> ar{0};
  for (int k = 0; k < ncols; ++k) {
    const Column& col = columns[k];
    glp_set_col_kind(lp.get(), k + 1, GLP_BV);
    glp_set_obj_coef(lp.get(), k + 1, col.cost);
    ia.push_back(col.job + 1);
    ja.push_back(k + 1);
    ar.push_back(1.0);
    for (int t = 0; t < T; ++t)
      if (col.counts[t] > 0) {
        ia.push_back(J + t + 1);
        ja.push_back(k + 1);
        ar.push_back(col.counts[t]);
      }
  }
  glp_load_matrix(lp.get(), static_cast<int>(ia.size()) - 1, ia.data(), ja.data(), ar.data());
  glp_iocp parm;
  glp_init_iocp(&parm);
  parm.presolve = GLP_ON;
  parm.msg_lev = GLP_MSG_OFF;
  parm.tm_lim = static_cast<int>(std::min(time_limit_s * 1000.0, 2e9));
  int ret = glp_intopt(lp.get(), &parm);
  int status = glp_mip_status(lp.get());
  if (ret == GLP_ENOPFS || status == GLP_NOFEAS)
    throw InputError("placement MIP: the jobs' smallest sizes do not fit the cluster's usable GPUs");
  if (status != GLP_OPT && status != GLP_FEAS)
    throw std::runtime_error("placement MIP: GLPK found no solution (glp_intopt returned " +
                             std::to_string(ret) + ")");

  PlacementResult r;
  r.jobs.assign(J, JobPlacement{});
  // Nodes only for the caller's convenience: fill each type's nodes, largest first.
  std::vector<std::vector<std::pair<int, std::string>>> free_nodes(T);
  for (const Node& n : problem.cluster.nodes) {
    if (n.usable() <= 0) continue;
    auto it = std::lower_bound(speeds.types().begin(), speeds.types().end(), n.gpu_type);
    free_nodes[it - speeds.types().begin()].push_back({n.usable(), n.name});
  }
  for (auto& v : free_nodes)
    std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (int k = 0; k < ncols; ++k) {
    if (glp_mip_col_val(lp.get(), k + 1) < 0.5) continue;
    const Column& col = columns[k];
    JobPlacement& jp = r.jobs[col.job];
    for (int t = 0; t < T; ++t) {
      if (col.counts[t] <= 0) continue;
      jp.gpus_by_type[speeds.types()[t]] += col.counts[t];
      jp.total += col.counts[t];
      int need = col.counts[t];
      for (auto& [left, name] : free_nodes[t]) {
        int x = std::min(left, need);
        if (x <= 0) continue;
        jp.gpus_by_node[name] += x;
        left -= x;
        need -= x;
      }
    }
    jp.iters_per_s = speeds.speed(col.job, col.counts);
    jp.finish_s = col.cost;
    r.objective_s += col.cost;
  }
  r.categories_evaluated = ncols;
  r.solve_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

#else  // !HAVE_GLPK

PlacementResult optimal_placement_mip(const PlacementProblem&, double) {
  throw std::runtime_error("placement MIP: ringsched was built without GLPK (libglpk-dev)");
}

#endif

}  // namespace ringsched
