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

// Whether job i may be moved for another job's ring. A job that keeps its GPUs this round only as
// 2b moves one; a running job that restarts anyway only if it may be moved at all (the plugin
// would not move it).
bool may_swap(const GatherPass& g, int i) {
  if (g.frozen[i]) return g.movable(i) && !g.moved[i] && past_interval(g, i);
  return g.snap.jobs[i].state != JobState::Running || g.movable(i);
}

// The jobs with GPUs on each node in the plan: those a node taken whole would move off.
std::vector<std::vector<int>> jobs_on_nodes(const GatherPass& g) {
  std::vector<std::vector<int>> on_node(g.cluster.nodes.size());
  for (size_t i = 0; i < g.plan.jobs.size(); ++i)
    for (const Placement& p : g.plan.jobs[i].placement)
      on_node[g.nodes.find(p.node)].push_back(static_cast<int>(i));
  return on_node;
}

// Whether a move would make running job k, kept on its GPUs otherwise (frozen), which would
// finish within its time alone at its requested size (counted from its submission), finish later
// than that: the restart is its own loss, whatever the job moved for gains. A 1,379 s yolov3 on
// one T4 was moved twice in 335 s so that other rings could gather (finish-time fairness 1.044,
// Tiresias's 1.015; efd a100t4x8 L0.5 s46). A job that has gained on its time alone (it ran above
// its request) pays the restart from that lead; one late already may move (held so at loads of
// 1-2x, avg JCT rose up to 18%, 0.7% per set of shapes). Two tolerances, for two questions.
// "On time" allows the delay between submission and start (in slurmctld the scheduler's own,
// a few seconds, which made every job there "late" under an exact test): at most
// kStartDelayFraction of the time alone and less than one restart, so that a job made late by
// an earlier move is not counted on time (counting it so, with 1% alone, kept such jobs from
// every later gather: avg JCT +0.69% over efd's mixed A100 nodes, geometric mean +1.0% at
// half load).
// "Made late" allows only rounding (kLateRounding), since a restart's lateness counts in full: a
// tolerance of 1% there let a 30 s restart make a 9,337 s yolov3 on time 0.32% late at half load,
// where Tiresias left every job on time (efd t4x8 L0.5 s100; docs/combined-on-time-exact.md,
// docs/combined-start-delay.md).
constexpr double kStartDelayFraction = 0.01;
constexpr double kStartDelayRestarts = 0.5;
constexpr double kLateRounding = 1e-6;
bool move_makes_late(const GatherPass& g, int k) {
  if (!g.frozen[k]) return false;
  const Job& j = g.snap.jobs[k];
  const JobView& v = g.views[k];
  if (!v.known) return false;
  const AloneAtRequest a = alone_at_request(g.model, j, v, g.power_of_two, g.snap.now_s);
  const double now = g.model.iters_per_s_mixed(j.model, g.plan.jobs[k].gpus_by_type);
  if (!(a.speed > 0) || !(now > 0)) return false;
  const double alone = a.work / a.speed;
  const double alone_left = alone - a.waited;
  const double stay = j.remaining / now;
  const double start_delay =
      std::min(kStartDelayFraction * alone, kStartDelayRestarts * g.costs.restart_s);
  return stay <= alone_left + start_delay &&
         g.costs.restart_s + stay > alone_left + kLateRounding * alone;
}

// Whether job k, not `keep`, may be moved off its node for another job: whole on that node,
// may_swap(), and not made late by the move (move_makes_late()). The movers of moves_off(), and
// what the recall's cheap bound counts.
bool moves_whole(const GatherPass& g, int k, int keep) {
  return k != keep && g.plan.jobs[k].placement.size() == 1 && may_swap(g, k) &&
         !move_makes_late(g, k);
}

struct Move {
  int job, to, gpus;  // the job, the node it moves to (-1: none, it sheds), its size there
};

// The GPUs job k holds in the plan above the size it asked for (requested_size(): 0 if none).
int lent_gpus(const GatherPass& g, int k) {
  return std::max(0, g.plan.jobs[k].gpus - requested_size(g.snap.jobs[k], g.views[k], g.power_of_two));
}

