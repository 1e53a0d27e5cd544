// SPDX-License-Identifier: GPL-2.0-or-later
// rendezvous.cpp -- rank 0 serves on the master address; every other rank proves it knows the
// per-job secret (HMAC-SHA256 challenge-response), rank 0 proves it back at once (the welcome),
// and once all are in everyone receives the table of ranks (node, data address, pid) plus a
// fresh session id, sealed for each rank. The port is predictable (it may come from the job id),
// so rank 0 serves every connection at once with a short handshake deadline each (gate.h):
// idle, slow or garbage connections from anyone else cannot delay or fail the job, and a rank
// whose connection was dropped before its welcome connects again.
#include "rendezvous.h"

#include "backends.h"
#include "crypto.h"
#include "gate.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace ringrt {

namespace {

constexpr uint32_t kCtlMagic = 0x4d545252u;  // "RRTM"
constexpr uint32_t kVersion = 2;  // 2: rank 0 welcomes each rank as soon as it has proved itself
enum CtlType : uint32_t { kChallenge = 1, kHello = 2, kTable = 3, kRefuse = 4, kWelcome = 5 };
constexpr int kRetryMs = 50;  // pause before a rank connects to rank 0 again

struct CtlHead {
  uint32_t magic;
  uint32_t type;
  uint32_t len;
};

struct Challenge {
  uint32_t version;
  uint8_t nonce_s[32];
};

struct HelloBody {
  uint32_t version;
  int32_t rank;
  int32_t world;
  int32_t backend;
  int32_t data_port;
  int32_t pid;
  uint8_t nonce_c[32];
  char host[64];
  char ip[48];
};
struct Hello {
  HelloBody body;
  uint8_t mac[32];
};

struct Welcome {
  uint8_t mac[32];  // HMAC(secret, "ringrt-welcome" | the hello's body), the body holding a fresh nonce
};

struct Refuse {
  int32_t code;
  char reason[200];
};

struct TableEntry {
  int32_t rank;
  int32_t port;
  int32_t pid;
  char host[64];
  char ip[48];
};

void copy_str(char* dst, size_t cap, const std::string& s) {
  std::memset(dst, 0, cap);
  std::memcpy(dst, s.data(), s.size() < cap - 1 ? s.size() : cap - 1);
}
std::string from_str(const char* s, size_t cap) { return std::string(s, strnlen(s, cap)); }

rr send_ctl(int fd, uint32_t type, const void* body, size_t len, int64_t deadline, int peer) {
  CtlHead h{kCtlMagic, type, static_cast<uint32_t>(len)};
  RINGRT_CHECK(send_all(fd, &h, sizeof h, deadline, peer, "a rendezvous message"));
  return send_all(fd, body, len, deadline, peer, "a rendezvous message");
}

// Receives one control message of the given type into out (exact length), or a refusal.
rr recv_ctl(int fd, uint32_t want, std::vector<uint8_t>* out, size_t max_len, int64_t deadline, int peer) {
  CtlHead h{};
  RINGRT_CHECK(recv_all(fd, &h, sizeof h, deadline, peer, "a rendezvous message"));
  if (h.magic != kCtlMagic || h.len > std::max(max_len, sizeof(Refuse)))
    return fail(RINGRT_ERR_PROTOCOL, peer, "malformed rendezvous message from %s",
                peer >= 0 ? ("rank " + std::to_string(peer)).c_str() : "a peer");
  out->resize(h.len);
  if (h.len) RINGRT_CHECK(recv_all(fd, out->data(), h.len, deadline, peer, "a rendezvous message"));
  if (h.type == kRefuse && h.len == sizeof(Refuse)) {
    Refuse r;
    std::memcpy(&r, out->data(), sizeof r);
    rr code = (r.code > 0 && r.code <= RINGRT_ERR_NOMEM) ? static_cast<rr>(r.code) : RINGRT_ERR_AUTH;
    return fail(code, 0, "rank 0 refused us: %s", from_str(r.reason, sizeof r.reason).c_str());
  }
  if (h.type != want)
    return fail(RINGRT_ERR_PROTOCOL, peer, "unexpected rendezvous message type %u", h.type);
  return RINGRT_OK;
}

void refuse(int fd, rr code, const std::string& why, int64_t deadline) {
  Refuse r{};
  r.code = code;
  copy_str(r.reason, sizeof r.reason, why);
  send_ctl(fd, kRefuse, &r, sizeof r, deadline, -1);
}

void hello_mac(const std::string& secret, const uint8_t nonce_s[32], const HelloBody& b, uint8_t out[32]) {
  std::vector<uint8_t> buf;
  const char* tag = "ringrt-hello";
  buf.insert(buf.end(), tag, tag + std::strlen(tag));
  buf.insert(buf.end(), nonce_s, nonce_s + 32);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&b);
  buf.insert(buf.end(), p, p + sizeof b);
  hmac_sha256(secret, buf.data(), buf.size(), out);
}

