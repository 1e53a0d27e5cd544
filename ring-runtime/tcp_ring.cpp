// tcp.cpp -- the TCP ring: authenticated connections to the next and from the previous member,
// and one nonblocking engine, driven by the calling thread (no progress thread), that streams
// framed segments: ring reduce-scatter + allgather with chunked pipelining, allgather-then-reduce
// for small buffers, pipelined chain broadcast. Every wait has a deadline; keepalives and abort
// frames travel forward so that the rank after a failed one names it and the rest hear of it.
#include "gate.h"
#include "internal.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
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

int ms_until(int64_t t, int64_t now) {
  int64_t d = t - now;
  if (d <= 0) return 0;
  return static_cast<int>((d + 999999) / 1000000);
}
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

// ---- error handling ------------------------------------------------------------------------
rr TcpRing::on_error(rr code) {
  send_abort(code, last_blamed(), last_detail());
  return code;
}

// One non-blocking sendmsg of what is left of the link's outgoing frame (header, then payload);
// advances the counters by what the kernel took. Returns sendmsg's result.
ssize_t TcpRing::send_pending_frame(int link) {
  iovec iov[2];
  int cnt = 0;
  size_t& hs = out_hdr_sent_[link];
  size_t& ps = out_payload_sent_[link];
  if (hs < 32) iov[cnt++] = {reinterpret_cast<char*>(&out_hdr_[link]) + hs, 32 - hs};
  if (ps < out_payload_len_[link])
    iov[cnt++] = {const_cast<char*>(out_payload_[link]) + ps, out_payload_len_[link] - ps};
  msghdr mh{};
  mh.msg_iov = iov;
  mh.msg_iovlen = cnt;
  ssize_t n = ::sendmsg(fd_of(link), &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n > 0) {
    size_t h = std::min(static_cast<size_t>(n), 32 - hs);
    hs += h;
    ps += static_cast<size_t>(n) - h;
  }
  return n;
}

void TcpRing::send_abort(rr code, int blamed, const std::string& why) {
  if (broken_) return;
  broken_ = true;
  const std::string saved_detail = last_detail();
  const int saved_blamed = last_blamed();
  const int64_t dl = now_ns() + ms_to_ns(std::min(1000, timeout_ms));
  std::string msg = why.substr(0, 900);
  FrameHeader h{};
  h.magic = kFrameMagic;
  h.type = kFrameAbort;
  h.op = static_cast<uint8_t>(code);
  h.length = static_cast<uint32_t>(msg.size());
  h.src = rank_;
  h.aux = blamed;
  seal_header(&h);
  std::string frame(reinterpret_cast<const char*>(&h), sizeof h);
  frame += msg;
  log_msg("giving up on the ring: rank %d failed (%s); telling ranks %d and %d", blamed, saved_detail.c_str(), prev_,
          next_);
  // To both neighbours but the blamed one, each on a frame boundary (a partly written frame is
  // finished first): the previous member watches its connection to us while it sends, so the
  // rank before a dead next one hears why its peer went away; the next one reads it in stream.
  for (int link : {kPrev, kNext}) {
    const int fd = fd_of(link);
    if (fd < 0 || blamed == peer_of(link)) continue;
    bool boundary = true;
    while (out_partial(link)) {
      ssize_t n = send_pending_frame(link);
      if (n > 0) continue;
      if (n < 0 && (errno == EAGAIN || errno == EINTR) && now_ns() < dl) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, 10);
        continue;
      }
      boundary = false;
      break;
    }
    if (boundary) send_all(fd, frame.data(), frame.size(), dl, peer_of(link), "an abort notice");
  }
  set_error(code, saved_blamed, saved_detail);
}

void TcpRing::keepalive_tick() { send_keepalive(kNext); }

void TcpRing::send_keepalive(int link) {
  const int fd = fd_of(link);
  if (fd < 0 || broken_ || out_partial(link)) return;  // mid-frame
  int64_t now = now_ns();
  if (now - last_out_ns_[link] < ms_to_ns(timeout_ms) / 4) return;
  FrameHeader& h = out_hdr_[link];
  h = FrameHeader{};
  h.magic = kFrameMagic;
  h.type = kFrameKeepalive;
  h.src = rank_;
  seal_header(&h);
  out_payload_[link] = nullptr;
  out_payload_len_[link] = out_payload_sent_[link] = 0;
  ssize_t n = ::send(fd, &h, 32, MSG_NOSIGNAL | MSG_DONTWAIT);
  out_hdr_sent_[link] = n > 0 ? static_cast<size_t>(n) : 0;
  if (n < 0 && errno != EAGAIN && errno != EINTR) out_hdr_sent_[link] = 32;  // the error shows up later
  last_out_ns_[link] = now;
}

