// SPDX-License-Identifier: GPL-2.0-or-later
// slurmctld's internal headers as the slurmctld plugins see them, on each Slurm version ringsched
// builds for (22.05, 24.11, 25.11, 26.05): every difference has one name here (or in
// slurm_api_compat.h for the public API, slurm_compat_priority.cpp and
// slurm_compat_job_submit.cpp for the plugins' entry points), so that the plugins themselves
// contain no version test. Include this instead of Slurm's src/ headers.
#pragma once

// The C++ library first: the keyword renaming below must only reach Slurm's headers.
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "slurm_api_compat.h"

// Slurm's headers are C. By 26.05, src/common/extra_constraints.h (read through slurmctld.h)
// names a struct field `operator`, a C++ keyword: renamed while they are read; ringsched never
// uses that field.
#define operator slurm_operator_field
// By 26.05, src/slurmd/slurmstepd/slurmstepd_job.h (read through slurmctld.h) defines
// _GNU_SOURCE, which g++ predefines (the C library's headers were read above, with it).
#undef _GNU_SOURCE
extern "C" {
#include "src/common/bitstring.h"
#include "src/common/list.h"
#include "src/common/log.h"
#include "src/common/node_conf.h"
#include "src/common/read_config.h"
#include "src/common/slurm_protocol_defs.h"
#include "src/common/xmalloc.h"
#include "src/common/xstring.h"
// Plugin interfaces (gres among them) moved from src/common/ to src/interfaces/ by 24.11.
#if __has_include("src/interfaces/gres.h")
#include "src/interfaces/gres.h"
#else
#include "src/common/gres.h"
#endif
#include "src/slurmctld/job_scheduler.h"
#include "src/slurmctld/locks.h"
#include "src/slurmctld/slurmctld.h"
}
#undef operator

#if RINGSCHED_SLURM_AT_LEAST(24, 11)
// The List and ListIterator pointer typedefs are gone by 24.11 (list_t *, list_itr_t * now);
// the structs behind them did not change.
typedef struct xlist* List;
typedef struct listIterator* ListIterator;
#endif

namespace ringsched {
// slurmctld's lock set for the given configuration, job, node and partition levels. 26.05 added a
// select_node lock (the select plugin's own node usage, which ringsched does not read), left
// NO_LOCK like every lock not named.
inline slurmctld_lock_t slurmctld_locks(lock_level_t conf, lock_level_t job, lock_level_t node,
                                        lock_level_t part) {
  slurmctld_lock_t locks{};
  locks.conf = conf;
  locks.job = job;
  locks.node = node;
  locks.part = part;
  return locks;
}
}  // namespace ringsched

// Plugin entry points whose signature differs between versions: the plugin defines the
// version-independent function below, slurm_compat_job_submit.cpp exports the symbol slurmctld
// looks up with this version's signature.
namespace ringsched {
// job_submit's job_modify; `err_msg` (null on 22.05, which has none) reaches the user.
int job_submit_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid,
                      char** err_msg);

// The parts of a pending job's priority as priority/ringsched set it, for sprio (the factors list
// is built per version in slurm_compat_priority.cpp): `site` is the band (the plan's, or the age
// band's base), `age` the minutes waited on top of it; `direct` when an admin set the priority.
// site + age == the job's priority.
struct PriorityParts {
  uint32_t site = 0;
  uint32_t age = 0;
  bool direct = false;
};
// Whether sprio lists `job` to `uid` (pending, eligible, not held, in a partition, visible to
// `uid` under PrivateData=jobs), and its parts. Called with the job and partition read locks held.
bool priority_parts(const job_record_t* job, uid_t uid, time_t now, PriorityParts* parts);
}  // namespace ringsched
