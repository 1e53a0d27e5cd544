// util.cpp -- errors, environment, configuration, secrets, crypto and socket helpers.
#include "internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringrt {

// ---- errors ----------------------------------------------------------------------------------
namespace {
thread_local std::string t_detail;
thread_local int t_blamed = -1;
int g_log_rank = -1;
}  // namespace

rr fail(rr code, int blamed_rank, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t_detail = buf;
  t_blamed = blamed_rank;
  if (debug_enabled()) log_msg("error %d: %s", static_cast<int>(code), buf);
  return code;
}
const std::string& last_detail() { return t_detail; }
int last_blamed() { return t_blamed; }
void clear_error() { t_detail.clear(); t_blamed = -1; }
void set_error(rr, int blamed, const std::string& detail) { t_detail = detail; t_blamed = blamed; }
void set_log_rank(int rank) { g_log_rank = rank; }
bool debug_enabled() {
  const char* d = env::debug();
  return d && std::strcmp(d, "0") != 0;
}
void log_msg(const char* fmt, ...) {
  char buf[1200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (g_log_rank >= 0)
    std::fprintf(stderr, "ringrt[rank %d pid %d]: %s\n", g_log_rank, static_cast<int>(getpid()), buf);
  else
    std::fprintf(stderr, "ringrt[pid %d]: %s\n", static_cast<int>(getpid()), buf);
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// ---- environment accessors -------------------------------------------------------------------
namespace env {
namespace {
const char* get(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : nullptr;
}
}  // namespace
const char* rank() { return get("RINGRT_RANK"); }
const char* world_size() { return get("RINGRT_WORLD_SIZE"); }
const char* master_addr() { return get("RINGRT_MASTER_ADDR"); }
const char* master_port() { return get("RINGRT_MASTER_PORT"); }
const char* secret_file() { return get("RINGRT_SECRET_FILE"); }
const char* secret() { return get("RINGRT_SECRET"); }
const char* timeout_ms() { return get("RINGRT_TIMEOUT_MS"); }
const char* init_timeout_ms() { return get("RINGRT_INIT_TIMEOUT_MS"); }
const char* backend() { return get("RINGRT_BACKEND"); }
const char* tcp_algorithm() { return get("RINGRT_TCP_ALGORITHM"); }
const char* tcp_congestion() { return get("RINGRT_TCP_CONGESTION"); }
const char* hostname() { return get("RINGRT_HOSTNAME"); }
const char* debug() { return get("RINGRT_DEBUG"); }
const char* slurm_procid() { return get("SLURM_PROCID"); }
const char* slurm_ntasks() { return get("SLURM_NTASKS"); }
const char* slurm_job_nodelist() { return get("SLURM_JOB_NODELIST"); }
const char* slurm_job_id() { return get("SLURM_JOB_ID"); }
}  // namespace env

// ---- configuration ---------------------------------------------------------------------------
rr parse_int(const char* name, const char* text, long lo, long hi, long* out) {
  if (!text) return fail(RINGRT_ERR_CONFIG, -1, "%s is not set", name);
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi)
    return fail(RINGRT_ERR_CONFIG, -1, "%s=\"%s\" is not an integer in [%ld, %ld]", name, text, lo, hi);
  *out = v;
  return RINGRT_OK;
}

rr parse_backend(const char* text, ringrt_backend_t* out) {
  if (!text || !std::strcmp(text, "auto")) { *out = RINGRT_BACKEND_AUTO; return RINGRT_OK; }
  if (!std::strcmp(text, "tcp")) { *out = RINGRT_BACKEND_TCP; return RINGRT_OK; }
  if (!std::strcmp(text, "shm")) { *out = RINGRT_BACKEND_SHM; return RINGRT_OK; }
  if (!std::strcmp(text, "nccl")) { *out = RINGRT_BACKEND_NCCL; return RINGRT_OK; }
  if (!std::strcmp(text, "hier")) { *out = RINGRT_BACKEND_HIER; return RINGRT_OK; }
  return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_BACKEND=\"%s\": expected auto, tcp, shm, hier or nccl", text);
}

const char* backend_name(ringrt_backend_t b) {
  switch (b) {
    case RINGRT_BACKEND_AUTO: return "auto";
    case RINGRT_BACKEND_TCP: return "tcp";
    case RINGRT_BACKEND_SHM: return "shm";
    case RINGRT_BACKEND_NCCL: return "nccl";
    case RINGRT_BACKEND_HIER: return "hier";
  }
  return "?";
}

std::string slurm_first_host(const std::string& list) {
  // The first entry ends at the first comma outside brackets.
  std::string first;
  int depth = 0;
  for (char c : list) {
    if (c == '[') depth++;
    if (c == ']') depth--;
    if (c == ',' && depth == 0) break;
    first.push_back(c);
  }
  size_t lb = first.find('[');
  if (lb == std::string::npos) return first;
  std::string prefix = first.substr(0, lb);
  std::string inner = first.substr(lb + 1);
  size_t rb = inner.find(']');
  std::string suffix = rb == std::string::npos ? "" : inner.substr(rb + 1);
  inner = inner.substr(0, rb);
  // first element of the range list: digits up to '-' or ','
  size_t stop = inner.find_first_of("-,");
  std::string start = inner.substr(0, stop);
  return prefix + start + suffix;
}

