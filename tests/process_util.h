// SPDX-License-Identifier: GPL-2.0-or-later
// Real processes for the test programs that start ringrun and its workers themselves
// (test_wrapper, test_torch): a shell command run to its end, one started in the background,
// waiting for a condition, and the text of a file the processes wrote.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>

namespace ringsched_test {

// Runs a shell command to its end: its exit status (128 + N when killed by signal N) and its
// output, stdout and stderr together.
inline int run(const std::string& cmd, std::string* out) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  out->clear();
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  const int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Starts a shell command in the background in its own process group, output to `log`; returns
// its pid. Begin `cmd` with "exec " for the pid to be the program's own (to signal it).
inline pid_t spawn(const std::string& cmd, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    execl("/bin/sh", "sh", "-c", (cmd + " >" + log + " 2>&1").c_str(), (char*)nullptr);
    _exit(127);
  }
  return pid;
}

// Waits for a spawned process: its exit status, as run() gives it.
inline int wait_status(pid_t pid) {
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Whether `cond` holds within `seconds`, looked at every `poll_s`.
inline bool wait_for(const std::function<bool()>& cond, double seconds, double poll_s = 0.01) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_s));
  }
  return cond();
}

// The whole text of a file ("" when it cannot be read).
inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace ringsched_test