// In one-way collectives the next member only writes to us to say it gave up (an abort frame),
// to keep us informed (keepalives), or by closing.
rr TcpRing::check_backward() {
  FrameHeader& h = in_hdr_[kNext];
  size_t& got = in_got_[kNext];
  for (;;) {
    while (got < 32) {
      ssize_t n = ::recv(out_.fd, reinterpret_cast<char*>(&h) + got, 32 - got, MSG_DONTWAIT);
      if (n > 0) { got += static_cast<size_t>(n); continue; }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return RINGRT_OK;
      return fail(RINGRT_ERR_PEER, next_, "rank %d died or closed its connection (%s; op %u, %s)", next_,
                  n == 0 ? "end of stream" : std::strerror(errno), seq_, coll_name(kind_));
    }
    if (h.magic == kFrameMagic && h.check == header_check(h) && h.type == kFrameKeepalive) {
      got = 0;
      continue;
    }
    break;
  }
  if (h.magic != kFrameMagic || h.check != header_check(h) || h.type != kFrameAbort || h.length > 1024)
    return fail(RINGRT_ERR_PROTOCOL, next_, "rank %d sent an unexpected frame backwards", next_);
  std::string msg(h.length, '\0');
  if (h.length && recv_all(out_.fd, &msg[0], h.length, now_ns() + ms_to_ns(1000), next_, "an abort notice") != RINGRT_OK)
    msg = "rank " + std::to_string(h.aux) + " failed";
  got = 0;
  return fail(h.op == RINGRT_ERR_PROTOCOL ? RINGRT_ERR_PROTOCOL : RINGRT_ERR_PEER, h.aux, "%s", msg.c_str());
}