// Whether lender k (above its request, whole on one node, kept on its GPUs otherwise), within its
// minimum interval but past the grace after its restart, may move off a node for a waiting job
// that starts this round (`keep`) by giving back lent GPUs: the interval keeps a job's own size
// steady, not GPUs lent to it, and a lender within it yields them to a job within its request
// in the doubling round too (DoublingJob::interval_yields). Only by giving some back (a move at
// its size is what the interval holds off), so each lend yields a few times at most. Tried
// first, and not kept: lenders past the interval shrunk too for such a job (2e's recall); on
// Gavel's Philly trace on 4-GPU V100 nodes a transformer that asked for 1 was shrunk and grown
// again at start after start (restarts 570 -> 5,542 in a scenario, 8,985 -> 26,175 over 15).
// Whether job k, not `keep`, may give lent GPUs back for `keep`: kept on its GPUs otherwise, may
// be moved, not moved yet, past the grace after its restart, and not made late by the restart.
// The part yields_lent_within_interval() and lent_on_node() share.
bool may_give_back(const GatherPass& g, int k, int keep) {
  return k != keep && g.frozen[k] && g.movable(k) && !g.moved[k] &&
         g.snap.now_s - g.snap.jobs[k].last_resize_s >= g.costs.grace_s() &&
         !move_makes_late(g, k);
}

bool yields_lent_within_interval(const GatherPass& g, int k, int keep) {
  return !past_interval(g, k) && g.plan.jobs[k].placement.size() == 1 && lent_gpus(g, k) > 0 &&
         may_give_back(g, k, keep);
}

// The GPUs lender k, spread over nodes, holds on `node` where it may give them all back and run
// on its GPUs elsewhere, for a waiting job that starts this round (`keep`); 0 where it may not.
// It may where it is kept on its GPUs otherwise, may be moved, is past the grace after its
// restart, holds at least that many lent GPUs (above its request) and what it keeps is a ring
// size. Whole movers alone left an 8-GPU imagenet job of 2,012 s over two T4 nodes (7 + 1)
// where a job that asked for 1 held 2, one on each: it ran spread 2,430 s, until the jobs that
// held that GPU in turn ended (finish-time fairness 1.49, Tiresias's worst 1.04; efd a100t4x8
// L0.5 s96). Past the interval too: it gives back only GPUs lent over a second node.
int lent_on_node(const GatherPass& g, int k, int keep, int node) {
  const JobPlan& kp = g.plan.jobs[k];
  if (kp.placement.size() < 2 || kp.gpus_by_type.size() != 1) return 0;
  int here = 0;
  for (const Placement& p : kp.placement)
    if (g.nodes.find(p.node) == node) here += p.gpus;
  const int left = kp.gpus - here;
  if (here <= 0 || left <= 0 || lent_gpus(g, k) < here ||
      (g.power_of_two && !is_power_of_two(left)) || !may_give_back(g, k, keep))
    return 0;
  return here;
}

