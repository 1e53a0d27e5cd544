// SPDX-License-Identifier: GPL-2.0-or-later
// test_skip.h -- RINGSCHED_SKIP(reason): this test cannot run here (a tool or a service is
// missing). test_main.cpp prints it as SKIP with the reason and counts it apart from passes and
// failures; scripts/test.sh sums the skipped tests in its closing line.
#pragma once

#include <stdexcept>
#include <string>

namespace ringsched_test {

class SkipTest : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace ringsched_test

#define RINGSCHED_SKIP(reason) throw ::ringsched_test::SkipTest(reason)
