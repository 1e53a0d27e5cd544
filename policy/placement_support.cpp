// SPDX-License-Identifier: GPL-2.0-or-later
// What the phases of the placement share (placement_internal.h): the problem's validation, the
// memoised speeds, the topology, the sizes, the locality model and the type-level finish time,
// the feasibility of a category, a result's rows, the objective without locality.
//
// Locality model (placement_iteration_time(); what place_hetero, the market and the node-level
// MIP charge), relative to the placement the profile was measured at. A profile's speed on n
// GPUs already holds the communication of the ring it was measured on: the public tables were
// measured on servers of kProfileServerGpus = 8 GPUs, each point on the fewest of them (Gavel's
// consolidated runs of 1-8 GPUs on one server, its spread "_unconsolidated" runs not imported;
// ElasticFlow's 16-64 GPUs on 2-8 servers), so its n GPUs spanned ceil(n / 8) servers. Beyond
// the largest count measured for a (model, type), the fitted curve extrapolates the ring of that
// point, so the reference stays at that point's servers (Gavel's 16 GPUs: one server). A type
// the profile has no point for (a prediction) counts as measured inside one server.
// - Measured inside one server, run across nodes: the ring's slowest link becomes the inter-node
//   one, so the communication term (1/speed minus the compute time 1/sum(c_t v_t(1)) of the
//   proportional split) grows by the factor min(intra_gbps)/min(inter_gbps) of the nodes used.
// - Measured across servers already: its speed holds the inter-node link; no such factor.
// - Either way, every node beyond both the fewest that could hold the job and the servers of
//   the measurement adds 5% of the communication term x (factor - 1), standing for the extra
//   hops and the NIC bandwidth taken from the nodes' other jobs.
// No credit for fewer nodes than the measurement (the measuring cluster's links are unknown).
// With intra_gbps = inter_gbps locality costs nothing.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_set>

#include "placement_internal.h"

namespace ringsched {
namespace {

constexpr double kExtraNodeShare = 0.05;  // see the locality model above
constexpr int kProfileServerGpus = 8;     // GPUs per server of the profiles' measurements

// Normalised names of the types a job lists (empty: any).
std::vector<std::string> listed_types(const PlacementJob& job) {
  std::vector<std::string> out;
  for (const std::string& t : job.allowed_types) out.push_back(normalize_type(t));
  return out;
}

bool type_listed(const std::vector<std::string>& listed, const std::string& type) {
  return listed.empty() || std::find(listed.begin(), listed.end(), type) != listed.end();
}

// Per-iteration time with the locality model (see the top of this file): the job's ring spans
// nodes_used nodes, the fewest that could hold it are min_nodes, its speed was measured on
// measured_nodes servers.
double iteration_time_with_locality(double t_iter, double t_compute, int nodes_used, int min_nodes,
                                    int measured_nodes, double link_ratio) {
  if (nodes_used <= 1 || link_ratio <= 1.0) return t_iter;
  double comm = std::max(0.0, t_iter - t_compute);
  double crossing = measured_nodes <= 1 ? 1.0 : 0.0;
  int extra = std::max(0, nodes_used - std::max({1, min_nodes, measured_nodes}));
  return t_iter + comm * (link_ratio - 1.0) * (crossing + kExtraNodeShare * extra);
}

// Whether each (model, type) of the problem is known to the throughput model, asked once per
// distinct model (the planner passes thousands of jobs of a few tens of models).
class KnownTypes {
 public:
  KnownTypes(const PlacementProblem& p, const std::vector<std::string>& types) {
    for (const PlacementJob& job : p.jobs) {
      auto [it, fresh] = known_.emplace(job.model, std::vector<bool>());
      if (!fresh) continue;
      for (const std::string& t : types)
        it->second.push_back(p.model->iters_per_s(job.model, t, 1) > 0);
    }
  }
  const std::vector<bool>& of(const std::string& model) const { return known_.at(model); }

