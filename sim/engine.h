// SPDX-License-Identifier: GPL-2.0-or-later
// The discrete-event engine of ringsim: arrivals, completions and planning rounds; a policy turns
// the state into allocations (GPUs per node for every job it wants to run) and the engine applies
// them, charging the restart cost on every resize, and integrates each job's progress exactly
// between events (its speed is constant while its allocation is).
#pragma once

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ringsched/model.h"
#include "ringsched/placement.h"
#include "ringsched/throughput.h"
#include "trace.h"

namespace ringsim {

enum class SimJobState { Future, Pending, Running, Done };

// What the engine knows about a job while it simulates; policies read it through SimView.
struct SimJob {
  const TraceJob* spec = nullptr;
  std::vector<std::string> allowed_types;  // types the true profile knows, present in the cluster
  SimJobState state = SimJobState::Future;
  double remaining = 0;                    // iterations still to run
  std::map<std::string, int> alloc;        // node -> GPUs (empty unless Running)
  std::map<std::string, int> by_type;      // type -> GPUs of alloc
  int gpus = 0;
  double spb_depth = 1.0;
  bool proportional_split = true;          // mixed types: batch split by speed (else stragglers)
  double speed = 0;                        // iterations/s once the restart is over
  double resume_s = 0;                     // no progress before this (restart cost)
  double start_s = -1, finish_s = -1;
  double last_resize_s = -1e18;
  double attained_gpu_s = 0;
  double useful_gpu_s = 0;                 // GPU-seconds outside restarts
  int restarts = 0;
  int stops = 0;                           // preempted while running (it waited again)
  int max_gpus_seen = 0;
  // Expected completion at the current speed, for policies that estimate (backfill).
  double expected_finish_s(double now_s) const;
};

// One decision for one job: where it runs. Empty gpus_by_node: it waits (or is preempted).
struct Allocation {
  std::map<std::string, int> gpus_by_node;
  double spb_depth = 1.0;
  bool proportional_split = true;
};

struct SimView {
  double now_s = 0;
  const ringsched::Cluster* cluster = nullptr;
  const ringsched::ThroughputModel* model = nullptr;  // what the policy may know
  const std::map<std::string, int>* gpus_by_type = nullptr;  // the cluster's GPUs per type
  int total_gpus = 0;
  const std::vector<SimJob>* jobs = nullptr;
  std::vector<int> active;  // indices of Pending and Running jobs, in submit order
  bool event = true;        // an arrival or completion since the previous decision
  const SimJob& job(int i) const { return (*jobs)[i]; }
};

// A scheduling policy: one decision per call for every active job (out[k] for view.active[k]).
class SchedulingPolicy {
 public:
  virtual ~SchedulingPolicy() = default;
  virtual std::string name() const = 0;
  virtual void decide(const SimView& view, std::vector<Allocation>& out) = 0;
  // False for policies whose decision can change only on arrivals and completions (no
  // preemption, no resizing): the engine then skips their periodic rounds, which matters on
  // traces whose queue holds thousands of jobs.
  virtual bool periodic() const { return true; }
  // A time after the last decision at which it would change though no job arrives or ends (the
  // planner's Plan::wake_s): the engine decides again then, as the plugin's next round would.
  // Infinity: none.
  virtual double wake_s() const { return std::numeric_limits<double>::infinity(); }
};

struct SimConfig {
  double round_s = 300;            // planning interval R (seconds)
  double restart_s = 30;           // C: seconds without progress after each resize/resume
  bool plan_on_events = true;      // also plan on every arrival and completion
  // Events within this long after a plan wait for the next one. 0 here (every event plans, as
  // the tests and sim/sweep.sh measure); ringsim's --plan-gap defaults to the plugin's
  // MinReplanGap, 2 s.
  double min_plan_gap_s = 0;
  double max_sim_s = 1e10;         // give up (error) past this simulated time
  bool progress = false;           // progress line on stderr
  std::string label;               // shown on the progress line
  int timeline_points = 2000;      // utilisation samples kept for plots (about)
  int job_series = 16;             // jobs whose GPU count over time is recorded for plots
};

struct JobRow {
  std::string id, model;
  double submit_s = 0, start_s = 0, finish_s = 0, jct_s = 0, ideal_s = 0;
  int requested = 0, max_gpus = 0, restarts = 0;
  double gpu_s = 0;
  std::string types;  // "v100" or "k80+v100"
};

struct SimResult {
  std::string policy;
  std::vector<JobRow> jobs;  // in trace order
  double avg_jct_s = 0, p50_jct_s = 0, p99_jct_s = 0, makespan_s = 0;
  double gpu_util = 0;       // allocated GPU-seconds / (GPUs * makespan)
  double useful_util = 0;    // same without restart periods
  long restarts = 0;
  long stops = 0;           // times a decision stopped a running job (it waited again)
  double ftf_max = 0;        // max over jobs of JCT / isolated time at the requested size
  double decision_ms_p50 = 0, decision_ms_p99 = 0;
  long decisions = 0;
  double iters_per_gpu_hour = 0;  // completed iterations / allocated GPU-hours
  double wall_s = 0;
  // Plot series.
  std::vector<std::pair<double, int>> busy_gpus;            // (time, GPUs allocated)
  std::map<std::string, std::vector<std::pair<double, int>>> job_gpus;  // id -> (time, GPUs)
};

class Engine {
 public:
  // truth: the speeds jobs really get. Throws InputError (naming the trace file and line) for a
  // job whose model the truth does not know on any type of the cluster, or whose minimum size
  // exceeds the GPUs it may use.
  Engine(const ringsched::Cluster& cluster, const Trace& trace, const ringsched::ThroughputModel& truth,
         SimConfig config);
  // Runs the whole trace under `policy`; `policy_model` is what the policy is told.
  SimResult run(SchedulingPolicy& policy, const ringsched::ThroughputModel& policy_model);

  // Isolated time of a job at its requested size on its fastest allowed type, on the fewest
  // nodes that hold it (JCT lower bound at that size; FTF denominator).
  double isolated_s(const TraceJob& j) const;
  // A lower bound on any JCT: iterations / the best speed at any allowed size and type.
  double ideal_s(const TraceJob& j) const;
  // Speed of an allocation (what the engine charges): the truth's speed on its GPUs per type,
  // times the placement's locality factor for the nodes it spans (ringsched::PlacementLocality,
  // the model combined's placement plans with), whichever policy chose them.
  double speed_of(const SimJob& j, const std::map<std::string, int>& gpus_by_node,
                  const std::map<std::string, int>& by_type, bool proportional, double spb_depth) const;

 private:
  const ringsched::Cluster& cluster_;
  const Trace& trace_;
  const ringsched::ThroughputModel& truth_;
  SimConfig config_;
  std::map<std::string, const ringsched::Node*> nodes_;
  std::vector<std::vector<std::string>> allowed_;
  std::unique_ptr<ringsched::PlacementLocality> locality_;  // per trace job, by its index
};

}  // namespace ringsim