rr load_secret_file(const std::string& path, std::string* secret) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return fail(RINGRT_ERR_AUTH, -1, "cannot open secret file %s: %s", path.c_str(), std::strerror(errno));
  Fd guard(fd);
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fail(RINGRT_ERR_AUTH, -1, "cannot stat secret file %s: %s", path.c_str(), std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return fail(RINGRT_ERR_AUTH, -1, "secret file %s is not a regular file", path.c_str());
  if ((st.st_mode & 077) != 0)
    return fail(RINGRT_ERR_AUTH, -1, "secret file %s has mode %04o: refusing it (must be 0600)",
                path.c_str(), static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != geteuid())
    return fail(RINGRT_ERR_AUTH, -1, "secret file %s is owned by uid %u, not by us", path.c_str(),
                static_cast<unsigned>(st.st_uid));
  char buf[4097];
  ssize_t n = 0, got;
  while (n < 4096 && (got = ::read(fd, buf + n, 4096 - n)) != 0) {
    if (got < 0) {
      if (errno == EINTR) continue;
      return fail(RINGRT_ERR_AUTH, -1, "cannot read secret file %s: %s", path.c_str(), std::strerror(errno));
    }
    n += got;
  }
  while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
  if (n == 0) return fail(RINGRT_ERR_AUTH, -1, "secret file %s is empty", path.c_str());
  secret->assign(buf, static_cast<size_t>(n));
  OPENSSL_cleanse(buf, sizeof buf);
  return RINGRT_OK;
}

namespace {
std::string default_hostname() {
  char h[256] = {};
  if (gethostname(h, sizeof h - 1) != 0) return "localhost";
  return h;
}

rr finish_config(Config* c) {
  if (c->world_size < 1) return fail(RINGRT_ERR_CONFIG, -1, "world size %d < 1", c->world_size);
  if (c->rank < 0 || c->rank >= c->world_size)
    return fail(RINGRT_ERR_CONFIG, -1, "rank %d outside [0, %d)", c->rank, c->world_size);
  if (c->world_size > 1 && (c->master_port < 1 || c->master_port > 65535))
    return fail(RINGRT_ERR_CONFIG, -1, "master port %d outside [1, 65535]", c->master_port);
  if (c->secret.empty())
    return fail(RINGRT_ERR_AUTH, -1, "no job secret: set RINGRT_SECRET_FILE (mode 0600) or RINGRT_SECRET");
  if (c->timeout_ms <= 0) c->timeout_ms = 5000;
  if (c->init_timeout_ms <= 0) c->init_timeout_ms = c->timeout_ms > 60000 ? c->timeout_ms : 60000;
  if (c->hostname.empty()) c->hostname = default_hostname();
  if (c->hostname.size() > 63) c->hostname.resize(63);
  if (const char* a = env::tcp_algorithm()) {
    if (!std::strcmp(a, "auto")) c->tcp_algorithm = TcpAlgorithm::kAuto;
    else if (!std::strcmp(a, "ring")) c->tcp_algorithm = TcpAlgorithm::kRing;
    else if (!std::strcmp(a, "halving")) c->tcp_algorithm = TcpAlgorithm::kHalving;
    else return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_TCP_ALGORITHM=\"%s\": expected auto, ring or halving", a);
  }
  if (const char* cc = env::tcp_congestion()) {
    // a kernel name (TCP_CA_NAME_MAX is 16 with its NUL); which ones exist is the kernel's word
    const size_t len = std::strlen(cc);
    if (len > 15 || std::strspn(cc, "abcdefghijklmnopqrstuvwxyz0123456789_-") != len)
      return fail(RINGRT_ERR_CONFIG, -1,
                  "RINGRT_TCP_CONGESTION=\"%s\": expected auto, system or a congestion control name such as cubic",
                  cc);
    c->tcp_congestion = cc;
    if (c->tcp_congestion != "auto" && c->tcp_congestion != "system") {
      // ask the kernel now, so that every rank fails at init with the reason, not at ring formation
      Fd probe(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      if (probe.ok()) RINGRT_CHECK(choose_congestion(probe.fd, c->tcp_congestion));
    }
  }
  return RINGRT_OK;
}
}  // namespace