 private:
  std::map<std::string, std::vector<bool>> known_;
};

// Per job, whether it may use each of `types` (listed by it, or it lists none, and known for
// its model), worked out once per distinct (model, listed types): the planner passes thousands
// of jobs of a few tens of them.
std::vector<std::vector<bool>> jobs_allowed(const PlacementProblem& p,
                                            const std::vector<std::string>& types,
                                            const KnownTypes& known) {
  using Key = std::pair<const std::string*, const std::vector<std::string>*>;
  auto less = [](const Key& a, const Key& b) {
    return *a.first != *b.first ? *a.first < *b.first : *a.second < *b.second;
  };
  std::map<Key, size_t, decltype(less)> first(less);
  std::vector<std::vector<bool>> out(p.jobs.size());
  for (size_t j = 0; j < p.jobs.size(); ++j) {
    const PlacementJob& job = p.jobs[j];
    auto [it, fresh] = first.emplace(Key{&job.model, &job.allowed_types}, j);
    if (!fresh) {
      out[j] = out[it->second];
      continue;
    }
    std::vector<std::string> listed = listed_types(job);
    out[j].assign(types.size(), false);
    for (size_t t = 0; t < types.size(); ++t)
      out[j][t] = type_listed(listed, types[t]) && known.of(job.model)[t];
  }
  return out;
}

}  // namespace

std::string placement_job_name(const PlacementProblem& p, int j) {
  return "placement job " + std::to_string(j) + " (" + p.jobs[j].model + ")";
}

double placement_elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_placement_counts(const PlacementProblem& p, const std::vector<int>& counts,
                            const char* what) {
  if (counts.size() != p.jobs.size())
    throw InputError(std::string("placement: ") + what + " has " + std::to_string(counts.size()) +
                     " entries for " + std::to_string(p.jobs.size()) + " jobs");
  for (size_t j = 0; j < counts.size(); ++j) {
    int c = counts[j];
    if (c == 0) continue;
    const PlacementJob& job = p.jobs[j];
    if (c < 0 || c < job.min_gpus || c > job.max_gpus)
      throw InputError(placement_job_name(p, static_cast<int>(j)) + ": " + what + " gives it " +
                       std::to_string(c) + " GPUs, outside its range [" +
                       std::to_string(job.min_gpus) + ", " + std::to_string(job.max_gpus) + "]");
  }
}

int placement_fastest_fill(PlacementSpeeds& speeds, int j, const std::vector<int>& types, int n,
                           const std::vector<int>& room, std::vector<int>& c) {
  std::vector<int> order = types;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return speeds.single(j, a, 1) > speeds.single(j, b, 1);
  });
  c.assign(speeds.num_types(), 0);
  int left = n, kinds = 0;
  for (int t : order) {
    c[t] = std::min(left, room[t]);
    left -= c[t];
    kinds += c[t] > 0 ? 1 : 0;
  }
  return left == 0 ? kinds : 0;
}

long placement_compositions(int n, int k, long cap) {
  long c = 1;
  for (int i = 1; i < k; ++i) {
    c = c * (n + i) / i;
    if (c > cap) return cap + 1;
  }
  return c;
}

