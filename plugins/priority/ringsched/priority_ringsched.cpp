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
//      resize requests of running elastic jobs, recorded in AdminComment and signalled (SIGUSR2
//      to the batch shell) so that the job's wrapper checkpoints and requeues at the new size;
//   5. the plan is written as JSON (tmp + rename) for ringsched(8).
// No C++ exception crosses into slurmctld; with a bad ringsched.conf the plugin runs neutral
// (age-based priorities only) and slurmctld keeps running.
#include <jansson.h>

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

extern "C" {
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
}

#include "engine_holder.h"
#include "ring_request.h"
#include "slurm_glue.h"

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
double priority_p_calc_fs_factor(long double usage_efctv, long double shares_norm);
List priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid);
void priority_p_job_end(job_record_t* job_ptr);
}

namespace {

// Priority bands. Age: one point per minute waited, so older jobs go first among equals.
constexpr uint32_t kAgeBase = 1000;
constexpr uint32_t kAgeCap = 500000;
constexpr uint32_t kPlannedBase = 1000000;  // ring jobs the plan starts: kPlannedBase - order

uint32_t age_priority(time_t submit, time_t now) {
  const long minutes = submit > 0 && now > submit ? (now - submit) / 60 : 0;
  return kAgeBase + static_cast<uint32_t>(std::min<long>(minutes, kAgeCap));
}

struct RingJobRecord {
  uint32_t id = 0;
  bool running = false;
  ringsched::RingRequest request;
  ringsched::GpuShape shape;
  time_t submit = 0;
  time_t start = 0;
  double limit_s = 0;
  std::string admin_comment;
  bool bad_constraints = false;  // pending with reason BadConstraints (priority 0)
};

// "ringsched:resize=N,type=T,at=EPOCH" (see ringrun(1)): when the resize was requested, or 0.
time_t resize_requested_at(const std::string& admin_comment) {
  if (admin_comment.rfind("ringsched:resize=", 0) != 0) return 0;
  const size_t at = admin_comment.find(",at=");
  if (at == std::string::npos) return 0;
  char* end = nullptr;
  const long long v = std::strtoll(admin_comment.c_str() + at + 4, &end, 10);
  return v > 0 && v < (1LL << 40) ? static_cast<time_t>(v) : 0;
}

// A pending job's GPU request as Slurm holds it: `nodes` nodes with `per_node` GPUs of `type`,
// the type as a node feature (retypable) or in a typed gres request (fixed; see slurm_glue.h).
struct PendingShape {
  std::string type;
  int per_node = 0;
  int nodes = 0;
  bool by_feature = false;
  int gpus() const { return per_node * nodes; }
  bool operator==(const PendingShape& o) const {
    return type == o.type && per_node == o.per_node && nodes == o.nodes;
  }
  std::string str() const {
    return std::to_string(nodes) + "x" + std::to_string(per_node) + " " + (type.empty() ? "gpu" : type);
  }
};

PendingShape pending_shape(const ringsched::GpuShape& g) {
  PendingShape p;
  p.type = g.type;
  p.nodes = std::max(1, g.nodes);
  p.per_node = g.gpus / p.nodes;
  p.by_feature = g.type_by_feature;
  return p;
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
  void round();
  // Pending job `id`: from `from` to `to`, one field per update, read back; on any failure the
  // previous shape is put back field by field. Returns "" or what failed.
  std::string apply_shape(uint32_t id, const PendingShape& from, const PendingShape& to);
  void write_plan(const ringsched::Engine& engine, const ringsched::Snapshot& snap,
                  const ringsched::Plan& plan, const std::map<std::string, RingJobRecord>& ring);

  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool event_ = false;
  std::atomic<bool> reconfig_{false};
  ringsched::EngineHolder engine_{"priority/ringsched"};
  std::map<uint32_t, std::string> signalled_;  // job -> last resize request sent
  std::map<uint32_t, ReshapeMemory> reshaped_;  // pending jobs this thread reshaped
  std::atomic<int> min_gap_s_{2};              // MinReplanGap of the last configuration seen
};

PlanningThread* g_thread = nullptr;

// One field of a pending job through Slurm's update RPC (Slurm validates it as for an admin).
int update_num_nodes(uint32_t id, int nodes) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = id;
  desc.min_nodes = desc.max_nodes = static_cast<uint32_t>(nodes);  // NumNodes=N-N (DESIGN 4)
  return slurm_update_job(&desc) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
}

