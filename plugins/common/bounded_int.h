// SPDX-License-Identifier: GPL-2.0-or-later
// The one parser of whole numbers from text that comes from outside (options, environment,
// configuration lines, job comments, file names): the whole text must be a decimal number within
// [lo, hi], with no sign but an optional '-', no space and nothing after it; anything else
// (empty, trailing text, overflow, out of bounds) is refused, so a value is never half-read.
// Header-only and free of Slurm, for the SPANK plugin (which links nothing else), the slurmctld
// plugins, ringrun and the tools alike.
#pragma once

#include <climits>
#include <string>

namespace ringsched {

inline bool parse_long(const char* s, long lo, long hi, long* out) {
  if (!s) return false;
  const bool negative = *s == '-';
  const char* p = negative ? s + 1 : s;
  if (*p == '\0') return false;
  unsigned long long magnitude = 0;
  for (; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    magnitude = magnitude * 10 + static_cast<unsigned>(*p - '0');
    if (magnitude > static_cast<unsigned long long>(LONG_MAX) + 1) return false;
  }
  if (!negative && magnitude > static_cast<unsigned long long>(LONG_MAX)) return false;
  const long v = negative ? static_cast<long>(0 - magnitude) : static_cast<long>(magnitude);
  if (v < lo || v > hi) return false;
  *out = v;
  return true;
}
inline bool parse_long(const std::string& s, long lo, long hi, long* out) { return parse_long(s.c_str(), lo, hi, out); }

inline bool parse_int(const char* s, int lo, int hi, int* out) {
  long v = 0;
  if (!parse_long(s, lo, hi, &v)) return false;
  *out = static_cast<int>(v);
  return true;
}
inline bool parse_int(const std::string& s, int lo, int hi, int* out) { return parse_int(s.c_str(), lo, hi, out); }

}  // namespace ringsched
