// rendezvous.cpp -- rank 0 serves on the master address; every other rank proves it knows the
// per-job secret (HMAC-SHA256 challenge-response), rank 0 proves it back, and everyone receives
// the table of ranks (node, data address, pid) plus a fresh session id.
#include "internal.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstring>

namespace ringrt {

namespace {

constexpr uint32_t kCtlMagic = 0x4d545252u;  // "RRTM"
constexpr uint32_t kVersion = 1;
enum CtlType : uint32_t { kChallenge = 1, kHello = 2, kTable = 3, kRefuse = 4 };

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
  if (h.magic != kCtlMagic || h.len > max_len)
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
  if (n != world || backend < RINGRT_BACKEND_AUTO || backend > RINGRT_BACKEND_HIER) return false;
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
  std::vector<Fd> conns(n);
  std::vector<std::array<uint8_t, 32>> nonces(n);
  int joined = 1;
  while (joined < n) {
    Fd c;
    std::string who;
    rr rc = tcp_accept(lfd.fd, deadline, &c, &who);
    if (rc == RINGRT_ERR_TIMEOUT) {
      std::string missing;
      for (int r = 1; r < n; ++r)
        if (!conns[r].ok()) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      for (int r = 1; r < n; ++r)
        if (conns[r].ok()) refuse(conns[r].fd, RINGRT_ERR_TIMEOUT, "rendezvous timed out", now_ns() + ms_to_ns(500));
      return fail(RINGRT_ERR_TIMEOUT, -1, "rendezvous timed out after %d ms: rank(s) %s never joined",
                  cfg.init_timeout_ms, missing.c_str());
    }
    RINGRT_CHECK(rc);
    // A short per-connection deadline so that a silent intruder cannot hold the door for long.
    int64_t cdl = now_ns() + ms_to_ns(cfg.timeout_ms < 2000 ? 2000 : cfg.timeout_ms);
    if (cdl > deadline) cdl = deadline;
    Challenge ch{};
    ch.version = kVersion;
    if (!random_bytes(ch.nonce_s, 32)) return fail(RINGRT_ERR_SYSTEM, -1, "no random bytes");
    if (send_ctl(c.fd, kChallenge, &ch, sizeof ch, cdl, -1) != RINGRT_OK) {
      log_msg("refused connection from %s: it went away during the handshake", who.c_str());
      continue;
    }
    std::vector<uint8_t> buf;
    if (recv_ctl(c.fd, kHello, &buf, sizeof(Hello), cdl, -1) != RINGRT_OK || buf.size() != sizeof(Hello)) {
      log_msg("refused connection from %s: no valid hello (%s)", who.c_str(), last_detail().c_str());
      refuse(c.fd, RINGRT_ERR_PROTOCOL, "malformed hello", cdl);
      continue;
    }
    Hello h;
    std::memcpy(&h, buf.data(), sizeof h);
    uint8_t mac[32];
    hello_mac(cfg.secret, ch.nonce_s, h.body, mac);
    if (!equal_ct(mac, h.mac, 32)) {
      log_msg("refused connection from %s claiming rank %d: it does not prove the job secret", who.c_str(),
              h.body.rank);
      refuse(c.fd, RINGRT_ERR_AUTH, "wrong job secret", cdl);
      continue;
    }
    const HelloBody& b = h.body;
    std::string why;
    rr code = RINGRT_ERR_CONFIG;
    if (b.version != kVersion) why = "protocol version mismatch";
    else if (b.world != n) why = "world size " + std::to_string(b.world) + " but rank 0 has " + std::to_string(n);
    else if (b.rank < 1 || b.rank >= n) why = "rank " + std::to_string(b.rank) + " out of range";
    else if (conns[b.rank].ok()) why = "rank " + std::to_string(b.rank) + " joined twice";
    else if (b.backend != cfg.backend)
      why = std::string("backend ") + backend_name(static_cast<ringrt_backend_t>(b.backend)) + " but rank 0 uses " +
            backend_name(cfg.backend);
    if (!why.empty()) {
      log_msg("refused connection from %s (rank %d): %s", who.c_str(), b.rank, why.c_str());
      refuse(c.fd, code, why, cdl);
      continue;
    }
    PeerInfo& p = table->peers[b.rank];
    p.rank = b.rank;
    p.host = from_str(b.host, sizeof b.host);
    p.ip = from_str(b.ip, sizeof b.ip);
    p.port = b.data_port;
    p.pid = b.pid;
    std::memcpy(nonces[b.rank].data(), b.nonce_c, 32);
    conns[b.rank] = std::move(c);
    joined++;
    if (debug_enabled()) log_msg("rank %d joined from %s (%s)", b.rank, who.c_str(), p.host.c_str());
  }
  std::vector<uint8_t> enc = encode_table(*table);
  for (int r = 1; r < n; ++r) {
    std::vector<uint8_t> msg = enc;
    uint8_t mac[32];
    table_mac(cfg.secret, nonces[r].data(), enc, mac);
    msg.insert(msg.end(), mac, mac + 32);
    rr rc = send_ctl(conns[r].fd, kTable, msg.data(), msg.size(), deadline, r);
    if (rc != RINGRT_OK) return rc;
  }
  return RINGRT_OK;
}

rr join(const Config& cfg, int data_port, Table* table) {
  const int64_t deadline = now_ns() + ms_to_ns(cfg.init_timeout_ms);
  Fd c;
  RINGRT_CHECK(tcp_connect(cfg.master_addr, cfg.master_port, deadline, &c, -1, "system"));
  std::vector<uint8_t> buf;
  rr rc = recv_ctl(c.fd, kChallenge, &buf, sizeof(Challenge), deadline, 0);
  if (rc != RINGRT_OK) return rc;
  if (buf.size() != sizeof(Challenge)) return fail(RINGRT_ERR_PROTOCOL, 0, "malformed challenge from rank 0");
  Challenge ch;
  std::memcpy(&ch, buf.data(), sizeof ch);
  Hello h{};
  h.body.version = kVersion;
  h.body.rank = cfg.rank;
  h.body.world = cfg.world_size;
  h.body.backend = cfg.backend;
  h.body.data_port = data_port;
  h.body.pid = static_cast<int32_t>(getpid());
  if (!random_bytes(h.body.nonce_c, 32)) return fail(RINGRT_ERR_SYSTEM, -1, "no random bytes");
  copy_str(h.body.host, sizeof h.body.host, cfg.hostname);
  copy_str(h.body.ip, sizeof h.body.ip, local_ip_of(c.fd));
  hello_mac(cfg.secret, ch.nonce_s, h.body, h.mac);
  RINGRT_CHECK(send_ctl(c.fd, kHello, &h, sizeof h, deadline, 0));
  rc = recv_ctl(c.fd, kTable, &buf, 24 + cfg.world_size * sizeof(TableEntry) + 32, deadline, 0);
  if (rc == RINGRT_ERR_PEER)  // rank 0 closed on us without a word
    return fail(RINGRT_ERR_AUTH, 0, "rank 0 closed the rendezvous connection (refused?): %s", last_detail().c_str());
  if (rc != RINGRT_OK) return rc;
  if (buf.size() < 32) return fail(RINGRT_ERR_PROTOCOL, 0, "short table from rank 0");
  std::vector<uint8_t> enc(buf.begin(), buf.end() - 32);
  uint8_t mac[32];
  table_mac(cfg.secret, h.body.nonce_c, enc, mac);
  if (!equal_ct(mac, buf.data() + enc.size(), 32))
    return fail(RINGRT_ERR_AUTH, 0, "the master at %s:%d does not prove the job secret", cfg.master_addr.c_str(),
                cfg.master_port);
  if (!decode_table(enc, cfg.world_size, table)) return fail(RINGRT_ERR_PROTOCOL, 0, "malformed table from rank 0");
  if (table->peers[0].ip.empty()) table->peers[0].ip = peer_ip_of(c.fd);
  return RINGRT_OK;
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