// Whole jobs moved off node `node` (`on_it`: the jobs there; never `keep`) into `room` (node,
// GPUs it takes) until `need` GPUs are free there: jobs that restart this round anyway first (a
// move costs them nothing), then the largest (fewest restarts), each to the tightest room that
// holds it. With `recall`, a job the room does not hold whole that holds lent GPUs (lent_gpus())
// moves at the largest smaller size down to its request that the room holds (a ring size with
// power_of_two). With `lenders_yield`, a lender within its interval moves too, only at a smaller
// size (yields_lent_within_interval()), and a lender spread over nodes gives back the lent GPUs
// it holds there (lent_on_node(); a Move to -1). False where they do not free enough;
// `restarts`: the moved jobs that kept their GPUs.
bool moves_off(const GatherPass& g, int node, const std::vector<int>& on_it, int keep, int need,
               std::vector<std::pair<int, int>> room, bool recall, std::vector<Move>& moves,
               int& restarts, bool lenders_yield = false) {
  struct Mover {
    int job;
    bool gives_back;  // moves only at a smaller size (yields_lent_within_interval())
    int sheds = 0;    // gives back these GPUs on the node and stays on its others (lent_on_node())
  };
  std::vector<Mover> movers;  // the few jobs on one node: not indexed by job (called per target)
  for (int k : on_it)
    if (moves_whole(g, k, keep))
      movers.push_back({k, false});
    else if (lenders_yield && yields_lent_within_interval(g, k, keep))
      movers.push_back({k, true});
    else if (const int sheds = lenders_yield ? lent_on_node(g, k, keep, node) : 0; sheds > 0)
      movers.push_back({k, false, sheds});
  std::sort(movers.begin(), movers.end(), [&](const Mover& mx, const Mover& my) {
    const int x = mx.job, y = my.job;
    if (g.frozen[x] != g.frozen[y]) return !g.frozen[x];
    if (g.plan.jobs[x].gpus != g.plan.jobs[y].gpus)
      return g.plan.jobs[x].gpus > g.plan.jobs[y].gpus;
    return x < y;
  });
  moves.clear();
  restarts = 0;
  for (const Mover& m : movers) {
    if (need <= 0) break;
    const int k = m.job;
    const int gk = g.plan.jobs[k].gpus;
    if (m.sheds > 0) {  // needs no room: it keeps its GPUs on its other nodes
      need -= m.sheds;
      moves.push_back({k, -1, gk - m.sheds});
      ++restarts;
      continue;
    }
    const int least = recall || m.gives_back ? gk - lent_gpus(g, k) : gk;
    const int most = m.gives_back ? (g.power_of_two ? gk / 2 : gk - 1) : gk;
    int fit = -1, size = 0;  // the tightest room that holds it at the largest size it may take
    for (int at = most; fit < 0 && at >= least && at > 0; at = g.power_of_two ? at / 2 : at - 1) {
      for (size_t b = 0; b < room.size(); ++b)
        if (room[b].second >= at && (fit < 0 || room[b].second < room[fit].second))
          fit = static_cast<int>(b);
      size = at;
    }
    if (fit < 0) continue;
    room[fit].second -= size;
    need -= gk;
    moves.push_back({k, room[fit].first, size});
    restarts += g.frozen[k] ? 1 : 0;
  }
  return need <= 0;
}

// Carries out `moves` off node `from` (jobs of `type`, whole there or shedding their GPUs there);
// `why` ends each one's reason.
void apply_moves(GatherPass& g, int from, const std::vector<Move>& moves, const std::string& type,
                 std::vector<std::vector<int>>& on_node, const std::string& why) {
  for (const Move& m : moves) {
    JobPlan& kp = g.plan.jobs[m.job];
    const int held = kp.gpus;
    if (m.to < 0) {  // gives back its GPUs on `from`, keeps those on its other nodes
      std::vector<Placement> rest;
      for (const Placement& p : kp.placement)
        if (g.nodes.find(p.node) == from) g.free.take_at(from, -p.gpus);
        else rest.push_back(p);
      auto& was = on_node[from];
      was.erase(std::remove(was.begin(), was.end(), m.job), was.end());
      set_from_placement(kp, rest);
      g.moved[m.job] = true;
      kp.reason += "; gives back " + std::to_string(held - m.gpus) + " lent GPUs (" +
                   std::to_string(held) + "->" + std::to_string(m.gpus) + ") on " +
                   g.cluster.nodes[from].name + why;
      continue;
    }
    g.free.take_at(from, -held);
    g.free.take_at(m.to, m.gpus);
    auto& was = on_node[from];
    was.erase(std::remove(was.begin(), was.end(), m.job), was.end());
    on_node[m.to].push_back(m.job);
    set_from_placement(kp, {Placement{g.cluster.nodes[m.to].name, type, m.gpus}});
    if (g.frozen[m.job]) g.moved[m.job] = true;
    kp.reason += "; " +
                 (m.gpus < held ? "gives back " + std::to_string(held - m.gpus) +
                                      " lent GPUs (" + std::to_string(held) + "->" +
                                      std::to_string(m.gpus) + ") and "
                                : std::string()) +
                 "moves to " + kp.placement.front().node + why;
  }
}

