// Heterogeneity-aware multi-job placement (DESIGN 3.3): categories, the ascending-price matching
// market and the sampling of categories. The exact MIP is in placement_mip.cpp.
//
// Locality model (a value term of the market, reported in iters_per_s and finish_s): the ring
// model's communication term (1/speed minus the compute time 1/sum(c_t v_t(1)) of the
// proportional split) was measured inside one server. When a job's ring crosses nodes, its
// slowest link is the inter-node one, so the communication term grows by the factor
// min(intra_gbps)/min(inter_gbps) of the nodes it uses; every node beyond the fewest that could
// hold the job adds 5% of that extra, standing for the extra hops and the NIC bandwidth taken from
// the nodes' other jobs. With intra_gbps = inter_gbps locality costs nothing.
#include "ringsched/placement.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <random>
#include <set>

#include "ringsched/placement_support.h"

namespace ringsched {
namespace {

constexpr double kExtraNodeShare = 0.05;   // see the locality model above
constexpr double kBidEpsilon = 1e-3;       // bid increment, relative to the bidder's finish time
constexpr long kExhaustiveVectors = 64;    // enumerate mixes up to this many, else local search
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

std::string job_name(const PlacementProblem& p, int j) {
  return "placement job " + std::to_string(j) + " (" + p.jobs[j].model + ")";
}

bool type_listed(const PlacementJob& job, const std::string& type) {
  if (job.allowed_types.empty()) return true;
  for (const std::string& t : job.allowed_types)
    if (normalize_type(t) == type) return true;
  return false;
}

// Number of ways to split n GPUs over k types (stops counting past `cap`).
long compositions(int n, int k, long cap) {
  long c = 1;
  for (int i = 1; i < k; ++i) {
    c = c * (n + i) / i;
    if (c > cap) return cap + 1;
  }
  return c;
}

// Per-iteration time with the locality model (see the top of this file).
double iteration_time_with_locality(double t_iter, double t_compute, int nodes_used, int min_nodes,
                                    double link_ratio) {
  if (nodes_used <= 1 || link_ratio <= 1.0) return t_iter;
  double comm = std::max(0.0, t_iter - t_compute);
  int extra = std::max(0, nodes_used - std::max(1, min_nodes));
  return t_iter + comm * (link_ratio - 1.0) * (1.0 + kExtraNodeShare * extra);
}

// The cluster as the market sees it: nodes with usable GPUs, grouped by type.
struct Topology {
  struct TNode {
    std::string name;
    int type = 0;
    int cap = 0;
    double intra = 0, inter = 0;
  };
  std::vector<TNode> nodes;
  std::vector<std::vector<int>> nodes_of_type;
  std::vector<int> cap_of_type;
  std::vector<double> min_intra, min_inter;               // per type
  std::vector<std::vector<int>> caps_desc;                // per job: allowed nodes' caps, largest first
  std::vector<std::vector<std::pair<int, int>>> current;  // per job: (node, GPUs) it holds now
  std::vector<int> current_total;
  std::vector<std::vector<int>> current_types;

  Topology(const PlacementProblem& p, const PlacementSpeeds& speeds) {
    int T = speeds.num_types();
    nodes_of_type.assign(T, {});
    cap_of_type.assign(T, 0);
    min_intra.assign(T, std::numeric_limits<double>::infinity());
    min_inter.assign(T, std::numeric_limits<double>::infinity());
    std::map<std::string, int> index;
    for (const Node& n : p.cluster.nodes) {
      if (n.usable() <= 0) continue;
      int t = static_cast<int>(std::lower_bound(speeds.types().begin(), speeds.types().end(),
                                                n.gpu_type) - speeds.types().begin());
      index[n.name] = static_cast<int>(nodes.size());
      nodes_of_type[t].push_back(static_cast<int>(nodes.size()));
      cap_of_type[t] += n.usable();
      min_intra[t] = std::min(min_intra[t], n.intra_gbps);
      min_inter[t] = std::min(min_inter[t], n.inter_gbps);
      nodes.push_back(TNode{n.name, t, n.usable(), n.intra_gbps, n.inter_gbps});
    }
    int J = static_cast<int>(p.jobs.size());
    caps_desc.assign(J, {});
    current.assign(J, {});
    current_total.assign(J, 0);
    current_types.assign(J, std::vector<int>(T, 0));
    for (int j = 0; j < J; ++j) {
      for (const TNode& n : nodes)
        if (speeds.allowed(j, n.type)) caps_desc[j].push_back(n.cap);
      std::sort(caps_desc[j].rbegin(), caps_desc[j].rend());
      const PlacementJob& job = p.jobs[j];
      if (!job.running) continue;
      bool usable = true;
      for (const auto& [name, g] : job.current) {
        if (g <= 0) continue;
        auto it = index.find(name);
        if (it == index.end() || nodes[it->second].cap < g ||
            !speeds.allowed(j, nodes[it->second].type)) {
          usable = false;  // its GPUs are no longer all available to it: it must move
          break;
        }
        current[j].push_back({it->second, g});
        current_total[j] += g;
        current_types[j][nodes[it->second].type] += g;
      }
      if (!usable) {
        current[j].clear();
        current_total[j] = 0;
      }
    }
  }