// ---- the engine ----------------------------------------------------------------------------
// Streams sends_ and recvs_, each in its order; a send waits for the receive it depends on.
// Frames on one link arrive in the order they were sent, so item numbers match on both sides.
rr TcpRing::run(uint8_t kind, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq) {
  kind_ = kind;
  seq_ = seq;
  dtype_ = t;
  op_ = op;
  const size_t nr = recvs_.size(), ns = sends_.size();
  const size_t esz = dtype_size(t);
  size_t ri = 0, si = 0, rpay = 0;
  bool rhdr = false;
  int slink = kNext;  // link of the data frame sent last
  const int64_t T = ms_to_ns(timeout_ms);
  int64_t now = now_ns();
  int64_t last_in = now, last_progress = now, send_blocked_since = 0, last_tick = now;
  const int64_t spin_ns = static_cast<int64_t>(spin_us) * 1000;
  const char* what = coll_name(kind);

  auto any_partial = [&] { return out_partial(kPrev) || out_partial(kNext); };

  while (ri < nr || si < ns || any_partial()) {
    bool progress = false;
    int wlink = -1;  // the link a send is blocked on
    // ---- send side: finish the frame in flight, then start the next ready item (after a
    // keepalive still in flight on its link); keepalives left on the other link go last.
    while (true) {
      int link;
      if (out_partial(slink)) {
        link = slink;
      } else if (si < ns && (sends_[si].dep < 0 || static_cast<size_t>(sends_[si].dep) < ri)) {
        const SendItem& s = sends_[si];
        link = s.link;
        if (!out_partial(link)) {
          FrameHeader& h = out_hdr_[link];
          h = FrameHeader{};
          h.magic = kFrameMagic;
          h.type = kFrameData;
          h.kind = kind;
          h.dtype = static_cast<uint8_t>(t);
          h.op = static_cast<uint8_t>(op);
          h.seq = seq;
          h.item = static_cast<uint32_t>(si);
          h.length = s.len;
          h.src = rank_;
          h.aux = 0;
          seal_header(&h);
          out_hdr_sent_[link] = 0;
          out_payload_[link] = s.src;
          out_payload_len_[link] = s.len;
          out_payload_sent_[link] = 0;
          slink = link;
          si++;
        }
      } else if (out_partial(slink ^ 1)) {
        link = slink ^ 1;
      } else {
        break;
      }
      ssize_t n = send_pending_frame(link);
      if (n > 0) {
        progress = true;
        send_blocked_since = 0;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        wlink = link;
        break;
      }
      fail(RINGRT_ERR_PEER, peer_of(link), "rank %d died or closed its connection: sending failed: %s (op %u, %s)",
           peer_of(link), std::strerror(errno), seq, what);
      return on_error(RINGRT_ERR_PEER);
    }
    // ---- receive side
    while (ri < nr) {
      const RecvItem& it = recvs_[ri];
      const int fd = fd_of(it.link), peer = peer_of(it.link);
      FrameHeader& hdr = in_hdr_[it.link];
      size_t& got = in_got_[it.link];
      if (!rhdr) {
        if (got < 32) {
          ssize_t n = ::recv(fd, reinterpret_cast<char*>(&hdr) + got, 32 - got, MSG_DONTWAIT);
          if (n > 0) { got += static_cast<size_t>(n); progress = true; last_in = now_ns(); }
          else if (n == 0) {
            fail(RINGRT_ERR_PEER, peer, "rank %d died or closed its connection (op %u, %s)", peer, seq, what);
            return on_error(RINGRT_ERR_PEER);
          } else if (errno == EINTR) continue;
          else if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          else {
            fail(RINGRT_ERR_PEER, peer, "rank %d: connection lost: %s (op %u, %s)", peer, std::strerror(errno), seq,
                 what);
            return on_error(RINGRT_ERR_PEER);
          }
          if (got < 32) continue;
        }
        // a whole header is here: validate it
        const FrameHeader& h = hdr;
        if (h.magic != kFrameMagic || h.check != header_check(h)) {
          fail(RINGRT_ERR_PROTOCOL, peer, "malformed frame from rank %d (bad magic or header checksum; op %u, %s)",
               peer, seq, what);
          return on_error(RINGRT_ERR_PROTOCOL);
        }
        if (h.type == kFrameKeepalive) { got = 0; continue; }
        if (h.type == kFrameAbort) {
          std::string msg;
          if (h.length > 0 && h.length <= 1024) {
            msg.resize(h.length);
            if (recv_all(fd, &msg[0], h.length, now_ns() + ms_to_ns(1000), peer, "an abort notice") != RINGRT_OK)
              msg = "(reason lost)";
          }
          got = 0;
          rr code = (h.op == RINGRT_ERR_PROTOCOL) ? RINGRT_ERR_PROTOCOL : RINGRT_ERR_PEER;
          if (msg.empty()) msg = "rank " + std::to_string(h.aux) + " failed";
          fail(code, h.aux, "%s", msg.c_str());
          return on_error(code);
        }
        const char* bad = nullptr;
        if (h.type != kFrameData) bad = "unknown frame type";
        else if (h.src != peer) bad = "wrong source rank";
        else if (h.seq != seq) bad = "operation sequence number mismatch (ranks called different collectives?)";
        else if (h.kind != kind) bad = "collective mismatch (ranks called different collectives?)";
        else if (h.dtype != t || h.op != op) bad = "dtype/op mismatch";
        else if (h.item != ri) bad = "frame out of order";
        else if (h.length != it.len) bad = "length mismatch (truncated frame, or ranks passed different counts)";
        if (bad) {
          fail(RINGRT_ERR_PROTOCOL, peer,
               "protocol error from rank %d: %s (got type %u seq %u kind %u item %u length %u; expected seq %u kind %u "
               "item %zu length %u)",
               peer, bad, h.type, h.seq, h.kind, h.item, h.length, seq, kind, ri, it.len);
          return on_error(RINGRT_ERR_PROTOCOL);
        }
        rhdr = true;
        rpay = 0;
        got = 0;
      }
      if (rpay < it.len) {
        char* dst = it.action == 0 ? it.dst : staging_.data();
        // the payload and, when it is already there, the header of the link's next frame
        iovec iov[2] = {{dst + rpay, it.len - rpay}, {reinterpret_cast<char*>(&hdr), 32}};
        ssize_t n = ::readv(fd, iov, 2);
        if (n > 0) {
          size_t c = std::min(static_cast<size_t>(n), it.len - rpay);
          rpay += c;
          got = static_cast<size_t>(n) - c;
          progress = true;
          last_in = now_ns();
        } else if (n == 0) {
          fail(RINGRT_ERR_PEER, peer, "rank %d died or closed its connection mid-frame (op %u, %s)", peer, seq, what);
          return on_error(RINGRT_ERR_PEER);
        } else if (errno == EINTR) {
          continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
          break;
        } else {
          fail(RINGRT_ERR_PEER, peer, "rank %d: connection lost: %s (op %u, %s)", peer, std::strerror(errno), seq,
               what);
          return on_error(RINGRT_ERR_PEER);
        }
        if (rpay < it.len) continue;
      }
      if (it.action == 1) reduce_into(it.dst, staging_.data(), it.len / esz, t, op);
      else if (it.action == 2) reduce_into_div(it.dst, staging_.data(), it.len / esz, t, op, div);
      ri++;
      rhdr = false;
    }
    if (progress) {
      last_progress = now_ns();
      continue;
    }
    // ---- nothing moved: check deadlines, keep waiting peers informed, then sleep in poll()
    now = now_ns();
    if (ri < nr && now - last_in > T) {
      const int peer = peer_of(recvs_[ri].link);
      fail(RINGRT_ERR_PEER, peer, "rank %d stalled: no data from it for %d ms (op %u, %s) [detected by rank %d]",
           peer, timeout_ms, seq, what, rank_);
      return on_error(RINGRT_ERR_PEER);
    }
    if (wlink >= 0) {
      if (!send_blocked_since) send_blocked_since = now;
      else if (now - send_blocked_since > T) {
        fail(RINGRT_ERR_PEER, peer_of(wlink),
             "rank %d stalled: it read nothing from us for %d ms (op %u, %s) [detected by rank %d]", peer_of(wlink),
             timeout_ms, seq, what, rank_);
        return on_error(RINGRT_ERR_PEER);
      }
    }
    if (ri < nr) {
      if (one_way_) {
        send_keepalive(kNext);
      } else {
        for (int link : {kPrev, kNext}) send_keepalive(link);
      }
    }
    if (tick_ && now - last_tick > T / 8) { tick_(); last_tick = now; }
    if (spin_ns > 0 && now - last_progress < spin_ns) {
      if (yield_spin) sched_yield();
      continue;
    }
    short events[2] = {0, 0};
    if (ri < nr) events[recvs_[ri].link] |= POLLIN;
    if (wlink >= 0) events[wlink] |= POLLOUT;
    // one-way: an abort notice from the next member while we still send to it
    const bool watch_next = one_way_ && (si < ns || any_partial());
    if (watch_next) events[kNext] |= POLLIN | POLLRDHUP;
    pollfd pf[2];
    int np = 0, next_at = -1;
    for (int link : {kPrev, kNext}) {
      if (!events[link]) continue;
      if (link == kNext) next_at = np;
      pf[np++] = {fd_of(link), events[link], 0};
    }
    int64_t wake = now + T / 8;
    if (ri < nr) wake = std::min(wake, last_in + T + 1000000);
    if (send_blocked_since) wake = std::min(wake, send_blocked_since + T + 1000000);
    int pr = ::poll(pf, np, std::max(1, ms_until(wake, now)));
    if (pr > 0 && watch_next && (pf[next_at].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR))) {
      rr rc = check_backward();
      if (rc != RINGRT_OK) return on_error(rc);
    }
  }
  return RINGRT_OK;
}

