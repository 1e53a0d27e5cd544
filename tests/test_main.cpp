// Shared main() of every CppUnit test program: runs all registered suites (or the ones named on
// the command line), prints one line per test and a closing "N passed, N failed" line that
// scripts/test.sh sums across programs.
#include <cppunit/BriefTestProgressListener.h>
#include <cppunit/TestResult.h>
#include <cppunit/TestResultCollector.h>
#include <cppunit/TestFailure.h>
#include <cppunit/SourceLine.h>
#include <cppunit/Exception.h>
#include <cppunit/extensions/TestFactoryRegistry.h>
#include <cppunit/ui/text/TestRunner.h>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

namespace {

class LineListener : public CppUnit::TestListener {
 public:
  void startTest(CppUnit::Test* test) override {
    failed_ = false;
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
    std::printf("%s %s (%.2f s)\n", failed_ ? "FAIL" : "PASS", test->getName().c_str(), s);
    std::fflush(stdout);
    (failed_ ? failures : passes)++;
  }
  int passes = 0;
  int failures = 0;

 private:
  bool failed_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

int main(int argc, char** argv) {
  CppUnit::TestResult controller;
  LineListener lines;
  controller.addListener(&lines);
  CppUnit::TextUi::TestRunner runner;
  runner.addTest(CppUnit::TestFactoryRegistry::getRegistry().makeTest());
  if (argc > 1) {
    for (int i = 1; i < argc; ++i) runner.run(controller, argv[i]);
  } else {
    runner.run(controller);
  }
  std::printf("%d passed, %d failed\n", lines.passes, lines.failures);
  return lines.failures == 0 ? 0 : 1;
}
