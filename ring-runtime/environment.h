// SPDX-License-Identifier: GPL-2.0-or-later
// environment.h -- one accessor per environment variable libringrt reads; each returns nullptr
// when the variable is unset or empty. Only configuration.cpp and the debug switch read them.
#ifndef RINGRT_ENVIRONMENT_H
#define RINGRT_ENVIRONMENT_H

namespace ringrt {
namespace env {
const char* rank();              // RINGRT_RANK
const char* world_size();        // RINGRT_WORLD_SIZE
const char* master_addr();       // RINGRT_MASTER_ADDR
const char* master_port();       // RINGRT_MASTER_PORT
const char* secret_file();       // RINGRT_SECRET_FILE
const char* secret();            // RINGRT_SECRET
const char* timeout_ms();        // RINGRT_TIMEOUT_MS
const char* init_timeout_ms();   // RINGRT_INIT_TIMEOUT_MS
const char* backend();           // RINGRT_BACKEND
const char* tcp_algorithm();     // RINGRT_TCP_ALGORITHM
const char* tcp_congestion();    // RINGRT_TCP_CONGESTION
const char* hostname();          // RINGRT_HOSTNAME
const char* debug();             // RINGRT_DEBUG
const char* slurm_procid();      // SLURM_PROCID
const char* slurm_ntasks();      // SLURM_NTASKS
const char* slurm_job_nodelist();// SLURM_JOB_NODELIST
const char* slurm_job_id();      // SLURM_JOB_ID
}  // namespace env
}  // namespace ringrt

#endif  // RINGRT_ENVIRONMENT_H
