// SPDX-License-Identifier: GPL-2.0-or-later
// gate.cpp -- the concurrent handshake server (see gate.h).
#include "gate.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace ringrt {

namespace {
// Refusals logged one by one; the rest are counted in the closing summary, so that a flood of
// connections cannot flood the job's log.
constexpr int kLoggedRefusals = 8;
constexpr int kAcceptsPerRound = 64;

std::string peer_name(const sockaddr_storage& ss, socklen_t sl) {
  char h[NI_MAXHOST] = "?", s[NI_MAXSERV] = "?";
  getnameinfo(reinterpret_cast<const sockaddr*>(&ss), sl, h, sizeof h, s, sizeof s, NI_NUMERICHOST | NI_NUMERICSERV);
  return std::string(h) + ":" + s;
}
}  // namespace

void Visitor::send(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  out_.insert(out_.end(), b, b + n);
}

std::string GateStats::summary() const {
  std::string s;
  auto part = [&s](int n, const char* what) {
    if (n == 0) return;
    s += (s.empty() ? "" : ", ") + std::to_string(n) + " " + what;
  };
  part(closed_by_protocol, "refused or malformed");
  part(too_slow, "without a handshake before their deadline");
  part(hung_up, "hung up mid-handshake");
  part(evicted, "dropped for newer ones");
  return s;
}

void Gate::drop(const Visitor& v, int* counter, const char* why) {
  ++*counter;
  if (why && logged_ < kLoggedRefusals) {
    log_msg("%s: refused connection from %s: %s", what_, v.who().c_str(), why);
    if (++logged_ == kLoggedRefusals) log_msg("%s: further refusals are counted, not logged", what_);
  }
}

bool Gate::serve(Handshake& h, Visitor& v, short revents) {
  if (revents & (POLLERR | POLLNVAL)) {
    drop(v, &stats_.hung_up, nullptr);
    return false;
  }
  for (;;) {
    while (v.sent_ < v.out_.size()) {
      ssize_t n = ::send(v.fd(), v.out_.data() + v.sent_, v.out_.size() - v.sent_, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n > 0) { v.sent_ += static_cast<size_t>(n); continue; }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
      drop(v, &stats_.hung_up, nullptr);
      return false;
    }
    v.out_.clear();
    v.sent_ = 0;
    if (v.admit_) {
      stats_.admitted++;
      h.admit(v);
      return false;
    }
    if (v.close_) {
      drop(v, &stats_.closed_by_protocol, v.why_.empty() ? nullptr : v.why_.c_str());
      return false;
    }
    if (v.in_.size() >= v.need_) {  // nothing asked for: wait for the deadline, unless it is gone
      if (!(revents & POLLHUP)) return true;
      drop(v, &stats_.hung_up, nullptr);
      return false;
    }
    // Read no more than asked for: what a visitor may make us hold is bounded by the protocol.
    uint8_t buf[512];
    const size_t want = std::min(sizeof buf, v.need_ - v.in_.size());
    ssize_t n = ::recv(v.fd(), buf, want, MSG_DONTWAIT);
    if (n > 0) {
      v.in_.insert(v.in_.end(), buf, buf + n);
      if (v.in_.size() == v.need_) h.heard(v);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    drop(v, &stats_.hung_up, nullptr);
    return false;
  }
}

bool Gate::accept_all(Handshake& h, int64_t now) {
  for (int i = 0; i < kAcceptsPerRound; ++i) {
    sockaddr_storage ss{};
    socklen_t sl = sizeof ss;
    int fd = ::accept4(lfd_, reinterpret_cast<sockaddr*>(&ss), &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        if (pending_.empty()) return false;
        drop(*pending_.front(), &stats_.evicted, nullptr);
        pending_.erase(pending_.begin());
        continue;
      }
      return true;  // EAGAIN, or an error the next round may not have
    }
    stats_.accepted++;
    if (pending_.size() >= max_pending_) {
      drop(*pending_.front(), &stats_.evicted, nullptr);
      pending_.erase(pending_.begin());
    }
    tune_socket(fd);
    std::unique_ptr<Visitor> v(new Visitor(Fd(fd), peer_name(ss, sl), now + handshake_ns_));
    h.greet(*v);
    if (serve(h, *v, 0)) pending_.push_back(std::move(v));
    if (h.complete()) return true;
  }
  return true;
}

rr Gate::run(Handshake& h, int64_t deadline_ns) {
  rr result = RINGRT_OK;
  bool starved = false;  // out of descriptors: leave the listener alone for a moment
  std::vector<pollfd> pf;
  while (!h.complete()) {
    const int64_t now = now_ns();
    if (now >= deadline_ns) {
      result = RINGRT_ERR_TIMEOUT;
      break;
    }
    int64_t wake = deadline_ns;
    pf.clear();
    pf.push_back({lfd_, static_cast<short>(starved ? 0 : POLLIN), 0});
    for (const auto& v : pending_) {
      short ev = 0;
      if (v->in_.size() < v->need_) ev |= POLLIN;
      if (v->sent_ < v->out_.size()) ev |= POLLOUT;
      pf.push_back({v->fd(), ev, 0});
      wake = std::min(wake, v->deadline_);
    }
    int ms = static_cast<int>(std::min<int64_t>((wake - now + 999999) / 1000000, 1000));
    if (starved) ms = std::min(ms, 10);
    int pr = ::poll(pf.data(), pf.size(), std::max(ms, 1));
    if (pr < 0 && errno != EINTR) {
      result = fail(RINGRT_ERR_SYSTEM, -1, "%s: poll: %s", what_, std::strerror(errno));
      break;
    }
    starved = false;
    // What has arrived is heard before deadlines are enforced: a slow listener (a loaded node,
    // valgrind) must not blame its own delay on a peer that answered in time.
    const int64_t after = now_ns();
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const short rev = pr > 0 ? pf[i + 1].revents : 0;
      if (rev && !serve(h, *pending_[i], rev)) continue;
      if (pending_[i]->deadline_ <= after) {
        drop(*pending_[i], &stats_.too_slow, nullptr);
        continue;
      }
      pending_[kept++] = std::move(pending_[i]);
    }
    pending_.resize(kept);
    if (pr > 0 && !h.complete() && (pf[0].revents & POLLIN)) starved = !accept_all(h, after);
  }
  pending_.clear();
  if (!stats_.summary().empty()) log_msg("%s: turned away %s", what_, stats_.summary().c_str());
  return result;
}

}  // namespace ringrt