  // Fewest nodes that can hold n GPUs for job j.
  int min_nodes(int j, int n) const {
    int k = 0, sum = 0;
    for (int c : caps_desc[j]) {
      if (sum >= n) break;
      sum += c;
      ++k;
    }
    return std::max(1, k);
  }
};

// Speed with locality of job j on an explicit set of (node, GPUs).
double speed_with_locality(const PlacementProblem& p, PlacementSpeeds& speeds, const Topology& topo,
                           int j, const std::vector<std::pair<int, int>>& package) {
  std::vector<int> counts(speeds.num_types(), 0);
  std::set<int> used;
  double min_intra = std::numeric_limits<double>::infinity();
  double min_inter = min_intra;
  int total = 0;
  for (const auto& [n, g] : package) {
    if (g <= 0) continue;
    counts[topo.nodes[n].type] += g;
    used.insert(n);
    min_intra = std::min(min_intra, topo.nodes[n].intra);
    min_inter = std::min(min_inter, topo.nodes[n].inter);
    total += g;
  }
  double v = speeds.speed(j, counts);
  if (v <= 0) return 0;
  double sum_v1 = 0;
  for (int t = 0; t < speeds.num_types(); ++t)
    if (counts[t] > 0) sum_v1 += counts[t] * speeds.single(j, t, 1);
  (void)p;
  double t_iter = iteration_time_with_locality(1.0 / v, 1.0 / sum_v1, static_cast<int>(used.size()),
                                               topo.min_nodes(j, total), min_intra / min_inter);
  return 1.0 / t_iter;
}

// The ascending-price market for one category (DESIGN 3.3 step 2). Objects are GPUs; the GPUs of
// one type are identical for the speed model, so they are handled in lots (GPUs of a type at one
// price, free or held by one job) rather than one by one. An unassigned job bids for the package
// of counts[j] GPUs (a count per type) that maximises value minus price, value = -(finish time,
// with the locality the package cannot avoid: a mix of types, or more GPUs than one node holds,
// crosses nodes). If the package needs GPUs other jobs hold, those jobs lose their whole package
// and bid again, and the contested GPUs' price rises by the bidder's margin over its second-best
// package plus epsilon (Bertsekas' auction increment). It ends when every job holds a package: no
// GPU has two jobs and every package is within epsilon of its holder's best at the final prices
// (a stable matching). Then each type's GPUs are packed onto nodes, largest demands first, best
// fit, running jobs that keep their types first on the nodes they hold.
class Market {
 public:
  Market(const PlacementProblem& p, PlacementSpeeds& speeds, const Topology& topo)
      : p_(p), speeds_(speeds), topo_(topo), T_(speeds.num_types()) {
    max_node_.assign(T_, 1);
    for (int t = 0; t < T_; ++t)
      for (int n : topo_.nodes_of_type[t]) max_node_[t] = std::max(max_node_[t], topo_.nodes[n].cap);
  }

  // Whether the category can be matched at all: per-job bounds and Hall's condition over sets of
  // types (necessary and sufficient for jobs that may mix types).
  bool may_fit(const std::vector<int>& counts) const {
    int J = static_cast<int>(counts.size());
    std::vector<unsigned> mask(J, 0);
    for (int j = 0; j < J; ++j) {
      if (counts[j] <= 0) continue;
      int best_single = 0, sum = 0;
      for (int t = 0; t < T_; ++t)
        if (speeds_.allowed(j, t)) {
          mask[j] |= 1u << t;
          best_single = std::max(best_single, topo_.cap_of_type[t]);
          sum += topo_.cap_of_type[t];
        }
      if (counts[j] > (p_.jobs[j].allow_mixed ? sum : best_single)) return false;
    }
    if (T_ > 12) {
      long need = 0, have = 0;
      for (int c : counts) need += std::max(0, c);
      for (int c : topo_.cap_of_type) have += c;
      return need <= have;
    }
    for (unsigned s = 1; s < (1u << T_); ++s) {
      long need = 0, have = 0;
      for (int t = 0; t < T_; ++t)
        if (s & (1u << t)) have += topo_.cap_of_type[t];
      for (int j = 0; j < J; ++j)
        if (counts[j] > 0 && (mask[j] & ~s) == 0) need += counts[j];
      if (need > have) return false;
    }
    return true;
  }

