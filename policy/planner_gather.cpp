// SPDX-License-Identifier: GPL-2.0-or-later
// Steps 2b and 2d of Planner::plan() (planner_gather.h): a ring spread over nodes gathered.
#include "planner_gather.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>

namespace ringsched {
namespace planner_detail {

namespace {

bool past_interval(const GatherPass& g, int i) {
  return g.snap.now_s - g.snap.jobs[i].last_resize_s >= g.costs.min_interval_s;
}

std::map<std::string, int> by_node(const JobPlan& jp) {
  std::map<std::string, int> m;
  for (const Placement& p : jp.placement) m[p.node] += p.gpus;
  return m;
}

}  // namespace

void gather_onto_free_gpus(GatherPass& g) {
  const int n = static_cast<int>(g.snap.jobs.size());
  std::vector<int> spread;
  for (int i = 0; i < n; ++i)
    if (g.frozen[i] && g.movable(i) && g.views[i].known && g.plan.jobs[i].placement.size() > 1 &&
        g.plan.jobs[i].gpus_by_type.size() == 1 && past_interval(g, i))
      spread.push_back(i);
  if (spread.empty()) return;
  // Built when a move is first weighed, not per pass: most passes with a spread job find no
  // fewer nodes for it, and the build walks the cluster (12% of a 500-job burst's passes).
  std::optional<PlacementLocality> locality;
  for (size_t s = 0; s < spread.size(); ++s) {
    const int i = spread[s];
    JobPlan& jp = g.plan.jobs[i];
    // Tried in place (give the job's GPUs back, take the gathered ones) and undone when it
    // does not pay: a copy of the free GPUs per spread job cost O(nodes) each.
    const std::map<std::string, int> held = by_node(jp);
    for (const Placement& p : jp.placement) g.free.take_at(g.nodes.find(p.node), -p.gpus);
    std::vector<Placement> pl;
    const bool took = take_of_type(g.free, jp.gpus_by_type.begin()->first, jp.gpus, pl);
    bool pays = took && pl.size() < jp.placement.size();
    if (pays) {
      std::map<std::string, int> gathered_on;
      for (const Placement& p : pl) gathered_on[p.node] += p.gpus;
      const double v = g.model.iters_per_s_mixed(g.snap.jobs[i].model, jp.gpus_by_type);
      if (!locality) {
        std::vector<PlacementLocality::Job> lj;
        for (int k : spread) lj.push_back({g.snap.jobs[k].model, g.views[k].types});
        locality.emplace(g.cluster, g.model, lj);
      }
      const double f_held = locality->factor(static_cast<int>(s), held);
      const double f_gathered = locality->factor(static_cast<int>(s), gathered_on);
      const double r = g.snap.jobs[i].remaining, c = g.costs.restart_s;
      pays = v > 0 && f_held > 0 && f_gathered > f_held &&
             r / (v * f_held) - r / (v * f_gathered) - c > g.costs.min_gain_multiple * c;
    }
    if (!pays) {
      for (const Placement& p : pl) g.free.take_at(g.nodes.find(p.node), -p.gpus);
      for (const Placement& p : jp.placement) g.free.take_at(g.nodes.find(p.node), p.gpus);
      continue;
    }
    set_from_placement(jp, pl);
    g.moved[i] = true;
    jp.reason += "; moves from " + std::to_string(held.size()) + " nodes to " +
                 std::to_string(pl.size()) + ": its ring is faster there";
  }
}

void gather_by_swaps(GatherPass& g, const std::vector<int>& order) {
  const int n = static_cast<int>(g.snap.jobs.size());
  // A job that keeps its GPUs this round may be moved only as 2b moves one; a running job that
  // restarts anyway only if it may be moved at all (the plugin would not move it).
  auto kept_may_move = [&](int i) { return g.movable(i) && !g.moved[i] && past_interval(g, i); };
  auto may_swap = [&](int i) {
    return g.frozen[i] ? kept_may_move(i)
                       : g.snap.jobs[i].state != JobState::Running || g.movable(i);
  };
  // Spread jobs one of whose nodes could hold them whole, checked first: the steps below walk
  // the cluster and every placement (bench_planner's steady pass at 50,000 GPUs x 10,000 jobs,
  // 50 ms without this step: 64 ms when built for every spread job, 60-62 with this check).
  std::vector<int> spread;
  for (int i : order) {
    const JobPlan& jp = g.plan.jobs[i];
    if (!jp.runs || !g.views[i].known || jp.placement.size() < 2 || jp.gpus_by_type.size() != 1 ||
        !may_swap(i))
      continue;
    bool fits = false;
    for (const Placement& p : jp.placement)
      fits = fits || g.cluster.nodes[g.nodes.find(p.node)].usable() >= jp.gpus;
    if (fits) spread.push_back(i);
  }
  if (spread.empty()) return;
  // The jobs with GPUs on each node in the plan: those a target node would move off.
  std::vector<std::vector<int>> on_node(g.cluster.nodes.size());
  for (int i = 0; i < n; ++i)
    for (const Placement& p : g.plan.jobs[i].placement)
      on_node[g.nodes.find(p.node)].push_back(i);
  std::vector<PlacementLocality::Job> lj;
  for (int i : spread) lj.push_back({g.snap.jobs[i].model, g.views[i].types});
  PlacementLocality locality(g.cluster, g.model, lj);
  const double c = g.costs.restart_s;
  struct Move {
    int job, to;
  };
  for (size_t s = 0; s < spread.size(); ++s) {
    const int i = spread[s];
    JobPlan& jp = g.plan.jobs[i];  // never moved for another job: those are whole on one node
    const Job& j = g.snap.jobs[i];
    const std::map<std::string, int> held = by_node(jp);
    const double v = g.model.iters_per_s_mixed(j.model, jp.gpus_by_type);
    const double f_held = locality.factor(static_cast<int>(s), held);
    if (!(v > 0) || !(f_held > 0) || f_held >= 1) continue;
    double best_net = g.costs.min_gain_multiple * c;
    int best_node = -1;
    std::vector<Move> best_moves;
    for (const auto& [target, here] : held) {
      const int a = g.nodes.find(target);
      if (g.cluster.nodes[a].usable() < jp.gpus) continue;
      int need = jp.gpus - here - g.free.free(a);
      // Where the moved jobs go: the job's other nodes, each the GPUs it leaves and those free.
      std::vector<std::pair<int, int>> room;
      for (const auto& [node, gpus] : held)
        if (node != target) {
          const int b = g.nodes.find(node);
          room.emplace_back(b, gpus + g.free.free(b));
        }
      // Jobs that restart this round anyway first (a move costs them nothing), then the largest:
      // fewest restarts.
      std::vector<int> movers;
      for (int k : on_node[a])
        if (k != i && g.plan.jobs[k].placement.size() == 1 && may_swap(k)) movers.push_back(k);
      std::sort(movers.begin(), movers.end(), [&](int x, int y) {
        if (g.frozen[x] != g.frozen[y]) return !g.frozen[x];
        if (g.plan.jobs[x].gpus != g.plan.jobs[y].gpus)
          return g.plan.jobs[x].gpus > g.plan.jobs[y].gpus;
        return x < y;
      });
      std::vector<Move> moves;
      double cost = g.frozen[i] ? c : 0;
      for (int k : movers) {
        if (need <= 0) break;
        const int gk = g.plan.jobs[k].gpus;
        int fit = -1;  // the tightest room that holds it whole
        for (size_t b = 0; b < room.size(); ++b)
          if (room[b].second >= gk && (fit < 0 || room[b].second < room[fit].second))
            fit = static_cast<int>(b);
        if (fit < 0) continue;
        room[fit].second -= gk;
        need -= gk;
        moves.push_back({k, room[fit].first});
        if (g.frozen[k]) cost += c;
      }
      if (need > 0) continue;
      const double f_one = locality.factor(static_cast<int>(s), {{target, jp.gpus}});
      const double net = j.remaining / (v * f_held) - j.remaining / (v * f_one) - cost;
      if (f_one > f_held && net > best_net) {
        best_net = net;
        best_node = a;
        best_moves = moves;
      }
    }
    if (best_node < 0) continue;
    const std::string& type = jp.gpus_by_type.begin()->first;
    const std::string& target = g.cluster.nodes[best_node].name;
    for (const Placement& p : jp.placement) g.free.take_at(g.nodes.find(p.node), -p.gpus);
    for (const Move& m : best_moves) {
      JobPlan& kp = g.plan.jobs[m.job];
      g.free.take_at(best_node, -kp.gpus);
      g.free.take_at(m.to, kp.gpus);
      auto& was = on_node[best_node];
      was.erase(std::remove(was.begin(), was.end(), m.job), was.end());
      on_node[m.to].push_back(m.job);
      set_from_placement(kp, {Placement{g.cluster.nodes[m.to].name, type, kp.gpus}});
      if (g.frozen[m.job]) g.moved[m.job] = true;
      kp.reason += "; moves to " + kp.placement.front().node + " so that " + j.id +
                   " gathers on " + target;
    }
    for (const auto& [node, gpus] : held)
      if (node != target) {
        auto& was = on_node[g.nodes.find(node)];
        was.erase(std::remove(was.begin(), was.end(), i), was.end());
      }
    g.free.take_at(best_node, jp.gpus);
    set_from_placement(jp, {Placement{target, type, jp.gpus}});
    if (g.frozen[i]) g.moved[i] = true;
    jp.reason += "; gathers from " + std::to_string(held.size()) + " nodes on " + target + ", " +
                 std::to_string(best_moves.size()) + " jobs moved from there: the plan gains " +
                 std::to_string(static_cast<long>(best_net)) + " s";
  }
}

}  // namespace planner_detail
}  // namespace ringsched