PlacementTopology::PlacementTopology(const PlacementProblem& p, PlacementSpeeds& speeds) {
  int T = speeds.num_types();
  nodes_of_type.assign(T, {});
  cap_of_type.assign(T, 0);
  max_node_of_type.assign(T, 1);
  min_intra.assign(T, std::numeric_limits<double>::infinity());
  min_inter.assign(T, std::numeric_limits<double>::infinity());
  std::map<std::string, int> index;
  for (size_t k = 0; k < p.cluster.nodes.size(); ++k) {
    const Node& n = p.cluster.nodes[k];
    if (n.usable() <= 0) continue;
    int t = static_cast<int>(std::lower_bound(speeds.types().begin(), speeds.types().end(),
                                              n.gpu_type) - speeds.types().begin());
    index[n.name] = static_cast<int>(nodes.size());
    nodes_of_type[t].push_back(static_cast<int>(nodes.size()));
    cap_of_type[t] += n.usable();
    max_node_of_type[t] = std::max(max_node_of_type[t], n.usable());
    min_intra[t] = std::min(min_intra[t], n.intra_gbps);
    min_inter[t] = std::min(min_inter[t], n.inter_gbps);
    nodes.push_back(TNode{n.name, static_cast<int>(k), t, n.usable(), n.intra_gbps, n.inter_gbps});
  }
  cap_sums_.assign(T, {});
  for (int t = 0; t < T; ++t) {
    for (int n : nodes_of_type[t]) cap_sums_[t].push_back(nodes[n].cap);
    std::sort(cap_sums_[t].rbegin(), cap_sums_[t].rend());
    for (size_t k = 1; k < cap_sums_[t].size(); ++k) cap_sums_[t][k] += cap_sums_[t][k - 1];
  }
  int J = static_cast<int>(p.jobs.size());
  job_class_.assign(J, 0);
  current.assign(J, {});
  current_total.assign(J, 0);
  current_types.assign(J, std::vector<int>(T, 0));
  // Jobs with the same allowed types share their node capacities (a few classes, many jobs).
  std::map<std::vector<bool>, int> classes;
  for (int j = 0; j < J; ++j) {
    std::vector<bool> allowed(T);
    for (int t = 0; t < T; ++t) allowed[t] = speeds.allowed(j, t);
    auto [it, fresh] = classes.emplace(allowed, static_cast<int>(caps_desc_.size()));
    if (fresh) {
      caps_desc_.emplace_back();
      for (const TNode& n : nodes)
        if (allowed[n.type]) caps_desc_.back().push_back(n.cap);
      std::sort(caps_desc_.back().rbegin(), caps_desc_.back().rend());
    }
    job_class_[j] = it->second;
    const PlacementJob& job = p.jobs[j];
    if (!job.running) continue;
    bool usable = true;
    for (const auto& [name, g] : job.current) {
      if (g <= 0) continue;
      auto found = index.find(name);
      if (found == index.end() || nodes[found->second].cap < g ||
          !speeds.allowed(j, nodes[found->second].type)) {
        usable = false;  // its GPUs are no longer all available to it: it must move
        break;
      }
      current[j].push_back({found->second, g});
      current_total[j] += g;
      current_types[j][nodes[found->second].type] += g;
    }
    if (!usable) {
      current[j].clear();
      current_total[j] = 0;
      current_types[j].assign(T, 0);
    }
  }
  fair_t_iter.assign(J, std::numeric_limits<double>::infinity());
  if (!(p.fair_weight > 0)) return;
  std::vector<int> counts(T, 0);
  for (int j = 0; j < J; ++j) {
    const int g = p.jobs[j].fair_gpus;
    for (int t = 0; t < T && g > 0; ++t) {
      if (!speeds.allowed(j, t) || cap_of_type[t] < g) continue;
      counts[t] = g;
      fair_t_iter[j] =
          std::min(fair_t_iter[j], placement_type_level_iteration_time(speeds, *this, j, counts, 0));
      counts[t] = 0;
    }
  }
}

int PlacementTopology::fewest_nodes(int t, int n) const {
  if (n <= 0) return 0;
  const std::vector<int>& sums = cap_sums_[t];  // sums[k]: GPUs of the k + 1 largest nodes
  auto it = std::lower_bound(sums.begin(), sums.end(), n);
  // Past the last sum: more than the type holds, one node more than it has.
  return static_cast<int>(it - sums.begin()) + 1;
}

int PlacementTopology::min_nodes(int j, int n) const {
  int k = 0, sum = 0;
  for (int c : caps_desc_[job_class_[j]]) {
    if (sum >= n) break;
    sum += c;
    ++k;
  }
  return std::max(1, k);
}