  // Runs the market; false if the category cannot be matched.
  bool run(const std::vector<int>& counts, PlacementResult& out) {
    int J = static_cast<int>(counts.size());
    counts_ = counts;
    if (!may_fit(counts)) return false;
    std::vector<int> order;
    for (int j = 0; j < J; ++j)
      if (counts[j] > 0) order.push_back(j);
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return counts[a] > counts[b]; });
    reset(J);
    std::deque<int> queue(order.begin(), order.end());
    // Epsilon doubles every few bids per job: a price war between near-equal packages then ends
    // in a number of rounds logarithmic in the value range (epsilon-scaling, run upwards).
    long bids = 0;
    const long max_bids = 20L * J + 200, escalate_every = J + 8;
    epsilon_ = kBidEpsilon;
    while (!queue.empty() && bids < max_bids) {
      int j = queue.front();
      queue.pop_front();
      if (assigned_[j]) continue;
      if (++bids % escalate_every == 0) epsilon_ *= 2;
      Bid bid;
      if (!best_package(j, /*free_only=*/false, bid)) return false;
      take(j, bid, queue);
    }
    bids_ = bids;
    // Safety net (bid cap reached): start over, most constrained jobs first, each taking its best
    // package among the free GPUs.
    if (!queue.empty()) {
      reset(J);
      auto kinds = [&](int j) {
        int k = 0;
        for (int t = 0; t < T_; ++t) k += speeds_.allowed(j, t) ? 1 : 0;
        return p_.jobs[j].allow_mixed ? k : 0;
      };
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return kinds(a) != kinds(b) ? kinds(a) < kinds(b) : counts[a] > counts[b];
      });
      bool greedy = true;
      for (int j : order) {
        Bid bid;
        if (!best_package(j, /*free_only=*/true, bid)) {
          greedy = false;
          break;
        }
        std::deque<int> none;
        take(j, bid, none);
      }
      if (!greedy && !feasible_flow(order)) return false;
    }
    if (!pack_nodes()) return false;
    fill_result(out);
    return true;
  }

  long last_bids() const { return bids_; }

 private:
  struct Lot {
    double price;
    int holder;  // -1: free
    int count;
  };
  struct Bid {
    std::vector<int> counts;  // per type
    double utility = kNegInf;
    double second = kNegInf;
    double finish = 0;
  };

  void reset(int J) {
    lots_.assign(T_, {});
    for (int t = 0; t < T_; ++t)
      if (topo_.cap_of_type[t] > 0) lots_[t].push_back(Lot{0.0, -1, topo_.cap_of_type[t]});
    holding_.assign(J, std::vector<int>(T_, 0));
    assigned_.assign(J, false);
  }

  // Lots of type t in the order a bidder buys them: cheapest first, free before held.
  void sort_lots(int t) {
    std::sort(lots_[t].begin(), lots_[t].end(), [](const Lot& a, const Lot& b) {
      if (a.price != b.price) return a.price < b.price;
      if ((a.holder < 0) != (b.holder < 0)) return a.holder < 0;
      return a.holder < b.holder;
    });
  }

  // Per-iteration time of job j on counts c with the locality it cannot avoid.
  double iteration_time(int j, const std::vector<int>& c, int n) {
    double v = speeds_.speed(j, c);
    if (v <= 0) return INFINITY;
    double sum_v1 = 0, min_intra = INFINITY, min_inter = INFINITY;
    int nodes = 0;
    for (int t = 0; t < T_; ++t)
      if (c[t] > 0) {
        sum_v1 += c[t] * speeds_.single(j, t, 1);
        nodes += (c[t] + max_node_[t] - 1) / max_node_[t];
        min_intra = std::min(min_intra, topo_.min_intra[t]);
        min_inter = std::min(min_inter, topo_.min_inter[t]);
      }
    return iteration_time_with_locality(1.0 / v, 1.0 / sum_v1, nodes, topo_.min_nodes(j, n),
                                        min_intra / min_inter);
  }

  // The job's best package at current prices, and the utility of its second best.
  bool best_package(int j, bool free_only, Bid& bid) {
    const PlacementJob& job = p_.jobs[j];
    int n = counts_[j];
    std::vector<int> types;
    for (int t = 0; t < T_; ++t)
      if (speeds_.allowed(j, t)) types.push_back(t);
    // Per allowed type: the price of its cheapest k GPUs.
    std::vector<std::vector<double>> cost(T_);
    std::vector<int> avail(T_, 0);
    for (int t : types) {
      sort_lots(t);
      cost[t].assign(1, 0.0);
      for (const Lot& l : lots_[t]) {
        if (free_only && l.holder >= 0) continue;
        for (int k = 0; k < l.count && static_cast<int>(cost[t].size()) <= n; ++k)
          cost[t].push_back(cost[t].back() + l.price);
      }
      avail[t] = static_cast<int>(cost[t].size()) - 1;
    }
    double restart = job.running ? p_.costs.restart_s : 0.0;
    double best_u = kNegInf, second_u = kNegInf, best_finish = 0;
    std::vector<int> best_c;
    std::map<std::vector<int>, double> seen;
    auto consider = [&](const std::vector<int>& c) -> double {
      auto it = seen.find(c);
      if (it != seen.end()) return it->second;
      double finish = job.remaining * iteration_time(j, c, n);
      if (job.running && c != topo_.current_types[j]) finish += restart;
      double price = 0;
      for (int t : types) price += cost[t][c[t]];
      double u = std::isfinite(finish) ? -finish - price : kNegInf;
      seen.emplace(c, u);
      if (u > best_u) {
        second_u = best_u;
        best_u = u;
        best_c = c;
        best_finish = finish;
      } else if (u > second_u) {
        second_u = u;
      }
      return u;
    };
    std::vector<int> c(T_, 0);
    for (int t : types)
      if (avail[t] >= n) {
        c.assign(T_, 0);
        c[t] = n;
        consider(c);
      }
    if (job.running && topo_.current_total[j] == n) {
      bool fits = true;
      for (int t = 0; t < T_; ++t) fits = fits && topo_.current_types[j][t] <= avail[t];
      if (fits) consider(topo_.current_types[j]);
    }
    if (job.allow_mixed && types.size() > 1) {
      int k = static_cast<int>(types.size());
      if (compositions(n, k, kExhaustiveVectors) <= kExhaustiveVectors) {
        c.assign(T_, 0);
        enumerate(types, 0, n, avail, c, consider);
      } else {
        local_search(types, n, avail, best_c, consider);
      }
    }
    if (best_c.empty() || best_u == kNegInf) return false;
    bid.counts = best_c;
    bid.utility = best_u;
    bid.second = second_u;
    bid.finish = best_finish;
    return true;
  }

  template <typename F>
  void enumerate(const std::vector<int>& types, size_t i, int left, const std::vector<int>& avail,
                 std::vector<int>& c, F& consider) {
    int t = types[i];
    if (i + 1 == types.size()) {
      if (left <= avail[t]) {
        c[t] = left;
        consider(c);
        c[t] = 0;
      }
      return;
    }
    for (int x = 0; x <= std::min(left, avail[t]); ++x) {
      c[t] = x;
      enumerate(types, i + 1, left - x, avail, c, consider);
    }
    c[t] = 0;
  }

  // Pattern search over mixes: move s GPUs from one type to another while it helps, s halving.
  // `start` is the best single-type mix (empty when no single type can hold the job).
  template <typename F>
  void local_search(const std::vector<int>& types, int n, const std::vector<int>& avail,
                    std::vector<int> start, F& evaluate) {
    if (start.empty()) {  // fill the types in order until the job is held
      start.assign(T_, 0);
      int left = n;
      for (int t : types) {
        start[t] = std::min(left, avail[t]);
        left -= start[t];
      }
      if (left > 0) return;
    }
    std::vector<int> cur = start;
    double cur_u = evaluate(cur);
    int step = 1;
    while (step * 2 <= n / 2) step *= 2;
    for (int guard = 0; step >= 1 && guard < 200; ++guard) {
      std::vector<int> best_move;
      double best_move_u = cur_u;
      for (int a : types)
        for (int b : types) {
          if (a == b || cur[a] < step || cur[b] + step > avail[b]) continue;
          std::vector<int> c = cur;
          c[a] -= step;
          c[b] += step;
          double u = evaluate(c);
          if (u > best_move_u) {
            best_move_u = u;
            best_move = c;
          }
        }
      if (!best_move.empty()) {
        cur = best_move;
        cur_u = best_move_u;
      } else {
        step /= 2;
      }
    }
  }

  // Last resort: any assignment of GPU counts per type (augmenting paths, jobs -> types), which
  // exists when Hall's condition holds; a job that may not mix must land on one type.
  bool feasible_flow(const std::vector<int>& order) {
    int J = static_cast<int>(counts_.size());
    reset(J);
    std::vector<int> left = topo_.cap_of_type;
    std::vector<std::vector<int>>& flow = holding_;
    // Find a path from job j to a type with spare capacity, through types whose GPUs another job
    // could move elsewhere; push one GPU along it.
    std::function<bool(int, std::vector<bool>&)> augment = [&](int j, std::vector<bool>& seen) {
      for (int t = 0; t < T_; ++t) {
        if (!speeds_.allowed(j, t) || seen[t]) continue;
        seen[t] = true;
        if (left[t] > 0) {
          --left[t];
          ++flow[j][t];
          return true;
        }
        for (int k = 0; k < J; ++k) {
          if (k == j || flow[k][t] == 0) continue;
          if (augment(k, seen)) {  // k took a GPU elsewhere: it gives one of type t to j
            --flow[k][t];
            ++flow[j][t];
            return true;
          }
        }
      }
      return false;
    };
    for (int j : order)
      for (int g = 0; g < counts_[j]; ++g) {
        std::vector<bool> seen(T_, false);
        if (!augment(j, seen)) return false;
      }
    for (int j : order) {
      int kinds = 0;
      for (int t = 0; t < T_; ++t) kinds += flow[j][t] > 0 ? 1 : 0;
      if (kinds > 1 && !p_.jobs[j].allow_mixed) return false;
      assigned_[j] = true;
    }
    return true;
  }

  void release(int j) {
    for (int t = 0; t < T_; ++t) {
      if (holding_[j][t] == 0) continue;
      for (Lot& l : lots_[t])
        if (l.holder == j) l.holder = -1;
      holding_[j][t] = 0;
    }
    assigned_[j] = false;
  }

  void take(int j, const Bid& bid, std::deque<int>& queue) {
    // First the contested GPUs: evict their holders and count them.
    int contested = 0;
    std::vector<int> held_taken(T_, 0);
    for (int t = 0; t < T_; ++t) {
      int need = bid.counts[t];
      if (need <= 0) continue;
      sort_lots(t);
      for (size_t i = 0; i < lots_[t].size() && need > 0; ++i) {
        int x = std::min(need, lots_[t][i].count);
        if (lots_[t][i].holder >= 0) {
          held_taken[t] += x;
          contested += x;
          int loser = lots_[t][i].holder;
          release(loser);
          queue.push_back(loser);
        }
        need -= x;
      }
    }
    double raise = 0;
    if (contested > 0) {
      double margin = bid.second == kNegInf ? 0.0 : bid.utility - bid.second;
      raise = (margin + epsilon_ * std::max(bid.finish, 1e-9)) / contested;
    }
    // Then buy the cheapest GPUs of each type (evictions freed the contested ones in place).
    for (int t = 0; t < T_; ++t) {
      int need = bid.counts[t];
      if (need <= 0) continue;
      int contested_left = held_taken[t];
      std::vector<Lot> bought;
      for (Lot& l : lots_[t]) {
        if (need == 0) break;
        if (l.holder >= 0 || l.count == 0) continue;
        int x = std::min(need, l.count);
        l.count -= x;
        need -= x;
        // Units that were contested are bought at the raised price.
        int c = std::min(x, contested_left);
        contested_left -= c;
        if (c > 0) bought.push_back(Lot{l.price + raise, j, c});
        if (x - c > 0) bought.push_back(Lot{l.price, j, x - c});
      }
      lots_[t].erase(std::remove_if(lots_[t].begin(), lots_[t].end(),
                                    [](const Lot& l) { return l.count == 0; }),
                     lots_[t].end());
      lots_[t].insert(lots_[t].end(), bought.begin(), bought.end());
      merge_free(t);
      holding_[j][t] = bid.counts[t];
    }
    assigned_[j] = true;
  }

  void merge_free(int t) {
    sort_lots(t);
    std::vector<Lot> merged;
    for (const Lot& l : lots_[t]) {
      if (!merged.empty() && l.holder < 0 && merged.back().holder < 0 &&
          merged.back().price == l.price) {
        merged.back().count += l.count;
      } else {
        merged.push_back(l);
      }
    }
    lots_[t] = std::move(merged);
  }

  // Each type's GPUs onto nodes. Running jobs that keep their per-type counts go first, on the
  // nodes they hold; then by demand, largest first: the smallest node that holds all of it, else
  // the emptiest nodes.
  bool pack_nodes() {
    int J = static_cast<int>(counts_.size());
    package_.assign(J, {});
    std::vector<int> left(topo_.nodes.size());
    for (size_t n = 0; n < topo_.nodes.size(); ++n) left[n] = topo_.nodes[n].cap;
    std::vector<std::vector<int>> need = holding_;
    for (int j = 0; j < J; ++j) {
      if (!assigned_[j] || !p_.jobs[j].running || holding_[j] != topo_.current_types[j]) continue;
      bool ok = true;
      for (const auto& [n, g] : topo_.current[j]) ok = ok && left[n] >= g;
      if (!ok) continue;
      for (const auto& [n, g] : topo_.current[j]) {
        left[n] -= g;
        package_[j].push_back({n, g});
        need[j][topo_.nodes[n].type] -= g;
      }
    }
    for (int t = 0; t < T_; ++t) {
      std::vector<int> jobs;
      for (int j = 0; j < J; ++j)
        if (assigned_[j] && need[j][t] > 0) jobs.push_back(j);
      std::stable_sort(jobs.begin(), jobs.end(), [&](int a, int b) { return need[a][t] > need[b][t]; });
      const std::vector<int>& nodes = topo_.nodes_of_type[t];
      for (int j : jobs) {
        int k = need[j][t];
        while (k > 0) {
          int fit = -1, roomiest = -1;
          for (int n : nodes) {
            if (left[n] <= 0) continue;
            if (left[n] >= k && (fit < 0 || left[n] < left[fit])) fit = n;
            if (roomiest < 0 || left[n] > left[roomiest]) roomiest = n;
          }
          int n = fit >= 0 ? fit : roomiest;
          if (n < 0) return false;
          int x = std::min(k, left[n]);
          left[n] -= x;
          k -= x;
          package_[j].push_back({n, x});
        }
      }
    }
    return true;
  }

  void fill_result(PlacementResult& out) {
    int J = static_cast<int>(counts_.size());
    out.jobs.assign(J, JobPlacement{});
    out.objective_s = 0;
    for (int j = 0; j < J; ++j) {
      if (!assigned_[j]) continue;
      JobPlacement& jp = out.jobs[j];
      for (const auto& [n, g] : package_[j]) {
        if (g <= 0) continue;
        jp.gpus_by_node[topo_.nodes[n].name] += g;
        jp.gpus_by_type[speeds_.types()[topo_.nodes[n].type]] += g;
        jp.total += g;
      }
      jp.iters_per_s = speed_with_locality(p_, speeds_, topo_, j, package_[j]);
      jp.finish_s = p_.jobs[j].remaining / jp.iters_per_s;
      if (p_.jobs[j].running && !same_as_current(j, jp.gpus_by_node))
        jp.finish_s += p_.costs.restart_s;
      out.objective_s += jp.finish_s;
    }
  }

  bool same_as_current(int j, const std::map<std::string, int>& by_node) const {
    std::map<std::string, int> cur;
    for (const auto& [name, g] : p_.jobs[j].current)
      if (g > 0) cur[name] = g;
    return cur == by_node;
  }

  const PlacementProblem& p_;
  PlacementSpeeds& speeds_;
  const Topology& topo_;
  int T_;
  std::vector<int> max_node_;
  std::vector<int> counts_;
  std::vector<std::vector<Lot>> lots_;          // per type
  std::vector<std::vector<int>> holding_;       // per job, per type
  std::vector<bool> assigned_;
  std::vector<std::vector<std::pair<int, int>>> package_;  // per job: (node, GPUs) after packing
  double epsilon_ = kBidEpsilon;
  long bids_ = 0;
};

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

