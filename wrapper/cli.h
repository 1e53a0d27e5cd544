// Command-line helpers shared by ringrun and ringrun-train.
#pragma once

#include <cerrno>
#include <cstdlib>

namespace ringrun {

// A whole decimal number within [lo, hi]; false for anything else (empty, trailing text, overflow),
// so that an option or a variable is never half-read.
inline bool parse_long(const char* s, long lo, long hi, long* out) {
  if (!s) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (errno || !end || *end || end == s || v < lo || v > hi) return false;
  *out = v;
  return true;
}

inline bool parse_int(const char* s, int lo, int hi, int* out) {
  long v = 0;
  if (!parse_long(s, lo, hi, &v)) return false;
  *out = int(v);
  return true;
}

}  // namespace ringrun
