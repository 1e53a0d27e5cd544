// SPDX-License-Identifier: GPL-2.0-or-later
// Checkpoints of ringrun jobs: atomic, authenticated, versioned files in a folder only the job's
// user can use; the newest two are kept so that a damaged or forged newest one falls back to the
// one before.
//
// The folder (see ringrun(1), CHECKPOINT FOLDER): created with mode 0700, or, when it exists,
// accepted only as a real folder (not a symbolic link) owned by the user with no access for group
// or others, in a parent folder that no other user can rename entries of (owned by the user or
// root, and sticky if others may write it). Anything else is refused naming the folder and why:
// another user could otherwise plant checkpoints, resize requests or read the secret.
//
// The job's secret: DIR/secret, 64 hexadecimal characters (32 random bytes), mode 0600, made once
// by the first CheckpointStore of the folder and kept across restarts. The ring runtime reads it
// (RINGRT_SECRET_FILE) to authenticate peers; checkpoints are authenticated with a key derived
// from it: K = HMAC-SHA256(key = the 64 characters of the file, message = "ringrun checkpoint v2").
//
// File layout (all integers little-endian):
//   magic "RINGCKPT" (8) | version u32 (2) | header bytes u32 | step u64 | payload bytes u64 |
//   HMAC-SHA256 with K (32) of everything before it plus the payload | payload
// A file is written as DIR/.ckpt-<step>.tmp.<pid>, fsync'ed, renamed to DIR/ckpt-<step>.rck and
// the folder fsync'ed: a reader sees either the whole new file or none of it. A file whose MAC
// does not verify (altered, or written without the secret) is refused like a corrupt one.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace ringrun {

// A checkpoint file that is not usable: names the file and says what is wrong with it.
class CheckpointError : public std::runtime_error {
 public:
  CheckpointError(const std::string& file, const std::string& what)
      : std::runtime_error("checkpoint " + file + ": " + what), file_(file) {}
  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

struct Checkpoint {
  uint64_t step = 0;             // training steps completed when it was taken
  std::vector<uint8_t> payload;  // the trainer's state, opaque here
  std::string file;              // where it was read from (empty before it is written)
};

class CheckpointStore {
 public:
  static constexpr uint32_t kVersion = 2;
  static constexpr int kKeep = 2;

  // Makes sure `dir` is private to this user (created with mode 0700 if missing) and loads the
  // job's secret from it, creating the secret if it has none yet. Throws CheckpointError naming
  // the folder (or the secret file) and what is wrong with it.
  explicit CheckpointStore(std::string dir);
  const std::string& dir() const { return dir_; }
  // DIR/secret: the file the ring runtime reads (RINGRT_SECRET_FILE).
  std::string secret_file() const { return dir_ + "/secret"; }

  // Atomically writes step's checkpoint, then deletes all but the newest kKeep and stale
  // temporary files of dead writers. Throws CheckpointError on I/O failure (the previous
  // checkpoints are untouched then). Returns the file's path.
  std::string write(uint64_t step, const std::vector<uint8_t>& payload) const;

  // The newest checkpoint that verifies. Each refused file is reported on `warnings` (one line
  // per file, naming it and the reason). Returns false when no usable checkpoint exists.
  bool load_latest(Checkpoint* out, std::vector<std::string>* warnings) const;

  // Reads and verifies one file; throws CheckpointError naming it (truncated, bad magic,
  // unsupported version, MAC mismatch ...).
  Checkpoint read_file(const std::string& path) const;

  // Checkpoint files of the folder, newest first (by step in the name).
  std::vector<std::string> files() const;

 private:
  std::string dir_;
  std::vector<uint8_t> key_;  // K, derived from the secret
};

// Makes `dir` a folder private to this user, or refuses it: see the top of this file. Throws
// CheckpointError naming the folder and the reason.
void ensure_private_folder(const std::string& dir);

// Test hook, documented in ringrun(1): when RINGRUN_TEST_CKPT_PAUSE_MS is set, write() pauses
// that long half-way through the payload so that a test can kill the writer mid-write.
int checkpoint_test_pause_ms();

// Little serialisation helpers for payloads.
class PayloadWriter {
 public:
  void u64(uint64_t v);
  void f64s(const std::vector<double>& v);  // count then values
  void str(const std::string& s);
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

class PayloadReader {
 public:
  PayloadReader(const std::vector<uint8_t>& buf, std::string file) : buf_(buf), file_(std::move(file)) {}
  uint64_t u64();
  std::vector<double> f64s(size_t max_count);
  std::string str(size_t max_len);
  bool at_end() const { return pos_ == buf_.size(); }

 private:
  void need(size_t n, const char* what);
  const std::vector<uint8_t>& buf_;
  std::string file_;
  size_t pos_ = 0;
};

}  // namespace ringrun