void check_counts(const PlacementProblem& p, const std::vector<int>& counts, const char* what) {
  if (counts.size() != p.jobs.size())
    throw InputError(std::string("placement: ") + what + " has " + std::to_string(counts.size()) +
                     " entries for " + std::to_string(p.jobs.size()) + " jobs");
  for (size_t j = 0; j < counts.size(); ++j) {
    int c = counts[j];
    if (c == 0) continue;
    const PlacementJob& job = p.jobs[j];
    if (c < 0 || c < job.min_gpus || c > job.max_gpus)
      throw InputError(job_name(p, static_cast<int>(j)) + ": " + what + " gives it " +
                       std::to_string(c) + " GPUs, outside its range [" +
                       std::to_string(job.min_gpus) + ", " + std::to_string(job.max_gpus) + "]");
  }
}

}  // namespace

// --- support ------------------------------------------------------------------------------------

void validate_placement_problem(const PlacementProblem& p) {
  if (!p.model) throw InputError("placement: no throughput model");
  p.cluster.validate();
  std::set<std::string> types;
  for (const Node& n : p.cluster.nodes) types.insert(n.gpu_type);
  for (size_t i = 0; i < p.jobs.size(); ++i) {
    int j = static_cast<int>(i);
    const PlacementJob& job = p.jobs[i];
    if (job.model.empty()) throw InputError(job_name(p, j) + ": no model name");
    if (!(job.remaining > 0) || !std::isfinite(job.remaining))
      throw InputError(job_name(p, j) + ": remaining iterations must be positive and finite");
    if (job.min_gpus < 1) throw InputError(job_name(p, j) + ": min_gpus must be at least 1");
    if (job.max_gpus < job.min_gpus)
      throw InputError(job_name(p, j) + ": max_gpus " + std::to_string(job.max_gpus) +
                       " is below min_gpus " + std::to_string(job.min_gpus));
    bool runnable = false;
    for (const std::string& t : types)
      if (type_listed(job, t) && p.model->iters_per_s(job.model, t, 1) > 0) runnable = true;
    if (!runnable)
      throw InputError(job_name(p, j) +
                       ": no GPU type of the cluster is both allowed and known for its model");
    if (job.running)
      for (const auto& [node, g] : job.current) {
        if (g < 0) throw InputError(job_name(p, j) + ": negative GPU count on node " + node);
        if (g > 0 && !p.cluster.find(node))
          throw InputError(job_name(p, j) + ": holds GPUs on unknown node '" + node + "'");
      }
  }
}

