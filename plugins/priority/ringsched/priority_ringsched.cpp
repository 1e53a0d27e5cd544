// SPDX-License-Identifier: GPL-2.0-or-later
// priority/ringsched: the policy engine inside slurmctld.
//
// Slurm recomputes priorities only on events, so the policy runs in its own planning thread,
// every ReplanInterval seconds and shortly after a submission or a job end:
//   1. snapshot the GPU nodes and the jobs under slurmctld read locks, and release them;
//   2. plan with the policy library (no lock held);
//   3. under the job write lock: priorities. Ring jobs the plan starts come first, in plan
//      order; every other pending job (ordinary or waiting ring job) gets an age-based priority;
//   4. with no lock held, through Slurm's own job update RPC (as an admin would, so that Slurm
//      validates each change): the shape of pending ring jobs (GPU type, count, node count), and
//      resize and stop requests of running jobs under ringrun, recorded in AdminComment
//      (resize_note.h), with SIGUSR2 to the batch shell when ringrun says it is the one that
//      receives it;
//   0. before planning, each round carries out the resizes and stops whose job ringrun has
//      checkpointed and requeued with a hold for them: the shape recorded in AdminComment (a
//      stopped job keeps its own), then release. The job's owner only ever checkpoints and
//      requeues; GPU counts and types change here, as SlurmUser (ringsched(8), RESIZES);
//   5. the plan is written to PlanFile (plan_file.h) for ringsched(8).
// No C++ exception crosses into slurmctld; with a bad ringsched.conf the plugin runs neutral
// (age-based priorities only) and slurmctld keeps running. The Slurm calls that read and change
// a pending job's GPU request (step 4) are in pending_shape.cpp.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <exception>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "handover.h"
#include "pending_shape.h"
#include "plan_file.h"
#include "policy_holder.h"
#include "resize_note.h"
#include "ring_request.h"
#include "slurm_compat.h"
#include "slurm_glue.h"
#include "ringsched/arrivals.h"

extern "C" {
extern const char plugin_name[];
extern const char plugin_type[];
extern const uint32_t plugin_version;
const char plugin_name[] = "ringsched priority plugin";
const char plugin_type[] = "priority/ringsched";
const uint32_t plugin_version = SLURM_VERSION_NUMBER;

int init(void);
int fini(void);
uint32_t priority_p_set(uint32_t last_prio, job_record_t* job_ptr);
void priority_p_reconfig(bool assoc_clear);
void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* assoc);
void priority_p_job_end(job_record_t* job_ptr);
// The entry points that differ between Slurm versions are in slurm_compat_priority.cpp.
}

namespace {

using ringsched::priority_internal::Handover;
using ringsched::priority_internal::is_handover;
using ringsched::priority_internal::job_error;
using ringsched::priority_internal::PendingShape;
using ringsched::priority_internal::pending_shape;
using ringsched::priority_internal::read_pending_shape;
using ringsched::priority_internal::update_features;
using ringsched::priority_internal::update_gres;
using ringsched::priority_internal::update_num_nodes;
using ringsched::priority_internal::with_ended_run;

// Priority bands. Age: one point per minute waited, so older jobs go first among equals.
constexpr uint32_t kAgeBase = 1000;
constexpr uint32_t kAgeCap = 500000;
constexpr uint32_t kPlannedBase = 1000000;  // ring jobs the plan starts: kPlannedBase - order

uint32_t age_priority(time_t submit, time_t now) {
  const long minutes = submit > 0 && now > submit ? (now - submit) / 60 : 0;
  return kAgeBase + static_cast<uint32_t>(std::min<long>(minutes, kAgeCap));
}

// The priority step 3 gave each pending ring job the plan starts (job id -> priority), for sprio.
// Guarded by slurmctld's job lock: written under its write lock with the priorities themselves,
// read under its read lock, so it always agrees with them.
std::map<uint32_t, uint32_t> g_plan_priority;

struct RingJobRecord {
  uint32_t id = 0;
  bool running = false;
  ringsched::RingRequest request;
  ringsched::GpuShape shape;
  time_t submit = 0;
  time_t start = 0;
  double limit_s = 0;
  std::string admin_comment;
  ringsched::PlannerNote note;     // the planner's note in AdminComment
  ringsched::WrapperNote wrapper;  // ringrun's note in Comment
  bool bad_constraints = false;    // pending with reason BadConstraints (priority 0)
  bool handed_over = false;        // requeued by ringrun for the planner's resize (step 0)
  bool requeue = false;            // Slurm allows its requeue (--requeue, JobRequeue)

