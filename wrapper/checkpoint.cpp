// Checkpoint files: see checkpoint.h for the layout and the guarantees.
#include "checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <utility>

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

void sha256(const uint8_t* head, size_t head_len, const uint8_t* body, size_t body_len,
            uint8_t out[kDigest], const std::string& file) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  unsigned int len = 0;
  bool ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) == 1 &&
            EVP_DigestUpdate(ctx, head, head_len) == 1 &&
            (body_len == 0 || EVP_DigestUpdate(ctx, body, body_len) == 1) &&
            EVP_DigestFinal_ex(ctx, out, &len) == 1 && len == kDigest;
  EVP_MD_CTX_free(ctx);
  if (!ok) throw CheckpointError(file, "OpenSSL SHA-256 failed");
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
  long ms = std::strtol(v, nullptr, 10);
  return ms < 0 ? 0 : ms > 600000 ? 600000 : int(ms);
}

CheckpointStore::CheckpointStore(std::string dir) : dir_(std::move(dir)) {
  if (dir_.empty()) throw CheckpointError("(no folder)", "checkpoint folder not set");
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST)
    throw CheckpointError(dir_, sys_error("cannot create folder"));
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
  sha256(head, kFixed, payload.data(), payload.size(), head + kFixed, tmp);

  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
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
      long pid = std::strtol(name.c_str() + at + 5, nullptr, 10);
      if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) ::unlink((dir_ + "/" + name).c_str());
    }
    ::closedir(d);
  }
  return final_path;
}

Checkpoint CheckpointStore::read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
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
  sha256(data.data(), kFixed, data.data() + kHeader, len, digest, path);
  if (std::memcmp(digest, data.data() + kFixed, kDigest) != 0)
    throw CheckpointError(path, "SHA-256 checksum mismatch (corrupt)");
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