rr config_from_env(Config* c) {
  long v = 0;
  const char* r = env::rank();
  const char* rname = "RINGRT_RANK";
  if (!r) { r = env::slurm_procid(); rname = "SLURM_PROCID"; }
  if (!r) return fail(RINGRT_ERR_CONFIG, -1, "neither RINGRT_RANK nor SLURM_PROCID is set");
  RINGRT_CHECK(parse_int(rname, r, 0, 1 << 20, &v));
  c->rank = static_cast<int>(v);
  const char* w = env::world_size();
  const char* wname = "RINGRT_WORLD_SIZE";
  if (!w) { w = env::slurm_ntasks(); wname = "SLURM_NTASKS"; }
  if (!w) return fail(RINGRT_ERR_CONFIG, -1, "neither RINGRT_WORLD_SIZE nor SLURM_NTASKS is set");
  RINGRT_CHECK(parse_int(wname, w, 1, 1 << 20, &v));
  c->world_size = static_cast<int>(v);
  if (const char* a = env::master_addr()) {
    c->master_addr = a;
  } else if (const char* nl = env::slurm_job_nodelist()) {
    c->master_addr = slurm_first_host(nl);
  }
  if (const char* p = env::master_port()) {
    RINGRT_CHECK(parse_int("RINGRT_MASTER_PORT", p, 1, 65535, &v));
    c->master_port = static_cast<int>(v);
  } else if (const char* j = env::slurm_job_id()) {
    RINGRT_CHECK(parse_int("SLURM_JOB_ID", j, 0, 0x7fffffffL, &v));
    // 20000..31999: below Linux's ephemeral ports (32768 and up by default), which an outgoing
    // connection may hold at any moment and so make rank 0's listen fail.
    c->master_port = 20000 + static_cast<int>(v % 12000);
  } else if (c->world_size > 1) {
    return fail(RINGRT_ERR_CONFIG, -1, "RINGRT_MASTER_PORT is not set (nor SLURM_JOB_ID)");
  }
  if (const char* f = env::secret_file()) {
    RINGRT_CHECK(load_secret_file(f, &c->secret));
  } else if (const char* s = env::secret()) {
    c->secret = s;
  }
  if (const char* t = env::timeout_ms()) {
    RINGRT_CHECK(parse_int("RINGRT_TIMEOUT_MS", t, 1, 3600 * 1000L, &v));
    c->timeout_ms = static_cast<int>(v);
  }
  c->init_timeout_ms = 0;
  if (const char* t = env::init_timeout_ms()) {
    RINGRT_CHECK(parse_int("RINGRT_INIT_TIMEOUT_MS", t, 1, 24 * 3600 * 1000L, &v));
    c->init_timeout_ms = static_cast<int>(v);
  }
  RINGRT_CHECK(parse_backend(env::backend(), &c->backend));
  if (const char* h = env::hostname()) c->hostname = h;
  return finish_config(c);
}

rr config_from_struct(const ringrt_config_t* in, Config* c) {
  if (!in) return fail(RINGRT_ERR_ARG, -1, "config is NULL");
  c->rank = in->rank;
  c->world_size = in->world_size;
  if (in->master_addr && *in->master_addr) c->master_addr = in->master_addr;
  c->master_port = in->master_port;
  if (in->secret_file && *in->secret_file) {
    RINGRT_CHECK(load_secret_file(in->secret_file, &c->secret));
  } else if (in->secret) {
    c->secret = in->secret;
  }
  c->timeout_ms = in->timeout_ms;
  c->init_timeout_ms = in->init_timeout_ms;
  if (in->backend < RINGRT_BACKEND_AUTO || in->backend > RINGRT_BACKEND_HIER)
    return fail(RINGRT_ERR_CONFIG, -1, "unknown backend %d", static_cast<int>(in->backend));
  c->backend = in->backend;
  if (in->hostname && *in->hostname) c->hostname = in->hostname;
  return finish_config(c);
}

// ---- crypto --------------------------------------------------------------------------------
void hmac_sha256(const std::string& key, const void* data, size_t len, uint8_t out[32]) {
  unsigned int outlen = 32;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), static_cast<const unsigned char*>(data),
       len, out, &outlen);
}
bool random_bytes(void* buf, size_t len) {
  return RAND_bytes(static_cast<unsigned char*>(buf), static_cast<int>(len)) == 1;
}
bool equal_ct(const void* a, const void* b, size_t len) { return CRYPTO_memcmp(a, b, len) == 0; }
std::string hex(const uint8_t* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) { s.push_back(d[p[i] >> 4]); s.push_back(d[p[i] & 15]); }
  return s;
}

// ---- frames ----------------------------------------------------------------------------------
uint32_t header_check(const FrameHeader& h) {
  // FNV-1a over the first 28 bytes
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&h);
  uint32_t x = 2166136261u;
  for (int i = 0; i < 28; ++i) { x ^= p[i]; x *= 16777619u; }
  return x;
}
void seal_header(FrameHeader* h) { h->check = header_check(*h); }
const char* coll_name(uint8_t kind) {
  switch (kind) {
    case kCollAllreduce: return "allreduce";
    case kCollAllreduceHalving: return "allreduce(halving)";
    case kCollAllgatherReduce: return "allreduce(small)";
    case kCollBroadcast: return "broadcast";
    case kCollBarrier: return "barrier";
  }
  return "collective";
}

// ---- sockets ---------------------------------------------------------------------------------
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

namespace {
int remaining_ms(int64_t deadline_ns) {
  int64_t left = deadline_ns - now_ns();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : static_cast<int>(ms);
}
}  // namespace

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
          do { pr = ::poll(&p, 1, remaining_ms(deadline_ns)); } while (pr < 0 && errno == EINTR);
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
      int ms = remaining_ms(deadline_ns);
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
      int ms = remaining_ms(deadline_ns);
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