void welcome_mac(const std::string& secret, const HelloBody& b, uint8_t out[32]) {
  std::vector<uint8_t> buf;
  const char* tag = "ringrt-welcome";
  buf.insert(buf.end(), tag, tag + std::strlen(tag));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&b);
  buf.insert(buf.end(), p, p + sizeof b);
  hmac_sha256(secret, buf.data(), buf.size(), out);
}

void table_mac(const std::string& secret, const uint8_t nonce_c[32], const std::vector<uint8_t>& table,
               uint8_t out[32]) {
  std::vector<uint8_t> buf;
  const char* tag = "ringrt-table";
  buf.insert(buf.end(), tag, tag + std::strlen(tag));
  buf.insert(buf.end(), nonce_c, nonce_c + 32);
  buf.insert(buf.end(), table.begin(), table.end());
  hmac_sha256(secret, buf.data(), buf.size(), out);
}

std::vector<uint8_t> encode_table(const Table& t) {
  std::vector<uint8_t> out(16 + 8 + t.peers.size() * sizeof(TableEntry));
  std::memcpy(out.data(), t.session, 16);
  int32_t backend = t.backend, n = static_cast<int32_t>(t.peers.size());
  std::memcpy(out.data() + 16, &backend, 4);
  std::memcpy(out.data() + 20, &n, 4);
  for (size_t i = 0; i < t.peers.size(); ++i) {
    TableEntry e{};
    e.rank = t.peers[i].rank;
    e.port = t.peers[i].port;
    e.pid = t.peers[i].pid;
    copy_str(e.host, sizeof e.host, t.peers[i].host);
    copy_str(e.ip, sizeof e.ip, t.peers[i].ip);
    std::memcpy(out.data() + 24 + i * sizeof e, &e, sizeof e);
  }
  return out;
}

bool decode_table(const std::vector<uint8_t>& in, int world, Table* t) {
  if (in.size() != 24 + static_cast<size_t>(world) * sizeof(TableEntry)) return false;
  std::memcpy(t->session, in.data(), 16);
  int32_t backend, n;
  std::memcpy(&backend, in.data() + 16, 4);
  std::memcpy(&n, in.data() + 20, 4);
  if (n != world || !backend_known(backend)) return false;
  t->backend = static_cast<ringrt_backend_t>(backend);
  t->peers.assign(world, PeerInfo{});
  for (int i = 0; i < world; ++i) {
    TableEntry e;
    std::memcpy(&e, in.data() + 24 + i * sizeof e, sizeof e);
    if (e.rank != i) return false;
    t->peers[i].rank = e.rank;
    t->peers[i].port = e.port;
    t->peers[i].pid = e.pid;
    t->peers[i].host = from_str(e.host, sizeof e.host);
    t->peers[i].ip = from_str(e.ip, sizeof e.ip);
  }
  return true;
}

std::string peer_ip_of(int fd) {
  sockaddr_storage ss{};
  socklen_t sl = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &sl) != 0) return "";
  char h[NI_MAXHOST] = "";
  getnameinfo(reinterpret_cast<sockaddr*>(&ss), sl, h, sizeof h, nullptr, 0, NI_NUMERICHOST);
  return h;
}

