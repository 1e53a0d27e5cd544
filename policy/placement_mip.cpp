// SPDX-License-Identifier: GPL-2.0-or-later
// Exact optima of the placement problem by MIP (GLPK), to measure the placement's gap (DESIGN
// 3.3 step 4). Every job runs; minimise the sum of finish times. Both formulations have one
// binary per job and feasible per-type count vector (sizes from placement_sizes; single-type
// vectors only for jobs that may not mix), and every job takes exactly one. Each stops at its
// time limit (GLPK's tm_lim) and reports GLPK's best bound and whether it proved optimality.
//  - Aggregated by type (optimal_placement_mip): the GPUs of each type used stay within its
//    usable GPUs. TypeLevelCosts::WithoutLocality: a vector costs remaining / speed from
//    ThroughputModel::iters_per_s_mixed, plus the restart cost for a running job whose per-type
//    counts change (placement_objective_without_locality() evaluates any result the same way);
//    exact with uniform links. TypeLevelCosts::UnavoidableLocality: a vector costs
//    placement_type_level_finish() (each type on its fewest nodes): the type-level problem of
//    place_hetero, and a lower bound on the node-level optimum.
//  - Node-level (optimal_placement_node_mip): the problem the market solves. Integer y(j,n):
//    GPUs of job j on node n, within the node's usable GPUs; binary u(j,n): job j uses node n
//    (y <= bound * u); a vector comes once per number of nodes m it may span, costing the
//    locality model's finish time on m nodes (placement_iteration_time), and the nodes a job
//    uses are at most the m of its vector. A running job that keeps exactly the GPUs it holds
//    (binary s(j): y(j,n) equals what it holds on every node) is not charged the restart cost.
//    The optimum's objective_s is that of its nodes as placement_on_nodes() reports them, as for
//    the market's result; it is exact when the nodes of one type share their link speeds (the
//    model takes a vector's link ratio from its types).
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "ringsched/placement.h"
#include "placement_internal.h"

#ifdef HAVE_GLPK
#include <glpk.h>
#endif

