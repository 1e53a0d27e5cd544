// SPDX-License-Identifier: GPL-2.0-or-later
// tcp_ring_connect.cpp -- forming and closing the TCP ring: each member connects to the next
// and proves the job secret for this session; its own listener admits the previous member
// through a Gate, so that strangers on that port cannot delay it; closing drains what is left.
#include "tcp_ring.h"

#include "backends.h"
#include "crypto.h"
#include "gate.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ringrt {

namespace {
constexpr uint32_t kDataMagic = 0x44545252u;  // "RRTD"
struct DHello {
  uint32_t magic;
  uint8_t session[16];
  int32_t from;
  int32_t to;
  uint8_t nonce[16];
  uint8_t mac[32];
};
struct DAck {
  uint32_t magic;
  uint8_t mac[32];
};

void dhello_mac(const std::string& secret, const DHello& h, uint8_t out[32]) {
  uint8_t buf[11 + 16 + 8 + 16];
  std::memcpy(buf, "ringrt-data", 11);
  std::memcpy(buf + 11, h.session, 16);
  std::memcpy(buf + 27, &h.from, 4);
  std::memcpy(buf + 31, &h.to, 4);
  std::memcpy(buf + 35, h.nonce, 16);
  hmac_sha256(secret, buf, sizeof buf, out);
}
void dack_mac(const std::string& secret, const DHello& h, uint8_t out[32]) {
  uint8_t buf[11 + 16 + 8 + 16];
  std::memcpy(buf, "ringrt-dack", 11);
  std::memcpy(buf + 11, h.session, 16);
  std::memcpy(buf + 27, &h.to, 4);
  std::memcpy(buf + 31, &h.from, 4);
  std::memcpy(buf + 35, h.nonce, 16);
  hmac_sha256(secret, buf, sizeof buf, out);
}
// The ring's listener: admits the one connection from the previous member that proves the
// job secret for this session.
class RingDoor : public Handshake {
 public:
  RingDoor(const std::string& secret, const uint8_t session[16], int prev, int me)
      : secret_(secret), session_(session), prev_(prev), me_(me) {}
  void greet(Visitor& v) override { v.expect(sizeof(DHello)); }
  void heard(Visitor& v) override {
    DHello h;
    std::memcpy(&h, v.in().data(), sizeof h);
    if (h.magic != kDataMagic) {
      v.refuse_when_sent("malformed handshake");
      return;
    }
    uint8_t mac[32];
    dhello_mac(secret_, h, mac);
    if (!equal_ct(mac, h.mac, 32) || std::memcmp(h.session, session_, 16) != 0) {
      v.refuse_when_sent("claiming rank " + std::to_string(h.from) +
                         ": it does not prove the job secret for this session");
      return;
    }
    if (h.from != prev_ || h.to != me_) {
      v.refuse_when_sent("rank " + std::to_string(h.from) + " -> " + std::to_string(h.to) + ", expected " +
                         std::to_string(prev_) + " -> " + std::to_string(me_));
      return;
    }
    DAck ack{};
    ack.magic = kDataMagic;
    dack_mac(secret_, h, ack.mac);
    v.send(&ack, sizeof ack);
    v.admit_when_sent();
  }
  void admit(Visitor& v) override { in_ = v.take_fd(); }
  bool complete() const override { return in_.ok(); }
  Fd take() { return std::move(in_); }

 private:
  const std::string& secret_;
  const uint8_t* session_;
  int prev_, me_;
  Fd in_;
};

}  // namespace

// Closing a socket that still holds unread bytes makes the kernel reset the connection, and a
// reset can overtake the abort notice we just sent. So: say we are done writing, read what is
// left (bounded), then close. After a failure the neighbours get a moment to read our notice.
TcpRing::~TcpRing() {
  if (!in_.ok() && !out_.ok()) return;
  if (in_.ok()) ::shutdown(in_.fd, SHUT_WR);
  if (out_.ok()) ::shutdown(out_.fd, SHUT_WR);
  const int64_t deadline = now_ns() + ms_to_ns(broken_ ? 300 : 0);
  bool in_open = in_.ok(), out_open = out_.ok();
  char sink[65536];
  while (in_open || out_open) {
    bool idle = true;
    for (int k = 0; k < 2; ++k) {
      bool& open = k == 0 ? in_open : out_open;
      int fd = k == 0 ? in_.fd : out_.fd;
      if (!open) continue;
      ssize_t n = ::recv(fd, sink, sizeof sink, MSG_DONTWAIT);
      if (n > 0) idle = false;
      else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) open = false;
    }
    if (!idle) continue;
    int64_t now = now_ns();
    if (now >= deadline) break;
    pollfd pf[2];
    int np = 0;
    if (in_open) pf[np++] = {in_.fd, POLLIN, 0};
    if (out_open) pf[np++] = {out_.fd, POLLIN, 0};
    ::poll(pf, np, std::max(1, ms_until(deadline, now)));
  }
}