  // When the job last changed size: its start, or the planner's last resize decision if later
  // (the minimum resize interval counts from there).
  time_t last_resize() const {
    const bool resized = note.kind != ringsched::PlannerNote::Kind::None &&
                         note.kind != ringsched::PlannerNote::Kind::Admitted;
    return resized ? std::max<time_t>(start, static_cast<time_t>(note.at)) : start;
  }
};

// Whether the plan may stop job r, or move it at its size (Preempt=yes): ringrun checkpoints and
// requeues it, so it must run under ringrun (its note in Comment says so) and Slurm must allow
// its requeue. A pending ring job is taken to be one that will run under ringrun.
bool may_stop(const RingJobRecord& r, const ringsched::RingschedConf& conf) {
  if (!conf.planner.preempt || !conf.resize_running || !r.requeue) return false;
  return !r.running || r.wrapper.state == ringsched::WrapperNote::State::Ready;
}

// What the planning thread remembers of the pending jobs it reshaped.
struct ReshapeMemory {
  time_t last = 0;      // last reshape applied
  PendingShape shape;   // the shape it applied (a feasible one)
  bool repair_failed = false;  // the last repair failed: retried after ReshapeInterval
};

// One planning round, for its single debug line.
struct RoundStats {
  int ring = 0, pending = 0, reshaped = 0, repaired = 0, failed = 0;
  int kept_interval = 0, kept_type = 0, kept_wrapper = 0, resizes = 0;
};

struct PendingRecord {
  uint32_t id = 0;
  time_t submit = 0;
};

// What one round reads from slurmctld under its read locks (step 1).
struct RoundInput {
  std::map<std::string, RingJobRecord> ring;  // ring jobs by id (empty while neutral)
  std::vector<PendingRecord> pending;         // every pending job, for priorities
  std::vector<Handover> handovers;            // step 0's work
  ringsched::Cluster cluster;
};

// What the planner made of it (step 2).
struct RoundPlan {
  ringsched::Snapshot snap;
  ringsched::Plan plan;
  std::map<std::string, const ringsched::JobPlan*> by_job;
};

class PlanningThread {
 public:
  void start() {
    stop_ = false;
    thread_ = std::thread([this] { run(); });
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // From slurmctld callbacks (locks held): only flag and notify, never lock slurmctld here.
  void wake() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      event_ = true;
    }
    cv_.notify_all();
  }
  void reconfigure() {
    reconfig_ = true;
    wake();
  }

 private:
  void run();
  // One round: the steps below in order (see the top of this file).
  // One round; returns the seconds from its start to the plan's wake (Plan::wake_s; 0: none).
  double round();
  RoundInput snapshot(bool with_engine) const;
  void apply_handovers(ringsched::ConfiguredPolicy* policy, const RoundInput& in, time_t now);
  RoundPlan plan(ringsched::ConfiguredPolicy& policy, RoundInput& in, time_t now);
  void set_priorities(const RoundInput& in, const RoundPlan& planned, time_t now) const;
  void reshape_pending(const ringsched::ConfiguredPolicy& policy, const RoundInput& in, const RoundPlan& planned,
                       time_t now, RoundStats& stats);
  // Reshapes one pending job that the plan starts on `target` (or repairs it); counts in stats.
  void reshape_one(const RingJobRecord& r, const PendingShape& target, const ringsched::RingschedConf& conf,
                   const std::string& why, time_t now, RoundStats& stats);
  void request_resizes(const ringsched::ConfiguredPolicy& policy, const RoundInput& in, const RoundPlan& planned,
                       time_t now, RoundStats& stats);
  // Pending job `id`: from `from` to `to`, one field per update, read back; on any failure the
  // previous shape is put back field by field. Returns "" or what failed. `started` is set when
  // the job started before the first update (an ordinary race, not a failure).
  std::string apply_shape(uint32_t id, const PendingShape& from, const PendingShape& to, bool* started = nullptr);
  void write_plan(const ringsched::ConfiguredPolicy& policy, const ringsched::Snapshot& snap,
                  const ringsched::Plan& plan, const std::map<std::string, RingJobRecord>& ring);

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool event_ = false;
  std::atomic<bool> reconfig_{false};
  ringsched::PolicyHolder policy_{"priority/ringsched"};
  std::map<uint32_t, std::string> signalled_;  // job -> last resize request sent
  std::map<uint32_t, ReshapeMemory> reshaped_;  // pending jobs this thread reshaped
  ringsched::priority_internal::RunMemory runs_;  // what each handover's run was
  ringsched::ArrivalClock arrivals_;            // the lend horizon's arrival gap
  std::atomic<int> min_gap_s_{2};              // MinReplanGap of the last configuration seen
};

PlanningThread* g_thread = nullptr;