// When the last of the moved jobs that keep their GPUs otherwise would end on them, in seconds
// from now; -1 where none does, or one's speed is unknown. Those that start or restart this
// round go where the moves put them either way. Their rings' spread is not counted (a bound
// from below).
double movers_end_s(const GatherPass& g, const std::vector<Move>& moves) {
  double end = -1;
  for (const Move& m : moves) {
    if (!g.frozen[m.job]) continue;
    const Job& k = g.snap.jobs[m.job];
    const double v = g.model.iters_per_s_mixed(k.model, g.plan.jobs[m.job].gpus_by_type);
    if (!(v > 0)) return -1;
    end = std::max(end, k.remaining / v);
  }
  return end;
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
  // Spread jobs one of whose nodes could hold them whole, checked first: the steps below walk
  // the cluster and every placement (bench_planner's steady pass at 50,000 GPUs x 10,000 jobs,
  // 50 ms without this step: 64 ms when built for every spread job, 60-62 with this check).
  std::vector<int> spread;
  for (int i : order) {
    const JobPlan& jp = g.plan.jobs[i];
    if (!jp.runs || !g.views[i].known || jp.placement.size() < 2 || jp.gpus_by_type.size() != 1 ||
        !may_swap(g, i))
      continue;
    bool fits = false;
    for (const Placement& p : jp.placement)
      fits = fits || g.cluster.nodes[g.nodes.find(p.node)].usable() >= jp.gpus;
    if (fits) spread.push_back(i);
  }
  if (spread.empty()) return;
  std::vector<std::vector<int>> on_node = jobs_on_nodes(g);
  std::vector<PlacementLocality::Job> lj;
  for (int i : spread) lj.push_back({g.snap.jobs[i].model, g.views[i].types});
  PlacementLocality locality(g.cluster, g.model, lj);
  const double c = g.costs.restart_s;
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
      // Where the moved jobs go: the job's other nodes, each the GPUs it leaves and those free.
      std::vector<std::pair<int, int>> room;
      for (const auto& [node, gpus] : held)
        if (node != target) {
          const int b = g.nodes.find(node);
          room.emplace_back(b, gpus + g.free.free(b));
        }
      std::vector<Move> moves;
      int restarts = 0;
      // For a job that starts this round, lenders within their interval yield lent GPUs
      // (yields_lent_within_interval()). An 8-GPU imagenet job arrived when two T4 nodes had 4
      // free each beside a job that asked for 1 and held 4, lent 245 s and 288 s before: it
      // started over both nodes, gathered (a restart) when the intervals ended, and finished
      // 1.134x its time alone (Tiresias's worst 1.077; efd a100t4x8 L0.5 s70). Not for a running
      // job the plan places again (tried: on Gavel's Philly trace on K80 + V100 nodes an 8-GPU
      // lm job over both types, placed again pass after pass, restarted 308 times, not once).
      const bool starts = j.state != JobState::Running;
      if (!moves_off(g, a, on_node[a], i, jp.gpus - here - g.free.free(a), room, false, moves,
                     restarts, starts))
        continue;
      const double cost = (restarts + (g.frozen[i] ? 1 : 0)) * c;
      const double f_one = locality.factor(static_cast<int>(s), {{target, jp.gpus}});
      double net = j.remaining / (v * f_held) - j.remaining / (v * f_one) - cost;
      // The node comes free anyway when the running jobs moved off it end, and gathering then
      // costs them no restart (this job's own is paid either way): so the move buys only what
      // the faster ring gains until the last of them ends, less their restarts. A 386 s job
      // moved 70 s before its end for an 8-GPU gather ran 1.08x its time alone (efd a100t4x8
      // L0.5 s46; max FTF 1.062x Tiresias's).
      const double until = movers_end_s(g, moves);
      if (until >= 0)
        net = std::min(net, until * (1 - f_held / f_one) - restarts * c);
      if (f_one > f_held && net > best_net) {
        best_net = net;
        best_node = a;
        best_moves = moves;
      }
    }
    if (best_node < 0) continue;
    const std::string type = jp.gpus_by_type.begin()->first;
    const std::string& target = g.cluster.nodes[best_node].name;
    for (const Placement& p : jp.placement) g.free.take_at(g.nodes.find(p.node), -p.gpus);
    apply_moves(g, best_node, best_moves, type, on_node,
                " so that " + j.id + " gathers on " + target);
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