double PlacementTopology::link_ratio(const std::vector<int>& counts) const {
  double intra = INFINITY, inter = INFINITY;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) {
      intra = std::min(intra, min_intra[t]);
      inter = std::min(inter, min_inter[t]);
    }
  return intra / inter;
}

PlacementRing placement_ring(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                             const std::vector<int>& counts) {
  PlacementRing ring;
  double v = speeds.speed(j, counts);
  if (v <= 0) return ring;
  double sum_v1 = 0;
  int n = 0;
  for (int t = 0; t < speeds.num_types(); ++t)
    if (counts[t] > 0) {
      sum_v1 += counts[t] * speeds.single(j, t, 1);
      n += counts[t];
    }
  ring.runs = true;
  ring.t_iter = 1.0 / v;
  ring.t_compute = 1.0 / sum_v1;
  ring.min_nodes = topo.min_nodes(j, n);
  ring.measured_nodes = speeds.measured_nodes(j, counts);
  return ring;
}

double placement_ring_time(const PlacementRing& ring, int nodes, double link_ratio) {
  if (!ring.runs) return INFINITY;
  return iteration_time_with_locality(ring.t_iter, ring.t_compute, nodes, ring.min_nodes,
                                      ring.measured_nodes, link_ratio);
}

double placement_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo, int j,
                                const std::vector<int>& counts, int nodes, double link_ratio) {
  return placement_ring_time(placement_ring(speeds, topo, j, counts), nodes, link_ratio);
}

int PlacementTopology::type_level_nodes(const std::vector<int>& counts) const {
  int nodes = 0;
  for (size_t t = 0; t < counts.size(); ++t) nodes += fewest_nodes(static_cast<int>(t), counts[t]);
  return nodes;
}

double placement_type_level_iteration_time(PlacementSpeeds& speeds, const PlacementTopology& topo,
                                           int j, const std::vector<int>& counts, int more_nodes) {
  return placement_iteration_time(speeds, topo, j, counts, topo.type_level_nodes(counts) + more_nodes,
                                  topo.link_ratio(counts));
}

double placement_type_level_finish(const PlacementProblem& p, PlacementSpeeds& speeds,
                                   const PlacementTopology& topo, int j,
                                   const std::vector<int>& counts) {
  double f = p.jobs[j].remaining * placement_type_level_iteration_time(speeds, topo, j, counts, 0);
  if (p.jobs[j].running && counts != topo.current_types[j]) f += p.costs.restart_s;
  return f;
}

namespace {

// Seconds per iteration of job j on a package of (topology node, GPUs), with the locality of the
// nodes it spans, and whether it restarts (a running job that does not hold exactly these GPUs
// now, all of them still usable). t_iter is 0 for an empty package.
struct OnNodes {
  double t_iter = 0;
  bool restart = false;
};

OnNodes on_nodes(const PlacementProblem& p, PlacementSpeeds& speeds, const PlacementTopology& topo,
                 int j, const std::vector<std::pair<int, int>>& package) {
  OnNodes out;
  std::vector<int> counts(speeds.num_types(), 0);
  std::vector<std::pair<int, int>> by_node;  // (node, GPUs), one per node, by node
  double min_intra = INFINITY, min_inter = INFINITY;
  for (const auto& [n, g] : package) {
    if (g <= 0) continue;
    by_node.push_back({n, g});
    counts[topo.nodes[n].type] += g;
    min_intra = std::min(min_intra, topo.nodes[n].intra);
    min_inter = std::min(min_inter, topo.nodes[n].inter);
  }
  if (by_node.empty()) return out;
  std::sort(by_node.begin(), by_node.end());
  size_t distinct = 0;
  for (size_t k = 0; k < by_node.size(); ++k)
    if (distinct > 0 && by_node[distinct - 1].first == by_node[k].first)
      by_node[distinct - 1].second += by_node[k].second;
    else
      by_node[distinct++] = by_node[k];
  by_node.resize(distinct);
  out.t_iter = placement_iteration_time(speeds, topo, j, counts, static_cast<int>(distinct),
                                        min_intra / min_inter);
  if (p.jobs[j].running) {
    const std::vector<std::pair<int, int>>& now = topo.current[j];  // distinct nodes, GPUs > 0
    bool same = now.size() == distinct;
    for (size_t k = 0; k < now.size() && same; ++k)
      same = std::find(by_node.begin(), by_node.end(), now[k]) != by_node.end();
    out.restart = now.empty() || !same;
  }
  return out;
}

// The finish time of job j on a package: its remaining work at the package's speed, the restart
// cost where it moves, and PlacementProblem::fair_weight times the time it loses there against
// its fairness floor (PlacementTopology::fair_t_iter; a floor larger than one node's GPUs is
// charged only for nodes beyond the fewest).
double charged_finish(const PlacementProblem& p, const PlacementTopology& topo, int j,
                      const OnNodes& o) {
  double t = o.t_iter;
  const double fair = topo.fair_t_iter[j];
  if (std::isfinite(t) && std::isfinite(fair) && t > fair) t += p.fair_weight * (t - fair);
  return p.jobs[j].remaining * t + (o.restart ? p.costs.restart_s : 0.0);
}

}  // namespace