// Rank 0's side: the challenge, the hello, the welcome, for every connection at once.
class Doorkeeper : public Handshake {
 public:
  Doorkeeper(const Config& cfg, Table* table)
      : cfg_(cfg), table_(table), conns_(cfg.world_size), nonces_(cfg.world_size) {}
  void greet(Visitor& v) override {
    Challenge ch{};
    ch.version = kVersion;
    random_bytes(v.nonce, sizeof v.nonce);
    std::memcpy(ch.nonce_s, v.nonce, sizeof ch.nonce_s);
    queue_ctl(v, kChallenge, &ch, sizeof ch);
    v.expect(sizeof(CtlHead));
  }
  void heard(Visitor& v) override {
    if (v.stage == 0) {
      CtlHead head;
      std::memcpy(&head, v.in().data(), sizeof head);
      if (head.magic != kCtlMagic || head.type != kHello || head.len != sizeof(Hello)) {
        turn_away(v, RINGRT_ERR_PROTOCOL, "malformed hello", "not a rendezvous hello");
        return;
      }
      v.stage = 1;
      v.expect(sizeof(Hello));
      return;
    }
    Hello h;
    std::memcpy(&h, v.in().data(), sizeof h);
    uint8_t mac[32];
    hello_mac(cfg_.secret, v.nonce, h.body, mac);
    if (!equal_ct(mac, h.mac, 32)) {
      turn_away(v, RINGRT_ERR_AUTH, "wrong job secret",
             "claiming rank " + std::to_string(h.body.rank) + ": it does not prove the job secret");
      return;
    }
    const HelloBody& b = h.body;
    const int n = cfg_.world_size;
    std::string why;
    if (b.version != kVersion) why = "protocol version mismatch";
    else if (b.world != n) why = "world size " + std::to_string(b.world) + " but rank 0 has " + std::to_string(n);
    else if (b.rank < 1 || b.rank >= n) why = "rank " + std::to_string(b.rank) + " out of range";
    else if (b.backend != cfg_.backend)
      why = std::string("backend ") + backend_name(static_cast<ringrt_backend_t>(b.backend)) + " but rank 0 uses " +
            backend_name(cfg_.backend);
    else if (still_here(b.rank)) why = "rank " + std::to_string(b.rank) + " joined twice";
    if (!why.empty()) {
      turn_away(v, RINGRT_ERR_CONFIG, why, "rank " + std::to_string(b.rank) + ": " + why);
      return;
    }
    Welcome w{};
    welcome_mac(cfg_.secret, b, w.mac);
    queue_ctl(v, kWelcome, &w, sizeof w);
    v.rank = b.rank;
    v.admit_when_sent();
  }
  void admit(Visitor& v) override {
    Hello h;
    std::memcpy(&h, v.in().data(), sizeof h);
    const int r = v.rank;
    if (still_here(r)) return;  // a twin admitted meanwhile: this one is closed
    if (conns_[r].ok()) {
      // the same rank again, over a new connection, after its first one went away (it broke
      // before our welcome got through, and the rank tried again): the new one counts
      conns_[r].reset();
      joined_--;
    }
    PeerInfo& p = table_->peers[r];
    p.rank = r;
    p.host = from_str(h.body.host, sizeof h.body.host);
    p.ip = from_str(h.body.ip, sizeof h.body.ip);
    p.port = h.body.data_port;
    p.pid = h.body.pid;
    std::memcpy(nonces_[r].data(), h.body.nonce_c, 32);
    conns_[r] = v.take_fd();
    joined_++;
    if (debug_enabled()) log_msg("rank %d joined from %s (%s)", r, v.who().c_str(), p.host.c_str());
  }
  bool complete() const override { return joined_ == cfg_.world_size - 1; }

  std::string missing() const {
    std::string m;
    for (int r = 1; r < cfg_.world_size; ++r)
      if (!conns_[r].ok()) m += (m.empty() ? "" : ", ") + std::to_string(r);
    return m;
  }
  // Every rank is in: send each its table, sealed with its own nonce.
  rr send_tables(int64_t deadline) {
    std::vector<uint8_t> enc = encode_table(*table_);
    for (int r = 1; r < cfg_.world_size; ++r) {
      std::vector<uint8_t> msg = enc;
      uint8_t mac[32];
      table_mac(cfg_.secret, nonces_[r].data(), enc, mac);
      msg.insert(msg.end(), mac, mac + 32);
      const int64_t dl = std::min(deadline, now_ns() + ms_to_ns(std::max(cfg_.timeout_ms, cfg_.handshake_ms)));
      RINGRT_CHECK(send_ctl(conns_[r].fd, kTable, msg.data(), msg.size(), dl, r));
    }
    return RINGRT_OK;
  }
  void refuse_joined(rr code, const std::string& why) {
    for (int r = 1; r < cfg_.world_size; ++r)
      if (conns_[r].ok()) refuse(conns_[r].fd, code, why, now_ns() + ms_to_ns(500));
  }

