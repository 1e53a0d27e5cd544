// SPDX-License-Identifier: GPL-2.0-or-later
// The differences of Slurm's public API (libslurm, <slurm/slurm.h>) between the versions
// ringsched builds for (22.05, 24.11, 25.11, 26.05), one name per difference, so that the code
// calling libslurm (ringrun, the slurmctld plugins) reads the same on all of them. Together with
// slurm_compat.h (slurmctld's internals) the only place that looks at SLURM_VERSION_NUMBER.
#pragma once

#include <cerrno>
#include <cstdint>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

#define RINGSCHED_SLURM_AT_LEAST(major, minor) \
  (SLURM_VERSION_NUMBER >= SLURM_VERSION_NUM(major, minor, 0))

#if RINGSCHED_SLURM_AT_LEAST(24, 11)
// slurm_get_errno() is gone by 24.11; it always returned errno.
inline int slurm_get_errno() { return errno; }
#endif

namespace ringsched {

// How a TRES string names GPUs (TresPerNode=gres:gpu:v100:4): "gres:gpu" in 22.05, "gres/gpu" by
// 24.11, which refuses the old spelling.
#if RINGSCHED_SLURM_AT_LEAST(24, 11)
inline constexpr char kGpuTres[] = "gres/gpu";
#else
inline constexpr char kGpuTres[] = "gres:gpu";
#endif

// What slurm_hostlist_create returns: hostlist_t is a pointer type in 22.05 and the struct
// itself (used as hostlist_t *) by 24.11.
using HostlistHandle = decltype(slurm_hostlist_create(nullptr));

#if RINGSCHED_SLURM_AT_LEAST(25, 11)
// A whole job (no step) as the step-id arguments of 25.11 and later name it.
inline slurm_step_id_t whole_job(uint32_t job_id) {
  slurm_step_id_t id;
  id.sluid = 0;
  id.job_id = job_id;
  id.step_het_comp = NO_VAL;
  id.step_id = NO_VAL;
  return id;
}
#endif

// The job an update names: job_desc_msg_t.job_id until 25.05, its step_id.job_id since 25.11.
inline void set_update_job_id(job_desc_msg_t& desc, uint32_t job_id) {
#if RINGSCHED_SLURM_AT_LEAST(25, 11)
  desc.step_id = whole_job(job_id);
#else
  desc.job_id = job_id;
#endif
}

// slurm_kill_job, slurm_requeue and slurm_load_job take a slurm_step_id_t since 26.05 (a job
// id before; C callers get a _Generic wrapper, C++ has none).
inline int kill_job(uint32_t job_id, uint16_t signal, uint16_t flags) {
#if RINGSCHED_SLURM_AT_LEAST(26, 5)
  return slurm_kill_job(whole_job(job_id), signal, flags);
#else
  return slurm_kill_job(job_id, signal, flags);
#endif
}

inline int requeue_job(uint32_t job_id, uint32_t flags) {
#if RINGSCHED_SLURM_AT_LEAST(26, 5)
  return slurm_requeue(whole_job(job_id), flags);
#else
  return slurm_requeue(job_id, flags);
#endif
}

inline int load_job(job_info_msg_t** resp, uint32_t job_id, uint16_t show_flags) {
#if RINGSCHED_SLURM_AT_LEAST(26, 5)
  return slurm_load_job(resp, whole_job(job_id), show_flags);
#else
  return slurm_load_job(resp, job_id, show_flags);
#endif
}

}  // namespace ringsched