// ---- collectives ---------------------------------------------------------------------------
rr TcpRing::allreduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const int m = size();
  if (m == 1) {
    if (div > 1) divide(buf, count, t, div);
    return RINGRT_OK;
  }
  const size_t esz = dtype_size(t);
  if (count * esz <= small_bytes) return allgather_reduce(buf, count, t, op, div, seq, kCollAllreduce);
  recvs_.clear();
  sends_.clear();
  const bool halving = m == 4 && algorithm != TcpAlgorithm::kRing;
  if (halving) plan_halving_allreduce(static_cast<char*>(buf), count, esz, div);
  else plan_ring_allreduce(static_cast<char*>(buf), count, esz, div);
  one_way_ = !halving;
  return run(halving ? kCollAllreduceHalving : kCollAllreduce, t, op, div, seq);
}

// Block b of m (the first count % m blocks one element longer), cut into nseg segments; the
// staging buffer is sized for the largest segment.
namespace {
struct Blocks {
  char* base;
  size_t esz, per, rem, nseg;
  Blocks(char* b, size_t count, size_t e, int m, size_t segment_bytes) : base(b), esz(e) {
    per = count / m;
    rem = count % m;
    size_t seg_elems = std::max<size_t>(1, segment_bytes / esz);
    nseg = std::max<size_t>(1, (per + (rem ? 1 : 0) + seg_elems - 1) / seg_elems);
  }
  size_t size(int b) const { return per + (static_cast<size_t>(b) < rem ? 1 : 0); }
  size_t offset(int b) const { return static_cast<size_t>(b) * per + std::min(static_cast<size_t>(b), rem); }
  void segment(int b, size_t j, char** p, uint32_t* len) const {
    size_t bs = size(b);
    size_t lo = j * bs / nseg, hi = (j + 1) * bs / nseg;
    *p = base + (offset(b) + lo) * esz;
    *len = static_cast<uint32_t>((hi - lo) * esz);
  }
  size_t max_segment_bytes() const { return ((per + (rem ? 1 : 0)) + nseg - 1) / nseg * esz + esz; }
};
}  // namespace

