// SPDX-License-Identifier: GPL-2.0-or-later
// environment.cpp -- the environment accessors (environment.h).
#include "environment.h"

#include <cstdlib>

namespace ringrt {
namespace env {
namespace {
const char* get(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}
}  // namespace
const char* rank() { return get("RINGRT_RANK"); }
const char* world_size() { return get("RINGRT_WORLD_SIZE"); }
const char* master_addr() { return get("RINGRT_MASTER_ADDR"); }
const char* master_port() { return get("RINGRT_MASTER_PORT"); }
const char* secret_file() { return get("RINGRT_SECRET_FILE"); }
const char* secret() { return get("RINGRT_SECRET"); }
const char* timeout_ms() { return get("RINGRT_TIMEOUT_MS"); }
const char* init_timeout_ms() { return get("RINGRT_INIT_TIMEOUT_MS"); }
const char* backend() { return get("RINGRT_BACKEND"); }
const char* tcp_algorithm() { return get("RINGRT_TCP_ALGORITHM"); }
const char* tcp_congestion() { return get("RINGRT_TCP_CONGESTION"); }
const char* hostname() { return get("RINGRT_HOSTNAME"); }
const char* debug() { return get("RINGRT_DEBUG"); }
const char* slurm_procid() { return get("SLURM_PROCID"); }
const char* slurm_ntasks() { return get("SLURM_NTASKS"); }
const char* slurm_job_nodelist() { return get("SLURM_JOB_NODELIST"); }
const char* slurm_job_id() { return get("SLURM_JOB_ID"); }
}  // namespace env
}  // namespace ringrt
