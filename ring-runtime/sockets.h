// SPDX-License-Identifier: GPL-2.0-or-later
// sockets.h -- the TCP pieces under the rendezvous and the ring: an owning descriptor, listen and
// connect with deadlines, tuning, congestion control, full sends and receives with deadlines.
#ifndef RINGRT_SOCKETS_H
#define RINGRT_SOCKETS_H

#include "errors.h"

#include <string>

namespace ringrt {

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept;
  ~Fd() { reset(); }
  void reset();
  int release() { int f = fd; fd = -1; return f; }
  bool ok() const { return fd >= 0; }
};
// Listen on addr:port (addr empty: any); port 0 picks one; *bound_port gets it.
rr tcp_listen(const std::string& addr, int port, Fd* out, int* bound_port);
// Connect with retries on refusal until deadline, with the congestion control chosen by
// choose_congestion() (before connecting: see there).
rr tcp_connect(const std::string& host, int port, int64_t deadline_ns, Fd* out, int peer_rank,
               const std::string& congestion);
void tune_socket(int fd);
// The congestion control of the ring's data connections. "system": the kernel's default,
// untouched. "auto": the same, unless it is BBR, which is replaced by the first of cubic and
// reno that the kernel lets this process choose (sockets.cpp says why). Any other name: that
// one, or an error naming what the kernel allows. Applied to a socket before it connects, or to
// a listener (accepted connections inherit it): a connection that started with BBR keeps
// pacing. congestion_of() tells what a socket has.
rr choose_congestion(int fd, const std::string& want);
std::string congestion_of(int fd);
void set_nonblocking(int fd, bool on);
// Blocking-with-deadline full send / receive on a nonblocking socket; RINGRT_ERR_PEER (with a
// detail naming peer_rank) on end of stream, error or deadline.
rr send_all(int fd, const void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what);
rr recv_all(int fd, void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what);
std::string local_ip_of(int fd);

}  // namespace ringrt

#endif  // RINGRT_SOCKETS_H