rr TcpRing::connect(const Config& cfg, const Table& table, const std::vector<int>& members, int listen_fd,
                    int64_t deadline) {
  members_ = members;
  rank_ = cfg.rank;
  timeout_ms = cfg.timeout_ms;
  algorithm = cfg.tcp_algorithm;
  auto it = std::find(members_.begin(), members_.end(), rank_);
  if (it == members_.end()) return fail(RINGRT_ERR_STATE, -1, "rank %d is not a member of its ring", rank_);
  index_ = static_cast<int>(it - members_.begin());
  const int m = size();
  if (m == 1) return RINGRT_OK;
  next_ = members_[(index_ + 1) % m];
  prev_ = members_[(index_ + m - 1) % m];
  const PeerInfo& np = table.peers[next_];
  RINGRT_CHECK(tcp_connect(np.ip, np.port, deadline, &out_, next_, cfg.tcp_congestion));
  DHello mine{};
  mine.magic = kDataMagic;
  std::memcpy(mine.session, table.session, 16);
  mine.from = rank_;
  mine.to = next_;
  random_bytes(mine.nonce, 16);
  dhello_mac(cfg.secret, mine, mine.mac);
  RINGRT_CHECK(send_all(out_.fd, &mine, sizeof mine, deadline, next_, "the ring handshake"));
  // Serve the data listener until the expected previous member shows up with a valid proof;
  // whoever else connects gets the same short deadline and cannot delay it.
  RingDoor door(cfg.secret, table.session, prev_, rank_);
  Gate gate("ring listener", listen_fd, cfg.handshake_ms);
  rr rc = gate.run(door, deadline);
  if (rc == RINGRT_ERR_TIMEOUT) {
    const std::string turned = gate.stats().summary();
    return fail(RINGRT_ERR_PEER, prev_, "rank %d never connected to us (ring formation timed out)%s%s", prev_,
                turned.empty() ? "" : "; connections turned away: ", turned.c_str());
  }
  RINGRT_CHECK(rc);
  in_ = door.take();
  DAck ack{};
  RINGRT_CHECK(recv_all(out_.fd, &ack, sizeof ack, deadline, next_, "the ring handshake"));
  uint8_t mac[32];
  dack_mac(cfg.secret, mine, mac);
  if (ack.magic != kDataMagic || !equal_ct(mac, ack.mac, 32))
    return fail(RINGRT_ERR_AUTH, next_, "rank %d does not prove the job secret", next_);
  last_out_ns_[kPrev] = last_out_ns_[kNext] = now_ns();
  const std::string to_next = congestion_of(out_.fd), from_prev = congestion_of(in_.fd);
  congestion_ = to_next == from_prev ? to_next
                                     : to_next + " to rank " + std::to_string(next_) + ", " + from_prev +
                                           " from rank " + std::to_string(prev_);
  return RINGRT_OK;
}

rr make_tcp_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out) {
  std::unique_ptr<TcpRing> ring(new TcpRing);
  // Oversubscribed: 4 ranks on 2 CPUs here, where spinning (yielding) cut the 4 KiB allreduce
  // from ~150 to ~60 us and doubled busbw at 64 KiB-1 MiB against sleeping in poll(). Not
  // oversubscribed, a spin that did not yield cost 4 ms per 4 KiB-1 MiB allreduce on a busy
  // machine (2 ranks, load 5: 4.0-4.4 ms against 0.05-0.5 ms yielding).
  ring->spin_us = ctx.topo.oversubscribed() ? 1000 : 2000;
  std::vector<int> all(ctx.topo.world);
  for (int r = 0; r < ctx.topo.world; ++r) all[r] = r;
  RINGRT_CHECK(ring->connect(ctx.cfg, ctx.table, all, ctx.listen_fd, ctx.deadline));
  *out = std::move(ring);
  return RINGRT_OK;
}

}  // namespace ringrt