// Ring: 2(m-1) steps; in reduce-scatter step s member i sends block i-s and reduces block
// i-s-1 into its buffer, then the allgather passes the reduced blocks on.
void TcpRing::plan_ring_allreduce(char* base, size_t count, size_t esz, int div) {
  const int m = size(), i = index_;
  const Blocks bl(base, count, esz, m, segment_bytes);
  const size_t nseg = bl.nseg;
  for (int s = 0; s < 2 * (m - 1); ++s) {
    bool rs = s < m - 1;
    int sb = rs ? ((i - s) % m + m) % m : ((i + 1 - (s - (m - 1))) % m + m) % m;
    int rb = rs ? ((i - s - 1) % m + m) % m : ((i - (s - (m - 1))) % m + m) % m;
    for (size_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      bl.segment(sb, j, &p, &len);
      sends_.push_back({p, len, s == 0 ? -1 : static_cast<int32_t>((s - 1) * nseg + j), kNext});
      bl.segment(rb, j, &p, &len);
      uint8_t action = rs ? (s == m - 2 && div > 1 ? 2 : 1) : 0;
      recvs_.push_back({p, len, action, kPrev});
    }
  }
  if (staging_.size() < bl.max_segment_bytes()) staging_.resize(bl.max_segment_bytes());
}

// Recursive halving and doubling on a ring of four, pairs along its edges: (0,1) and (2,3) swap
// halves, then (1,2) and (3,0) swap quarters of what they kept; the allgather retraces the two
// steps backwards. Member i ends the reduction owning quarter mine[i]; other[i] is the rest of
// its half, which its second partner owns. Each member reduces only its own quarter's final
// value, so all members hold bitwise the same result. Items are ordered so that what the next
// step sends first arrives first.
void TcpRing::plan_halving_allreduce(char* base, size_t count, size_t esz, int div) {
  static const int mine[4] = {0, 2, 3, 1};
  static const int other[4] = {1, 3, 2, 0};
  const int i = index_;
  const int p1 = i ^ 1;                                 // step-1 partner: 0-1, 2-3
  const uint8_t l1 = i % 2 == 0 ? kNext : kPrev;
  const uint8_t l2 = i % 2 == 0 ? kPrev : kNext;        // step-2 partner: 1-2, 3-0
  const Blocks q(base, count, esz, 4, segment_bytes);
  const int32_t nseg = static_cast<int32_t>(q.nseg);
  auto sends = [&](int quarter, uint8_t link, int32_t dep_base) {
    for (int32_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      q.segment(quarter, static_cast<size_t>(j), &p, &len);
      sends_.push_back({p, len, dep_base < 0 ? -1 : dep_base + j, link});
    }
  };
  auto recvs = [&](int quarter, uint8_t link, uint8_t action) {
    for (int32_t j = 0; j < nseg; ++j) {
      char* p;
      uint32_t len;
      q.segment(quarter, static_cast<size_t>(j), &p, &len);
      recvs_.push_back({p, len, action, link});
    }
  };
  const int f = mine[i], g = other[i], fp = mine[p1], gp = other[p1];
  // step 1: give the partner its half (what it passes on first, first); reduce ours
  sends(gp, l1, -1);
  sends(fp, l1, -1);
  recvs(g, l1, 1);  // recv items 0 .. nseg-1
  recvs(f, l1, 1);  // nseg .. 2nseg-1
  // step 2: give the second partner its quarter of our half; reduce ours to its final value
  sends(g, l2, 0);
  recvs(f, l2, div > 1 ? 2 : 1);  // 2nseg .. 3nseg-1
  // step 3: swap the final quarters back
  sends(f, l2, 2 * nseg);
  recvs(g, l2, 0);  // 3nseg .. 4nseg-1
  // step 4: swap the final halves back
  sends(f, l1, 2 * nseg);
  sends(g, l1, 3 * nseg);
  recvs(fp, l1, 0);
  recvs(gp, l1, 0);
  if (staging_.size() < q.max_segment_bytes()) staging_.resize(q.max_segment_bytes());
}