std::vector<int> placement_sizes(const PlacementProblem& p, int j) {
  const PlacementJob& job = p.jobs[j];
  int usable = 0;
  for (const Node& n : p.cluster.nodes)
    if (type_listed(job, n.gpu_type) && p.model->iters_per_s(job.model, n.gpu_type, 1) > 0)
      usable += n.usable();
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
    if (index.count(job.model)) {
      model_index_.push_back(index[job.model]);
      continue;
    }
    int m = static_cast<int>(model_names_.size());
    index[job.model] = m;
    model_index_.push_back(m);
    model_names_.push_back(job.model);
  }
  // The restricted copy: the problem's models' measured points only.
  bool predicted = false;
  for (const std::string& m : model_names_)
    for (const std::string& t : types_) predicted = predicted || p.model->is_predicted(m, t);
  if (!predicted && !model_names_.empty()) {
    ProfileTable table;
    std::set<std::string> wanted(model_names_.begin(), model_names_.end());
    for (const ProfilePoint& pt : p.model->table().points())
      if (wanted.count(pt.model)) table.add(pt);
    restricted_.push_back(std::make_unique<ThroughputModel>(std::move(table)));
  }
  const ThroughputModel* oracle = restricted_.empty() ? p.model : restricted_.front().get();
  oracle_.assign(model_names_.size(), oracle);
  cache_.resize(model_names_.size());
  allowed_.assign(p.jobs.size(), std::vector<bool>(types_.size(), false));
  for (size_t j = 0; j < p.jobs.size(); ++j)
    for (size_t t = 0; t < types_.size(); ++t)
      allowed_[j][t] = type_listed(p.jobs[j], types_[t]) &&
                       p.model->iters_per_s(p.jobs[j].model, types_[t], 1) > 0;
}