namespace {

// Where 2e grows a job: the node, the moves that make room there, what the plan gains net of
// their restarts, and the lent GPUs they take back.
struct GrowTarget {
  int node = -1;
  std::vector<Move> moves;
  double net = 0;
  int recalled = 0;
};

// Room for job i (`was` GPUs on node a) to grow to `size` on node t: the jobs there moved into
// `open` (nodes of its type with GPUs free) and, where t is another node, the GPUs i leaves on a.
// Fills `out` where that frees enough and gains more than `out.net` already holds.
// `lenders_yield`: as moves_off()'s (for a waiting job that starts this round).
void try_target(const GatherPass& g, const std::vector<std::vector<int>>& on_node, int i, int a,
                int was, int size, int t, const std::vector<int>& open, bool recall, double gain,
                GrowTarget& out, bool lenders_yield) {
  const int need = size - g.free.free(t) - (t == a ? was : 0);
  if (need <= 0) return;
  std::vector<std::pair<int, int>> room;
  for (int b : open)
    if (b != t && b != a && g.free.free(b) > 0) room.emplace_back(b, g.free.free(b));
  if (t != a && g.free.free(a) + was > 0) room.emplace_back(a, g.free.free(a) + was);
  GrowTarget cand;
  int restarts = 0;
  if (!moves_off(g, t, on_node[t], i, need, room, recall, cand.moves, restarts, lenders_yield))
    return;
  cand.node = t;
  cand.net = gain - restarts * g.costs.restart_s;
  for (const Move& m : cand.moves) cand.recalled += g.plan.jobs[m.job].gpus - m.gpus;
  if (cand.net > out.net || (cand.net == out.net && out.node >= 0 && cand.recalled < out.recalled))
    out = std::move(cand);
}

// At most this many nodes a recall weighs per job (each a walk of the type's open nodes): a
// 6,000-node cluster in a burst has hundreds of capped jobs.
constexpr int kRecallTargets = 64;

}  // namespace