double placement_package_finish(const PlacementProblem& p, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package) {
  return charged_finish(p, topo, j, on_nodes(p, speeds, topo, j, package));
}

JobPlacement placement_on_nodes(const PlacementProblem& p, PlacementSpeeds& speeds,
                                const PlacementTopology& topo, int j,
                                const std::vector<std::pair<int, int>>& package) {
  JobPlacement jp;
  for (const auto& [n, g] : package) {
    if (g <= 0) continue;
    jp.gpus_by_node[topo.nodes[n].name] += g;
    jp.gpus_by_type[speeds.types()[topo.nodes[n].type]] += g;
    jp.total += g;
  }
  if (jp.total <= 0) return jp;
  OnNodes o = on_nodes(p, speeds, topo, j, package);
  jp.iters_per_s = std::isfinite(o.t_iter) ? 1.0 / o.t_iter : 0.0;
  jp.finish_s = charged_finish(p, topo, j, o);
  return jp;
}

void fill_placement_result(const PlacementProblem& p, PlacementSpeeds& speeds,
                           const PlacementTopology& topo,
                           const std::vector<std::vector<std::pair<int, int>>>& package,
                           PlacementResult& out) {
  out.jobs.assign(p.jobs.size(), JobPlacement{});
  out.objective_s = 0;
  for (size_t j = 0; j < p.jobs.size() && j < package.size(); ++j) {
    if (package[j].empty()) continue;
    out.jobs[j] = placement_on_nodes(p, speeds, topo, static_cast<int>(j), package[j]);
    out.objective_s += out.jobs[j].finish_s;
  }
}

CategoryFit::CategoryFit(const PlacementProblem& p, const PlacementSpeeds& speeds,
                         const PlacementTopology& topo)
    : p_(p), T_(speeds.num_types()), by_sets_(speeds.num_types() <= 12), cap_(topo.cap_of_type) {
  int J = static_cast<int>(p.jobs.size());
  mask_.assign(J, 0);
  single_cap_.assign(J, 0);
  mixed_cap_.assign(J, 0);
  for (int j = 0; j < J; ++j)
    for (int t = 0; t < T_; ++t)
      if (speeds.allowed(j, t)) {
        if (by_sets_) mask_[j] |= 1u << t;
        single_cap_[j] = std::max(single_cap_[j], cap_[t]);
        mixed_cap_[j] += cap_[t];
      }
}

bool CategoryFit::job_fits(int j, int n) const {
  return n <= (p_.jobs[j].allow_mixed ? mixed_cap_[j] : single_cap_[j]);
}

std::vector<long> CategoryFit::need_of(const std::vector<int>& counts) const {
  std::vector<long> need(by_sets_ ? (1u << T_) : 1, 0);
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j] > 0) need[mask_[j]] += counts[j];
  return need;
}

