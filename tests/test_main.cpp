// SPDX-License-Identifier: GPL-2.0-or-later
// Shared main() of every CppUnit test program: runs all registered suites (or the ones named on
// the command line), prints one line per test (PASS, FAIL, or SKIP with its reason) and a closing
// "N passed, N failed" line, with ", N skipped" where tests were skipped, that scripts/test.sh
// sums across programs. A test that
// cannot run here (a tool or a service is missing) calls RINGSCHED_SKIP(reason) (test_skip.h):
// it is counted as skipped, never as passed.
#include <cppunit/BriefTestProgressListener.h>
#include <cppunit/TestResult.h>
#include <cppunit/TestResultCollector.h>
#include <cppunit/TestFailure.h>
#include <cppunit/SourceLine.h>
#include <cppunit/Exception.h>
#include <cppunit/Protector.h>
#include <cppunit/extensions/TestFactoryRegistry.h>
#include <cppunit/ui/text/TestRunner.h>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "test_skip.h"

namespace {

// The reason the running test gave for skipping itself ("" while it has not).
std::string g_skip_reason;

// Catches the SkipTest of RINGSCHED_SKIP before CppUnit's own protector would report it as an
// error; CppUnit runs the innermost protector (the last pushed) closest to the test.
class SkipProtector : public CppUnit::Protector {
 public:
  bool protect(const CppUnit::Functor& functor, const CppUnit::ProtectorContext&) override {
    try {
      return functor();
    } catch (const ringsched_test::SkipTest& e) {
      g_skip_reason = e.what();
      return false;  // in setUp(): the test itself does not run
    }
  }
};

class LineListener : public CppUnit::TestListener {
 public:
  void startTest(CppUnit::Test* test) override {
    failed_ = false;
    g_skip_reason.clear();
    start_ = std::chrono::steady_clock::now();
    std::printf("RUN  %s\n", test->getName().c_str());
    std::fflush(stdout);
  }
  void addFailure(const CppUnit::TestFailure& failure) override {
    failed_ = true;
    const CppUnit::SourceLine where = failure.sourceLine();
    std::printf("     %s at %s:%d: %s\n", failure.isError() ? "error" : "failure",
                where.fileName().c_str(), where.lineNumber(),
                failure.thrownException()->message().details().c_str());
    std::printf("     %s\n", failure.thrownException()->what());
  }
  void endTest(CppUnit::Test* test) override {
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (!failed_ && !g_skip_reason.empty()) {
      std::printf("SKIP %s (%.2f s): %s\n", test->getName().c_str(), s, g_skip_reason.c_str());
      skips++;
    } else {
      std::printf("%s %s (%.2f s)\n", failed_ ? "FAIL" : "PASS", test->getName().c_str(), s);
      (failed_ ? failures : passes)++;
    }
    std::fflush(stdout);
  }
  int passes = 0;
  int failures = 0;
  int skips = 0;

 private:
  bool failed_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int main(int argc, char** argv) {
  CppUnit::TestResult controller;
  controller.pushProtector(new SkipProtector);  // the TestResult owns it
  LineListener lines;
  controller.addListener(&lines);
  CppUnit::TextUi::TestRunner runner;
  runner.addTest(CppUnit::TestFactoryRegistry::getRegistry().makeTest());
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) runner.run(controller, argv[i]);
  } else {
    runner.run(controller);
  }
  if (lines.skips > 0)
    std::printf("%d passed, %d failed, %d skipped\n", lines.passes, lines.failures, lines.skips);
  else
    std::printf("%d passed, %d failed\n", lines.passes, lines.failures);
  return lines.failures == 0 ? 0 : 1;
}
