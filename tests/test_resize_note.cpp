// SPDX-License-Identifier: GPL-2.0-or-later
// Unit tests of the formats the plugins and ringrun share (plugins/common): the resize notes in a
// job's AdminComment and Comment, and the one bounded number parser. Linked into test_slurm_conf.
#include <cppunit/extensions/HelperMacros.h>

#include <cmath>
#include <limits>
#include <string>

#include "bounded_int.h"
#include "resize_note.h"

using ringsched::PlannerNote;
using ringsched::WrapperNote;

class ResizeNoteTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(ResizeNoteTest);
  CPPUNIT_TEST(testPlannerNoteRoundTrip);
  CPPUNIT_TEST(testPlannerNoteRefusesMalformed);
  CPPUNIT_TEST(testPlannerNoteCarriesEarlierRuns);
  CPPUNIT_TEST(testWrapperNoteRoundTrip);
  CPPUNIT_TEST(testWrapperNoteKeepsUserText);
  CPPUNIT_TEST(testBoundedIntegers);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testPlannerNoteRoundTrip() {
    const PlannerNote r = PlannerNote::resize(4, "p100", 1700000000);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:resize=4,type=p100,at=1700000000"), r.str());
    const PlannerNote back = PlannerNote::parse(r.str());
    CPPUNIT_ASSERT(back.is_request());
    CPPUNIT_ASSERT(back.same_decision(r));
    const PlannerNote done = PlannerNote::parse(r.resized().str());
    CPPUNIT_ASSERT(done.kind == PlannerNote::Kind::Resized);
    CPPUNIT_ASSERT(!done.is_request());
    CPPUNIT_ASSERT(done.same_decision(r));
    CPPUNIT_ASSERT(PlannerNote::parse("ringsched:admitted").kind == PlannerNote::Kind::Admitted);
    // The form an admin writes by hand (the tests do): no type, at=0.
    const PlannerNote by_hand = PlannerNote::parse("ringsched:resize=2,at=0");
    CPPUNIT_ASSERT(by_hand.is_request());
    CPPUNIT_ASSERT_EQUAL(2, by_hand.gpus);
    CPPUNIT_ASSERT(by_hand.type.empty());
    // A stop (preemption) is a request too, carried out as "stopped".
    const PlannerNote stop = PlannerNote::stop(1700000123);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:stop,at=1700000123"), stop.str());
    const PlannerNote stop_back = PlannerNote::parse(stop.str());
    CPPUNIT_ASSERT(stop_back.is_request() && stop_back.is_stop());
    CPPUNIT_ASSERT_EQUAL(1700000123LL, stop_back.at);
    const PlannerNote stopped = PlannerNote::parse(stop.resized().str());
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:stopped,at=1700000123"), stop.resized().str());
    CPPUNIT_ASSERT(stopped.kind == PlannerNote::Kind::Stopped && !stopped.is_request());
    CPPUNIT_ASSERT(!r.is_stop());
  }

  void testPlannerNoteRefusesMalformed() {
    for (const char* bad : {"", "resize=4", "ringsched:resize=0,type=v100", "ringsched:resize=5000",
                            "ringsched:resize=4x,type=v100", "ringsched:resize=4,type=V100",
                            "ringsched:resize=4,type=v1/00", "ringsched:resize=4,colour=red",
                            "ringsched:resize=4,at=-5", "ringsched:resize=4,at=99999999999999999999",
                            "ringsched:resize=4,type=v100,type=k80", "x ringsched:resize=4",
                            "ringsched:resizing=4", "ringsched:admittedly", "ringsched:stop",
                            "ringsched:stop,at=", "ringsched:stop,at=5,at=6", "ringsched:stop=4,at=5",
                            "ringsched:stopped,at=x", "ringsched:stopping,at=5", "ringsched:stop,type=k80,at=5"})
      CPPUNIT_ASSERT_MESSAGE(bad, PlannerNote::parse(bad).kind == PlannerNote::Kind::None);
    CPPUNIT_ASSERT(PlannerNote::parse("ringsched:resize=9", 8).kind == PlannerNote::Kind::None);
    // The note ends at a blank: an admin's text may follow.
    CPPUNIT_ASSERT_EQUAL(8, PlannerNote::parse("ringsched:resize=8,type=k80,at=5 checked by ops").gpus);
  }

  // A requeue restarts Slurm's start time: the work of a job's earlier runs lives in the note,
  // added at each release and carried by every later decision.
  void testPlannerNoteCarriesEarlierRuns() {
    const PlannerNote grow = PlannerNote::resize(2, "v100", 100);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:resize=2,type=v100,at=100"), grow.str());  // none known yet
    const PlannerNote grown = grow.resized().with_run(1234.4, 60.6);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:resized=2,type=v100,at=100,done=1234,gpu_s=61"), grown.str());
    const PlannerNote back = PlannerNote::parse(grown.str());
    CPPUNIT_ASSERT(back.kind == PlannerNote::Kind::Resized && back.same_decision(grow));
    CPPUNIT_ASSERT_EQUAL(1234LL, back.done);
    CPPUNIT_ASSERT_EQUAL(61LL, back.gpu_s);
    // The next decision carries them on; the next release adds its run.
    const PlannerNote stop = PlannerNote::stop(200).with_progress_of(back);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:stop,at=200,done=1234,gpu_s=61"), stop.str());
    const PlannerNote stopped = PlannerNote::parse(PlannerNote::parse(stop.str()).resized().with_run(1000, 200).str());
    CPPUNIT_ASSERT(stopped.kind == PlannerNote::Kind::Stopped);
    CPPUNIT_ASSERT_EQUAL(200LL, stopped.at);
    CPPUNIT_ASSERT_EQUAL(2234LL, stopped.done);
    CPPUNIT_ASSERT_EQUAL(261LL, stopped.gpu_s);
    // What cannot be a run adds nothing; the sums stop at their bound.
    const double nan = std::nan("");
    const PlannerNote same = stopped.with_run(-5, nan).with_run(std::numeric_limits<double>::infinity(), 0);
    CPPUNIT_ASSERT_EQUAL(2234LL, same.done);
    CPPUNIT_ASSERT_EQUAL(261LL, same.gpu_s);
    CPPUNIT_ASSERT_EQUAL(PlannerNote::kMaxCount, stopped.with_run(1e300, 0).done);
    // Fields in any order after the head; each once, whole numbers in bounds.
    CPPUNIT_ASSERT_EQUAL(7LL, PlannerNote::parse("ringsched:resized=4,gpu_s=9,done=7,at=5").done);
    for (const char* bad : {"ringsched:resized=4,at=5,done=1,done=2", "ringsched:stop,at=5,gpu_s=-1",
                            "ringsched:stop,at=5,done=1.5", "ringsched:stopped,done=3",
                            "ringsched:resized=4,at=5,gpu_s=2251799813685249", "ringsched:resize=4,done=",
                            "ringsched:stopped,at=5,done=x", "ringsched:stop,at=5,gpus_s=3"})
      CPPUNIT_ASSERT_MESSAGE(bad, PlannerNote::parse(bad).kind == PlannerNote::Kind::None);
  }

  void testWrapperNoteRoundTrip() {
    for (const WrapperNote& n : {WrapperNote::ready(false), WrapperNote::ready(true), WrapperNote::requeued(42)}) {
      const WrapperNote back = WrapperNote::parse(n.str());
      CPPUNIT_ASSERT_MESSAGE(n.str(), back.state == n.state && back.signal == n.signal && back.at == n.at);
    }
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:wrapper=requeued,at=42"), WrapperNote::requeued(42).str());
    for (const char* bad : {"ringsched:wrapper=requeued", "ringsched:wrapper=ready,signal,extra",
                            "ringsched:wrapper=requeued,at=x", "ringsched:wrapper=gone", "wrapper=ready"})
      CPPUNIT_ASSERT_MESSAGE(bad, WrapperNote::parse(bad).state == WrapperNote::State::None);
  }

  void testWrapperNoteKeepsUserText() {
    const std::string user = "my experiment 7";
    const std::string ready = WrapperNote::ready(true).merged_into(user);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:wrapper=ready,signal; my experiment 7"), ready);
    const std::string requeued = WrapperNote::requeued(9).merged_into(ready);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:wrapper=requeued,at=9; my experiment 7"), requeued);
    CPPUNIT_ASSERT(WrapperNote::parse(requeued).at == 9);
    CPPUNIT_ASSERT_EQUAL(std::string("ringsched:wrapper=ready"), WrapperNote::ready(false).merged_into(""));
  }

  void testBoundedIntegers() {
    int v = -1;
    CPPUNIT_ASSERT(ringsched::parse_int("4096", 1, 4096, &v) && v == 4096);
    CPPUNIT_ASSERT(ringsched::parse_int("-3", -5, 5, &v) && v == -3);
    for (const char* bad : {"", "-", "4097", "0", " 4", "4 ", "+4", "4x", "0x10", "1e3", "99999999999999999999999"})
      CPPUNIT_ASSERT_MESSAGE(bad, !ringsched::parse_int(bad, 1, 4096, &v));
    long l = 0;
    CPPUNIT_ASSERT(ringsched::parse_long("9223372036854775807", 0, 9223372036854775807L, &l));
    CPPUNIT_ASSERT(!ringsched::parse_long("9223372036854775808", 0, 9223372036854775807L, &l));
    CPPUNIT_ASSERT(ringsched::parse_long("-9223372036854775808", -9223372036854775807L - 1, 0, &l));
    CPPUNIT_ASSERT(!ringsched::parse_int(static_cast<const char*>(nullptr), 0, 1, &v));
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(ResizeNoteTest);
