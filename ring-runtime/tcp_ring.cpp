// SPDX-License-Identifier: GPL-2.0-or-later
// tcp_ring.cpp -- the TCP ring's engine: one nonblocking loop, driven by the calling thread (no
// progress thread), that streams framed segments in both directions of both links. Every wait
// has a deadline; keepalives and abort frames travel on so that the rank after a failed one
// names it and the rest hear of it. The collectives that plan its work are in
// tcp_ring_collectives.cpp, forming the ring in tcp_ring_connect.cpp.
#include "tcp_ring.h"

#include "reduce.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ringrt {

// ---- error handling ------------------------------------------------------------------------
rr TcpRing::on_error(rr code) {
  abort(code, last_blamed(), last_detail());
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

void TcpRing::abort(rr code, int blamed, const std::string& why) {
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

void TcpRing::keep_alive() { send_keepalive(kNext); }

std::string TcpRing::describe() const { return size() == 1 ? "" : "TCP congestion control " + congestion_; }

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
      sched_yield();
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

}  // namespace ringrt