rr TcpRing::allgather_reduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq,
                             uint8_t kind) {
  const int m = size();
  const size_t esz = dtype_size(t);
  const size_t bytes = count * esz;
  if (gather_.size() < (m - 1) * bytes) gather_.resize((m - 1) * bytes);
  recvs_.clear();
  sends_.clear();
  for (int s = 0; s < m - 1; ++s) {
    const char* src = s == 0 ? static_cast<const char*>(buf) : gather_.data() + (s - 1) * bytes;
    sends_.push_back({src, static_cast<uint32_t>(bytes), s == 0 ? -1 : s - 1, kNext});
    recvs_.push_back({gather_.data() + s * bytes, static_cast<uint32_t>(bytes), 0, kPrev});
  }
  one_way_ = true;
  RINGRT_CHECK(run(kind == kCollBarrier ? kCollBarrier : kCollAllgatherReduce, t, op, div, seq));
  // combine in member order so that every rank computes bitwise the same result
  auto contrib = [&](int k) -> const char* {
    if (k == index_) return static_cast<const char*>(buf);
    int d = ((index_ - k) % m + m) % m;  // received at step d-1
    return gather_.data() + (d - 1) * bytes;
  };
  if (staging_.size() < bytes) staging_.resize(bytes);
  std::memcpy(staging_.data(), contrib(0), bytes);
  for (int k = 1; k < m; ++k) {
    if (k == m - 1 && div > 1) reduce_into_div(staging_.data(), contrib(k), count, t, op, div);
    else reduce_into(staging_.data(), contrib(k), count, t, op);
  }
  std::memcpy(buf, staging_.data(), bytes);
  return RINGRT_OK;
}

rr TcpRing::broadcast(void* buf, size_t bytes, int root_index, uint32_t seq) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  const int m = size();
  if (m == 1) return RINGRT_OK;
  char* base = static_cast<char*>(buf);
  const size_t nseg = std::max<size_t>(1, (bytes + segment_bytes - 1) / segment_bytes);
  recvs_.clear();
  sends_.clear();
  const bool root = index_ == root_index;
  const bool last = (index_ + 1) % m == root_index;
  for (size_t j = 0; j < nseg; ++j) {
    size_t lo = j * bytes / nseg, hi = (j + 1) * bytes / nseg;
    uint32_t len = static_cast<uint32_t>(hi - lo);
    if (!root) recvs_.push_back({base + lo, len, 0, kPrev});
    if (root) sends_.push_back({base + lo, len, -1, kNext});
    else if (!last) sends_.push_back({base + lo, len, static_cast<int32_t>(j), kNext});
  }
  one_way_ = true;
  return run(kCollBroadcast, RINGRT_INT32, RINGRT_SUM, 0, seq);
}

rr TcpRing::barrier(uint32_t seq) {
  if (broken_) return fail(RINGRT_ERR_STATE, -1, "the ring is broken by an earlier error");
  if (size() == 1) return RINGRT_OK;
  int32_t token = 0;
  return allgather_reduce(&token, 1, RINGRT_INT32, RINGRT_SUM, 0, seq, kCollBarrier);
}

}  // namespace ringrt
