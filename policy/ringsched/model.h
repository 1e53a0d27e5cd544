// SPDX-License-Identifier: GPL-2.0-or-later
// The data model of the policy library: jobs, the cluster, measured profiles and errors.
// Pure C++17; nothing here knows about Slurm. See DESIGN.md section 5 for the file formats.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringsched {

// Bad input: always names where (file and line, or a field) and what is wrong. Thrown by every
// loader and validator; callers that must not stop (plugins) catch it and degrade.
class InputError : public std::runtime_error {
 public:
  InputError(const std::string& where, int line, const std::string& what);
  explicit InputError(const std::string& what);
  const std::string& where() const { return where_; }
  int line() const { return line_; }

 private:
  std::string where_;
  int line_ = 0;
};

// GPU type names are compared case-insensitively; they are stored lower case ("a100", "v100").
std::string normalize_type(const std::string& type);
// The GPU type a node-feature constraint names when it names exactly one thing ("V100" ->
// "v100"); "" for anything else ("v100|p100", "v100&ib", empty). Ring jobs carry their type so.
std::string type_from_constraint(const std::string& features);
// The name of a set of GPU types, as decision reasons and ringsim's job rows print it: "k80",
// "k80+p100" (the map's keys, in order; the counts are not shown).
std::string type_set_name(const std::map<std::string, int>& gpus_by_type);

// --- cluster ------------------------------------------------------------------------------------

struct Node {
  std::string name;
  std::string gpu_type;       // normalized
  int gpus = 0;               // GPUs on the node
  int free_gpus = -1;         // GPUs the planner may use (-1: all of them); others' jobs hold the rest
  double intra_gbps = 100.0;  // link between GPUs of this node (GB/s)
  double inter_gbps = 12.5;   // link from this node to others (GB/s)
  int usable() const { return free_gpus < 0 ? gpus : free_gpus; }
};

struct Cluster {
  std::vector<Node> nodes;

  // node,gpu_type,gpus[,intra_gbps,inter_gbps]; header line required; '#' comments allowed.
  static Cluster load_csv(const std::string& path);
  // Throws InputError if empty, a node has no GPUs, or names repeat.
  void validate() const;

  int total_gpus() const;
  int usable_gpus() const;
  std::vector<std::string> types() const;              // sorted, unique
  int gpus_of_type(const std::string& type) const;     // total
  int usable_of_type(const std::string& type) const;   // free for the planner
  const Node* find(const std::string& node) const;
};

// --- profiles -----------------------------------------------------------------------------------

struct ProfilePoint {
  std::string model;
  std::string gpu_type;  // normalized
  int num_gpus = 1;
  double global_batch = 0;
  double iters_per_s = 0;
};

// All measured points. Profile CSV: model,gpu_type,num_gpus,global_batch,iters_per_s
class ProfileTable {
 public:
  // Throws InputError naming file and line for a malformed row, a non-positive or non-finite
  // throughput, a non-positive GPU count or batch.
  static ProfileTable load_csv(const std::string& path);
  void save_csv(const std::string& path) const;

  // Adds or replaces the point with the same (model, type, num_gpus, batch). Validates.
  void add(const ProfilePoint& p);
  // Merges another table; its points win.
  void merge(const ProfileTable& other);

  const std::vector<ProfilePoint>& points() const { return points_; }
  // Points of one (model, type), sorted by num_gpus. Only the points at the model's most common
  // global batch for that type are returned when several batches exist (use points_at_batch).
  std::vector<ProfilePoint> points_for(const std::string& model, const std::string& type) const;
  std::vector<ProfilePoint> points_at_batch(const std::string& model, const std::string& type,
                                            double global_batch) const;
  std::vector<std::string> models() const;  // sorted, unique
  std::vector<std::string> types() const;   // sorted, unique
  std::vector<std::string> types_for(const std::string& model) const;
  bool has(const std::string& model) const;
  bool has(const std::string& model, const std::string& type) const;

 private:
  std::vector<ProfilePoint> points_;
};

// --- jobs ---------------------------------------------------------------------------------------

enum class JobState { Pending, Running };

struct Job {
  std::string id;
  std::string user;
  std::string model;
  double global_batch = 0;    // 0: the profile's batch
  double iterations = 0;      // total I_j
  double remaining = 0;       // R_j (iterations still to run)
  int min_gpus = 1;
  int max_gpus = 1;
  std::vector<std::string> allowed_types;  // normalized; empty: any type
  bool elastic = true;        // false: runs at exactly requested_gpus
  int requested_gpus = 1;     // inelastic size; elastic jobs' initial request
  bool spb = false;           // structured partial backprop allowed
  double submit_s = 0;        // submit time (seconds, any epoch; only differences matter)
  double priority_boost = 0;  // admin/user ordering hint, larger first

  // Running state (JobState::Running only).
  JobState state = JobState::Pending;
  std::map<std::string, int> gpus_by_node;  // current allocation
  std::string current_type;                 // type it runs on ("" when mixed)
  int current_gpus = 0;
  double last_resize_s = -1e18;             // when its size last changed
  double attained_gpu_s = 0;                // GPU-seconds received so far (LAS, fairness)
  // Whether, once running, it can be stopped (it waits again) or moved at its size, where
  // PlannerConfig::preempt allows that at all. Under Slurm: it runs under ringrun, which
  // checkpoints and requeues it; the plugin knows that of running jobs only.
  bool stoppable = true;

  bool allows(const std::string& type) const;
  // Throws InputError("job <id>: ...") for impossible ranges, missing model, etc.
  void validate() const;
};

// Why `job` can never run on `cluster` ("" if it can): an allowed GPU type the cluster does not
// have, a minimum larger than the GPUs of its allowed types. job_submit rejects with this text;
// the planner keeps such a job waiting with it as the reason.
std::string why_impossible(const Job& job, const Cluster& cluster);
// The same, given the cluster's GPUs per type (for callers that check many jobs).
std::string why_impossible(const Job& job, const std::map<std::string, int>& gpus_by_type);

// Restart cost and hysteresis parameters shared by policies that resize jobs.
struct ResizeCosts {
  double restart_s = 30.0;        // C: seconds a resize costs the job
  double min_gain_multiple = 2.0; // resize a running job only if it gains > this * C seconds
  double min_interval_s = 300.0;  // and not more often than this
  // The grace after a job's restart: until it has run at its size this long, a lender there
  // yields its GPUs only to keep a job within its request from stopping (doubling_round.h).
  double grace_s() const { return min_gain_multiple * restart_s; }
};

bool is_power_of_two(int n);
int floor_power_of_two(int n);  // largest power of two <= n (n >= 1)
int ceil_power_of_two(int n);   // smallest power of two >= n (1 for n <= 1; n <= 2^30)

}  // namespace ringsched
