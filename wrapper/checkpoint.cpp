// SPDX-License-Identifier: GPL-2.0-or-later
// Checkpoint files: see checkpoint.h for the layout and the guarantees.
#include "checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "bounded_int.h"

namespace ringrun {

namespace {

constexpr char kMagic[8] = {'R', 'I', 'N', 'G', 'C', 'K', 'P', 'T'};
constexpr size_t kDigest = 32;
// magic + version + header bytes + step + payload bytes, then the digest.
constexpr size_t kFixed = 8 + 4 + 4 + 8 + 8;
constexpr size_t kHeader = kFixed + kDigest;
// A payload larger than this is not a checkpoint of ours (the demo model is a few KB; the bound
// keeps a corrupt length field from making us allocate the machine's memory).
constexpr uint64_t kMaxPayload = 1ull << 32;

void put_le(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = uint8_t(v >> (8 * i));
}
uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(p[i]) << (8 * i);
  return v;
}

std::string sys_error(const std::string& what) { return what + ": " + std::strerror(errno); }

// HMAC-SHA256 of the concatenated parts with `key` (OpenSSL's EVP_MAC), into out.
void hmac_sha256(const std::vector<uint8_t>& key, std::initializer_list<std::pair<const uint8_t*, size_t>> parts,
                 uint8_t out[kDigest], const std::string& file) {
  EVP_MAC* mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  EVP_MAC_CTX* ctx = mac ? EVP_MAC_CTX_new(mac) : nullptr;
  char digest_name[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest_name, 0),
                               OSSL_PARAM_construct_end()};
  size_t len = 0;
  bool ok = ctx && EVP_MAC_init(ctx, key.data(), key.size(), params) == 1;
  for (const auto& [data, n] : parts) ok = ok && (n == 0 || EVP_MAC_update(ctx, data, n) == 1);
  ok = ok && EVP_MAC_final(ctx, out, &len, kDigest) == 1 && len == kDigest;
  EVP_MAC_CTX_free(ctx);
  EVP_MAC_free(mac);
  if (!ok) throw CheckpointError(file, "OpenSSL HMAC-SHA256 failed");
}

// Constant-time comparison of two digests (a forger learns nothing from the timing).
bool same_digest(const uint8_t* a, const uint8_t* b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < kDigest; ++i) diff |= a[i] ^ b[i];
  return diff == 0;
}

std::string describe_mode(mode_t mode) {
  char b[8];
  std::snprintf(b, sizeof b, "%04o", unsigned(mode & 07777));
  return b;
}

// The job's secret: read when present (it must be ours and private), else made once.
std::string load_or_create_secret(const std::string& path) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      struct stat st;
      std::string text;
      bool ok = ::fstat(fd, &st) == 0;
      if (ok && (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0 ||
                 st.st_size < 16 || st.st_size > 4096)) {
        ::close(fd);
        throw CheckpointError(path, "job secret refused: it must be a regular file of 16..4096 bytes owned by you "
                                    "with mode 0600 (it has owner uid " + std::to_string(st.st_uid) + ", mode " +
                                    describe_mode(st.st_mode) + ", " + std::to_string(st.st_size) + " bytes)");
      }
      char buf[4096];
      ssize_t n;
      while (ok && (n = ::read(fd, buf, sizeof buf)) != 0) {
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) ok = false;
        else text.append(buf, size_t(n));
      }
      ::close(fd);
      if (!ok) throw CheckpointError(path, sys_error("cannot read the job secret"));
      return text;
    }
    if (errno != ENOENT) throw CheckpointError(path, sys_error("cannot open the job secret"));
    // Made aside and linked into place: two processes starting together agree on one secret.
    unsigned char raw[32];
    if (getrandom(raw, sizeof raw, 0) != ssize_t(sizeof raw)) throw CheckpointError(path, sys_error("getrandom"));
    char hex[65];
    for (int i = 0; i < 32; ++i) std::snprintf(hex + 2 * i, 3, "%02x", raw[i]);
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    ::unlink(tmp.c_str());
    int w = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    bool written = w >= 0 && ::fchmod(w, 0600) == 0 && ::write(w, hex, 64) == 64 && ::fsync(w) == 0;
    if (w >= 0) ::close(w);
    const bool linked = written && ::link(tmp.c_str(), path.c_str()) == 0;
    const int link_errno = errno;
    ::unlink(tmp.c_str());
    if (!written) throw CheckpointError(path, sys_error("cannot write the job secret"));
    if (linked) return std::string(hex, 64);
    if (link_errno != EEXIST) {
      errno = link_errno;
      throw CheckpointError(path, sys_error("cannot write the job secret"));
    }
  }
  throw CheckpointError(path, "the job secret appeared and vanished while it was read");
}

