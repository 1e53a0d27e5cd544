// SPDX-License-Identifier: GPL-2.0-or-later
// priority/ringsched's entry points whose set or signature depends on the Slurm version:
// slurmctld looks up every symbol of its version's list by name and refuses a plugin that lacks
// one. The others, the same on every version, are in priority_ringsched.cpp.
#include <string>

#include "slurm_compat.h"

namespace {

// Calls add(job, partition, parts) for every job sprio lists to `uid`, once per partition it is
// in (ringsched::priority_parts decides which jobs and their parts). Job and partition read locks
// held.
template <class Add>
void each_listed_job(uid_t uid, Add add) {
  if (!job_list) return;
  const time_t now = std::time(nullptr);
  ListIterator it = list_iterator_create(job_list);
  while (auto* job = static_cast<job_record_t*>(list_next(it))) {
    ringsched::PriorityParts parts;
    if (!ringsched::priority_parts(job, uid, now, &parts)) continue;
    if (!job->part_ptr_list) {
      add(job, job->part_ptr, parts);
      continue;
    }
    ListIterator parts_it = list_iterator_create(job->part_ptr_list);
    while (auto* part = static_cast<part_record_t*>(list_next(parts_it))) add(job, part, parts);
    list_iterator_destroy(parts_it);
  }
  list_iterator_destroy(it);
}

}  // namespace

extern "C" {
#if RINGSCHED_SLURM_AT_LEAST(24, 11)
uint32_t priority_p_recover(uint32_t prio_boost);
void priority_p_thread_start(void);
List priority_p_get_priority_factors_list(uid_t uid);

// After slurmctld recovered its jobs: no boost (priority/basic raises every priority so that its
// decreasing counter cannot reach 0; the planning thread sets every priority itself).
uint32_t priority_p_recover(uint32_t /*prio_boost*/) { return 0; }

// The planning thread is started by init(), after the job list exists, on every version.
void priority_p_thread_start(void) {}

// Every string is our own copy, freed here (slurmctld frees the list after sending it).
static void destroy_factors(void* object) {
  auto* obj = static_cast<priority_factors_object_t*>(object);
  if (!obj) return;
  xfree(obj->account);
  xfree(obj->partition);
  xfree(obj->qos);
  xfree(obj->prio_factors);
  xfree(obj);
}

// sprio's factors, one object per pending job and partition; sprio filters by job, user and
// partition itself. slurmctld holds the job, node and partition read locks (and the QOS one).
List priority_p_get_priority_factors_list(uid_t uid) {
  List out = list_create(destroy_factors);
  each_listed_job(uid, [&](job_record_t* job, part_record_t* part, const ringsched::PriorityParts& parts) {
    auto* obj = static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
#if RINGSCHED_SLURM_AT_LEAST(26, 5)
    obj->step_id = job->step_id;
#else
    obj->job_id = job->job_id;
#endif
    obj->user_id = job->user_id;
    obj->account = xstrdup(job->account);
    obj->partition = xstrdup(part ? part->name : nullptr);
    obj->qos = xstrdup(job->qos_ptr ? job->qos_ptr->name : nullptr);
    if (parts.direct) {
      obj->direct_prio = job->priority;
    } else {
      auto* f = static_cast<priority_factors_t*>(xmalloc(sizeof(priority_factors_t)));
      f->priority_age = parts.age;
      f->priority_site = NICE_OFFSET + parts.site;
      f->nice = NICE_OFFSET;  // ringsched does not use nice: 0
      obj->prio_factors = f;
    }
    list_append(out, obj);
  });
  return out;
}
#else
List priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid);

static void destroy_factors(void* object) {
  auto* obj = static_cast<priority_factors_object_t*>(object);
  if (!obj) return;
  xfree(obj->partition);
  xfree(obj);
}

// Whether `list` (of uint32_t*) is absent or holds `value`: the request's job and user filters.
static bool listed(List list, uint32_t value) {
  if (!list) return true;
  bool found = false;
  ListIterator it = list_iterator_create(list);
  while (auto* v = static_cast<uint32_t*>(list_next(it)))
    if (*v == value) found = true;
  list_iterator_destroy(it);
  return found;
}

// Whether partition `name` is among the request's comma-separated `partitions` (all when none).
static bool partition_listed(const char* partitions, const char* name) {
  if (!partitions || !*partitions) return true;
  if (!name) return false;
  const std::string all = std::string(",") + partitions + ",";
  return all.find("," + std::string(name) + ",") != std::string::npos;
}

// sprio's factors, one object per pending job and partition, filtered here by the request's jobs,
// users and partitions (22.05's sprio leaves that to slurmctld). Takes its own read locks.
List priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid) {
  List out = list_create(destroy_factors);
  const slurmctld_lock_t read_lock = ringsched::slurmctld_locks(NO_LOCK, READ_LOCK, READ_LOCK, READ_LOCK);
  lock_slurmctld(read_lock);
  each_listed_job(uid, [&](job_record_t* job, part_record_t* part, const ringsched::PriorityParts& parts) {
    if (req_msg && (!listed(req_msg->job_id_list, job->job_id) || !listed(req_msg->uid_list, job->user_id) ||
                    !partition_listed(req_msg->partitions, part ? part->name : nullptr)))
      return;
    auto* obj = static_cast<priority_factors_object_t*>(xmalloc(sizeof(priority_factors_object_t)));
    obj->job_id = job->job_id;
    obj->user_id = job->user_id;
    obj->partition = xstrdup(part ? part->name : nullptr);
    if (parts.direct) {
      obj->direct_prio = job->priority;
    } else {
      obj->priority_age = parts.age;
      obj->priority_site = NICE_OFFSET + parts.site;
      obj->nice = NICE_OFFSET;  // ringsched does not use nice: 0
    }
    list_append(out, obj);
  });
  unlock_slurmctld(read_lock);
  return out;
}
#endif

#if !RINGSCHED_SLURM_AT_LEAST(25, 11)
// Gone by 25.11. No fair share in this plugin (sshare may still ask): 0 as priority/basic answers.
double priority_p_calc_fs_factor(long double usage_efctv, long double shares_norm);
double priority_p_calc_fs_factor(long double /*usage_efctv*/, long double /*shares_norm*/) { return 0.0; }
#endif
}