std::string PlanningThread::apply_shape(uint32_t id, const PendingShape& from, const PendingShape& to, bool* started) {
  // A typed gres request keeps its type (DESIGN 4); only a type given as a feature can change.
  // The request keeps its form either way.
  if (from.by_feature != to.by_feature) return "a typed gres request cannot become a feature constraint, nor back";
  if (from.type != to.type && !from.by_feature)
    return "the GPU type of a pending job with a typed gres request cannot be changed";
  // One field per update (a failed multi-field update is not atomic, DESIGN 4). Fewer GPUs
  // first and more GPUs last, so that a job the scheduler starts between two updates holds no
  // more than the larger of the two shapes.
  enum class Field { Nodes, PerNode, Type };
  struct Step {
    Field field;
    int order;  // 0: lowers the GPU count, 1: type, 2: raises it
  };
  std::vector<Step> steps;
  if (to.nodes != from.nodes) steps.push_back({Field::Nodes, to.nodes < from.nodes ? 0 : 2});
  if (to.per_node != from.per_node) steps.push_back({Field::PerNode, to.per_node < from.per_node ? 0 : 2});
  if (to.type != from.type) steps.push_back({Field::Type, 1});
  std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.order < b.order; });
  auto apply_step = [&](Field field, const PendingShape& target) {
    switch (field) {
      case Field::Nodes: return update_num_nodes(id, target.nodes);
      case Field::PerNode: return update_gres(id, target);
      case Field::Type: return update_features(id, target.type);
    }
    return static_cast<int>(SLURM_ERROR);
  };
  auto describe = [&](Field field, const PendingShape& target) -> std::string {
    switch (field) {
      case Field::Nodes: return "NumNodes=" + std::to_string(target.nodes) + "-" + std::to_string(target.nodes);
      case Field::PerNode:
        return "TresPerNode=" + ringsched::gpu_request(target.type, target.per_node, target.by_feature).tres_per_node;
      case Field::Type: return "Features=" + target.type;
    }
    return "?";
  };
  std::string failure;
  size_t done = 0;
  for (; done < steps.size(); ++done) {
    const int rc = apply_step(steps[done].field, to);
    if (rc != SLURM_SUCCESS) {
      if (done == 0 && rc == ESLURM_JOB_NOT_PENDING && started) {
        *started = true;  // the scheduler started it since the snapshot: nothing was changed
        return "";
      }
      failure = describe(steps[done].field, to) + " failed: " + slurm_strerror(rc);
      break;
    }
  }
  if (failure.empty()) {
    PendingShape now;
    if (!read_pending_shape(id, now)) return "";  // started or ended meanwhile: nothing to check
    if (now == to) return "";
    failure = "read back " + now.str() + " instead of " + to.str();
  }
  // Put the previous shape back, field by field, in reverse order.
  for (size_t i = done; i-- > 0;) {
    const int rc = apply_step(steps[i].field, from);
    if (rc != SLURM_SUCCESS)
      failure += "; restoring " + describe(steps[i].field, from) + " failed: " + slurm_strerror(rc);
  }
  return failure;
}

const ringsched::Job* find_job(const ringsched::Snapshot& snap, const std::string& id) {
  for (const auto& j : snap.jobs)
    if (j.id == id) return &j;
  return nullptr;
}

void PlanningThread::run() {
  using clock = std::chrono::steady_clock;
  auto next = clock::now() + std::chrono::seconds(2);  // let slurmctld finish starting up
  clock::time_point last_round{};
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_until(lock, next, [this] { return stop_ || event_; });
      if (stop_) return;
      // Never two rounds closer than MinReplanGap, events included: every update this thread
      // makes is itself an event (slurmctld calls priority_p_set), and a burst of submissions
      // should make one round, not hundreds. Events arriving meanwhile are seen by this round.
      const auto earliest = std::max(last_round + std::chrono::seconds(min_gap_s_.load()),
                                     event_ ? clock::now() + std::chrono::milliseconds(500)
                                            : clock::now());
      if (cv_.wait_until(lock, earliest, [this] { return stop_; })) return;
      event_ = false;
    }
    last_round = clock::now();
    int interval = 30;
    double wake_in_s = 0;
    try {
      wake_in_s = round();
      if (auto policy = policy_.get()) {
        interval = policy->conf().replan_interval_s;
        min_gap_s_ = policy->conf().min_replan_gap_s;
      }
    } catch (const std::exception& e) {
      error("priority/ringsched: planning round failed: %s", e.what());
    } catch (...) {
      error("priority/ringsched: planning round failed");
    }
    next = last_round + std::chrono::seconds(std::max(interval, min_gap_s_.load()));
    // A hold that ends before the next round while a starving job waits: plan again then.
    if (wake_in_s > 0)
      next = std::min(next, last_round + std::chrono::milliseconds(static_cast<long long>(wake_in_s * 1000)));
  }
}