bool CategoryFit::holds(const std::vector<long>& need, const std::vector<int>& cap) const {
  if (!by_sets_) {
    long have = 0;
    for (int c : cap) have += c;
    return need[0] <= have;
  }
  unsigned full = 1u << T_;
  for (unsigned s = 1; s < full; ++s) {
    long have = 0, wanted = 0;
    for (int t = 0; t < T_; ++t)
      if (s & (1u << t)) have += cap[t];
    for (unsigned m = s;; m = (m - 1) & s) {  // every subset m of s
      wanted += need[m];
      if (m == 0) break;
    }
    if (wanted > have) return false;
  }
  return true;
}

std::vector<long> CategoryFit::within_of(const std::vector<long>& need) const {
  std::vector<long> within = need;
  if (!by_sets_) return within;
  for (int t = 0; t < T_; ++t)  // every subset's need summed into each set
    for (unsigned s = 0; s < within.size(); ++s)
      if (s & (1u << t)) within[s] += within[s & ~(1u << t)];
  return within;
}

void CategoryFit::change_within(std::vector<long>& within, int j, int from, int to) const {
  if (!by_sets_) {
    within[0] += to - from;
    return;
  }
  unsigned m = mask_[j], full = 1u << T_;
  for (unsigned s = m; s < full; s = (s + 1) | m) within[s] += to - from;  // the sets holding m
}

bool CategoryFit::holds_within(const std::vector<long>& within, const std::vector<int>& cap) const {
  if (!by_sets_) {
    long have = 0;
    for (int c : cap) have += c;
    return within[0] <= have;
  }
  long have[1u << 12];  // per set: its types' GPUs
  have[0] = 0;
  unsigned full = 1u << T_;
  for (unsigned s = 1; s < full; ++s) {
    have[s] = have[s & (s - 1)] + cap[__builtin_ctz(s)];
    if (within[s] > have[s]) return false;
  }
  return true;
}

bool CategoryFit::fits(const std::vector<int>& counts) const {
  for (size_t j = 0; j < counts.size(); ++j)
    if (counts[j] > 0 && !job_fits(static_cast<int>(j), counts[j])) return false;
  return holds(need_of(counts));
}

bool CategoryFit::fits_changes(const std::vector<long>& need, const std::vector<int>& counts,
                               const std::vector<std::pair<int, int>>& changes) const {
  std::vector<long> after = need;
  for (const auto& [j, n] : changes) {
    if (n > 0 && !job_fits(j, n)) return false;
    change(after, j, counts[j], n);
  }
  return holds(after);
}

void validate_placement_problem(const PlacementProblem& p) {
  if (!p.model) throw InputError("placement: no throughput model");
  if (!(p.fair_weight >= 0) || !std::isfinite(p.fair_weight))
    throw InputError("placement: fair_weight must be a finite number >= 0");
  p.cluster.validate();
  std::vector<std::string> types = p.cluster.types();
  KnownTypes known(p, types);
  std::vector<std::vector<bool>> allowed = jobs_allowed(p, types, known);
  std::unordered_set<std::string_view> names;  // the nodes, for running jobs' GPUs
  for (const PlacementJob& job : p.jobs)
    if (job.running && !job.current.empty() && names.empty()) {
      names.reserve(p.cluster.nodes.size());
      for (const Node& n : p.cluster.nodes) names.insert(n.name);
    }
  for (size_t i = 0; i < p.jobs.size(); ++i) {
    int j = static_cast<int>(i);
    const PlacementJob& job = p.jobs[i];
    if (job.model.empty()) throw InputError(placement_job_name(p, j) + ": no model name");
    if (!(job.remaining > 0) || !std::isfinite(job.remaining))
      throw InputError(placement_job_name(p, j) +
                       ": remaining iterations must be positive and finite");
    if (job.min_gpus < 1)
      throw InputError(placement_job_name(p, j) + ": min_gpus must be at least 1");
    if (job.max_gpus < job.min_gpus)
      throw InputError(placement_job_name(p, j) + ": max_gpus " + std::to_string(job.max_gpus) +
                       " is below min_gpus " + std::to_string(job.min_gpus));
    if (job.fair_gpus < 0)
      throw InputError(placement_job_name(p, j) + ": fair_gpus must be 0 (none) or more, got " +
                       std::to_string(job.fair_gpus));
    bool runnable = false;
    for (size_t t = 0; t < types.size(); ++t) runnable = runnable || allowed[i][t];
    if (!runnable)
      throw InputError(placement_job_name(p, j) +
                       ": no GPU type of the cluster is both allowed and known for its model");
    if (job.running)
      for (const auto& [node, g] : job.current) {
        if (g < 0)
          throw InputError(placement_job_name(p, j) + ": negative GPU count on node " + node);
        if (g > 0 && !names.count(node))
          throw InputError(placement_job_name(p, j) + ": holds GPUs on unknown node '" + node +
                           "'");
      }
  }
}

