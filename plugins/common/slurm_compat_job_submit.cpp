// SPDX-License-Identifier: GPL-2.0-or-later
// job_submit/ringsched's entry points whose signature depends on the Slurm version (slurmctld
// looks them up by name). The others, the same on every version, are in job_submit_ringsched.cpp.
#include "slurm_compat.h"

extern "C" {
#if RINGSCHED_SLURM_AT_LEAST(24, 11)
// By 24.11 job_modify can tell the user why a change is refused.
int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid, char** err_msg);
int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid, char** err_msg) {
  return ringsched::job_submit_modify(job_desc, job_ptr, submit_uid, err_msg);
}
#else
int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid);
int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid) {
  return ringsched::job_submit_modify(job_desc, job_ptr, submit_uid, nullptr);
}
#endif
}