double PlanningThread::round() {
  std::shared_ptr<ringsched::ConfiguredPolicy> policy = policy_.get(reconfig_.exchange(false));
  const time_t now = std::time(nullptr);
  RoundInput in = snapshot(policy != nullptr);
  {
    std::map<uint32_t, time_t> running;
    for (const auto& [id, r] : in.ring)
      if (r.running) running[r.id] = r.start;
    runs_.observe(in.handovers, running, now);
  }
  // Step 0 needs no configuration: a job held for its resize is released even while neutral.
  apply_handovers(policy.get(), in, now);
  RoundPlan planned;
  if (policy) planned = plan(*policy, in, now);
  set_priorities(in, planned, now);
  if (!policy) return 0;
  RoundStats stats;
  stats.ring = static_cast<int>(in.ring.size());
  reshape_pending(*policy, in, planned, now, stats);
  request_resizes(*policy, in, planned, now, stats);
  for (auto it = reshaped_.begin(); it != reshaped_.end();)
    it = in.ring.count(std::to_string(it->first)) ? std::next(it) : reshaped_.erase(it);
  for (auto it = signalled_.begin(); it != signalled_.end();)
    it = in.ring.count(std::to_string(it->first)) ? std::next(it) : signalled_.erase(it);
  const double wake_in_s = planned.plan.wake_s > 0 ? planned.plan.wake_s - static_cast<double>(now) : 0;
  debug("priority/ringsched: round: %d ring jobs (%d pending): %d reshaped, %d repaired, %d failed; "
        "kept %d (interval) %d (plan on another type) %d (ringrun's resize); %d resize requests; "
        "wake in %.0f s (0: none)",
        stats.ring, stats.pending, stats.reshaped, stats.repaired, stats.failed, stats.kept_interval,
        stats.kept_type, stats.kept_wrapper, stats.resizes, wake_in_s);
  write_plan(*policy, planned.snap, planned.plan, in.ring);
  return wake_in_s;
}

// 1. Snapshot under read locks.
RoundInput PlanningThread::snapshot(bool with_engine) const {
  RoundInput in;
  const slurmctld_lock_t read_lock = ringsched::slurmctld_locks(READ_LOCK, READ_LOCK, READ_LOCK, READ_LOCK);
  lock_slurmctld(read_lock);
  try {
    in.cluster = ringsched::snapshot_cluster();
    ListIterator it = list_iterator_create(job_list);
    while (auto* job = static_cast<job_record_t*>(list_next(it))) {
      const bool is_pending = IS_JOB_PENDING(job);
      const bool is_running = IS_JOB_RUNNING(job);
      if (!is_pending && !is_running) continue;
      const ringsched::PlannerNote note = ringsched::PlannerNote::parse(job->admin_comment ? job->admin_comment : "");
      const bool handover = is_pending && is_handover(job, note);
      if (handover) in.handovers.push_back({job->job_id, ringsched::job_gpu_shape(job), note});
      ringsched::RingRequest request;
      std::string bad;
      const bool is_ring = ringsched::job_ring_request(job, request, bad);
      if (is_pending) in.pending.push_back({job->job_id, job->details ? job->details->submit_time : 0});
      if (!is_ring || !with_engine) continue;
      RingJobRecord r;
      r.id = job->job_id;
      r.running = is_running;
      r.request = request;
      r.shape = ringsched::job_gpu_shape(job);
      r.submit = job->details ? job->details->submit_time : 0;
      r.start = job->start_time;
      r.limit_s = (job->time_limit != NO_VAL && job->time_limit != INFINITE) ? job->time_limit * 60.0 : 0;
      r.admin_comment = job->admin_comment ? job->admin_comment : "";
      r.note = note;
      r.wrapper = ringsched::WrapperNote::parse(job->comment ? job->comment : "");
      r.bad_constraints = is_pending && job->state_reason == FAIL_BAD_CONSTRAINTS;
      r.handed_over = handover;
      r.requeue = job->details && job->details->requeue;
      in.ring[std::to_string(job->job_id)] = r;
    }
    list_iterator_destroy(it);
  } catch (...) {
    unlock_slurmctld(read_lock);
    throw;
  }
  unlock_slurmctld(read_lock);
  return in;
}

