// SPDX-License-Identifier: GPL-2.0-or-later
// Helpers for programs that start every rank of a world on this host (ringrt-bench, ringrun
// outside a job, the ring runtime's tests): a free loopback port for the rendezvous, and a
// monotonic clock in seconds.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

namespace ringrt_local {

// A port nobody listens on right now (the kernel's pick for an ephemeral bind); 0 on failure.
inline int free_port() {
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
