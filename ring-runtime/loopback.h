// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers for programs that start every rank of a world on this host (ringrt-bench, ringrun
// outside a job, the ring runtime's tests): a free loopback port for the rendezvous, and a
// monotonic clock in seconds.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

namespace ringrt_local {

// A port nobody listens on right now; 0 on failure. Chosen below the kernel's ephemeral range
// (ip_local_port_range), where connections do not get their local ports: a port the kernel picked
// for a bind that is then closed can be handed to some outgoing connection before the rank that
// should listen on it binds it (test_ringrt failed once so, "Address already in use"). A random
// start (pid and clock) keeps programs started together apart; the kernel's pick if none binds.
inline bool port_binds(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);  // the master listens on every address
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  close(fd);
  return ok;
}

inline int free_port() {
  int low = 32768;  // Linux's default start of the ephemeral range
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    int lo = 0, hi = 0;
    if (std::fscanf(f, "%d %d", &lo, &hi) == 2 && lo > 1024) low = lo;
    std::fclose(f);
  }
  constexpr int kFirst = 10000;  // above the well-known and most registered service ports
  if (low > kFirst + 100) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    unsigned x = static_cast<unsigned>(getpid()) * 2654435761u ^ static_cast<unsigned>(ts.tv_nsec);
    const int span = low - kFirst;
    for (int tries = 0; tries < 64; ++tries) {
      x = x * 1664525u + 1013904223u;
      const int port = kFirst + static_cast<int>((x >> 8) % static_cast<unsigned>(span));
      if (port_binds(port)) return port;
    }
  }
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t l = sizeof a;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &l) == 0)
    port = ntohs(a.sin_port);
  close(fd);
  return port;
}

inline double mono_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

}  // namespace ringrt_local
