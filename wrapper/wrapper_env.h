// SPDX-License-Identifier: GPL-2.0-or-later
// The environment shared by ringrun and its workers: one accessor per variable (ringrun(1),
// ENVIRONMENT), and the timing report a worker leaves for the wrapper.
#pragma once

#include "bounded_int.h"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace ringrun {
namespace env {

inline std::string get(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}
// Folder of the job's checkpoints.
inline std::string ckpt_dir() { return get("RINGRUN_CKPT_DIR"); }
// GPU type the workers run on (lower case, e.g. "v100"), for emulation and reports.
inline std::string gpu_type() { return get("RINGRUN_GPU_TYPE"); }
// Profile CSV used for emulation and to bound reported iteration times.
inline std::string profiles() { return get("RINGRUN_PROFILES"); }
// Where rank 0 writes its measured iteration times at exit.
inline std::string timing_file() { return get("RINGRUN_TIMING_FILE"); }
// How many times Slurm has requeued this batch job (SLURM_RESTART_COUNT, set from the first
// requeue on): 0 on the job's first run, outside a job, or when malformed.
inline int slurm_restart_count() {
  int n = 0;
  return ringsched::parse_int(get("SLURM_RESTART_COUNT"), 0, 1000000, &n) ? n : 0;
}

// One line "world,global_batch,steps,seconds" (steady-state iterations only). Best effort: the
// wrapper treats a missing or malformed file as "nothing measured".
inline void write_timing(int world, int global_batch, uint64_t steps, double seconds) {
  std::string f = timing_file();
  if (f.empty() || steps == 0) return;
  if (FILE* fp = std::fopen(f.c_str(), "w")) {
    std::fprintf(fp, "%d,%d,%llu,%.9g\n", world, global_batch, (unsigned long long)steps, seconds);
    std::fclose(fp);
  }
}

// Appends "<epoch seconds> <event> <detail>" to DIR/events: the record from which resize
// latency is measured across requeues (ringrun and rank 0 of the workers write to it).
inline void event(const std::string& dir, const std::string& what) {
  if (dir.empty()) return;
  int fd = ::open((dir + "/events").c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  char line[512];
  int n = std::snprintf(line, sizeof line, "%.3f %s\n", now, what.c_str());
  if (n > 0) (void)!::write(fd, line, size_t(n < int(sizeof line) ? n : int(sizeof line) - 1));
  ::close(fd);
}

}  // namespace env
}  // namespace ringrun
