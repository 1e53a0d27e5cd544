// SPDX-License-Identifier: GPL-2.0-or-later
// configuration.cpp -- the settings of a world (configuration.h): from the environment or a
// ringrt_config_t, with the Slurm fallbacks, the secret file and the checks.
#include "configuration.h"

#include "backends.h"
#include "bounded_int.h"
#include "environment.h"
#include "sockets.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ringrt {

rr parse_int(const char* name, const char* text, long lo, long hi, long* out) {
  if (!text) return fail(RINGRT_ERR_CONFIG, -1, "%s is not set", name);
  long v = 0;
  if (!ringsched::parse_long(text, lo, hi, &v))
    return fail(RINGRT_ERR_CONFIG, -1, "%s=\"%s\" is not an integer in [%ld, %ld]", name, text, lo, hi);
  *out = v;
  return RINGRT_OK;
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
  if (!backend_known(in->backend))
    return fail(RINGRT_ERR_CONFIG, -1, "unknown backend %d", static_cast<int>(in->backend));
  c->backend = in->backend;
  if (in->hostname && *in->hostname) c->hostname = in->hostname;
  return finish_config(c);
}

}  // namespace ringrt