void write_all(int fd, const uint8_t* p, size_t n, const std::string& file) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      throw CheckpointError(file, sys_error("write"));
    }
    p += w;
    n -= size_t(w);
  }
}

// "ckpt-<step>.rck" -> step; false for anything else.
bool parse_name(const std::string& name, uint64_t* step) {
  const std::string pre = "ckpt-", suf = ".rck";
  if (name.size() <= pre.size() + suf.size() || name.compare(0, pre.size(), pre) != 0 ||
      name.compare(name.size() - suf.size(), suf.size(), suf) != 0)
    return false;
  std::string digits = name.substr(pre.size(), name.size() - pre.size() - suf.size());
  if (digits.empty() || digits.size() > 19 ||
      !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return false;
  *step = std::strtoull(digits.c_str(), nullptr, 10);
  return true;
}

}  // namespace

int checkpoint_test_pause_ms() {
  const char* v = std::getenv("RINGRUN_TEST_CKPT_PAUSE_MS");
  if (!v || !*v) return 0;
  int ms = 0;
  return ringsched::parse_int(v, 0, 600000, &ms) ? ms : 0;
}

void ensure_private_folder(const std::string& dir) {
  if (dir.empty()) throw CheckpointError("(no folder)", "checkpoint folder not set");
  std::string parent = dir.substr(0, dir.find_last_not_of('/') + 1);
  const size_t slash = parent.rfind('/');
  parent = slash == std::string::npos ? "." : slash == 0 ? "/" : parent.substr(0, slash);
  const uid_t me = ::geteuid();
  struct stat st;
  if (::stat(parent.c_str(), &st) != 0) throw CheckpointError(dir, sys_error("cannot use the parent folder " + parent));
  // Another user who may rename entries of the parent could swap our folder for theirs.
  if ((st.st_mode & 022) != 0 && !(st.st_mode & S_ISVTX) && st.st_uid != me)
    throw CheckpointError(dir, "the parent folder " + parent + " (mode " + describe_mode(st.st_mode) +
                                   ") lets other users replace it: choose a checkpoint folder under one only you "
                                   "can write (ringrun --ckpt-dir)");
  if (::mkdir(dir.c_str(), 0700) == 0) {
    if (::chmod(dir.c_str(), 0700) != 0) throw CheckpointError(dir, sys_error("chmod 0700"));
    return;
  }
  if (errno != EEXIST) throw CheckpointError(dir, sys_error("cannot create the checkpoint folder"));
  if (::lstat(dir.c_str(), &st) != 0) throw CheckpointError(dir, sys_error("cannot stat the checkpoint folder"));
  if (S_ISLNK(st.st_mode))
    throw CheckpointError(dir, "the checkpoint folder is a symbolic link: refused (give the real folder)");
  if (!S_ISDIR(st.st_mode)) throw CheckpointError(dir, "exists and is not a folder");
  if (st.st_uid != me)
    throw CheckpointError(dir, "the checkpoint folder already exists and belongs to uid " + std::to_string(st.st_uid) +
                                   ", not to you (uid " + std::to_string(me) +
                                   "): refused, another user may have planted it; remove it or choose another "
                                   "ringrun --ckpt-dir");
  if ((st.st_mode & 022) != 0)
    throw CheckpointError(dir, "the checkpoint folder has mode " + describe_mode(st.st_mode) +
                                   ": other users may have written to it; refused (remove it, or check its "
                                   "files and chmod 700)");
  // Ours and not writable by others: readable by others is tightened here.
  if ((st.st_mode & 077) != 0 && ::chmod(dir.c_str(), 0700) != 0) throw CheckpointError(dir, sys_error("chmod 0700"));
}