void grow_whole_by_swaps(GatherPass& g, const std::vector<int>& order,
                         const std::map<int, int>& whole) {
  std::vector<int> short_of;  // run on one node below their whole size
  for (int i : order) {
    const auto w = whole.find(i);
    const JobPlan& jp = g.plan.jobs[i];
    if (w != whole.end() && jp.runs && g.views[i].known && jp.placement.size() == 1 &&
        jp.gpus_by_type.size() == 1 && jp.gpus < w->second && may_swap(g, i))
      short_of.push_back(i);
  }
  if (short_of.empty()) return;
  std::vector<std::vector<int>> on_node = jobs_on_nodes(g);
  // Per GPU type, its nodes with GPUs free (where moved jobs go) and all its nodes (where a
  // recall may grow a job). Built once per type (a walk of the cluster); a node filled since
  // offers no room (its free GPUs are read at each use).
  std::map<std::string, std::vector<int>> open_of_type, nodes_of_type;
  const double c = g.costs.restart_s;
  for (int i : short_of) {
    JobPlan& jp = g.plan.jobs[i];
    const Job& j = g.snap.jobs[i];
    const int size = whole.at(i), was = jp.gpus;
    const std::string type = jp.gpus_by_type.begin()->first;
    const int a = g.nodes.find(jp.placement.front().node);
    const double v_now = g.model.iters_per_s(j.model, type, was);
    const double v_whole = g.model.iters_per_s(j.model, type, size);
    if (!(v_now > 0) || !(v_whole > v_now)) continue;
    const double gain = j.remaining / v_now - j.remaining / v_whole - (g.frozen[i] ? c : 0);
    if (gain <= g.costs.min_gain_multiple * c) continue;
    // For a waiting job that starts this round, lenders yield as they do for its gather
    // (moves_off()'s `lenders_yield`): a lender spread over nodes gives back the lent GPUs it
    // holds on a node and runs on its others. The recall's cheap bound below counted only jobs
    // that move whole, so it passed over a lender's nodes: an 8-GPU deepspeech2 job of 516 s
    // started at 4 on a T4 node while a job that asked for 1 held two 8-GPU T4 nodes whole, and
    // grew to 8 with a restart 77 s later (efd a100t4x8 L0.5 s98: finish-time fairness 1.12,
    // Tiresias's worst 1.10; now 1.004, docs/combined-recall-spread.md).
    const bool starts = j.state != JobState::Running;
    auto open = open_of_type.find(type);
    if (open == open_of_type.end()) {
      std::vector<int> of_type, nodes_free;
      for (size_t b = 0; b < g.cluster.nodes.size(); ++b)
        if (g.cluster.nodes[b].gpu_type == type) {
          of_type.push_back(static_cast<int>(b));
          if (g.free.free(static_cast<int>(b)) > 0) nodes_free.push_back(static_cast<int>(b));
        }
      nodes_of_type.emplace(type, std::move(of_type));
      open = open_of_type.emplace(type, std::move(nodes_free)).first;
    }
    // Its own node first, its neighbours moved whole (no move for it).
    GrowTarget best;
    best.net = g.costs.min_gain_multiple * c;
    if (g.cluster.nodes[a].usable() >= size)
      try_target(g, on_node, i, a, was, size, a, open->second, false, gain, best, starts);
    // Else the recall: lent GPUs come back for a job short of its floor, as they do for a job
    // within its request that a plan would stop (DoublingRound::release_lender()). Any node of its
    // type that holds it whole, the jobs there moved, a lender at fewer GPUs where the room holds
    // it no other way; it moves there if that is not its node. A transformer admitted late at 8
    // on 8-GPU V100 nodes started at 4 beside a 4-GPU job, every node full, while a job that
    // asked for 1 held a whole node: it ran at 4 for 1,650 s, FTF 1.51 (phillyd v100x8 L0.5 s8,
    // max FTF 1.368x Tiresias's); now 8 on that node and the lender 4 on the GPUs it left
    // (docs/combined-recall.md).
    if (best.node < 0) {
      int tried = 0;
      for (int t : nodes_of_type.at(type)) {
        if (g.cluster.nodes[t].usable() < size) continue;
        int movable = g.free.free(t) + (t == a ? was : 0);  // cheap bound: what could be freed
        for (int k : on_node[t])
          if (moves_whole(g, k, i)) movable += g.plan.jobs[k].gpus;
          else if (starts) movable += lent_on_node(g, k, i, t);
        if (movable < size) continue;
        if (++tried > kRecallTargets) break;
        try_target(g, on_node, i, a, was, size, t, open->second, true, gain, best, starts);
      }
    }
    if (best.node < 0) continue;
    const int t = best.node;
    const std::string& node = g.cluster.nodes[t].name;
    g.free.take_at(a, -was);
    auto& at_a = on_node[a];
    at_a.erase(std::remove(at_a.begin(), at_a.end(), i), at_a.end());
    apply_moves(g, t, best.moves, type, on_node, " so that " + j.id + " runs whole on " + node);
    g.free.take_at(t, size);
    on_node[t].push_back(i);
    set_from_placement(jp, {Placement{node, type, size}});
    if (g.frozen[i]) g.moved[i] = true;
    jp.reason += "; grows " + std::to_string(was) + "->" + std::to_string(size) + " on " + node +
                 ", " + std::to_string(best.moves.size()) + " jobs moved from there" +
                 (best.recalled > 0 ? " (" + std::to_string(best.recalled) + " lent GPUs back)"
                                    : std::string()) +
                 ": the plan gains " + std::to_string(static_cast<long>(best.net)) + " s";
  }
}

}  // namespace planner_detail
}  // namespace ringsched