std::vector<int> placement_sizes(const PlacementProblem& p, const PlacementSpeeds& speeds, int j) {
  const PlacementJob& job = p.jobs[j];
  long usable = 0;
  for (int t = 0; t < speeds.num_types(); ++t)
    if (speeds.allowed(j, t)) usable += speeds.usable()[t];
  std::set<int> sizes;
  auto add = [&](long s) {
    if (s >= job.min_gpus && s <= job.max_gpus && s <= usable) sizes.insert(static_cast<int>(s));
  };
  add(job.min_gpus);
  add(job.max_gpus);
  if (p.power_of_two) {
    for (long s = 1; s <= job.max_gpus && s <= usable; s *= 2) add(s);
  } else {
    for (int s = job.min_gpus; s <= job.max_gpus && s <= usable; ++s) add(s);
  }
  return std::vector<int>(sizes.begin(), sizes.end());
}

size_t PlacementSpeeds::CountsHash::operator()(const std::vector<int>& v) const {
  size_t h = 1469598103934665603ull;
  for (int x : v) h = (h ^ static_cast<size_t>(x)) * 1099511628211ull;
  return h;
}

PlacementSpeeds::PlacementSpeeds(const PlacementProblem& p) : problem_(p) {
  validate_placement_problem(p);
  types_ = p.cluster.types();
  usable_.assign(types_.size(), 0);
  for (size_t t = 0; t < types_.size(); ++t) usable_[t] = p.cluster.usable_of_type(types_[t]);
  std::map<std::string, int> index;
  for (const PlacementJob& job : p.jobs) {
    auto [it, fresh] = index.emplace(job.model, static_cast<int>(model_names_.size()));
    model_index_.push_back(it->second);
    if (fresh) model_names_.push_back(job.model);
  }
  cache_.resize(model_names_.size());
  packed_cache_.resize(model_names_.size());
  single_cache_.assign(model_names_.size(), std::vector<std::vector<double>>(types_.size()));
  pack_bits_ = types_.empty() ? 0 : static_cast<int>(std::min<size_t>(21, 64 / types_.size()));
  KnownTypes known(p, types_);
  measured_max_.assign(model_names_.size(), std::vector<int>(types_.size(), 0));
  for (const ProfilePoint& pt : p.model->table().points()) {
    auto m = index.find(pt.model);
    auto t = std::lower_bound(types_.begin(), types_.end(), pt.gpu_type);
    if (m == index.end() || t == types_.end() || *t != pt.gpu_type) continue;
    int& most = measured_max_[m->second][t - types_.begin()];
    most = std::max(most, pt.num_gpus);
  }
  allowed_ = jobs_allowed(p, types_, known);
}