int update_gres(uint32_t id, const PendingShape& shape) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = id;
  const std::string tres = ringsched::gpu_request(shape.type, shape.per_node, shape.by_feature).tres_per_node;
  desc.tres_per_node = const_cast<char*>(tres.c_str());
  return slurm_update_job(&desc) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
}

int update_features(uint32_t id, const std::string& type) {
  job_desc_msg_t desc;
  slurm_init_job_desc_msg(&desc);
  desc.job_id = id;
  desc.features = const_cast<char*>(type.c_str());
  return slurm_update_job(&desc) == SLURM_SUCCESS ? SLURM_SUCCESS : slurm_get_errno();
}

// The job's pending shape now, read back under the job read lock; false when it is gone or no
// longer pending.
bool read_pending_shape(uint32_t id, PendingShape& shape, bool* bad_constraints = nullptr) {
  slurmctld_lock_t job_read = {NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  lock_slurmctld(job_read);
  job_record_t* job = find_job_record(id);
  const bool ok = job && IS_JOB_PENDING(job);
  if (ok) {
    shape = pending_shape(ringsched::job_gpu_shape(job));
    if (bad_constraints) *bad_constraints = job->state_reason == FAIL_BAD_CONSTRAINTS;
  }
  unlock_slurmctld(job_read);
  return ok;
}

// Errors name the job the way slurmctld does (%pJ).
void job_error(uint32_t id, const std::string& what) {
  slurmctld_lock_t job_read = {NO_LOCK, READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
  lock_slurmctld(job_read);
  job_record_t* job = find_job_record(id);
  if (job)
    error("priority/ringsched: %pJ: %s", job, what.c_str());
  else
    error("priority/ringsched: JobId=%u: %s", id, what.c_str());
  unlock_slurmctld(job_read);
}

std::string PlanningThread::apply_shape(uint32_t id, const PendingShape& from, const PendingShape& to) {
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
    try {
      round();
      if (auto engine = engine_.get()) {
        interval = engine->conf().replan_interval_s;
        min_gap_s_ = engine->conf().min_replan_gap_s;
      }
    } catch (const std::exception& e) {
      error("priority/ringsched: planning round failed: %s", e.what());
    } catch (...) {
      error("priority/ringsched: planning round failed");
    }
    next = last_round + std::chrono::seconds(std::max(interval, min_gap_s_.load()));
  }
}

void PlanningThread::round() {
  std::shared_ptr<ringsched::Engine> engine = engine_.get(reconfig_.exchange(false));
  const time_t now = std::time(nullptr);

  // 1. Snapshot under read locks.
  std::map<std::string, RingJobRecord> ring;
  std::vector<PendingRecord> pending;
  ringsched::Cluster cluster;
  {
    slurmctld_lock_t read_lock = {READ_LOCK, READ_LOCK, READ_LOCK, READ_LOCK, NO_LOCK};
    lock_slurmctld(read_lock);
    try {
      cluster = ringsched::snapshot_cluster();
      ListIterator it = list_iterator_create(job_list);
      while (auto* job = static_cast<job_record_t*>(list_next(it))) {
        const bool is_pending = IS_JOB_PENDING(job);
        const bool is_running = IS_JOB_RUNNING(job);
        if (!is_pending && !is_running) continue;
        ringsched::RingRequest request;
        std::string bad;
        const bool is_ring = ringsched::job_ring_request(job, request, bad);
        if (is_pending) pending.push_back({job->job_id, job->details ? job->details->submit_time : 0});
        if (!is_ring || !engine) continue;
        RingJobRecord r;
        r.id = job->job_id;
        r.running = is_running;
        r.request = request;
        r.shape = ringsched::job_gpu_shape(job);
        r.submit = job->details ? job->details->submit_time : 0;
        r.start = job->start_time;
        r.limit_s = (job->time_limit != NO_VAL && job->time_limit != INFINITE) ? job->time_limit * 60.0 : 0;
        r.admin_comment = job->admin_comment ? job->admin_comment : "";
        r.bad_constraints = is_pending && job->state_reason == FAIL_BAD_CONSTRAINTS;
        ring[std::to_string(job->job_id)] = r;
      }
      list_iterator_destroy(it);
    } catch (...) {
      unlock_slurmctld(read_lock);
      throw;
    }
    unlock_slurmctld(read_lock);
  }

  // 2. Plan, no lock held.
  ringsched::Plan plan;
  ringsched::Snapshot snap;
  if (engine) {
    snap.cluster = cluster;
    snap.now_s = static_cast<double>(now);
    for (auto& [id, r] : ring) {
      if (r.request.types.empty()) r.request.types = cluster.types();
      if (r.request.min_gpus == 0) {
        r.request.min_gpus = 1;
        r.request.max_gpus = std::max(1, r.shape.gpus);
      }
      std::string why;
      if (!engine->prepare_model(r.request.model, r.request.types, why)) continue;
      ringsched::Job job = engine->make_job(id, r.request, static_cast<double>(r.submit), r.limit_s);
      job.user = "";
      if (r.running) {
        job.state = ringsched::JobState::Running;
        job.gpus_by_node = r.shape.gpus_by_node;
        job.current_type = r.shape.type;
        job.current_gpus = r.shape.gpus;
        job.last_resize_s = static_cast<double>(r.start);
        const double speed = engine->model().iters_per_s(r.request.model, r.shape.type,
                                                          std::max(1, r.shape.gpus));
        const double done = speed * std::max<double>(0, static_cast<double>(now - r.start));
        job.remaining = std::max(job.iterations * 0.01, job.iterations - done);
        job.attained_gpu_s = static_cast<double>(now - r.start) * r.shape.gpus;
        // GPUs held by ring jobs are the planner's to hand out again.
        for (auto& node : snap.cluster.nodes) {
          auto held = r.shape.gpus_by_node.find(node.name);
          if (held != r.shape.gpus_by_node.end())
            node.free_gpus = std::min(node.gpus, node.usable() + held->second);
        }
      }
      snap.jobs.push_back(job);
    }
    if (!snap.jobs.empty()) plan = engine->planner().plan(snap);
  }

  // 3. Priorities under the job write lock.
  std::map<uint32_t, uint32_t> planned;  // ring jobs the plan starts -> priority
  for (const auto& jp : plan.jobs) {
    auto r = ring.find(jp.job_id);
    if (r != ring.end() && !r->second.running && jp.runs)
      planned[r->second.id] = kPlannedBase - static_cast<uint32_t>(std::min(jp.order, 900000));
  }
  {
    slurmctld_lock_t job_write = {NO_LOCK, WRITE_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
    lock_slurmctld(job_write);
    bool changed = false;
    for (const PendingRecord& p : pending) {
      job_record_t* job = find_job_record(p.id);
      if (!job || !IS_JOB_PENDING(job)) continue;
      if (job->priority == 0 || job->direct_set_prio) continue;  // held, or set by an admin
      auto it = planned.find(p.id);
      const uint32_t prio = it != planned.end() ? it->second : age_priority(p.submit, now);
      if (job->priority != prio) {
        job->priority = prio;
        changed = true;
      }
    }
    if (changed) last_job_update = now;
    unlock_slurmctld(job_write);
    if (changed) queue_job_scheduler();
  }
  if (!engine) return;

  // 4. Shapes of pending ring jobs and resize requests of running ones, through Slurm's update
  //    RPC (no lock held: slurmctld takes its own).
  const ringsched::RingschedConf& conf = engine->conf();
  RoundStats stats;
  stats.ring = static_cast<int>(ring.size());
  std::map<std::string, const ringsched::JobPlan*> plan_of;
  for (const auto& jp : plan.jobs) plan_of[jp.job_id] = &jp;
  for (const auto& [id, r] : ring) {
    if (r.running) continue;
    ++stats.pending;
    const PendingShape current = pending_shape(r.shape);
    ReshapeMemory* memory = reshaped_.count(r.id) ? &reshaped_[r.id] : nullptr;
    // The planned shape, when the plan starts the job on one type (a typed gres cannot span types).
    PendingShape target;
    auto p = plan_of.find(id);
    if (p != plan_of.end() && p->second->runs && p->second->gpus > 0) {
      const auto [type, gpus] = engine->single_type(*p->second, r.request.types, r.request.model, snap.cluster);
      const ringsched::NodeSpread spread = ringsched::spread_gpus(snap.cluster, type, gpus);
      if (!type.empty() && spread.nodes > 0)
        target = PendingShape{type, spread.per_node, spread.nodes, current.by_feature};
    }
    if (r.bad_constraints && memory && memory->repair_failed && now - memory->last < conf.reshape_interval_s) {
      ++stats.kept_interval;
      continue;
    }
    if (r.bad_constraints && memory) {
      // We reshaped it and Slurm now finds it never runnable: give it a shape that exists (the
      // plan's, else the last one we applied). Any successful update makes Slurm re-evaluate
      // the job and give it a priority again.
      PendingShape repair = target.nodes > 0 && (target.type == current.type || current.by_feature)
                                ? target
                                : memory->shape;
      std::string failure;
      if (repair == current) {
        const int rc = update_num_nodes(r.id, current.nodes);
        if (rc != SLURM_SUCCESS) failure = std::string("NumNodes update failed: ") + slurm_strerror(rc);
      } else {
        failure = apply_shape(r.id, current, repair);
      }
      if (failure.empty()) {
        ++stats.repaired;
        memory->last = now;
        memory->shape = repair;
        memory->repair_failed = false;
        info("priority/ringsched: JobId=%u was BadConstraints after our reshape; now %s", r.id,
             repair.str().c_str());
      } else {
        ++stats.failed;
        memory->last = now;
        memory->repair_failed = true;
        job_error(r.id, "repairing BadConstraints to " + repair.str() + ": " + failure);
      }
      continue;
    }
    if (target.nodes == 0 || target == current) continue;
    if (current.type.empty()) continue;  // untyped requests stay untyped (DESIGN 4)
    // ringrun(1) requeued it at the size we asked for: the wrapper owns that shape for a while.
    const time_t resize_at = resize_requested_at(r.admin_comment);
    if (resize_at > 0 && now - resize_at < conf.resize_hold_s) {
      ++stats.kept_wrapper;
      continue;
    }
    if (memory && now - memory->last < conf.reshape_interval_s) {
      ++stats.kept_interval;
      continue;
    }
    if (target.type != current.type && !current.by_feature) {
      // Slurm 22.05 cannot change the type of a pending typed GPU request: the update keeps the
      // old type's gres entry next to the new one, so the job asks for both and is never
      // runnable (BadConstraints, priority 0; checked on the test cluster). Such a job keeps its
      // type; only its count and node count follow the plan.
      ++stats.kept_type;
      continue;
    }
    const std::string failure = apply_shape(r.id, current, target);
    reshaped_[r.id] = ReshapeMemory{now, failure.empty() ? target : current};
    if (!failure.empty()) {
      ++stats.failed;
      job_error(r.id, "reshaping " + current.str() + " -> " + target.str() + " failed, previous shape kept: " + failure);
      continue;
    }
    ++stats.reshaped;
    debug("priority/ringsched: JobId=%u reshaped %s -> %s (%s)", r.id, current.str().c_str(),
          target.str().c_str(), plan_of[id]->reason.c_str());
  }
  for (const auto& jp : plan.jobs) {
    auto it = ring.find(jp.job_id);
    if (it == ring.end() || !jp.runs || jp.gpus <= 0) continue;
    const RingJobRecord& r = it->second;
    if (!r.running) continue;
    const auto [type, gpus] = engine->single_type(jp, r.request.types, r.request.model, snap.cluster);
    if (type.empty()) continue;
    // A job with a typed gres request keeps its type when requeued (see above).
    if (type != r.shape.type && !r.shape.type_by_feature) continue;
    if (jp.resize && conf.resize_running && r.request.is_elastic()) {
      // ringrun(1) reads "ringsched:resize=N" from AdminComment when SIGUSR2 nudges it.
      const std::string request = "ringsched:resize=" + std::to_string(gpus) + ",type=" + type;
      if (signalled_[r.id] == request && r.admin_comment.find(request) == 0) continue;
      job_desc_msg_t desc;
      slurm_init_job_desc_msg(&desc);
      desc.job_id = r.id;
      const std::string comment = request + ",at=" + std::to_string(static_cast<long>(now));
      desc.admin_comment = const_cast<char*>(comment.c_str());
      if (slurm_update_job(&desc) != SLURM_SUCCESS) {
        job_error(r.id, std::string("recording resize failed: ") + slurm_strerror(slurm_get_errno()));
        continue;
      }
      signalled_[r.id] = request;
      ++stats.resizes;
      if (slurm_kill_job(r.id, SIGUSR2, KILL_JOB_BATCH) != SLURM_SUCCESS)
        job_error(r.id, std::string("resize signal failed: ") + slurm_strerror(slurm_get_errno()));
      info("priority/ringsched: job %u: resize %d x %s -> %d x %s requested (%s)", r.id, r.shape.gpus,
           r.shape.type.c_str(), gpus, type.c_str(), jp.reason.c_str());
    }
  }
  for (auto it = reshaped_.begin(); it != reshaped_.end();)
    it = ring.count(std::to_string(it->first)) ? std::next(it) : reshaped_.erase(it);
  debug("priority/ringsched: round: %d ring jobs (%d pending): %d reshaped, %d repaired, %d failed; "
        "kept %d (interval) %d (plan on another type) %d (ringrun's resize); %d resize requests",
        stats.ring, stats.pending, stats.reshaped, stats.repaired, stats.failed, stats.kept_interval,
        stats.kept_type, stats.kept_wrapper, stats.resizes);
  for (auto it = signalled_.begin(); it != signalled_.end();)
    it = ring.count(std::to_string(it->first)) ? std::next(it) : signalled_.erase(it);

  // 5. The plan, for ringsched(8).
  write_plan(*engine, snap, plan, ring);
}

void PlanningThread::write_plan(const ringsched::Engine& engine, const ringsched::Snapshot& snap,
                                const ringsched::Plan& plan,
                                const std::map<std::string, RingJobRecord>& ring) {
  std::string path = engine.conf().plan_file;
  if (path.empty()) {
    slurmctld_lock_t conf_read = {READ_LOCK, NO_LOCK, NO_LOCK, NO_LOCK, NO_LOCK};
    lock_slurmctld(conf_read);
    path = std::string(slurm_conf.state_save_location ? slurm_conf.state_save_location : "/tmp") +
           "/ringsched_plan.json";
    unlock_slurmctld(conf_read);
  }
  json_t* root = json_object();
  json_object_set_new(root, "generated_at", json_integer(static_cast<json_int_t>(snap.now_s)));
  json_object_set_new(root, "config", json_string(engine.conf().path.c_str()));
  json_t* nodes = json_array();
  for (const auto& n : snap.cluster.nodes) {
    json_t* o = json_object();
    json_object_set_new(o, "node", json_string(n.name.c_str()));
    json_object_set_new(o, "gpu_type", json_string(n.gpu_type.c_str()));
    json_object_set_new(o, "gpus", json_integer(n.gpus));
    json_object_set_new(o, "free_gpus", json_integer(n.usable()));
    json_array_append_new(nodes, o);
  }
  json_object_set_new(root, "cluster", nodes);
  json_t* jobs = json_array();
  for (const auto& [id, r] : ring) {
    json_t* o = json_object();
    json_object_set_new(o, "job_id", json_string(id.c_str()));
    json_object_set_new(o, "state", json_string(r.running ? "running" : "pending"));
    json_object_set_new(o, "model", json_string(r.request.model.c_str()));
    json_object_set_new(o, "min_gpus", json_integer(r.request.min_gpus));
    json_object_set_new(o, "max_gpus", json_integer(r.request.max_gpus));
    json_object_set_new(o, "elastic", json_boolean(r.request.is_elastic()));
    json_object_set_new(o, "current_type", json_string(r.shape.type.c_str()));
    json_object_set_new(o, "current_gpus", json_integer(r.shape.gpus));
    if (const ringsched::Job* j = find_job(snap, id)) {
      json_object_set_new(o, "iterations", json_real(j->iterations));
      json_object_set_new(o, "remaining", json_real(j->remaining));
    }
    json_object_set_new(o, "admin_comment", json_string(r.admin_comment.c_str()));
    json_array_append_new(jobs, o);
  }
  json_object_set_new(root, "jobs", jobs);
  json_error_t err;
  json_t* planned = json_loads(ringsched::plan_to_json(plan).c_str(), 0, &err);
  json_object_set_new(root, "plan", planned ? planned : json_null());
  const std::string tmp = path + ".tmp";
  if (json_dump_file(root, tmp.c_str(), JSON_INDENT(1) | JSON_SORT_KEYS) != 0 ||
      std::rename(tmp.c_str(), path.c_str()) != 0)
    error("priority/ringsched: cannot write the plan to %s", path.c_str());
  json_decref(root);
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

// No fair share in this plugin (sshare may still ask): 0 as priority/basic answers.
extern "C" double priority_p_calc_fs_factor(long double /*usage_efctv*/, long double /*shares_norm*/) {
  return 0.0;
}

extern "C" List priority_p_get_priority_factors_list(priority_factors_request_msg_t* /*req_msg*/,
                                                     uid_t /*uid*/) {
  return list_create(nullptr);
}

extern "C" void priority_p_job_end(job_record_t* /*job_ptr*/) {
  if (g_thread) g_thread->wake();
}