double PlacementSpeeds::speed(int job, const std::vector<int>& counts) {
  int m = model_index_[job];
  auto& cache = cache_[m];
  auto it = cache.find(counts);
  if (it != cache.end()) return it->second;
  std::map<std::string, int> by_type;
  for (size_t t = 0; t < counts.size(); ++t)
    if (counts[t] > 0) by_type[types_[t]] = counts[t];
  ++evaluations_;
  double v = by_type.empty() ? 0.0 : oracle_[m]->iters_per_s_mixed(model_names_[m], by_type);
  cache.emplace(counts, v);
  return v;
}

double PlacementSpeeds::single(int job, int type, int n) {
  std::vector<int> c(types_.size(), 0);
  c[type] = n;
  return speed(job, c);
}

std::vector<int> placement_seed_counts(const PlacementProblem& p) {
  PlacementSpeeds speeds(p);
  int J = static_cast<int>(p.jobs.size());
  int T = speeds.num_types();
  std::vector<std::vector<int>> sizes(J);
  for (int j = 0; j < J; ++j) sizes[j] = placement_sizes(p, j);
  // Pooled speed estimate: the fastest single allowed type with room for n, else the mix that
  // fills the fastest types first.
  auto speed = [&](int j, int n) {
    double best = 0;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t) && speeds.usable()[t] >= n) best = std::max(best, speeds.single(j, t, n));
    if (best > 0 || !p.jobs[j].allow_mixed) return best;
    std::vector<int> order;
    for (int t = 0; t < T; ++t)
      if (speeds.allowed(j, t)) order.push_back(t);
    std::sort(order.begin(), order.end(),
              [&](int a, int b) { return speeds.single(j, a, 1) > speeds.single(j, b, 1); });
    std::vector<int> c(T, 0);
    int left = n;
    for (int t : order) {
      c[t] = std::min(left, speeds.usable()[t]);
      left -= c[t];
    }
    return left > 0 ? 0.0 : speeds.speed(j, c);
  };
  // The pool is shared, but a category must also respect the types each job may use.
  Topology topo(p, speeds);
  Market market(p, speeds, topo);
  std::vector<int> counts(J, 0);
  std::vector<int> level(J, -1);
  int pool = p.cluster.usable_gpus();
  for (int j = 0; j < J; ++j) {
    if (sizes[j].empty() || sizes[j][0] > pool || speed(j, sizes[j][0]) <= 0) continue;
    counts[j] = sizes[j][0];
    if (!market.may_fit(counts)) {
      counts[j] = 0;
      continue;
    }
    level[j] = 0;
    pool -= counts[j];
  }
  for (;;) {
    int best = -1;
    double best_gain = 0;
    for (int j = 0; j < J; ++j) {
      if (level[j] < 0 || level[j] + 1 >= static_cast<int>(sizes[j].size())) continue;
      int next = sizes[j][level[j] + 1];
      int extra = next - counts[j];
      if (extra > pool) continue;
      double v0 = speed(j, counts[j]), v1 = speed(j, next);
      if (v1 <= 0) continue;
      std::vector<int> trial = counts;
      trial[j] = next;
      if (!market.may_fit(trial)) continue;
      double gain = (p.jobs[j].remaining / v0 - p.jobs[j].remaining / v1) / extra;
      if (gain > best_gain) {
        best_gain = gain;
        best = j;
      }
    }
    if (best < 0) break;
    int next = sizes[best][++level[best]];
    pool -= next - counts[best];
    counts[best] = next;
  }
  return counts;
}

