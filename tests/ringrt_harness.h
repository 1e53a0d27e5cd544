// SPDX-License-Identifier: GPL-2.0-or-later
// ringrt_harness.h -- runs the ranks of a libringrt world as forked processes on this machine,
// over real sockets and shared memory, and collects each rank's exit code and output.
#ifndef RINGRT_HARNESS_H
#define RINGRT_HARNESS_H

#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "loopback.h"

namespace ringrt_test {

struct RankOutcome {
  int status = -1;      // exit code, or 128+signal
  std::string output;   // what the rank wrote to stdout and stderr
};

// In a rank's body (a function returning the rank's exit code, with `rank` in scope): run a
// libringrt call and, if it fails, print why and leave with exit code 10.
#define RANK_CHECK(call)                                                                         \
  do {                                                                                           \
    ringrt_result_t rc_ = (call);                                                                \
    if (rc_ != RINGRT_OK) {                                                                      \
      std::printf("rank %d: %s -> %s: %s\n", rank, #call, ringrt_error_string(rc_),              \
                  ringrt_error_detail());                                                        \
      return 10;                                                                                 \
    }                                                                                            \
  } while (0)

using ringrt_local::free_port;
using ringrt_local::mono_s;

// Environment of a world: every rank gets RINGRT_* set before fn runs.
struct WorldEnv {
  int world = 2;
  int port = 0;
  std::string secret = "test-secret-0123456789";
  std::string backend = "auto";
  int timeout_ms = 3000;
  std::vector<std::string> hosts;  // per-rank RINGRT_HOSTNAME (empty: the real hostname)
  std::string tcp_algorithm;       // RINGRT_TCP_ALGORITHM (empty: unset, the default)
  std::string tcp_congestion;      // RINGRT_TCP_CONGESTION (empty: unset, the default)
  void apply(int rank) const {
    setenv("RINGRT_RANK", std::to_string(rank).c_str(), 1);
    setenv("RINGRT_WORLD_SIZE", std::to_string(world).c_str(), 1);
    setenv("RINGRT_MASTER_ADDR", "127.0.0.1", 1);
    setenv("RINGRT_MASTER_PORT", std::to_string(port).c_str(), 1);
    setenv("RINGRT_SECRET", secret.c_str(), 1);
    unsetenv("RINGRT_SECRET_FILE");
    setenv("RINGRT_BACKEND", backend.c_str(), 1);
    setenv("RINGRT_TIMEOUT_MS", std::to_string(timeout_ms).c_str(), 1);
    setenv("RINGRT_INIT_TIMEOUT_MS", "20000", 1);
    if (rank < static_cast<int>(hosts.size())) setenv("RINGRT_HOSTNAME", hosts[rank].c_str(), 1);
    else unsetenv("RINGRT_HOSTNAME");
    if (!tcp_algorithm.empty()) setenv("RINGRT_TCP_ALGORITHM", tcp_algorithm.c_str(), 1);
    else unsetenv("RINGRT_TCP_ALGORITHM");
    if (!tcp_congestion.empty()) setenv("RINGRT_TCP_CONGESTION", tcp_congestion.c_str(), 1);
    else unsetenv("RINGRT_TCP_CONGESTION");
  }
};

// Forks one process per entry of fns; each runs its function with stdout/stderr captured and
// exits with its return value. during(pids) runs in the parent while they work (e.g. to kill
// one). Children still running after timeout_s are killed (status 128+9).
inline std::vector<RankOutcome> run_procs(const std::vector<std::function<int()>>& fns, double timeout_s = 60,
                                          const std::function<void(const std::vector<pid_t>&)>& during = nullptr) {
  const size_t n = fns.size();
  std::vector<pid_t> pids(n);
  std::vector<int> fds(n);
  std::fflush(stdout);
  std::fflush(stderr);
  for (size_t i = 0; i < n; ++i) {
    int p[2];
    if (pipe(p) != 0) std::abort();
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      dup2(p[1], 1);
      dup2(p[1], 2);
      close(p[1]);
      int rc = fns[i]();
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    close(p[1]);
    pids[i] = pid;
    fds[i] = p[0];
  }
  if (during) during(pids);
  std::vector<RankOutcome> out(n);
  std::vector<bool> open(n, true);
  const double deadline = mono_s() + timeout_s;
  size_t left = n;
  while (left > 0) {
    std::vector<pollfd> pf;
    std::vector<size_t> idx;
    for (size_t i = 0; i < n; ++i)
      if (open[i]) { pf.push_back({fds[i], POLLIN, 0}); idx.push_back(i); }
    int ms = static_cast<int>((deadline - mono_s()) * 1000);
    if (ms <= 0) break;
    if (poll(pf.data(), pf.size(), ms > 200 ? 200 : ms) <= 0) continue;
    for (size_t k = 0; k < pf.size(); ++k) {
      if (!(pf[k].revents & (POLLIN | POLLHUP))) continue;
      char buf[4096];
      ssize_t r = read(pf[k].fd, buf, sizeof buf);
      if (r > 0) out[idx[k]].output.append(buf, static_cast<size_t>(r));
      else { open[idx[k]] = false; close(pf[k].fd); left--; }
    }
  }
  for (size_t i = 0; i < n; ++i) {
    if (open[i]) { kill(pids[i], SIGKILL); close(fds[i]); }
    int st = 0;
    if (waitpid(pids[i], &st, open[i] ? 0 : 0) < 0) continue;
    out[i].status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }
  return out;
}

// Runs fn(rank) in `world` processes with env applied.
inline std::vector<RankOutcome> run_world(const WorldEnv& env, const std::function<int(int)>& fn, double timeout_s = 60,
                                          const std::function<void(const std::vector<pid_t>&)>& during = nullptr) {
  std::vector<std::function<int()>> fns;
  for (int r = 0; r < env.world; ++r)
    fns.push_back([&env, &fn, r]() {
      env.apply(r);
      return fn(r);
    });
  return run_procs(fns, timeout_s, during);
}

inline std::string describe(const std::vector<RankOutcome>& out) {
  std::string s;
  for (size_t i = 0; i < out.size(); ++i)
    s += "[rank " + std::to_string(i) + " status " + std::to_string(out[i].status) + "] " + out[i].output + "\n";
  return s;
}

}  // namespace ringrt_test

#endif