// 0. Resizes and stops that ringrun has checkpointed and requeued (held) for: the shape this
//    thread recorded in AdminComment, as SlurmUser, then release. On failure the job keeps its
//    shape and is released all the same: it restarts from its checkpoint at the old size. A
//    stopped job keeps its shape and, released, waits like any pending ring job until a plan
//    starts it (those the plan starts have higher priorities).
void PlanningThread::apply_handovers(ringsched::ConfiguredPolicy* policy, const RoundInput& in, time_t now) {
  for (const Handover& h : in.handovers) {
    const bool stop = h.note.is_stop();
    const PendingShape current = pending_shape(h.shape);
    PendingShape target = current;
    std::string failure;
    if (!stop) {
      const std::string type = h.note.type.empty() ? current.type : h.note.type;
      const ringsched::NodeSpread spread = ringsched::spread_gpus(in.cluster, type, h.note.gpus);
      target = PendingShape{type, spread.per_node, spread.nodes, current.by_feature};
      if (spread.nodes == 0)
        failure = "no node layout gives " + std::to_string(h.note.gpus) + " GPUs of type " + (type.empty() ? "?" : type);
      else if (!(target == current))
        failure = apply_shape(h.id, current, target);
    }
    const PendingShape& now_shape = failure.empty() ? target : current;
    auto r = in.ring.find(std::to_string(h.id));
    ringsched::PlannerNote done =
        with_ended_run(h.note.resized(), policy, r == in.ring.end() ? "" : r->second.request.model, h, now);
    if (!stop) {
      done.gpus = now_shape.gpus();
      done.type = now_shape.type;
    }
    // The note first: the next round must not apply it again, whatever happens to the release.
    job_desc_msg_t note;
    slurm_init_job_desc_msg(&note);
    ringsched::set_update_job_id(note, h.id);
    const std::string text = done.str();
    note.admin_comment = const_cast<char*>(text.c_str());
    int rc = slurm_update_job(&note) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
    if (rc == SLURM_SUCCESS) {
      job_desc_msg_t release;
      slurm_init_job_desc_msg(&release);
      ringsched::set_update_job_id(release, h.id);
      release.priority = INFINITE;  // what "scontrol release" sends
      rc = slurm_update_job(&release) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
    }
    if (rc != SLURM_SUCCESS)
      job_error(h.id, std::string("releasing the job after its ") + (stop ? "stop" : "resize") +
                          " failed: " + slurm_strerror(rc));
    if (stop)
      info("priority/ringsched: JobId=%u stopped after ringrun's checkpoint (decided %lld s ago); released "
           "at %s, it waits until a plan starts it; done so far about %lld iterations in %lld GPU-s", h.id,
           static_cast<long long>(now - static_cast<time_t>(h.note.at)), current.str().c_str(), done.done, done.gpu_s);
    else if (!failure.empty())
      job_error(h.id, "resize to " + target.str() + " failed, released at " + current.str() + ": " + failure);
    else
      info("priority/ringsched: JobId=%u resized %s -> %s after ringrun's checkpoint (decided %lld s ago); "
           "released; done so far about %lld iterations in %lld GPU-s", h.id, current.str().c_str(),
           target.str().c_str(), static_cast<long long>(now - static_cast<time_t>(h.note.at)), done.done, done.gpu_s);
  }
}

// 2. Plan, no lock held.
RoundPlan PlanningThread::plan(ringsched::ConfiguredPolicy& policy, RoundInput& in, time_t now) {
  RoundPlan out;
  ringsched::Snapshot& snap = out.snap;
  snap.cluster = in.cluster;
  snap.now_s = static_cast<double>(now);
  for (auto& [id, r] : in.ring) {
    if (r.request.types.empty()) r.request.types = in.cluster.types();
    if (r.request.min_gpus == 0) {
      r.request.min_gpus = 1;
      r.request.max_gpus = std::max(1, r.shape.gpus);
    }
    std::string why;
    if (!policy.prepare_model(r.request.model, r.request.types, why)) continue;
    ringsched::Job job = policy.make_job(id, r.request, static_cast<double>(r.submit), r.limit_s);
    job.user = "";
    if (r.running) {
      job.state = ringsched::JobState::Running;
      job.gpus_by_node = r.shape.gpus_by_node;
      job.current_type = r.shape.type;
      job.current_gpus = r.shape.gpus;
      job.last_resize_s = static_cast<double>(r.last_resize());
      const double speed = policy.model().iters_per_s(r.request.model, r.shape.type, std::max(1, r.shape.gpus));
      const double run_s = std::max<double>(0, static_cast<double>(now - r.start));
      job.remaining = std::max(job.iterations * 0.01, job.iterations - static_cast<double>(r.note.done) - speed * run_s);
      job.attained_gpu_s = static_cast<double>(r.note.gpu_s) + run_s * r.shape.gpus;
      // The plan holds only what request_resizes() carries out: with ResizeRunning=no a running
      // job keeps its shape, and a typed GPU request keeps its type when requeued; a job not
      // stoppable (may_stop()) runs on.
      if (!policy.conf().resize_running) {
        job.elastic = false;
        job.min_gpus = job.max_gpus = job.requested_gpus = std::max(1, r.shape.gpus);
      } else if (!r.shape.type_by_feature && !r.shape.type.empty()) {
        job.allowed_types = {r.shape.type};
      }
      // GPUs held by ring jobs are the planner's to hand out again.
      for (auto& node : snap.cluster.nodes) {
        auto held = r.shape.gpus_by_node.find(node.name);
        if (held != r.shape.gpus_by_node.end()) node.free_gpus = std::min(node.gpus, node.usable() + held->second);
      }
    } else {
      // Stopped or requeued for a resize: what its earlier runs did (resize_note.h).
      job.remaining = std::max(job.iterations * 0.01, job.iterations - static_cast<double>(r.note.done));
      job.attained_gpu_s = static_cast<double>(r.note.gpu_s);
    }
    job.stoppable = may_stop(r, policy.conf());
    snap.jobs.push_back(job);
  }
  snap.arrival_gap_s = arrivals_.observe(snap);
  if (!snap.jobs.empty()) out.plan = policy.planner().plan(snap);
  for (const auto& jp : out.plan.jobs) out.by_job[jp.job_id] = &jp;
  return out;
}

