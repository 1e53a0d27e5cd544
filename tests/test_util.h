// Small helpers shared by the test programs: temporary folders that clean up, the text of an
// expected exception, and paths of the reference data.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <stdexcept>
#include <string>

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

// A file under ../shared/data (RINGSCHED_SHARED_DATA; the environment variable of the same name
// overrides it).
inline std::string shared_data(const std::string& rel) {
  const char* env = std::getenv("RINGSCHED_SHARED_DATA");
  return std::string(env && *env ? env : RINGSCHED_SHARED_DATA) + "/" + rel;
}

// A file of this repository.
inline std::string repo_file(const std::string& rel) { return std::string(RINGSCHED_SRCDIR) + "/" + rel; }

}  // namespace ringsched_test

using namespace ringsched_test;
