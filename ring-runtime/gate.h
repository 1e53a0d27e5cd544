// SPDX-License-Identifier: GPL-2.0-or-later
// gate.h -- serves the handshakes on a listening socket concurrently, so that no connection can
// hold the door for the others: every connection has its own short deadline and a bound on what
// it may send, and is driven by one poll() loop in the calling thread. The protocol (what to say
// first, what to read next, whom to admit) is a Handshake; the rendezvous and the ring's data
// listener each have one.
#ifndef RINGRT_GATE_H
#define RINGRT_GATE_H

#include "sockets.h"

#include <memory>
#include <string>
#include <vector>

namespace ringrt {

// One connection during its handshake.
class Visitor {
 public:
  Visitor(Fd fd, std::string who, int64_t deadline_ns) : fd_(std::move(fd)), who_(std::move(who)), deadline_(deadline_ns) {}
  // Queue bytes to send.
  void send(const void* p, size_t n);
  // Read exactly n bytes (what was read before is dropped) before the Handshake hears again.
  void expect(size_t n) { in_.clear(); need_ = n; }
  // Once what is queued has gone: hand the connection to the Handshake...
  void admit_when_sent() { admit_ = true; need_ = 0; }
  // ... or close it, saying why in the log (the Gate logs the first few refusals and counts all).
  void refuse_when_sent(std::string why) { close_ = true; need_ = 0; why_ = std::move(why); }
  const std::vector<uint8_t>& in() const { return in_; }
  const std::string& who() const { return who_; }
  int fd() const { return fd_.fd; }
  Fd take_fd() { return std::move(fd_); }
  // The Handshake's own notes on this connection.
  int stage = 0;
  int rank = -1;             // the rank it proved to be
  uint8_t nonce[32] = {};    // the challenge sent to it

 private:
  friend class Gate;
  Fd fd_;
  std::string who_;
  int64_t deadline_;
  std::vector<uint8_t> in_;
  size_t need_ = 0;
  std::vector<uint8_t> out_;
  size_t sent_ = 0;
  bool admit_ = false, close_ = false;
  std::string why_;
};

// The protocol a Gate runs on each connection.
class Handshake {
 public:
  virtual ~Handshake() = default;
  // A new connection: queue the first words and say how many bytes to read.
  virtual void greet(Visitor& v) = 0;
  // v.in() holds the bytes asked for: queue a reply and expect more, admit, or close.
  virtual void heard(Visitor& v) = 0;
  // An admitted connection whose reply has gone: take its socket.
  virtual void admit(Visitor& v) = 0;
  // Enough connections are admitted: the Gate returns.
  virtual bool complete() const = 0;
};

// What the Gate turned away, for the message of a rendezvous that times out and for the log.
struct GateStats {
  int accepted = 0, admitted = 0;
  int closed_by_protocol = 0;  // refused or malformed
  int hung_up = 0;             // went away mid-handshake
  int too_slow = 0;            // no handshake before the per-connection deadline
  int evicted = 0;             // oldest pending ones, dropped to make room for newer ones
  std::string summary() const;
};

class Gate {
 public:
  // Handshakes on listen_fd (nonblocking) get handshake_ms each; at most max_pending at once
  // (beyond that the oldest is dropped: a real peer finishes its handshake in a round trip).
  // `what` names the door in the log ("rendezvous", "ring listener").
  Gate(const char* what, int listen_fd, int handshake_ms, size_t max_pending = kMaxPending)
      : what_(what), lfd_(listen_fd), handshake_ns_(ms_to_ns(handshake_ms)), max_pending_(max_pending) {}
  static constexpr size_t kMaxPending = 256;
  // Serve until h.complete() (RINGRT_OK) or deadline_ns (RINGRT_ERR_TIMEOUT, no detail set).
  rr run(Handshake& h, int64_t deadline_ns);
  const GateStats& stats() const { return stats_; }

 private:
  // Accepts what is waiting; false when out of descriptors with nobody left to drop.
  bool accept_all(Handshake& h, int64_t now);
  // Moves bytes both ways; false when the connection is finished with (closed or admitted).
  bool serve(Handshake& h, Visitor& v, short revents);
  void drop(const Visitor& v, int* counter, const char* why);
  const char* what_;
  int lfd_;
  int64_t handshake_ns_;
  size_t max_pending_;
  std::vector<std::unique_ptr<Visitor>> pending_;  // oldest first
  GateStats stats_;
  int logged_ = 0;  // refusals logged one by one so far
};

}  // namespace ringrt

#endif  // RINGRT_GATE_H
