// SPDX-License-Identifier: GPL-2.0-or-later
// Internal to the planner (planner.cpp): what it knows about each job while it plans, and the
// small steps Planner::plan() is built from -- the policy order, the groups of types jobs connect,
// node lookup and placement rows, the fairness floor's speed, and the starvation bound's size.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringsched/doubling.h"
#include "ringsched/free_gpus.h"
#include "ringsched/placement.h"
#include "ringsched/planner.h"

namespace ringsched {
namespace planner_detail {

// Everything the planner knows about one job while it plans.
struct JobView {
  const Job* job = nullptr;
  std::vector<std::string> types;  // allowed types present in the cluster, fastest first
  std::string best_type;           // fastest allowed type ("" if the model is unknown everywhere)
  bool known = false;              // some speed is known or predicted
  bool predicted = false;          // best type's speed comes from model similarity
  int lo = 1, hi = 1;              // GPU range after bounds and power-of-two rounding
  int late_cap = 1;                // the starvation bound's cap on its types (late_cap_of())
  int largest_node = 0;            // the most GPUs one node of its types has (largest_node_of())
};

inline int round_range_min(int n, bool pow2) { return pow2 ? ceil_power_of_two(n) : n; }
// The size job j asked for as the planner counts it (the fairness pass's requested size, the
// tail guard's "within its request"): its requested GPUs, rounded up to a power of two with
// `pow2`, within its range.
inline int requested_size(const Job& j, const JobView& v, bool pow2) {
  return std::clamp(round_range_min(std::max(1, j.requested_gpus), pow2), v.lo, v.hi);
}

// What finish-time fairness measures a job against, its time alone at its requested size on
// its best type: work / speed (the whole job's iterations, its remaining ones where unknown),
// `waited` of it spent waiting since submission. The fairness pass and the gather's on-time
// move rule both start from it. speed 0: not known.
struct AloneAtRequest {
  double work = 0;    // iterations
  double speed = 0;   // iterations/s at requested_size() on best_type
  double waited = 0;  // seconds since submission
};
AloneAtRequest alone_at_request(const ThroughputModel& model, const Job& j, const JobView& v,
                                bool pow2, double now_s);

// Shortest predicted remaining time t first, divided by the response ratio (t + w) / t of the
// time w it has waited: key = t^2 / (t + aging * w). A job's key falls towards 0 as it waits, so
// it comes before any job of key k once w > t^2 / k: none starves. On the Philly-derived trace
// this halves the average JCT against halving a job's key per hour waited (which degrades to
// FIFO under overload). Admin boosts come first.
std::vector<int> policy_order(const std::vector<JobView>& views, const ThroughputModel& model,
                              double now_s, double aging);

size_t type_position(const std::vector<std::string>& types, const std::string& t);

// Groups of GPU types that jobs connect (a job allowing two types puts them in one group), by
// union-find over the cluster's types (sorted). Returns, for job i, group[i] (-1: the job allows
// no type of the cluster) and, for type t at position p of `types`, group[jobs + p]; a group is
// named by one of its types' positions.
std::vector<int> type_groups(const std::vector<JobView>& views, const std::vector<std::string>& types);

// Nodes by index, built once per planning pass.
struct NodeIndex {
  explicit NodeIndex(const Cluster& c) : cluster(c) {
    for (size_t i = 0; i < c.nodes.size(); ++i) by_name.emplace(c.nodes[i].name, static_cast<int>(i));
  }
  int find(const std::string& node) const {
    auto it = by_name.find(node);
    return it == by_name.end() ? -1 : it->second;
  }
  const Cluster& cluster;
  std::unordered_map<std::string, int> by_name;
};

// Takes n GPUs of `type` by the allocator's rule (ringsched/free_gpus.h: as few nodes as it can,
// so the ring stays local); false, taking nothing, if fewer are free.
bool take_of_type(FreeGpus& free, const std::string& type, int n, std::vector<Placement>& out);

// Sets the job's GPUs, per-type counts and runs flag from its placement.
void set_from_placement(JobPlan& jp, const std::vector<Placement>& placement);

// The speed of `floor` GPUs on one node of the fastest type that has them free (0: none has).
// Where only slow types can hold the fairness floor, it would force a slower ring than fewer GPUs
// of a fast type: an 8-GPU resnet18 late job put on 8 K80s (27 it/s; one P100: 36) ran for 11
// hours, 34x its time alone.
double floor_speed(const ThroughputModel& model, const std::string& name,
                   const std::vector<std::string>& types, const FreeGpus& free, int floor);

// The job's types on which some size from `lo` (doubling) up to `floor` with GPUs free runs
// faster than `speed`.
std::vector<std::string> types_faster_than(const ThroughputModel& model, const std::string& name,
                                           const std::vector<std::string>& types, const FreeGpus& free,
                                           int lo, int floor, double speed);

// A late or behind job whose fairness floor no one node has free, though its types have it.
struct FloorOverNodes {
  std::string model;
  std::vector<std::string> types;
  int lo = 1;     // its minimum
  int whole = 0;  // its whole floor
};
// A candidate whose floor over nodes pays, and the types where it does.
struct FloorFaster {
  size_t candidate = 0;
  std::vector<std::string> types;  // those of its types where the whole floor spread runs faster
};
// The candidates whose whole floor over nodes -- the allocator's pick among the free GPUs,
// charged the placement's locality -- runs them faster than any size from their minimum,
// doubling, that one node of their types has free, each with the types where it does: the floor
// holds only there. Allowed every type, a 32-GPU floor justified by spread A100s was placed on
// four V100 nodes, where resnet50 ran at 6.4 it/s for 6 hours instead of 22.7 on A100s. The floor
// is capped at one node because most rings run slower spread (Gavel's spread V100 runs:
// 0.3-0.5x), not to keep a job from a faster ring: Gavel's 8-GPU points of several models are
// 3-5x their 4-GPU ones (lm-b10 on V100: 121 it/s on 4, 615 on 8), and capped at 4 on 4-GPU
// nodes a short 8-GPU job ran at a third of its speed alone (max finish-time fairness 2.85,
// Tiresias's 1.19). `free` is left as it was.
std::vector<FloorFaster> floors_faster_over_nodes(const Cluster& cluster, const ThroughputModel& model,
                                                  FreeGpus& free,
                                                  const std::vector<FloorOverNodes>& candidates);

// The starvation bound (PlannerConfig::late_factor): the size elastic job j is admitted at
// instead of its minimum `lo`, or 0. It applies when, run at its minimum from now on, the job
// would finish later than late_factor x F x `alone_s` (its run time alone at its requested size
// `want`) counted from its submission (`waited_s` ago). At most `cap` GPUs; a running job at most
// its current size, not above: admitted at a size that no longer fits, it would be stopped,
// restart smaller, and be stopped again (thousands of restarts on Philly traces); the doubling
// and the fairness pass may still grow it. Combined only: plain doubling, which places without
// locality, lost 33% avg JCT with it on the --full sweep (up to 218%).
// A waiting job that may run on one type only (`one_type`) gets the smallest of lo x 2^k below
// that size that finishes it within late_admission_target() x F x `alone_s` on `type`, not its
// whole request: admitted at 8 GPUs each, a burst of 8-GPU jobs on 64 A100s ran half of them
// while the other half waited (itp03, links of 100 GB/s: 1.071x doubling's avg JCT, which ran
// them all at 4). A running job keeps the size above: stepped down too, a 50-hour transformer
// was shrunk and regrown 7 times (p99 JCT 1.056x Tiresias's on phillyd v100x4 L2 s60). So does
// a job of several types, whose size would be reckoned at its fastest type's speed while the
// placement may give it a slower one: on Gavel's Philly trace over K80s, P100s and V100s, a job
// went between 4 K80s and 1 P100 every 300 s, and avg JCT rose 0.5% (up to 8.4%), restarts 4.9%.
struct LateAdmission {
  int gpus = 0;                // 0: not late at its minimum
  bool within_target = false;  // a size below its request, stepped down to (on `type`)
  int smallest_in_bound = 0;   // waiting, one type: the least lo x 2^k below it within the bound
  bool fitted = false;         // halved by fit_late_admissions()
};
LateAdmission late_admission_size(const ThroughputModel& model, const PlannerConfig& config,
                                  const Job& j, const std::string& type, int lo, int want, int cap,
                                  double waited_s, double alone_s, bool one_type);

// The most GPUs one node of these types has (largest_node_of_type: per type; 0: none).
int largest_node_of(const std::vector<std::string>& types,
                    const std::map<std::string, int>& largest_node_of_type);

// The most GPUs the starvation bound admits a job that may run on `types` at
// (late_admission_size()'s `cap`; JobView::late_cap, once per model and types): late_share of
// the GPUs of those types, but never below one whole node of them, nor above
// `cluster_cap` (late_share of the cluster), as a power of two where sizes are. Of the cluster,
// a job of A100s only on 64 A100s + 64 T4s had 16 A100s: four late jobs held all 64 while an
// arrival waited 35,361 s (itp01 a100t4x4 L2 s3 with 100 GB/s links; 1.019x doubling's avg JCT,
// 0.989x with this; misses there 11 -> 7 of 90). Without the node floor, late T4 jobs of mix5 on
// 16 T4s got 2 and ElasticFlow A100 ones 2 (avg JCT +3.0% on mix5's --full clusters).
int late_cap_of(const std::vector<std::string>& types,
                const std::map<std::string, int>& gpus_by_type,
                const std::map<std::string, int>& largest_node_of_type, int cluster_cap,
                const PlannerConfig& config);

// The finish, in fair shares, that late_admission_size() gives a waiting job: halfway from its
// fair share to the bound (1.25 at LateFactor 1.5), never past the bound. Admitted just in time
// (at the bound itself), jobs drifted past it: 6 misses of 2,340 on ringsim's sweep (max FTF or
// p99 up to 1.022x Tiresias's) where halfway keeps the 1 there was; admitted at their fair share
// itself, they got nearly whole requests again (27 misses of 90 on 100 GB/s links, halfway 18,
// whole requests 28). Measured with jobs of several types stepped down too; halfway, the
// one-type rule left both figures as they were.
double late_admission_target(const PlannerConfig& config);

// Late jobs that may run on one type only, admitted at the sizes above, can ask for more than
// the type has for the planner (`usable_by_type`: Node::usable(), without the GPUs of jobs it
// does not own): then, lowest priority first and one halving per job per sweep, the waiting ones
// are halved until they fit, never below `smallest_in_bound` (still within the bound itself,
// late_factor x F, not the target): a burst of 8-GPU jobs on 64 A100s, each late and each
// admitted at 8, ran 8 at a time while the rest waited, and the late ones went on stopping one
// another (itp03 a100t4x4 L2 s3 with links of 100 GB/s: 1.042x doubling's avg JCT, which ran them
// all at 4; 0.988x with this). Marks those it halves LateAdmission::fitted; returns how many
// halvings. Halved without the bound's floor, the late jobs crowded each other: avg JCT +1.5% on
// --full's efd and phillyd v100x4 (up to +7.6%); with it -0.01..-0.25% per set of the sweep.
int fit_late_admissions(const std::vector<JobView>& views,
                        const std::map<std::string, int>& usable_by_type,
                        const std::vector<int>& order, std::vector<LateAdmission>& late);

// The decision reason's clause for a job admitted at LateAdmission::gpus.
std::string late_admission_reason(const PlannerConfig& config, const LateAdmission& late);

// The tail guard (PlannerConfig::tail_guard): the index of the running job, within its requested
// size (rounded up to a power of two with `power_of_two`), on at most `cap` GPUs (the
// starvation bound's share of the cluster: a guarded 8-GPU job on 8 GPUs would keep every
// arrival waiting), marked Job::stoppable, and with other stoppable running jobs holding at
// least as many GPUs of its types (the guard moves a stop to another job; it does not keep an
// arrival waiting that only its GPUs could start: a short job waited for a long one on the only
// V100 not held by jobs outside ringrun, test_slurm_elastic), with the latest predicted
// completion counted from its submission (now - submit + remaining / its speed at its current
// size on its best type), or -1 if there is none. Ties: the earlier submission.
int tail_guard_job(const Snapshot& snap, const std::vector<JobView>& views,
                   const ThroughputModel& model, const NodeIndex& nodes, bool power_of_two,
                   int cap);

// Lent GPUs come back within the minimum interval. The interval keeps a job that has just
// started or resized at its size (it restarts at most once per interval), so jobs the doubling
// grew above their requests while no one waited held every GPU until it passed: on a 64-T4
// cluster, three jobs grown 217 s earlier held 54 GPUs above their requests while a 1-GPU job of
// 257 s waited 294 s (finish-time fairness 1.98; Tiresias's worst 1.22); and a 4-GPU job of 12.6
// hours within its request was stopped for an arrival while two jobs that asked for 1 GPU,
// resized 206 s before, held 2 and 4 (p99 JCT 1.016x Tiresias's, phillyd v100x4 L0.5 s5). Each
// running elastic job above its fair_max_gpus (its requested size as the fairness pass counts
// it; 0: none) resized less than the interval ago gets interval_yields, its minimum raised to
// that size and its maximum lowered to its current size: it may only give GPUs back, and only
// where step 3 finds that holding it would keep a starving job waiting or squeeze a running job
// within its request (doubling_round.h). Returns how many jobs it marked.
int yield_lent_gpus_within_interval(std::vector<DoublingJob>& jobs, const ResizeCosts& costs,
                                    double now_s);

// A job short of its request grows within the interval. A running elastic job below its
// request (placed short of the size its plan counted, where no node had that many free as it
// started), past its grace (ResizeCosts::grace_s), whose request one node of its types holds
// (JobView::largest_node), gets interval_grows: its minimum raised
// to its current size (a power of two), its maximum lowered to its request, so the interval
// holds it only against a shrink or a stop. An 8-GPU resnet50 of 2,009 s placed on 4 V100s of
// an 8-GPU node was held there 442 s by the interval (finish-time fairness 1.115, Tiresias's
// worst 1.082; phillyd v100x8 L0.5 s30). Where no node holds the request the count gave GPUs
// to grows the placement could not place: on 4-GPU nodes a late 8-GPU job then ran spread over
// three (FTF 3.15, phillyd p100v100x4 L1 s42). Returns how many it marked.
int grow_short_jobs_within_interval(std::vector<DoublingJob>& jobs, const std::vector<JobView>& views,
                                    const ResizeCosts& costs, double now_s);

// When the plan must be made again though no job arrives or ends: a starving job the plan
// leaves waiting (starving[i], plan.jobs[i] not running), while a lender that keeps running
// (DoublingJob::interval_yields) is within its grace after its own restart (ResizeCosts::grace_s),
// in which it yields only to keep a job within its request from stopping.
// Past the grace it yields to the starving job too, but the plan only learns so at the next
// event: on a 64-T4 cluster (efd t4x4 L0.5 s3, 100 GB/s links) two 1-GPU jobs of 386-413 s
// waited 71-77 s behind six lenders for an arrival, though two lenders' grace had ended 56 s
// before (max finish-time fairness 1.19; Tiresias's 1.03). Returns the earliest such end after
// now_s, 0 if none; grace_end_s[i] is job i's (0: not a lender in its grace).
double wake_after_holds(const Plan& plan, const std::vector<char>& starving,
                        const std::vector<double>& grace_end_s, double now_s);

// One count round over `members` (job indices in policy order) on `usable` GPUs: sets their
// counts, reasons and fairness floors (planner.cpp).
using CountRound = std::function<void(const std::vector<int>& members, int usable)>;

// The count round plans each group of types as one pool (planner.cpp), so jobs that can use only
// some of a group's types may be given more GPUs than those types have: on a cluster with A100s
// and T4s, a 16-GPU job kept all 16 A100s while a 1-GPU A100-only job of 277 s was counted
// against the free T4s, found no GPU at placement, and waited 4,736 s (finish-time fairness 18x
// where Tiresias's worst was 11.6x). For every set S of types (all of them up to 12 types; else
// each job's own set), smallest first: when the jobs that can use only types of S were counted
// more GPUs than S has, they get a round of their own (`round`, with its admission order,
// hysteresis and starvation rules) on what S's GPUs hold less the jobs of smaller sets planned
// so. A running job planned at its size keeps its GPUs (step 2), so it counts on their types
// only, and one on several types takes its GPUs of S out of the round of every set S that has
// some of its types but not all (it counts in a larger set's round): a job on 3 A100s and 1
// P100 left the A100-only round counting 3 A100s it held, and a 1-GPU A100-only job of 283 s,
// counted on them each round, found no GPU at placement and waited 6,370 s (mix5 on five
// types with 100 GB/s links, L0.5 s2, where lenders gave GPUs back to jobs below their
// requests: release_lender()). Returns how many jobs' counts it changed.
int fit_counts_to_types(const Snapshot& snap, const std::vector<JobView>& views,
                        const std::vector<std::string>& types, const NodeIndex& nodes,
                        const std::vector<int>& order, std::vector<int>& counts,
                        std::vector<std::string>& reasons, const CountRound& round);

// A count round that stops a starving running job within its request lends nothing. Where the
// round over `members` (policy order, on `usable` GPUs) stopped a job that ran at most at its
// DoublingJob::request(), on a numbered set of types, and is starving (`counts` 0; not one of the
// `impossible`), its waiting members are marked in `capped` (the placement starts them at no
// more than their counts), and where it started one above its base (the larger of its request
// and its minimum), `round` runs again with every waiting member's maximum at that base and no
// running member's above its size (or its base). A starving job that waits takes GPUs back from
// lenders as soon as their grace ends (doubling_round.h, interval_yields()), so GPUs lent in
// such a plan come back within a minute: a restart, of a job that has just started too. An
// 8-GPU imagenet job, starving, was stopped for a 1-GPU ncf arrival of 297 s (three lenders
// within their grace held the GPU it lacked); the ncf job started at 4 on what it left and was
// shrunk to 1 60 s later as the imagenet job came back (finish-time fairness 1.060, Tiresias's
// worst 1.041; efd a100t4x8 L0.5 s68). A member the cap holds says so in `reasons`. Returns
// whether it ran the round again.
bool start_at_base_past_a_stop(std::vector<DoublingJob>& jobs, const std::vector<int>& members,
                               int usable, const std::vector<int>& counts,
                               const std::vector<std::string>& impossible, const CountRound& round,
                               std::vector<char>& capped, std::vector<std::string>& reasons);

// A running job's GPUs per type (a node the cluster no longer lists counts as its current type).
std::map<std::string, int> current_by_type(const Job& j, const NodeIndex& nodes);

// How much faster than on the GPUs it holds (`held_by_type`: several types run at the slowest's
// pace) running job j would run at `size` on the fastest of `types`, where that is at least
// `factor` (PlannerConfig::replace_slower); factor 0 otherwise.
struct SlowerHere {
  double factor = 0;
  std::string held, fastest;  // "k80", "k80+p100"; the fastest type
};
SlowerHere slower_here_than(const ThroughputModel& model, const Job& j,
                            const std::map<std::string, int>& held_by_type,
                            const std::vector<std::string>& types, int size, double factor);
// The decision reason's clause for such a job.
std::string slower_here_reason(const SlowerHere& slower, const PlannerConfig& config);

// The running jobs (indices into snap.jobs) that `plan` grows onto GPUs over several nodes where
// their ring runs no faster than on the GPUs they hold now -- for a job behind its fair share
// (`fair_floor[i]`, the size the fairness pass or the starvation bound set, above its GPUs now),
// no faster than one GPU of those types: the locality of the spread ring costs more than the
// added GPUs give (what the count round cannot see, counting GPUs alone).
std::vector<int> grows_no_faster(const Cluster& cluster, const ThroughputModel& model,
                                 const NodeIndex& nodes, const Snapshot& snap, const Plan& plan,
                                 const std::vector<JobView>& views,
                                 const std::vector<int>& fair_floor);

// A waiting job that `plan` starts above its request (`request[i]`) on GPUs over several nodes,
// where the lent GPUs save less than `min_gain` seconds, starts at its request on one node of the
// fastest of its types with room in `free` instead (its plan and reason rewritten, `free` taken
// from). Saved: the spread ring against that node, over the run or over `horizon_s` less the
// restart that takes the lent GPUs back, whichever is less. The count round values a lend at a
// ring inside one node; the spread ring's locality can take most of that. Returns how many.
int start_spread_lends_at_request(const Cluster& cluster, const ThroughputModel& model,
                                  const NodeIndex& nodes, const Snapshot& snap, Plan& plan,
                                  const std::vector<JobView>& views,
                                  const std::vector<int>& request, FreeGpus& free,
                                  double horizon_s, double restart_s, double min_gain);

}  // namespace planner_detail
}  // namespace ringsched
