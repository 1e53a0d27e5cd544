// SPDX-License-Identifier: GPL-2.0-or-later
// sockets.cpp -- TCP listen/connect with deadlines, socket tuning, the congestion control of the
// ring's connections, and full sends and receives with deadlines (sockets.h).
#include "sockets.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace ringrt {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) { reset(); fd = o.fd; o.fd = -1; }
  return *this;
}
void Fd::reset() {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void set_nonblocking(int fd, bool on) {
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0) return;
  fcntl(fd, F_SETFL, on ? (fl | O_NONBLOCK) : (fl & ~O_NONBLOCK));
}

void tune_socket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  // Large buffers, but only where the kernel lets us go above its autotuning defaults: a fixed
  // small SO_SNDBUF (capped by net.core.wmem_max) would disable autotuning and collapse
  // throughput on delayed ACKs, so below 4 MiB we leave the kernel to autotune.
  static long wmax = -1, rmax = -1;
  if (wmax < 0) {
    auto rd = [](const char* p) {
      long v = 0;
      if (FILE* f = std::fopen(p, "r")) { if (std::fscanf(f, "%ld", &v) != 1) v = 0; std::fclose(f); }
      return v;
    };
    wmax = rd("/proc/sys/net/core/wmem_max");
    rmax = rd("/proc/sys/net/core/rmem_max");
  }
  const int want = 4 * 1024 * 1024;
  if (wmax >= want) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &want, sizeof want);
  if (rmax >= want) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
}

namespace {
std::string read_first_line(const char* path) {
  std::string line;
  if (FILE* f = std::fopen(path, "r")) {
    char buf[256];
    if (std::fgets(buf, sizeof buf, f)) line = buf;
    std::fclose(f);
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}
bool set_congestion(int fd, const std::string& name) {
  return setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name.data(), static_cast<socklen_t>(name.size())) == 0;
}
}  // namespace

std::string congestion_of(int fd) {
  char name[16] = {};
  socklen_t len = sizeof name;
  if (getsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, &len) != 0) return "";
  return std::string(name, strnlen(name, sizeof name));
}

// Why not BBR: it paces every flow with a high-resolution timer, one timer interrupt per burst
// of packets. Ring traffic is bulk transfers between ranks that are busy on the CPU, where that
// is pure cost: 4 ranks on 2 CPUs over loopback took 64,000 pacing interrupts for 100 allreduces
// of 16 MiB, and without them busbw rose from 1.1-1.2 to 1.85-2.0 GB/s at 16 MiB and from
// 1.4-1.6 to 2.4-2.8 GB/s at 4 MiB. cubic is Linux's own default; reno is the one every
// process may choose.
rr choose_congestion(int fd, const std::string& want) {
  if (want == "system") return RINGRT_OK;
  const std::string now = congestion_of(fd);
  if (want == "auto") {
    if (now.compare(0, 3, "bbr") != 0) return RINGRT_OK;
    for (const char* alt : {"cubic", "reno"}) {
      if (set_congestion(fd, alt)) return RINGRT_OK;
    }
    return RINGRT_OK;  // neither is allowed here: BBR it is
  }
  if (want == now || set_congestion(fd, want)) return RINGRT_OK;
  const int err = errno;
  std::string allowed = read_first_line("/proc/sys/net/ipv4/tcp_allowed_congestion_control");
  std::string available = read_first_line("/proc/sys/net/ipv4/tcp_available_congestion_control");
  return fail(RINGRT_ERR_CONFIG, -1,
              "RINGRT_TCP_CONGESTION=\"%s\": the kernel refused it (%s); available: %s; allowed without "
              "CAP_NET_ADMIN: %s",
              want.c_str(), std::strerror(err), available.empty() ? "?" : available.c_str(),
              allowed.empty() ? "?" : allowed.c_str());
}

rr tcp_listen(const std::string& addr, int port, Fd* out, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  char portbuf[16];
  std::snprintf(portbuf, sizeof portbuf, "%d", port);
  int gai = getaddrinfo(addr.empty() ? nullptr : addr.c_str(), portbuf, &hints, &res);
  if (gai != 0)
    return fail(RINGRT_ERR_CONFIG, -1, "cannot resolve listen address %s: %s", addr.c_str(), gai_strerror(gai));
  int last_errno = 0;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) { last_errno = errno; continue; }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 128) == 0) {
      sockaddr_storage ss{};
      socklen_t sl = sizeof ss;
      getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl);
      if (bound_port)
        *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                               : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
      freeaddrinfo(res);
      set_nonblocking(fd, true);
      *out = Fd(fd);
      return RINGRT_OK;
    }
    last_errno = errno;
    ::close(fd);
  }
  freeaddrinfo(res);
  return fail(RINGRT_ERR_SYSTEM, -1, "cannot listen on %s:%d: %s", addr.empty() ? "*" : addr.c_str(), port,
              std::strerror(last_errno));
}


