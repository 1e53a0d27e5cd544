// SPDX-License-Identifier: GPL-2.0-or-later
// errors.cpp -- the error detail of the calling thread, the log, the clock.
#include "errors.h"

#include "environment.h"

#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ringrt {

namespace {
thread_local std::string t_detail;
thread_local int t_blamed = -1;
int g_log_rank = -1;
}  // namespace

rr fail(rr code, int blamed_rank, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t_detail = buf;
  t_blamed = blamed_rank;
  if (debug_enabled()) log_msg("error %d: %s", static_cast<int>(code), buf);
  return code;
}
const std::string& last_detail() { return t_detail; }
int last_blamed() { return t_blamed; }
void clear_error() { t_detail.clear(); t_blamed = -1; }
void set_error(rr, int blamed, const std::string& detail) { t_detail = detail; t_blamed = blamed; }
void set_log_rank(int rank) { g_log_rank = rank; }
bool debug_enabled() {
  const char* d = env::debug();
  return d && std::strcmp(d, "0") != 0;
}
void log_msg(const char* fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_log_rank >= 0)
    std::fprintf(stderr, "ringrt[rank %d pid %d]: %s\n", g_log_rank, static_cast<int>(getpid()), buf);
  else
    std::fprintf(stderr, "ringrt[pid %d]: %s\n", static_cast<int>(getpid()), buf);
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace ringrt