namespace ringsched {

#ifdef HAVE_GLPK
namespace {

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Every per-type count vector job j may take: its sizes, over its allowed types (one type only
// when it may not mix), within each type's usable GPUs.
template <typename F>
void for_each_count_vector(const PlacementProblem& p, const PlacementSpeeds& speeds, int j,
                           F&& visit) {
  int T = speeds.num_types();
  std::vector<int> types;
  for (int t = 0; t < T; ++t)
    if (speeds.allowed(j, t)) types.push_back(t);
  if (types.empty()) return;
  std::vector<int> c(T, 0);
  for (int n : placement_sizes(p, speeds, j)) {
    if (!p.jobs[j].allow_mixed) {
      for (int t : types)
        if (speeds.usable()[t] >= n) {
          c.assign(T, 0);
          c[t] = n;
          visit(c);
        }
      continue;
    }
    c.assign(T, 0);
    for_each_split(types, n, speeds.usable(), c, visit);
  }
}

// A GLPK problem: rows, columns and the sparse matrix, solved with presolve and GLPK's defaults.
class Mip {
 public:
  Mip() : lp_(glp_create_prob()) { glp_set_obj_dir(lp_, GLP_MIN); }
  ~Mip() { glp_delete_prob(lp_); }
  Mip(const Mip&) = delete;
  Mip& operator=(const Mip&) = delete;

  // Bounds as GLPK's GLP_FX / GLP_UP / GLP_LO with lo / hi.
  int row(int kind, double lo, double hi) {
    int r = glp_add_rows(lp_, 1);
    glp_set_row_bnds(lp_, r, kind, lo, hi);
    return r;
  }
  int column(int kind, double lo, double hi, double cost) {
    int c = glp_add_cols(lp_, 1);
    glp_set_col_kind(lp_, c, kind);
    if (kind != GLP_BV) glp_set_col_bnds(lp_, c, lo < hi ? GLP_DB : GLP_FX, lo, hi);
    glp_set_obj_coef(lp_, c, cost);
    return c;
  }
  void set(int row, int col, double v) {
    ia_.push_back(row);
    ja_.push_back(col);
    ar_.push_back(v);
  }
  int columns() const { return glp_get_num_cols(lp_); }

  // Solves to optimality or until the time limit. Returns whether a solution was found (false:
  // none within the time limit); throws when the problem has none. `bound` gets GLPK's best
  // bound (the objective itself when proven optimal; -infinity when none is known) and
  // `optimal` whether the search finished.
  bool solve(double time_limit_s, double& bound, bool& optimal) {
    glp_load_matrix(lp_, static_cast<int>(ia_.size()) - 1, ia_.data(), ja_.data(), ar_.data());
    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.presolve = GLP_ON;
    parm.msg_lev = GLP_MSG_OFF;
    parm.tm_lim = static_cast<int>(std::min(time_limit_s * 1000.0, 2e9));
    bound = -std::numeric_limits<double>::infinity();
    parm.cb_func = record_bound;
    parm.cb_info = &bound;
    int ret = glp_intopt(lp_, &parm);
    int status = glp_mip_status(lp_);
    if (ret == GLP_ENOPFS || status == GLP_NOFEAS)
      throw InputError(
          "placement MIP: the jobs' smallest sizes do not fit the cluster's usable GPUs");
    optimal = ret == 0 && status == GLP_OPT;
    if (optimal) bound = glp_mip_obj_val(lp_);
    if (status == GLP_OPT || status == GLP_FEAS) return true;
    if (ret == GLP_ETMLIM) return false;
    throw std::runtime_error("placement MIP: GLPK found no solution (glp_intopt returned " +
                             std::to_string(ret) + ")");
  }
  double value(int col) const { return glp_mip_col_val(lp_, col); }

 private:
  glp_prob* lp_;
  std::vector<int> ia_{0}, ja_{0};
  std::vector<double> ar_{0};

  // GLPK's callback: the bound of the best active node (it only rises as the search goes on).
  static void record_bound(glp_tree* tree, void* info) {
    int best = glp_ios_best_node(tree);
    if (best != 0) {
      double* bound = static_cast<double*>(info);
      *bound = std::max(*bound, glp_ios_node_bound(tree, best));
    }
  }
};

void check_time_limit(double time_limit_s) {
  if (!(time_limit_s > 0) || !std::isfinite(time_limit_s))
    throw InputError("placement MIP: the time limit must be positive");
}

// The result when GLPK found no solution within the time limit: every job waits, the objective
// is infinite, the bound is what GLPK proved.
PlacementResult no_solution(PlacementResult& r, std::chrono::steady_clock::time_point t0) {
  r.objective_s = std::numeric_limits<double>::infinity();
  r.optimal = false;
  r.solve_ms = elapsed_ms(t0);
  return r;
}

void no_vector(const PlacementProblem& p, int j) {
  throw InputError("placement MIP: job " + std::to_string(j) + " (" + p.jobs[j].model +
                   ") has no size its allowed GPU types can hold");
}

}  // namespace

PlacementResult optimal_placement_mip(const PlacementProblem& problem, double time_limit_s,
                                      TypeLevelCosts costs) {
  auto t0 = std::chrono::steady_clock::now();
  check_time_limit(time_limit_s);
  PlacementSpeeds speeds(problem);
  PlacementTopology topo(problem, speeds);
  int J = static_cast<int>(problem.jobs.size());
  int T = speeds.num_types();
  Mip mip;
  std::vector<int> one_vector(J), type_cap(T);
  for (int j = 0; j < J; ++j) one_vector[j] = mip.row(GLP_FX, 1, 1);
  for (int t = 0; t < T; ++t) type_cap[t] = mip.row(GLP_UP, 0, speeds.usable()[t]);
  struct Column {
    int job, col;
    std::vector<int> counts;
    double cost;
  };
  std::vector<Column> columns;
  for (int j = 0; j < J; ++j) {
    const PlacementJob& job = problem.jobs[j];
    size_t before = columns.size();
    for_each_count_vector(problem, speeds, j, [&](const std::vector<int>& c) {
      double cost;
      if (costs == TypeLevelCosts::UnavoidableLocality) {
        cost = placement_type_level_finish(problem, speeds, topo, j, c);
        if (!std::isfinite(cost)) return;
      } else {
        double v = speeds.speed(j, c);
        if (v <= 0) return;
        cost = job.remaining / v;
        if (job.running && c != topo.current_types[j]) cost += problem.costs.restart_s;
      }
      int col = mip.column(GLP_BV, 0, 1, cost);
      mip.set(one_vector[j], col, 1);
      for (int t = 0; t < T; ++t)
        if (c[t] > 0) mip.set(type_cap[t], col, c[t]);
      columns.push_back(Column{j, col, c, cost});
    });
    if (columns.size() == before) no_vector(problem, j);
  }
  PlacementResult r;
  r.jobs.assign(J, JobPlacement{});
  r.categories_evaluated = mip.columns();
  if (!mip.solve(time_limit_s, r.bound_s, r.optimal)) return no_solution(r, t0);
  // Nodes only for the caller's convenience: fill each type's nodes, largest first.
  std::vector<std::vector<std::pair<int, int>>> free_nodes(T);  // (GPUs left, node)
  for (int t = 0; t < T; ++t) {
    for (int n : topo.nodes_of_type[t]) free_nodes[t].push_back({topo.nodes[n].cap, n});
    std::stable_sort(free_nodes[t].begin(), free_nodes[t].end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
  }
  for (const Column& col : columns) {
    if (mip.value(col.col) < 0.5) continue;
    JobPlacement& jp = r.jobs[col.job];
    for (int t = 0; t < T; ++t) {
      if (col.counts[t] <= 0) continue;
      jp.gpus_by_type[speeds.types()[t]] += col.counts[t];
      jp.total += col.counts[t];
      int need = col.counts[t];
      for (auto& [left, n] : free_nodes[t]) {
        int x = std::min(left, need);
        if (x <= 0) continue;
        jp.gpus_by_node[topo.nodes[n].name] += x;
        left -= x;
        need -= x;
      }
    }
    jp.iters_per_s = speeds.speed(col.job, col.counts);  // without locality, as the header says
    jp.finish_s = col.cost;
    r.objective_s += col.cost;
  }
  r.solve_ms = elapsed_ms(t0);
  return r;
}

PlacementResult optimal_placement_node_mip(const PlacementProblem& problem, double time_limit_s) {
  auto t0 = std::chrono::steady_clock::now();
  check_time_limit(time_limit_s);
  PlacementSpeeds speeds(problem);
  PlacementTopology topo(problem, speeds);
  int J = static_cast<int>(problem.jobs.size());
  int T = speeds.num_types();
  int N = static_cast<int>(topo.nodes.size());
  Mip mip;
  std::vector<int> node_cap(N);
  for (int n = 0; n < N; ++n) node_cap[n] = mip.row(GLP_UP, 0, topo.nodes[n].cap);
  std::vector<std::vector<int>> y(J, std::vector<int>(N, 0));  // column of y(j,n); 0: none
  for (int j = 0; j < J; ++j) {
    const PlacementJob& job = problem.jobs[j];
    // The vectors: one per number of nodes whose finish time differs from that of one node more
    // (finish times do not fall with more nodes, and a vector allows up to its m nodes).
    struct Vector {
      std::vector<int> counts;
      int nodes;
      double cost;
    };
    std::vector<Vector> vectors;
    for_each_count_vector(problem, speeds, j, [&](const std::vector<int>& c) {
      int lo = 0, hi = 0;
      for (int t = 0; t < T; ++t)
        if (c[t] > 0) {
          lo += (c[t] + topo.max_node_of_type[t] - 1) / topo.max_node_of_type[t];
          hi += std::min<int>(c[t], static_cast<int>(topo.nodes_of_type[t].size()));
        }
      double restart = job.running ? problem.costs.restart_s : 0.0;
      double ratio = topo.link_ratio(c);
      double next = job.remaining * placement_iteration_time(speeds, topo, j, c, hi, ratio);
      if (!std::isfinite(next)) return;
      vectors.push_back(Vector{c, hi, next + restart});
      for (int m = hi - 1; m >= lo; --m) {
        double f = job.remaining * placement_iteration_time(speeds, topo, j, c, m, ratio);
        if (f < next) vectors.push_back(Vector{c, m, f + restart});
        next = f;
      }
    });
    if (vectors.empty()) no_vector(problem, j);
    bool spread_matters = false;  // some vector allows fewer nodes than the job could use
    int max_size = 0;
    for (const Vector& v : vectors) {
      int hi = 0, n = 0;
      for (int t = 0; t < T; ++t) {
        hi += std::min<int>(v.counts[t], static_cast<int>(topo.nodes_of_type[t].size()));
        n += v.counts[t];
      }
      spread_matters = spread_matters || v.nodes < hi;
      max_size = std::max(max_size, n);
    }
    int one_vector = mip.row(GLP_FX, 1, 1);
    std::vector<int> type_sum(T, 0);
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t)) type_sum[t] = mip.row(GLP_FX, 0, 0);
    int node_count = spread_matters ? mip.row(GLP_UP, 0, 0) : 0;
    for (const Vector& v : vectors) {
      int col = mip.column(GLP_BV, 0, 1, v.cost);
      mip.set(one_vector, col, 1);
      for (int t = 0; t < T; ++t)
        if (v.counts[t] > 0) mip.set(type_sum[t], col, -v.counts[t]);
      if (spread_matters) mip.set(node_count, col, -v.nodes);
    }
    for (int n = 0; n < N; ++n) {
      int t = topo.nodes[n].type;
      if (!speeds.allowed(j, t)) continue;
      int bound = std::min(topo.nodes[n].cap, max_size);
      y[j][n] = mip.column(GLP_IV, 0, bound, 0.0);
      mip.set(node_cap[n], y[j][n], 1);
      mip.set(type_sum[t], y[j][n], 1);
      if (spread_matters) {
        int u = mip.column(GLP_BV, 0, 1, 0.0);
        mip.set(node_count, u, 1);
        int link = mip.row(GLP_UP, 0, 0);  // y(j,n) <= bound * u(j,n)
        mip.set(link, y[j][n], 1);
        mip.set(link, u, -bound);
      }
    }
    // Staying put: s(j) = 1 forces y(j,n) to what it holds on every node and refunds the restart.
    if (job.running && problem.costs.restart_s > 0 && topo.current_total[j] > 0) {
      int s = mip.column(GLP_BV, 0, 1, -problem.costs.restart_s);
      std::vector<int> held(N, 0);
      for (const auto& [n, g] : topo.current[j]) held[n] = g;
      for (int n = 0; n < N; ++n) {
        if (y[j][n] == 0) continue;
        int bound = std::min(topo.nodes[n].cap, max_size);
        if (held[n] > 0) {  // y >= held * s
          int r = mip.row(GLP_LO, 0, 0);
          mip.set(r, y[j][n], 1);
          mip.set(r, s, -held[n]);
        }
        if (bound > held[n]) {  // y <= held + (bound - held)(1 - s)
          int r = mip.row(GLP_UP, 0, bound);
          mip.set(r, y[j][n], 1);
          mip.set(r, s, bound - held[n]);
        }
      }
    }
  }
  PlacementResult r;
  r.jobs.assign(J, JobPlacement{});
  r.categories_evaluated = mip.columns();
  if (!mip.solve(time_limit_s, r.bound_s, r.optimal)) return no_solution(r, t0);
  for (int j = 0; j < J; ++j) {
    std::vector<std::pair<int, int>> package;
    for (int n = 0; n < N; ++n)
      if (y[j][n] > 0) {
        int g = static_cast<int>(std::lround(mip.value(y[j][n])));
        if (g > 0) package.push_back({n, g});
      }
    r.jobs[j] = placement_on_nodes(problem, speeds, topo, j, package);
    r.objective_s += r.jobs[j].finish_s;
  }
  r.solve_ms = elapsed_ms(t0);
  return r;
}

#else  // !HAVE_GLPK

PlacementResult optimal_placement_mip(const PlacementProblem&, double) {
  throw std::runtime_error("placement MIP: ringsched was built without GLPK (libglpk-dev)");
}

PlacementResult optimal_placement_node_mip(const PlacementProblem&, double) {
  throw std::runtime_error("placement MIP: ringsched was built without GLPK (libglpk-dev)");
}

#endif

}  // namespace ringsched