double PlacementSpeeds::speed(int job, const std::vector<int>& counts) {
  int m = model_index_[job];
  // Packed key: every count below 2^pack_bits_ (12 bits each for five types).
  uint64_t key = 0;
  bool packed = pack_bits_ > 0;
  for (size_t t = 0; t < counts.size() && packed; ++t) {
    if (counts[t] < 0 || counts[t] >= (1 << pack_bits_)) packed = false;
    key |= static_cast<uint64_t>(counts[t]) << (pack_bits_ * t);
  }
  if (packed) {
    auto it = packed_cache_[m].find(key);
    if (it != packed_cache_[m].end()) return it->second;
  } else {
    auto it = cache_[m].find(counts);
    if (it != cache_[m].end()) return it->second;
  }
  // ThroughputModel::iters_per_s_mixed, from the single-type speeds kept here.
  int total = 0, kinds = 0, only = 0;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) {
      total += counts[t];
      ++kinds;
      only = static_cast<int>(t);
    }
  ++evaluations_;
  double v = 0;
  if (kinds == 1) {
    v = problem_.model->iters_per_s(model_names_[m], types_[only], total);
  } else if (kinds > 1) {
    std::vector<ThroughputModel::MixedPart>& parts = parts_;
    parts.clear();
    for (size_t t = 0; t < counts.size(); ++t)
      if (counts[t] > 0)
        parts.push_back({counts[t], single(job, static_cast<int>(t), 1),
                         single(job, static_cast<int>(t), total)});
    v = ThroughputModel::mixed_speed(parts);
  }
  if (packed) {
    packed_cache_[m].emplace(key, v);
  } else {
    cache_[m].emplace(counts, v);
  }
  return v;
}

int PlacementSpeeds::measured_nodes(int job, const std::vector<int>& counts) const {
  int n = 0, measured = -1;  // the fewest GPUs measured among the types used
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) {
      n += counts[t];
      int most = measured_max_[model_index_[job]][t];
      measured = measured < 0 ? most : std::min(measured, most);
    }
  int at = std::min(n, std::max(0, measured));
  return std::max(1, (at + kProfileServerGpus - 1) / kProfileServerGpus);
}

double PlacementSpeeds::single(int job, int type, int n) {
  std::vector<double>& row = single_cache_[model_index_[job]][type];
  if (n >= 0 && n < static_cast<int>(row.size()) && row[n] >= 0) return row[n];
  std::vector<int> c(types_.size(), 0);
  c[type] = n;
  double v = speed(job, c);
  if (n >= 0 && n <= 4096) {
    if (n >= static_cast<int>(row.size())) row.resize(n + 1, -1.0);
    row[n] = v;
  }
  return v;
}

std::vector<std::vector<int>> placement_all_sizes(const PlacementProblem& p,
                                                  const PlacementSpeeds& speeds) {
  std::vector<std::vector<int>> sizes(p.jobs.size());
  for (size_t j = 0; j < sizes.size(); ++j)
    sizes[j] = placement_sizes(p, speeds, static_cast<int>(j));
  return sizes;
}

double placement_objective_without_locality(const PlacementProblem& p, const PlacementResult& r) {
  PlacementSpeeds speeds(p);
  PlacementTopology topo(p, speeds);
  double total = 0;
  for (size_t j = 0; j < r.jobs.size() && j < p.jobs.size(); ++j) {
    const JobPlacement& jp = r.jobs[j];
    if (jp.total <= 0) continue;
    std::vector<int> c(speeds.num_types(), 0);
    for (const auto& [t, g] : jp.gpus_by_type) {
      auto it = std::lower_bound(speeds.types().begin(), speeds.types().end(), t);
      if (it == speeds.types().end() || *it != t)
        throw InputError("placement result: job " + std::to_string(j) + " uses unknown type " + t);
      c[it - speeds.types().begin()] += g;
    }
    double v = speeds.speed(static_cast<int>(j), c);
    if (v <= 0) return std::numeric_limits<double>::infinity();
    double f = p.jobs[j].remaining / v;
    if (p.jobs[j].running && c != topo.current_types[j]) f += p.costs.restart_s;
    total += f;
  }
  return total;
}

}  // namespace ringsched
