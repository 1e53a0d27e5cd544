// SPDX-License-Identifier: GPL-2.0-or-later
// libringrt under attack and failure: wrong secrets and loose secret files are refused; a killed
// or stopped rank makes every other rank return RINGRT_ERR_PEER naming it within the timeout;
// corrupt and truncated frames injected by a raw client are rejected; 10,000 collectives do not
// grow memory, and valgrind finds no leak. (The pieces that need no world are in
// test_ringrt_unit.cpp.)
#include <cppunit/extensions/HelperMacros.h>

#include "internal.h"
#include "ringrt.h"
#include "ringrt_harness.h"
#include "test_skip.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>

using namespace ringrt_test;

namespace {

std::string temp_path(const char* tag) {
  return std::string("/tmp/ringrt-test-") + tag + "-" + std::to_string(getpid());
}

// Each rank loops on allreduce until it fails; it must fail with RINGRT_ERR_PEER naming `victim`
// within the timeout (plus slack). The victim itself is killed or stopped by the parent.
int until_failure(int rank, int victim, int timeout_ms, size_t count) {
  RANK_CHECK(ringrt_init());
  std::vector<float> buf(count, 1.0f);
  const double give_up = mono_s() + 30;
  while (mono_s() < give_up) {
    double t0 = mono_s();
    ringrt_result_t rc = ringrt_allreduce(nullptr, buf.data(), count, RINGRT_FLOAT32, RINGRT_SUM);
    double took = mono_s() - t0;
    if (rc == RINGRT_OK) {
      for (float& v : buf) v = 1.0f;
      continue;
    }
    int failed = -2;
    ringrt_failed_rank(&failed);
    std::printf("rank %d: %s after %.0f ms, failed rank %d: %s\n", rank, ringrt_error_string(rc), took * 1000, failed,
                ringrt_error_detail());
    if (rc != RINGRT_ERR_PEER) return 40;
    if (failed != victim) return 41;
    if (!std::strstr(ringrt_error_detail(), ("rank " + std::to_string(victim)).c_str())) return 42;
    if (took * 1000 > timeout_ms + 2500) return 43;
    // the world stays broken until re-formed
    if (ringrt_barrier() != rc) return 44;
    ringrt_finalize();
    return 0;
  }
  std::printf("rank %d: no error within 30 s\n", rank);
  return 45;
}

void fault_world(int n, const std::string& backend, const std::vector<std::string>& hosts, int victim, bool stop,
                 size_t count, const std::string& tcp_algorithm = "") {
  WorldEnv env;
  env.world = n;
  env.port = free_port();
  env.backend = backend;
  env.hosts = hosts;
  env.tcp_algorithm = tcp_algorithm;
  env.timeout_ms = stop ? 1000 : 3000;
  auto out = run_world(
      env, [&](int r) { return until_failure(r, victim, env.timeout_ms, count); }, 60,
      [&](const std::vector<pid_t>& pids) {
        usleep(800 * 1000);  // let them get going
        if (stop) {
          kill(pids[victim], SIGSTOP);
          usleep(static_cast<useconds_t>(env.timeout_ms + 3000) * 1000);
          kill(pids[victim], SIGKILL);
          kill(pids[victim], SIGCONT);
        } else {
          kill(pids[victim], SIGKILL);
        }
      });
  for (int r = 0; r < n; ++r) {
    if (r == victim) {
      CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 128 + SIGKILL, out[r].status);
      continue;
    }
    CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[r].status);
  }
}

}  // namespace

class RingrtFaultTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(RingrtFaultTest);
  CPPUNIT_TEST(testWrongSecretRefused);
  CPPUNIT_TEST(testSecretFileMode);
  CPPUNIT_TEST(testKilledPeerTcp);
  CPPUNIT_TEST(testKilledPeerTcpRingOfFour);
  CPPUNIT_TEST(testKilledPeerShm);
  CPPUNIT_TEST(testKilledPeerHier);
  CPPUNIT_TEST(testStalledPeerTcp);
  CPPUNIT_TEST(testStalledPeerTcpHalving);
  CPPUNIT_TEST(testAlgorithmMismatch);
  CPPUNIT_TEST(testStalledPeerShm);
  CPPUNIT_TEST(testCorruptFrames);
  CPPUNIT_TEST(testNoMemoryGrowth);
  CPPUNIT_TEST(testValgrindLeakCheck);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testWrongSecretRefused();
  void testSecretFileMode();
  // four ranks: halving/doubling (the default there), where rank 0 is no neighbour of rank 2,
  // and the ring
  void testKilledPeerTcp() { fault_world(4, "tcp", {}, 2, false, 256 * 1024); }
  void testKilledPeerTcpRingOfFour() { fault_world(4, "tcp", {}, 2, false, 256 * 1024, "ring"); }
  void testKilledPeerShm() { fault_world(3, "shm", {}, 1, false, 256 * 1024); }
  void testKilledPeerHier() { fault_world(4, "auto", {"a", "a", "b", "b"}, 3, false, 256 * 1024); }
  void testStalledPeerTcp() { fault_world(3, "tcp", {}, 1, true, 64 * 1024); }
  void testStalledPeerTcpHalving() { fault_world(4, "tcp", {}, 1, true, 64 * 1024, "halving"); }
  void testAlgorithmMismatch();
  void testStalledPeerShm() { fault_world(3, "shm", {}, 2, true, 64 * 1024); }
  void testCorruptFrames();
  void testNoMemoryGrowth();
  void testValgrindLeakCheck();
};

void RingrtFaultTest::testWrongSecretRefused() {
  WorldEnv env;
  env.world = 2;
  env.port = free_port();
  env.backend = "tcp";
  auto legit = [&](int rank) {
    env.apply(rank);
    if (rank == 1) usleep(600 * 1000);  // the intruder goes first
    RANK_CHECK(ringrt_init());
    int32_t v = 5;
    RANK_CHECK(ringrt_allreduce(nullptr, &v, 1, RINGRT_INT32, RINGRT_SUM));
    RANK_CHECK(ringrt_finalize());
    return v == 10 ? 0 : 50;
  };
  std::vector<std::function<int()>> fns = {
      [&] { return legit(0); },
      [&] { return legit(1); },
      [&] {
        env.apply(1);
        setenv("RINGRT_SECRET", "not-the-job-secret", 1);
        usleep(150 * 1000);
        ringrt_result_t rc = ringrt_init();
        std::printf("intruder: %s: %s\n", ringrt_error_string(rc), ringrt_error_detail());
        return rc == RINGRT_ERR_AUTH ? 0 : 51;
      }};
  auto out = run_procs(fns, 60);
  for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
  CPPUNIT_ASSERT_MESSAGE(describe(out), out[0].output.find("refused") != std::string::npos);
  CPPUNIT_ASSERT_MESSAGE(describe(out), out[0].output.find("does not prove the job secret") != std::string::npos);
  CPPUNIT_ASSERT_MESSAGE(describe(out), out[2].output.find("wrong job secret") != std::string::npos);
}

void RingrtFaultTest::testSecretFileMode() {
  const std::string path = temp_path("secret");
  {
    std::ofstream f(path);
    f << "file-secret-abc\n";
  }
  chmod(path.c_str(), 0644);
  WorldEnv env;
  env.world = 1;
  env.port = free_port();
  auto out = run_world(env, [&](int rank) {
    unsetenv("RINGRT_SECRET");
    setenv("RINGRT_SECRET_FILE", path.c_str(), 1);
    ringrt_result_t rc = ringrt_init();
    std::printf("0644: %s: %s\n", ringrt_error_string(rc), ringrt_error_detail());
    if (rc != RINGRT_ERR_AUTH || !std::strstr(ringrt_error_detail(), "0644")) return 60;
    unsetenv("RINGRT_SECRET_FILE");
    rc = ringrt_init();  // no secret at all
    if (rc != RINGRT_ERR_AUTH) return 61;
    chmod(path.c_str(), 0600);
    setenv("RINGRT_SECRET_FILE", path.c_str(), 1);
    RANK_CHECK(ringrt_init());
    RANK_CHECK(ringrt_finalize());
    return 0;
  });
  unlink(path.c_str());
  CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[0].status);
  // and a 0600 file is read without its trailing newline
  std::string s;
  {
    std::ofstream f(path);
    f << "abc\n";
  }
  chmod(path.c_str(), 0600);
  CPPUNIT_ASSERT_EQUAL(RINGRT_OK, ringrt::load_secret_file(path, &s));
  CPPUNIT_ASSERT_EQUAL(std::string("abc"), s);
  chmod(path.c_str(), 0640);
  CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_AUTH, ringrt::load_secret_file(path, &s));
  unlink(path.c_str());
}