 private:
  // A rank's earlier connection is still open (not closed by its end).
  bool still_here(int r) const {
    if (!conns_[r].ok()) return false;
    char c;
    ssize_t n = ::recv(conns_[r].fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  static void queue_ctl(Visitor& v, uint32_t type, const void* body, size_t len) {
    CtlHead h{kCtlMagic, type, static_cast<uint32_t>(len)};
    v.send(&h, sizeof h);
    v.send(body, len);
  }
  static void turn_away(Visitor& v, rr code, const std::string& to_them, const std::string& to_log) {
    Refuse r{};
    r.code = code;
    copy_str(r.reason, sizeof r.reason, to_them);
    queue_ctl(v, kRefuse, &r, sizeof r);
    v.refuse_when_sent(to_log);
  }

  const Config& cfg_;
  Table* table_;
  std::vector<Fd> conns_;
  std::vector<std::array<uint8_t, 32>> nonces_;
  int joined_ = 0;
};

rr serve(const Config& cfg, int data_port, Table* table) {
  const int n = cfg.world_size;
  const int64_t deadline = now_ns() + ms_to_ns(cfg.init_timeout_ms);
  Fd lfd;
  int bound = 0;
  RINGRT_CHECK(tcp_listen("", cfg.master_port, &lfd, &bound));
  table->peers.assign(n, PeerInfo{});
  table->backend = cfg.backend;
  if (!random_bytes(table->session, sizeof table->session))
    return fail(RINGRT_ERR_SYSTEM, -1, "no random bytes for the session id");
  table->peers[0] = PeerInfo{0, cfg.hostname, "", data_port, static_cast<int>(getpid())};
  Doorkeeper door(cfg, table);
  Gate gate("rendezvous", lfd.fd, cfg.handshake_ms);
  rr rc = gate.run(door, deadline);
  if (rc == RINGRT_ERR_TIMEOUT) {
    door.refuse_joined(RINGRT_ERR_TIMEOUT, "rendezvous timed out");
    const std::string turned = gate.stats().summary();
    return fail(RINGRT_ERR_TIMEOUT, -1, "rendezvous timed out after %d ms: rank(s) %s never joined%s%s",
                cfg.init_timeout_ms, door.missing().c_str(), turned.empty() ? "" : "; connections turned away: ",
                turned.c_str());
  }
  RINGRT_CHECK(rc);
  return door.send_tables(deadline);
}

// One attempt at joining through an open connection to rank 0. *again is set where a new
// connection may succeed: rank 0 hung up before welcoming us (we were too slow for its
// handshake deadline, or a flood of connections pushed ours out). Silence is waited out to the
// rendezvous deadline: rank 0 itself may be the slow one (a loaded node, valgrind), and giving up
// on a connection it has already admitted would leave it sending the table to a closed socket.
rr join_once(const Config& cfg, int fd, int data_port, int64_t deadline, Table* table, bool* again) {
  *again = false;
  std::vector<uint8_t> buf;
  rr rc = recv_ctl(fd, kChallenge, &buf, sizeof(Challenge), deadline, 0);
  if (rc != RINGRT_OK) {
    *again = rc == RINGRT_ERR_PEER;
    return rc;
  }
  if (buf.size() != sizeof(Challenge)) return fail(RINGRT_ERR_PROTOCOL, 0, "malformed challenge from rank 0");
  Challenge ch;
  std::memcpy(&ch, buf.data(), sizeof ch);
  if (ch.version != kVersion)
    return fail(RINGRT_ERR_PROTOCOL, 0, "rank 0 speaks rendezvous version %u, we speak %u", ch.version, kVersion);
  Hello h{};
  h.body.version = kVersion;
  h.body.rank = cfg.rank;
  h.body.world = cfg.world_size;
  h.body.backend = cfg.backend;
  h.body.data_port = data_port;
  h.body.pid = static_cast<int32_t>(getpid());
  if (!random_bytes(h.body.nonce_c, 32)) return fail(RINGRT_ERR_SYSTEM, -1, "no random bytes");
  copy_str(h.body.host, sizeof h.body.host, cfg.hostname);
  copy_str(h.body.ip, sizeof h.body.ip, local_ip_of(fd));
  hello_mac(cfg.secret, ch.nonce_s, h.body, h.mac);
  rc = send_ctl(fd, kHello, &h, sizeof h, deadline, 0);
  if (rc == RINGRT_OK) rc = recv_ctl(fd, kWelcome, &buf, sizeof(Welcome), deadline, 0);
  if (rc != RINGRT_OK) {
    // a refusal for cause is final; a hang-up is worth another try
    *again = rc == RINGRT_ERR_PEER;
    return rc;
  }
  uint8_t mac[32];
  welcome_mac(cfg.secret, h.body, mac);
  if (buf.size() != sizeof(Welcome) || !equal_ct(mac, buf.data(), 32))
    return fail(RINGRT_ERR_AUTH, 0, "the master at %s:%d does not prove the job secret", cfg.master_addr.c_str(),
                cfg.master_port);
  // Rank 0 is genuine: wait for the others as long as the rendezvous may take.
  rc = recv_ctl(fd, kTable, &buf, 24 + cfg.world_size * sizeof(TableEntry) + 32, deadline, 0);
  if (rc == RINGRT_ERR_PEER)
    return fail(RINGRT_ERR_PEER, 0, "rank 0 went away during the rendezvous: %s", last_detail().c_str());
  if (rc != RINGRT_OK) return rc;
  if (buf.size() < 32) return fail(RINGRT_ERR_PROTOCOL, 0, "short table from rank 0");
  std::vector<uint8_t> enc(buf.begin(), buf.end() - 32);
  table_mac(cfg.secret, h.body.nonce_c, enc, mac);
  if (!equal_ct(mac, buf.data() + enc.size(), 32))
    return fail(RINGRT_ERR_AUTH, 0, "the master at %s:%d does not prove the job secret", cfg.master_addr.c_str(),
                cfg.master_port);
  if (!decode_table(enc, cfg.world_size, table)) return fail(RINGRT_ERR_PROTOCOL, 0, "malformed table from rank 0");
  if (table->peers[0].ip.empty()) table->peers[0].ip = peer_ip_of(fd);
  return RINGRT_OK;
}

rr join(const Config& cfg, int data_port, Table* table) {
  const int64_t deadline = now_ns() + ms_to_ns(cfg.init_timeout_ms);
  for (int attempt = 1;; ++attempt) {
    Fd c;
    RINGRT_CHECK(tcp_connect(cfg.master_addr, cfg.master_port, deadline, &c, -1, "system"));
    bool again = false;
    rr rc = join_once(cfg, c.fd, data_port, deadline, table, &again);
    if (rc == RINGRT_OK || !again) return rc;
    if (now_ns() + ms_to_ns(kRetryMs) >= deadline)
      return fail(RINGRT_ERR_TIMEOUT, 0, "rendezvous with rank 0 at %s:%d did not complete in %d ms (%d attempts; last: %s)",
                  cfg.master_addr.c_str(), cfg.master_port, cfg.init_timeout_ms, attempt, last_detail().c_str());
    if (debug_enabled()) log_msg("rendezvous attempt %d failed (%s); trying again", attempt, last_detail().c_str());
    c.reset();
    usleep(kRetryMs * 1000);
  }
}

}  // namespace

rr rendezvous(const Config& cfg, Table* table, Fd* listener) {
  int port = 0;
  RINGRT_CHECK(tcp_listen("", 0, listener, &port));
  // the ring connections accepted here inherit it
  RINGRT_CHECK(choose_congestion(listener->fd, cfg.tcp_congestion));
  if (cfg.world_size == 1) {
    table->peers.assign(1, PeerInfo{0, cfg.hostname, "127.0.0.1", port, static_cast<int>(getpid())});
    table->backend = cfg.backend;
    random_bytes(table->session, sizeof table->session);
    return RINGRT_OK;
  }
  if (cfg.rank == 0) return serve(cfg, port, table);
  return join(cfg, port, table);
}

}  // namespace ringrt
