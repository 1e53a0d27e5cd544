// SPDX-License-Identifier: GPL-2.0-or-later
// Small helpers shared by the test programs: temporary folders that clean up, the text of an
// expected exception, a shell command's exit status and output, and paths of the reference data.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>

#include "test_skip.h"

namespace ringsched_test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/ringsched-test-XXXXXX";
    const char* p = mkdtemp(tmpl);
    if (!p) throw std::runtime_error("mkdtemp failed");
    path_ = p;
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  // Writes `text` to `name` inside the folder and returns the full path.
  std::string write(const std::string& name, const std::string& text) const {
    std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::string path_;
};

// The message of the exception `f` throws, or "" if it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Runs `cmd` with sh; its exit status (-1: it could not run or was killed) and what it wrote to
// standard output and standard error, together.
inline std::pair<int, std::string> run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, out};
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

// A file under ../shared/data (RINGSCHED_SHARED_DATA; the environment variable of the same name
// overrides it). The data is not part of this repository: a clone without ../shared beside it
// skips the tests that read it, naming the missing folder. Where the folder is there, a file
// missing from it is not a skip: the test fails on it, as a loss of data should.
inline std::string shared_data(const std::string& rel) {
  const char* env = std::getenv("RINGSCHED_SHARED_DATA");
  const std::string root = env && *env ? env : RINGSCHED_SHARED_DATA;
  if (access(root.c_str(), R_OK | X_OK) != 0)
    RINGSCHED_SKIP("reference data folder " + root + " (for " + rel +
                   ") is missing: clone with ../shared beside the checkout, or set RINGSCHED_SHARED_DATA");
  return root + "/" + rel;
}

// A file of this repository.
inline std::string repo_file(const std::string& rel) { return std::string(RINGSCHED_SRCDIR) + "/" + rel; }

// step -> (loss, world) from ringrun-train's --loss-log file (a step logged twice, after a
// restart, keeps its last value).
inline std::map<long, std::pair<double, int>> read_loss(const std::string& path) {
  std::map<long, std::pair<double, int>> m;
  std::ifstream in(path);
  long step;
  double loss;
  int world;
  while (in >> step >> loss >> world) m[step] = {loss, world};
  return m;
}

}  // namespace ringsched_test

using namespace ringsched_test;