namespace {
// A raw client that joins as rank 1 (it knows the secret), forms the ring, then writes `bytes`
// onto the data connection to rank 0 instead of proper frames.
int raw_rank1(const WorldEnv& env, const std::string& bytes, bool then_close) {
  env.apply(1);
  ringrt::Config cfg;
  if (ringrt::config_from_env(&cfg) != RINGRT_OK) return 70;
  ringrt::Table table;
  ringrt::Fd listener;
  if (ringrt::rendezvous(cfg, &table, &listener) != RINGRT_OK) {
    std::printf("raw: rendezvous: %s\n", ringrt::last_detail().c_str());
    return 71;
  }
  ringrt::TcpRing ring;
  if (ring.connect(cfg, table, {0, 1}, listener.fd, ringrt::now_ns() + ringrt::ms_to_ns(10000)) != RINGRT_OK) {
    std::printf("raw: connect: %s\n", ringrt::last_detail().c_str());
    return 72;
  }
  ringrt::set_nonblocking(ring.out_fd(), false);
  if (write(ring.out_fd(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) return 73;
  if (!then_close) usleep(3000 * 1000);
  return 0;
}

std::string frame(uint32_t seq, uint32_t len, size_t payload) {
  ringrt::FrameHeader h{};
  h.magic = ringrt::kFrameMagic;
  h.type = ringrt::kFrameData;
  h.kind = ringrt::kCollAllreduce;
  h.dtype = RINGRT_FLOAT32;
  h.op = RINGRT_SUM;
  h.seq = seq;
  h.item = 0;
  h.length = len;
  h.src = 1;
  ringrt::seal_header(&h);
  std::string s(reinterpret_cast<const char*>(&h), sizeof h);
  s.append(payload, '\x01');
  return s;
}
}  // namespace

// Ranks configured with different TCP algorithms must not hang or mix up data: a rank that sees
// a frame of the other algorithm names the mismatch, and every rank fails within the timeout
// (the rank it blames hears of it as a closed connection).
void RingrtFaultTest::testAlgorithmMismatch() {
  WorldEnv env;
  env.world = 4;
  env.port = free_port();
  env.backend = "tcp";
  env.timeout_ms = 2000;
  auto out = run_world(env, [&](int rank) {
    setenv("RINGRT_TCP_ALGORITHM", rank < 2 ? "halving" : "ring", 1);
    RANK_CHECK(ringrt_init());
    std::vector<float> buf(64 * 1024, 1.0f);
    double t0 = mono_s();
    ringrt_result_t rc = ringrt_allreduce(nullptr, buf.data(), buf.size(), RINGRT_FLOAT32, RINGRT_SUM);
    double took = mono_s() - t0;
    std::printf("rank %d: %s after %.0f ms: %s\n", rank, ringrt_error_string(rc), took * 1000, ringrt_error_detail());
    if (rc != RINGRT_ERR_PROTOCOL && rc != RINGRT_ERR_PEER) return 80;
    if (took * 1000 > env.timeout_ms + 2500) return 81;
    ringrt_finalize();
    return 0;
  }, 60);
  bool named = false;
  for (const RankOutcome& o : out) {
    CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
    named = named || o.output.find("collective mismatch") != std::string::npos;
  }
  CPPUNIT_ASSERT_MESSAGE(describe(out), named);
  // and a value that is neither is refused at init
  auto bad = run_world(env, [&](int) {
    setenv("RINGRT_TCP_ALGORITHM", "tree", 1);
    ringrt_result_t rc = ringrt_init();
    std::printf("%s: %s\n", ringrt_error_string(rc), ringrt_error_detail());
    return rc == RINGRT_ERR_CONFIG && std::strstr(ringrt_error_detail(), "RINGRT_TCP_ALGORITHM") ? 0 : 82;
  }, 60);
  for (const RankOutcome& o : bad) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(bad), 0, o.status);
}

void RingrtFaultTest::testCorruptFrames() {
  const size_t count = 100000;  // two blocks of 200000 bytes: one frame each at the first step
  struct Case { const char* name; std::string bytes; bool close; ringrt_result_t want; };
  std::string flipped = frame(1, 200000, 0);
  flipped[12] ^= 0x40;  // a bit flip in the sequence number breaks the header checksum
  std::vector<Case> cases = {
      {"garbage", std::string(64, 'A'), false, RINGRT_ERR_PROTOCOL},
      {"bit flip", flipped, false, RINGRT_ERR_PROTOCOL},
      {"wrong sequence", frame(999, 200000, 200000), false, RINGRT_ERR_PROTOCOL},
      {"short frame", frame(1, 100, 100) + frame(1, 200000, 0), false, RINGRT_ERR_PROTOCOL},
      {"cut mid-frame", frame(1, 200000, 1000), true, RINGRT_ERR_PEER},
  };
  for (const Case& c : cases) {
    WorldEnv env;
    env.world = 2;
    env.port = free_port();
    env.backend = "tcp";
    env.timeout_ms = 2000;
    std::vector<std::function<int()>> fns = {
        [&] {
          int rank = 0;
          env.apply(0);
          RANK_CHECK(ringrt_init());
          std::vector<float> buf(count, 1.f);
          ringrt_result_t rc = ringrt_allreduce(nullptr, buf.data(), count, RINGRT_FLOAT32, RINGRT_SUM);
          int failed = -2;
          ringrt_failed_rank(&failed);
          std::printf("%s: %s, failed rank %d: %s\n", c.name, ringrt_error_string(rc), failed, ringrt_error_detail());
          ringrt_finalize();
          return rc == c.want && failed == 1 ? 0 : 74;
        },
        [&] { return raw_rank1(env, c.bytes, c.close); }};
    auto out = run_procs(fns, 30);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(std::string(c.name) + ": " + describe(out), 0, out[0].status);
    CPPUNIT_ASSERT_EQUAL_MESSAGE(std::string(c.name) + ": " + describe(out), 0, out[1].status);
  }
}

namespace {
long rss_kb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return -1;
}
}  // namespace