CheckpointStore::CheckpointStore(std::string dir) : dir_(std::move(dir)) {
  ensure_private_folder(dir_);
  const std::string secret = load_or_create_secret(secret_file());
  static const char kPurpose[] = "ringrun checkpoint v2";
  key_.resize(kDigest);
  const std::vector<uint8_t> secret_bytes(secret.begin(), secret.end());
  hmac_sha256(secret_bytes, {{reinterpret_cast<const uint8_t*>(kPurpose), sizeof kPurpose - 1}}, key_.data(),
              secret_file());
}

std::vector<std::string> CheckpointStore::files() const {
  std::vector<std::pair<uint64_t, std::string>> found;
  DIR* d = ::opendir(dir_.c_str());
  if (!d) return {};
  while (dirent* e = ::readdir(d)) {
    uint64_t step;
    if (parse_name(e->d_name, &step)) found.emplace_back(step, dir_ + "/" + e->d_name);
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (auto& f : found) out.push_back(f.second);
  return out;
}

std::string CheckpointStore::write(uint64_t step, const std::vector<uint8_t>& payload) const {
  const std::string final_path = dir_ + "/ckpt-" + std::to_string(step) + ".rck";
  const std::string tmp = dir_ + "/.ckpt-" + std::to_string(step) + ".tmp." + std::to_string(::getpid());

  uint8_t head[kHeader];
  std::memcpy(head, kMagic, 8);
  put_le(head + 8, kVersion, 4);
  put_le(head + 12, kHeader, 4);
  put_le(head + 16, step, 8);
  put_le(head + 24, payload.size(), 8);
  hmac_sha256(key_, {{head, kFixed}, {payload.data(), payload.size()}}, head + kFixed, tmp);

  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw CheckpointError(tmp, sys_error("cannot create"));
  try {
    write_all(fd, head, kHeader, tmp);
    size_t half = payload.size() / 2;
    write_all(fd, payload.data(), half, tmp);
    if (int ms = checkpoint_test_pause_ms()) ::usleep(useconds_t(ms) * 1000);
    write_all(fd, payload.data() + half, payload.size() - half, tmp);
    if (::fsync(fd) != 0) throw CheckpointError(tmp, sys_error("fsync"));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    ::unlink(tmp.c_str());
    throw CheckpointError(tmp, sys_error("close"));
  }
  if (::rename(tmp.c_str(), final_path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw CheckpointError(final_path, sys_error("rename from " + tmp));
  }
  // The rename is durable only once the folder's entry is on disk.
  int dfd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }

  // Keep the newest kKeep; remove temporary files whose writer is gone.
  std::vector<std::string> all = files();
  for (size_t i = kKeep; i < all.size(); ++i) ::unlink(all[i].c_str());
  if (DIR* d = ::opendir(dir_.c_str())) {
    while (dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      size_t at = name.rfind(".tmp.");
      if (name.rfind(".ckpt-", 0) != 0 || at == std::string::npos) continue;
      long pid = 0;
      if (ringsched::parse_long(name.c_str() + at + 5, 1, 0x7fffffff, &pid) && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlink((dir_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
  return final_path;
}

Checkpoint CheckpointStore::read_file(const std::string& path) const {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) throw CheckpointError(path, sys_error("cannot open"));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw CheckpointError(path, sys_error("fstat"));
  }
  std::vector<uint8_t> data(size_t(st.st_size));
  size_t got = 0;
  while (got < data.size()) {
    ssize_t r = ::read(fd, data.data() + got, data.size() - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += size_t(r);
  }
  ::close(fd);
  if (got < kHeader)
    throw CheckpointError(path, "truncated: " + std::to_string(got) + " bytes, the header alone is " +
                                    std::to_string(kHeader));
  if (std::memcmp(data.data(), kMagic, 8) != 0) throw CheckpointError(path, "not a ringrun checkpoint (bad magic)");
  uint64_t version = get_le(data.data() + 8, 4);
  if (version != kVersion)
    throw CheckpointError(path, "unsupported version " + std::to_string(version) + " (this build reads " +
                                    std::to_string(kVersion) + ")");
  uint64_t header = get_le(data.data() + 12, 4);
  if (header != kHeader) throw CheckpointError(path, "bad header size " + std::to_string(header));
  uint64_t step = get_le(data.data() + 16, 8);
  uint64_t len = get_le(data.data() + 24, 8);
  if (len > kMaxPayload) throw CheckpointError(path, "payload size " + std::to_string(len) + " out of bounds");
  if (got != kHeader + len)
    throw CheckpointError(path, (got < kHeader + len ? "truncated: " : "trailing bytes: ") + std::to_string(got) +
                                    " bytes on disk, header says " + std::to_string(kHeader + len));
  uint8_t digest[kDigest];
  hmac_sha256(key_, {{data.data(), kFixed}, {data.data() + kHeader, len}}, digest, path);
  if (!same_digest(digest, data.data() + kFixed))
    throw CheckpointError(path, "checksum mismatch: its HMAC-SHA256 does not verify with the job's secret "
                                "(corrupt, or not written by this job)");
  Checkpoint c;
  c.step = step;
  c.payload.assign(data.begin() + kHeader, data.end());
  c.file = path;
  return c;
}

bool CheckpointStore::load_latest(Checkpoint* out, std::vector<std::string>* warnings) const {
  for (const std::string& f : files()) {
    try {
      *out = read_file(f);
      return true;
    } catch (const CheckpointError& e) {
      if (warnings) warnings->push_back(std::string(e.what()) + "; refused, trying the previous one");
    }
  }
  return false;
}

// --- payload helpers ------------------------------------------------------------------------------

void PayloadWriter::u64(uint64_t v) {
  uint8_t b[8];
  put_le(b, v, 8);
  buf_.insert(buf_.end(), b, b + 8);
}

void PayloadWriter::f64s(const std::vector<double>& v) {
  u64(v.size());
  for (double d : v) {
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    u64(bits);
  }
}

void PayloadWriter::str(const std::string& s) {
  u64(s.size());
  buf_.insert(buf_.end(), s.begin(), s.end());
}

void PayloadReader::need(size_t n, const char* what) {
  if (buf_.size() - pos_ < n)
    throw CheckpointError(file_, std::string("payload too short reading ") + what);
}

uint64_t PayloadReader::u64() {
  need(8, "an integer");
  uint64_t v = get_le(buf_.data() + pos_, 8);
  pos_ += 8;
  return v;
}

std::vector<double> PayloadReader::f64s(size_t max_count) {
  uint64_t n = u64();
  if (n > max_count) throw CheckpointError(file_, "array of " + std::to_string(n) + " values out of bounds");
  need(n * 8, "an array");
  std::vector<double> v(n);
  for (auto& d : v) {
    uint64_t bits = u64();
    std::memcpy(&d, &bits, 8);
  }
  return v;
}

std::string PayloadReader::str(size_t max_len) {
  uint64_t n = u64();
  if (n > max_len) throw CheckpointError(file_, "string of " + std::to_string(n) + " bytes out of bounds");
  need(n, "a string");
  std::string s(reinterpret_cast<const char*>(buf_.data() + pos_), n);
  pos_ += n;
  return s;
}

}  // namespace ringrun
