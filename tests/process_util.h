// SPDX-License-Identifier: GPL-2.0-or-later
// Real processes for the test programs that start ringrun and its workers themselves
// (test_wrapper, test_torch): a shell command run to its end, one started in the background,
// waiting for a condition, and the text of a file the processes wrote.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ringsched_test {

// How long a test lets one command or one background process run before it kills it: a hang
// fails the test that hangs, with the processes' output, instead of stalling the whole suite
// (a CI run has a deadline for everything). Generous: the slowest command here takes ~30 s.
constexpr double kCommandDeadlineS = 300;

// The processes started from `pid`, itself first, one line each ("pid pgid state wchan elapsed
// command"): what a test that gave up on a command prints, so that a hang says where it hung.
// ringrun puts its workers in a group of their own, so a group does not hold them all.
inline std::vector<std::string> process_tree(pid_t pid) {
  std::vector<std::string> lines;
  FILE* p = popen("ps -eo pid=,ppid=,pgid=,stat=,wchan:24=,etime=,args= 2>/dev/null", "r");
  if (!p) return lines;
  std::vector<std::pair<std::pair<long, long>, std::string>> all;  // ((pid, ppid), line)
  char buf[8192];
  while (fgets(buf, sizeof buf, p)) {
    long a = 0, b = 0;
    if (std::sscanf(buf, "%ld %ld", &a, &b) == 2) all.push_back({{a, b}, buf});
  }
  pclose(p);
  std::vector<long> tree{pid};
  for (size_t i = 0; i < tree.size(); ++i)
    for (auto& e : all)
      if (e.first.second == tree[i]) tree.push_back(e.first.first);
  for (long t : tree)
    for (auto& e : all)
      if (e.first.first == t) lines.push_back(e.second);
  return lines;
}

inline std::string describe_tree(pid_t pid) {
  std::string out;
  for (auto& l : process_tree(pid)) out += l;
  return out;
}

// Kills `pid` (a child of ours that leads its own group), its group and the groups of everything
// it started: SIGTERM, then SIGKILL to whatever is still there after 5 s. Reaps `pid`.
inline void kill_tree(pid_t pid) {
  std::vector<long> groups{pid};
  for (auto& l : process_tree(pid)) {
    long a = 0, b = 0, g = 0;
    // Never our own group (a child that joined it would take the test down with it).
    if (std::sscanf(l.c_str(), "%ld %ld %ld", &a, &b, &g) == 3 && g > 1 && g != getpgrp() &&
        std::find(groups.begin(), groups.end(), g) == groups.end())
      groups.push_back(g);
  }
  for (long g : groups) kill(pid_t(-g), SIGTERM);
  int st = 0;
  bool reaped = false;
  for (int i = 0; i < 50; ++i) {
    if (!reaped) reaped = waitpid(pid, &st, WNOHANG) == pid;
    bool left = false;
    for (long g : groups) left = left || kill(pid_t(-g), 0) == 0;
    if (reaped && !left) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (long g : groups) kill(pid_t(-g), SIGKILL);
  if (!reaped) waitpid(pid, &st, 0);
}

// Waits for a spawned process (or run()'s command): its exit status, as run() gives it. Past
// `deadline_s` its group is killed (with what was running written to stderr); the status is 124.
inline int wait_status(pid_t pid, double deadline_s = kCommandDeadlineS) {
  int st = 0;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  while (true) {
    const pid_t r = waitpid(pid, &st, WNOHANG);
    if (r == pid) break;
    if (r < 0) return -1;
    if (std::chrono::steady_clock::now() >= end) {
      std::fprintf(stderr, "[test: process %d still running after %d s; killed. Its processes:]\n%s", int(pid),
                   int(deadline_s), describe_tree(pid).c_str());
      kill_tree(pid);
      return 124;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// Runs a shell command to its end, in its own process group: its exit status (128 + N when
// killed by signal N) and its output, stdout and stderr together. Past `deadline_s` the group is
// killed, the status is 124 and the output ends with what was still running.
inline int run(const std::string& cmd, std::string* out, double deadline_s = kCommandDeadlineS) {
  out->clear();
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return -1;
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    execl("/bin/sh", "sh", "-c", cmd.c_str(), (char*)nullptr);
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so that kill(-pid) reaches it whichever runs first
  close(fds[1]);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(deadline_s);
  bool timed_out = false;
  char buf[4096];
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    const int r = poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (r < 0 && errno != EINTR) break;
    if (r <= 0) continue;
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // every writer closed its end: the command and what it started ended
    out->append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (timed_out) {
    *out += "\n[test: '" + cmd + "' still running after " + std::to_string(int(deadline_s)) +
            " s; killed. Its processes (pid pgid state wchan elapsed command):]\n" + describe_tree(pid);
    kill_tree(pid);
    return 124;
  }
  // The output ended (or poll/read failed); the command may still run (a daemon that closed its
  // output): its exit within what is left of the deadline, else killed (124) like above.
  const double left_s = std::chrono::duration<double>(end - std::chrono::steady_clock::now()).count();
  return wait_status(pid, std::max(1.0, left_s));
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