void RingrtFaultTest::testNoMemoryGrowth() {
  for (const char* backend : {"tcp", "shm"}) {
    WorldEnv env;
    env.world = 2;
    env.port = free_port();
    env.backend = backend;
    auto out = run_world(env, [&](int rank) {
      RANK_CHECK(ringrt_init());
      std::vector<float> small(1024), mid(40000);
      std::vector<double> d(3);
      size_t heap1 = 0;
      long rss1 = 0;
      int ops = 0;
      for (int it = 0; it < 2500; ++it) {
        RANK_CHECK(ringrt_allreduce(nullptr, small.data(), small.size(), RINGRT_FLOAT32, RINGRT_AVG));
        RANK_CHECK(ringrt_allreduce(nullptr, mid.data(), mid.size(), RINGRT_FLOAT32, RINGRT_SUM));
        RANK_CHECK(ringrt_broadcast(d.data(), d.size(), RINGRT_FLOAT64, it % 2));
        ringrt_bucket_t b[2] = {{small.data(), 100, nullptr, 0}, {mid.data(), 300, nullptr, 0}};
        int depth[2] = {2, 1};
        RANK_CHECK(ringrt_allreduce_spb_depth(b, 2, RINGRT_FLOAT32, depth));
        ops += 4;
        if (it == 249) {
          heap1 = mallinfo2().uordblks;
          rss1 = rss_kb();
        }
      }
      size_t heap2 = mallinfo2().uordblks;
      long rss2 = rss_kb();
      std::printf("rank %d: %d collectives; heap %zu -> %zu bytes, rss %ld -> %ld KiB\n", rank, ops, heap1, heap2,
                  rss1, rss2);
      RANK_CHECK(ringrt_finalize());
      if (heap2 > heap1 + 4096) return 80;
      if (rss2 > rss1 + 256) return 81;
      return 0;
    }, 120);
    for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
  }
}

void RingrtFaultTest::testValgrindLeakCheck() {
  if (system("command -v valgrind >/dev/null 2>&1") != 0)
    RINGSCHED_SKIP("valgrind is not installed (scripts/install-deps.sh installs it)");
  std::string cmd = std::string("sh ") + RINGSCHED_SRCDIR + "/tests/ringrt-leakcheck.sh " + RINGSCHED_BUILDDIR +
                    "/tests/ringrt_leak_worker 400 > " + temp_path("vg") + ".log 2>&1";
  int rc = system(cmd.c_str());
  std::ifstream f(temp_path("vg") + ".log");
  std::string log((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  unlink((temp_path("vg") + ".log").c_str());
  CPPUNIT_ASSERT_EQUAL_MESSAGE(log, 0, rc);
}

CPPUNIT_TEST_SUITE_REGISTRATION(RingrtFaultTest);
