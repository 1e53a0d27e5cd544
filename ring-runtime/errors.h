// SPDX-License-Identifier: GPL-2.0-or-later
// errors.h -- the result codes' one checking macro, the thread-local error detail and blamed rank
// that fail() sets, the log on standard error, and the monotonic clock every deadline reads.
#ifndef RINGRT_ERRORS_H
#define RINGRT_ERRORS_H

#include "ringrt.h"

#include <cstdint>
#include <string>

// The one error-propagation macro: evaluate an expression returning ringrt_result_t and return it
// from the enclosing function unless it is RINGRT_OK.
#define RINGRT_CHECK(expr)                           \
  do {                                               \
    ringrt_result_t ringrt_check_rc_ = (expr);       \
    if (ringrt_check_rc_ != RINGRT_OK) return ringrt_check_rc_; \
  } while (0)

namespace ringrt {

using rr = ringrt_result_t;

rr fail(rr code, int blamed_rank, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
const std::string& last_detail();
int last_blamed();
void clear_error();
void set_error(rr code, int blamed, const std::string& detail);  // restore a saved error
void log_msg(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void set_log_rank(int rank);
bool debug_enabled();

int64_t now_ns();
inline int64_t ms_to_ns(int64_t ms) { return ms * 1000000LL; }
// Milliseconds from now to t, rounded up, for poll(): 0 once past, at most 1000000.
inline int ms_until(int64_t t, int64_t now) {
  const int64_t d = t - now;
  if (d <= 0) return 0;
  const int64_t ms = (d + 999999) / 1000000;
  return ms > 1000000 ? 1000000 : static_cast<int>(ms);
}

}  // namespace ringrt

#endif  // RINGRT_ERRORS_H