double placement_objective_without_locality(const PlacementProblem& p, const PlacementResult& r) {
  PlacementSpeeds speeds(p);
  Topology topo(p, speeds);
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

// --- the scheme ---------------------------------------------------------------------------------

PlacementResult market_match(const PlacementProblem& problem, const std::vector<int>& counts) {
  auto t0 = std::chrono::steady_clock::now();
  PlacementSpeeds speeds(problem);
  check_counts(problem, counts, "the category");
  Topology topo(problem, speeds);
  Market market(problem, speeds, topo);
  PlacementResult r;
  if (!market.run(counts, r))
    throw InputError("placement: the category does not fit the cluster's usable GPUs of the "
                     "jobs' allowed types");
  r.categories_evaluated = 1;
  r.solve_ms = elapsed_ms(t0);
  return r;
}

PlacementResult place_hetero(const PlacementProblem& problem, const std::vector<int>& seed_counts,
                             int samples, unsigned seed) {
  auto t0 = std::chrono::steady_clock::now();
  if (samples < 1) throw InputError("placement: samples (K) must be at least 1");
  PlacementSpeeds speeds(problem);
  int J = static_cast<int>(problem.jobs.size());
  std::vector<int> counts = seed_counts.empty() && J > 0 ? placement_seed_counts(problem)
                                                         : seed_counts;
  check_counts(problem, counts, "the seed category");
  Topology topo(problem, speeds);
  Market market(problem, speeds, topo);
  std::vector<std::vector<int>> sizes(J);
  for (int j = 0; j < J; ++j) sizes[j] = placement_sizes(problem, j);

  PlacementResult best;
  best.jobs.assign(J, JobPlacement{});
  int evaluated = 0;
  // The seed itself; if it cannot be matched, shrink its largest job one size (else let the
  // last running job wait) until it can.
  for (;;) {
    bool any = false;
    for (int c : counts) any = any || c > 0;
    if (!any) break;
    ++evaluated;
    if (market.run(counts, best)) break;
    int shrink = -1;
    for (int j = 0; j < J; ++j) {
      if (counts[j] <= 0) continue;
      bool smaller = !sizes[j].empty() && sizes[j].front() < counts[j];
      if (smaller && (shrink < 0 || counts[j] > counts[shrink])) shrink = j;
    }
    if (shrink >= 0) {
      auto it = std::lower_bound(sizes[shrink].begin(), sizes[shrink].end(), counts[shrink]);
      counts[shrink] = *(it - 1);
    } else {
      for (int j = J - 1; j >= 0; --j)
        if (counts[j] > 0) {
          counts[j] = 0;
          break;
        }
    }
  }
  // Sampling around the best category so far: halve or double one job, move GPUs from one job
  // to another (one halves, one doubles), or change a few jobs at once.
  std::vector<int> best_counts = counts;
  std::vector<int> movable;
  for (int j = 0; j < J; ++j)
    if (counts[j] > 0 && sizes[j].size() > 1) movable.push_back(j);
  std::set<std::vector<int>> visited{counts};
  std::mt19937 rng(seed);
  auto step = [&](std::vector<int>& c, int j, int dir) {
    auto it = std::lower_bound(sizes[j].begin(), sizes[j].end(), c[j]);
    long i = it - sizes[j].begin();
    if (it == sizes[j].end() || *it != c[j]) {  // a seed size outside the list
      i = dir > 0 ? i - 1 : i;
    }
    long k = i + dir;
    if (k < 0 || k >= static_cast<long>(sizes[j].size())) return false;
    c[j] = sizes[j][k];
    return true;
  };
  for (int s = 1; s < samples && !movable.empty(); ++s) {
    std::vector<int> cand;
    bool found = false;
    for (int attempt = 0; attempt < 32 && !found; ++attempt) {
      cand = best_counts;
      std::uniform_int_distribution<size_t> pick(0, movable.size() - 1);
      double r = std::uniform_real_distribution<double>(0, 1)(rng);
      bool changed = false;
      if (r < 0.35 || movable.size() == 1) {
        changed = step(cand, movable[pick(rng)], rng() % 2 ? 1 : -1);
      } else if (r < 0.7) {
        int a = movable[pick(rng)], b = movable[pick(rng)];
        if (a != b) changed = step(cand, a, -1) && step(cand, b, 1);
      } else {
        int k = 2 + static_cast<int>(rng() % 2);
        for (int i = 0; i < k; ++i) changed = step(cand, movable[pick(rng)], rng() % 2 ? 1 : -1) || changed;
      }
      found = changed && !visited.count(cand) && market.may_fit(cand);
      if (changed) visited.insert(cand);
    }
    if (!found) continue;
    PlacementResult r;
    ++evaluated;
    if (market.run(cand, r) && r.objective_s < best.objective_s) {
      best = r;
      best_counts = cand;
    }
  }
  best.categories_evaluated = evaluated;
  best.solve_ms = elapsed_ms(t0);
  return best;
}

}  // namespace ringsched
