// priority/ringsched's entry points whose set or signature depends on the Slurm version:
// slurmctld looks up every symbol of its version's list by name and refuses a plugin that lacks
// one. None of them has work to do here; the others, the same on every version, are in
// priority_ringsched.cpp.
#include "slurm_compat.h"

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

// sprio's factors: none (as priority/basic answers).
List priority_p_get_priority_factors_list(uid_t /*uid*/) { return list_create(nullptr); }
#else
List priority_p_get_priority_factors_list(priority_factors_request_msg_t* req_msg, uid_t uid);
List priority_p_get_priority_factors_list(priority_factors_request_msg_t* /*req_msg*/, uid_t /*uid*/) {
  return list_create(nullptr);
}
#endif

#if !RINGSCHED_SLURM_AT_LEAST(25, 11)
// Gone by 25.11. No fair share in this plugin (sshare may still ask): 0 as priority/basic answers.
double priority_p_calc_fs_factor(long double usage_efctv, long double shares_norm);
double priority_p_calc_fs_factor(long double /*usage_efctv*/, long double /*shares_norm*/) { return 0.0; }
#endif
}