// 3. Priorities under the job write lock: ring jobs the plan starts first, in plan order; every
//    other pending job by age.
void PlanningThread::set_priorities(const RoundInput& in, const RoundPlan& planned, time_t now) const {
  std::map<uint32_t, uint32_t> prio_of;
  for (const auto& jp : planned.plan.jobs) {
    auto r = in.ring.find(jp.job_id);
    if (r != in.ring.end() && !r->second.running && jp.runs)
      prio_of[r->second.id] = kPlannedBase - static_cast<uint32_t>(std::min(jp.order, 900000));
  }
  const slurmctld_lock_t job_write = ringsched::slurmctld_locks(NO_LOCK, WRITE_LOCK, NO_LOCK, NO_LOCK);
  lock_slurmctld(job_write);
  bool changed = false;
  for (const PendingRecord& p : in.pending) {
    job_record_t* job = find_job_record(p.id);
    if (!job || !IS_JOB_PENDING(job)) continue;
    if (job->priority == 0 || job->direct_set_prio) continue;  // held, or set by an admin
    auto it = prio_of.find(p.id);
    const uint32_t prio = it != prio_of.end() ? it->second : age_priority(p.submit, now);
    if (job->priority != prio) {
      job->priority = prio;
      changed = true;
    }
  }
  if (changed) last_job_update = now;
  g_plan_priority = std::move(prio_of);
  unlock_slurmctld(job_write);
  if (changed) queue_job_scheduler();
}

// 4a. Pending ring jobs take the shape the plan starts them with (at most once per
//     ReshapeInterval); a job we reshaped into BadConstraints is repaired.
void PlanningThread::reshape_pending(const ringsched::ConfiguredPolicy& policy, const RoundInput& in,
                                     const RoundPlan& planned, time_t now, RoundStats& stats) {
  for (const auto& [id, r] : in.ring) {
    if (r.running || r.handed_over) continue;  // step 0 has dealt with a handed-over job
    ++stats.pending;
    const PendingShape current = pending_shape(r.shape);
    // The planned shape, when the plan starts the job on one type (a typed gres cannot span types).
    PendingShape target;
    std::string why;
    auto p = planned.by_job.find(id);
    if (p != planned.by_job.end() && p->second->runs && p->second->gpus > 0) {
      const auto [type, gpus] = policy.single_type(*p->second, r.request.types, r.request.model, planned.snap.cluster);
      const ringsched::NodeSpread spread = ringsched::spread_gpus(planned.snap.cluster, type, gpus);
      if (!type.empty() && spread.nodes > 0) target = PendingShape{type, spread.per_node, spread.nodes, current.by_feature};
      why = p->second->reason;
    }
    reshape_one(r, target, policy.conf(), why, now, stats);
  }
}

void PlanningThread::reshape_one(const RingJobRecord& r, const PendingShape& target,
                                 const ringsched::RingschedConf& conf, const std::string& why, time_t now,
                                 RoundStats& stats) {
  const PendingShape current = pending_shape(r.shape);
  ReshapeMemory* memory = reshaped_.count(r.id) ? &reshaped_[r.id] : nullptr;
  if (r.bad_constraints && memory && memory->repair_failed && now - memory->last < conf.reshape_interval_s) {
    ++stats.kept_interval;
    return;
  }
  if (r.bad_constraints && memory) {
    // We reshaped it and Slurm now finds it never runnable: give it a shape that exists (the
    // plan's, else the last one we applied). Any successful update makes Slurm re-evaluate the
    // job and give it a priority again.
    const PendingShape repair =
        target.nodes > 0 && (target.type == current.type || current.by_feature) ? target : memory->shape;
    std::string failure;
    if (repair == current) {
      const int rc = update_num_nodes(r.id, current.nodes);
      if (rc != SLURM_SUCCESS) failure = std::string("NumNodes update failed: ") + slurm_strerror(rc);
    } else {
      failure = apply_shape(r.id, current, repair);
    }
    memory->last = now;
    memory->repair_failed = !failure.empty();
    if (failure.empty()) {
      ++stats.repaired;
      memory->shape = repair;
      info("priority/ringsched: JobId=%u was BadConstraints after our reshape; now %s", r.id, repair.str().c_str());
    } else {
      ++stats.failed;
      job_error(r.id, "repairing BadConstraints to " + repair.str() + ": " + failure);
    }
    return;
  }
  if (target.nodes == 0 || target == current) return;
  if (current.type.empty()) return;  // untyped requests stay untyped (DESIGN 4)
  // A job requeued at the size the planner decided (step 0) keeps it for ResizeHold.
  const bool resized = r.note.kind == ringsched::PlannerNote::Kind::Resized ||
                       r.note.kind == ringsched::PlannerNote::Kind::Resize;
  if (resized && r.note.at > 0 && now - static_cast<time_t>(r.note.at) < conf.resize_hold_s) {
    ++stats.kept_wrapper;
    return;
  }
  if (memory && now - memory->last < conf.reshape_interval_s) {
    ++stats.kept_interval;
    return;
  }
  if (target.type != current.type && !current.by_feature) {
    // Slurm 22.05 cannot change the type of a pending typed GPU request: the update keeps the old
    // type's gres entry next to the new one, so the job asks for both and is never runnable
    // (BadConstraints, priority 0; checked on the test cluster). Such a job keeps its type; only
    // its count and node count follow the plan.
    ++stats.kept_type;
    return;
  }
  bool started = false;
  const std::string failure = apply_shape(r.id, current, target, &started);
  if (started) {
    debug("priority/ringsched: JobId=%u started before its reshape to %s", r.id, target.str().c_str());
    return;
  }
  reshaped_[r.id] = ReshapeMemory{now, failure.empty() ? target : current};
  if (!failure.empty()) {
    ++stats.failed;
    job_error(r.id, "reshaping " + current.str() + " -> " + target.str() + " failed, previous shape kept: " + failure);
    return;
  }
  ++stats.reshaped;
  debug("priority/ringsched: JobId=%u reshaped %s -> %s (%s)", r.id, current.str().c_str(), target.str().c_str(),
        why.c_str());
}