rr tcp_connect(const std::string& host, int port, int64_t deadline_ns, Fd* out, int peer_rank,
               const std::string& congestion) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  char portbuf[16];
  std::snprintf(portbuf, sizeof portbuf, "%d", port);
  std::string why = "timed out";
  while (true) {
    addrinfo* res = nullptr;
    int gai = getaddrinfo(host.c_str(), portbuf, &hints, &res);
    if (gai != 0) {
      why = std::string("cannot resolve: ") + gai_strerror(gai);
    } else {
      for (addrinfo* ai = res; ai; ai = ai->ai_next) {
        int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) continue;
        tune_socket(fd);
        rr cc = choose_congestion(fd, congestion);
        if (cc != RINGRT_OK) {
          ::close(fd);
          freeaddrinfo(res);
          return cc;
        }
        int rc = ::connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc != 0 && errno == EINPROGRESS) {
          pollfd p{fd, POLLOUT, 0};
          int pr;
          do { pr = ::poll(&p, 1, ms_until(deadline_ns, now_ns())); } while (pr < 0 && errno == EINTR);
          int err = 0;
          socklen_t el = sizeof err;
          if (pr == 1) getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
          rc = (pr == 1 && err == 0) ? 0 : -1;
          errno = pr == 1 ? err : ETIMEDOUT;
        }
        if (rc == 0) {
          freeaddrinfo(res);
          *out = Fd(fd);
          return RINGRT_OK;
        }
        why = std::strerror(errno);
        ::close(fd);
      }
      freeaddrinfo(res);
    }
    if (now_ns() + ms_to_ns(50) >= deadline_ns) break;
    usleep(50 * 1000);
  }
  if (peer_rank >= 0)
    return fail(RINGRT_ERR_TIMEOUT, peer_rank, "cannot connect to rank %d at %s:%d: %s", peer_rank,
                host.c_str(), port, why.c_str());
  return fail(RINGRT_ERR_TIMEOUT, 0, "cannot connect to the master (rank 0) at %s:%d: %s", host.c_str(), port,
              why.c_str());
}

rr send_all(int fd, const void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what) {
  const char* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) { p += n; len -= static_cast<size_t>(n); continue; }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      int ms = ms_until(deadline_ns, now_ns());
      if (ms <= 0) return fail(RINGRT_ERR_PEER, peer_rank, "rank %d did not read %s in time", peer_rank, what);
      pollfd pf{fd, POLLOUT, 0};
      ::poll(&pf, 1, ms);
      continue;
    }
    return fail(RINGRT_ERR_PEER, peer_rank, "rank %d: connection lost while sending %s: %s", peer_rank, what,
                std::strerror(errno));
  }
  return RINGRT_OK;
}

rr recv_all(int fd, void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what) {
  char* p = static_cast<char*>(buf);
  while (len > 0) {
    ssize_t n = ::recv(fd, p, len, MSG_DONTWAIT);
    if (n > 0) { p += n; len -= static_cast<size_t>(n); continue; }
    if (n == 0)
      return fail(RINGRT_ERR_PEER, peer_rank, "rank %d closed the connection while we waited for %s", peer_rank,
                  what);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      int ms = ms_until(deadline_ns, now_ns());
      if (ms <= 0) return fail(RINGRT_ERR_PEER, peer_rank, "rank %d did not send %s in time", peer_rank, what);
      pollfd pf{fd, POLLIN, 0};
      ::poll(&pf, 1, ms);
      continue;
    }
    return fail(RINGRT_ERR_PEER, peer_rank, "rank %d: connection lost while receiving %s: %s", peer_rank, what,
                std::strerror(errno));
  }
  return RINGRT_OK;
}

std::string local_ip_of(int fd) {
  sockaddr_storage ss{};
  socklen_t sl = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &sl) != 0) return "127.0.0.1";
  char h[NI_MAXHOST] = "127.0.0.1";
  getnameinfo(reinterpret_cast<sockaddr*>(&ss), sl, h, sizeof h, nullptr, 0, NI_NUMERICHOST);
  return h;
}

}  // namespace ringrt