// 4b. Running jobs the plan resizes (elastic ones), moves to another type or stops (those it may
//     stop, may_stop()): the request goes into AdminComment; SIGUSR2 nudges ringrun when its
//     note says the signal reaches it (else it reads the note within seconds).
void PlanningThread::request_resizes(const ringsched::ConfiguredPolicy& policy, const RoundInput& in,
                                     const RoundPlan& planned, time_t now, RoundStats& stats) {
  const ringsched::RingschedConf& conf = policy.conf();
  for (const auto& jp : planned.plan.jobs) {
    auto it = in.ring.find(jp.job_id);
    if (it == in.ring.end()) continue;
    const RingJobRecord& r = it->second;
    if (!r.running || !conf.resize_running) continue;
    const bool stoppable = may_stop(r, conf);
    const bool stop = !jp.runs && stoppable;
    if (!stop && (!jp.runs || jp.gpus <= 0 || !jp.resize || !(r.request.is_elastic() || stoppable)))
      continue;
    const auto [type, gpus] =
        stop ? std::pair<std::string, int>(r.shape.type, 0)
             : policy.single_type(jp, r.request.types, r.request.model, planned.snap.cluster);
    if (!stop && type.empty()) continue;
    // A job with a typed gres request keeps its type when requeued (see reshape_one).
    if (!stop && type != r.shape.type && !r.shape.type_by_feature) continue;
    const ringsched::PlannerNote request =
        (stop ? ringsched::PlannerNote::stop(now) : ringsched::PlannerNote::resize(gpus, type, now)).with_progress_of(r.note);
    // The same request is not sent again while it stands.
    const std::string key = stop ? std::string("stop") : std::to_string(gpus) + "," + type;
    if (signalled_[r.id] == key && r.note.is_request() && r.note.is_stop() == stop && r.note.gpus == gpus &&
        (stop || r.note.type == type))
      continue;
    job_desc_msg_t desc;
    slurm_init_job_desc_msg(&desc);
    ringsched::set_update_job_id(desc, r.id);
    const std::string comment = request.str();
    desc.admin_comment = const_cast<char*>(comment.c_str());
    if (slurm_update_job(&desc) != SLURM_SUCCESS) {
      const int rc = slurm_get_errno();
      // The job ended or was requeued since the snapshot: an ordinary race.
      if (rc == ESLURM_INVALID_JOB_ID || rc == ESLURM_ALREADY_DONE || rc == ESLURM_JOB_PENDING)
        debug("priority/ringsched: JobId=%u: no longer running; resize not requested", r.id);
      else
        job_error(r.id, std::string("recording resize failed: ") + slurm_strerror(rc));
      continue;
    }
    signalled_[r.id] = key;
    ++stats.resizes;
    const bool nudge = r.wrapper.state == ringsched::WrapperNote::State::Ready && r.wrapper.signal;
    if (nudge && ringsched::kill_job(r.id, SIGUSR2, KILL_JOB_BATCH) != SLURM_SUCCESS)
      debug("priority/ringsched: JobId=%u: resize signal not delivered: %s", r.id, slurm_strerror(slurm_get_errno()));
    if (stop)
      info("priority/ringsched: job %u: stop of %d x %s requested%s (%s)", r.id, r.shape.gpus, r.shape.type.c_str(),
           nudge ? ", SIGUSR2 sent" : "", jp.reason.c_str());
    else
      info("priority/ringsched: job %u: resize %d x %s -> %d x %s requested%s (%s)", r.id, r.shape.gpus,
           r.shape.type.c_str(), gpus, type.c_str(), nudge ? ", SIGUSR2 sent" : "", jp.reason.c_str());
  }
}

void PlanningThread::write_plan(const ringsched::ConfiguredPolicy& policy, const ringsched::Snapshot& snap,
                                const ringsched::Plan& plan,
                                const std::map<std::string, RingJobRecord>& ring) {
  std::string path = policy.conf().plan_file;
  if (path.empty()) {
    const slurmctld_lock_t conf_read = ringsched::slurmctld_locks(READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK);
    lock_slurmctld(conf_read);
    path = std::string(slurm_conf.state_save_location ? slurm_conf.state_save_location : "/tmp") +
           "/ringsched_plan.json";
    unlock_slurmctld(conf_read);
  }
  ringsched::PlanFile out;
  out.generated_at = static_cast<long long>(snap.now_s);
  out.config = policy.conf().path;
  for (const auto& n : snap.cluster.nodes) out.cluster.push_back({n.name, n.gpu_type, n.gpus, n.usable()});
  for (const auto& [id, r] : ring) {
    ringsched::PlanFileJob j;
    j.job_id = id;
    j.running = r.running;
    j.model = r.request.model;
    j.min_gpus = r.request.min_gpus;
    j.max_gpus = r.request.max_gpus;
    j.elastic = r.request.is_elastic();
    j.current_type = r.shape.type;
    j.current_gpus = r.shape.gpus;
    if (const ringsched::Job* planned = find_job(snap, id)) {
      j.has_progress = true;
      j.iterations = planned->iterations;
      j.remaining = planned->remaining;
    }
    j.admin_comment = r.admin_comment;
    out.jobs.push_back(std::move(j));
  }
  out.plan = plan;
  try {
    ringsched::write_plan_file(path, out);
  } catch (const ringsched::InputError& e) {
    error("priority/ringsched: %s", e.what());
  }
}

}  // namespace

extern "C" int init(void) {
  try {
    g_thread = new PlanningThread();
    g_thread->start();
    verbose("priority/ringsched: planning thread started");
  } catch (const std::exception& e) {
    error("priority/ringsched: init: %s", e.what());
    return SLURM_ERROR;
  }
  return SLURM_SUCCESS;
}

extern "C" int fini(void) {
  try {
    if (g_thread) g_thread->stop();
  } catch (...) {
  }
  delete g_thread;
  g_thread = nullptr;
  return SLURM_SUCCESS;
}

// sprio's view (slurm_compat_priority.cpp builds the list): a ring job the plan starts has its
// whole priority in the site factor (kPlannedBase - its place in the plan's order); every other
// pending job has the age band's base there and one point per minute waited as its age factor.
bool ringsched::priority_parts(const job_record_t* job, uid_t uid, time_t now, PriorityParts* parts) {
  if (!IS_JOB_PENDING(job) || IS_JOB_REVOKED(job) || job->priority == 0) return false;  // 0: held
  if (!job->details || !job->details->begin_time || job->details->begin_time > now) return false;  // not eligible
  if (!job->part_ptr && !job->part_ptr_list) return false;
  if ((slurm_conf.private_data & PRIVATE_DATA_JOBS) && job->user_id != uid && !validate_operator(uid))
    return false;
  *parts = PriorityParts{};
  if (job->direct_set_prio) {
    parts->direct = true;
    return true;
  }
  auto planned = g_plan_priority.find(job->job_id);
  if (planned != g_plan_priority.end() && planned->second == job->priority) {
    parts->site = job->priority;
  } else {
    parts->site = std::min(job->priority, kAgeBase);
    parts->age = job->priority - parts->site;
  }
  return true;
}

// New job (or requeue): age band now; the planning thread places ring jobs shortly after.
extern "C" uint32_t priority_p_set(uint32_t /*last_prio*/, job_record_t* job_ptr) {
  if (job_ptr->direct_set_prio && job_ptr->priority > 1) return job_ptr->priority;
  if (g_thread) g_thread->wake();
  const time_t submit = job_ptr->details ? job_ptr->details->submit_time : 0;
  return age_priority(submit, std::time(nullptr));
}

extern "C" void priority_p_reconfig(bool /*assoc_clear*/) {
  if (g_thread) g_thread->reconfigure();
}

extern "C" void priority_p_set_assoc_usage(slurmdb_assoc_rec_t* /*assoc*/) {}

extern "C" void priority_p_job_end(job_record_t* /*job_ptr*/) {
  if (g_thread) g_thread->wake();
}
