// SPDX-License-Identifier: GPL-2.0-or-later
// libringrt with ranks that arrive at very different times, as in training where each rank
// computes for a while between collectives: 4 ranks as processes sleep a random 0-400 ms between
// collectives (one of them always arrives last) and every result must be right and no rank may
// be called stalled; and ranks that exit straight after the last collective, with skewed timing,
// must all return RINGRT_OK (a peer that already delivered everything is not dead).
#include <cppunit/extensions/HelperMacros.h>

#include "ringrt.h"
#include "ringrt_harness.h"

#include <cstdint>
#include <cstring>
#include <random>

using namespace ringrt_test;

namespace {

// The compute time of `rank` before collective `it`, the same on every rank (shared seed): each
// rank draws 0-400 ms, mostly short (400 u^8, mean 44 ms) so that a few hundred collectives fit in
// seconds; the `laggard` always takes a little longer than the slowest of the others, so that it
// never waits in a collective, like a worker on a slower GPU.
int compute_ms(int world, int laggard, int rank, int it) {
  auto draw = [&](int r) {
    std::mt19937 g(static_cast<uint32_t>(it * 7919 + r * 104729 + 17));
    double u = std::uniform_real_distribution<double>(0.0, 1.0)(g);
    double u2 = u * u, u4 = u2 * u2;
    return static_cast<int>(400 * u4 * u4);
  };
  if (rank != laggard) return draw(rank);
  int most = 0;
  for (int r = 0; r < world; ++r)
    if (r != laggard) most = std::max(most, draw(r));
  return std::min(400, most + 5 + draw(laggard) % 20);
}

// Iterations of (sleep, allreduce checked against the closed form), with a broadcast and a barrier
// now and then.
int uneven_rank(int rank, int world, int iters) {
  RANK_CHECK(ringrt_init());
  const int laggard = 1;
  std::vector<double> buf(3000);
  const double t0 = mono_s();
  for (int it = 0; it < iters; ++it) {
    usleep(static_cast<useconds_t>(compute_ms(world, laggard, rank, it)) * 1000);
    for (size_t i = 0; i < buf.size(); ++i) buf[i] = rank * 1000.0 + it + static_cast<double>(i);
    RANK_CHECK(ringrt_allreduce(nullptr, buf.data(), buf.size(), RINGRT_FLOAT64, RINGRT_SUM));
    const double ranks_sum = 1000.0 * world * (world - 1) / 2;
    for (size_t i = 0; i < buf.size(); ++i) {
      double want = ranks_sum + world * (it + static_cast<double>(i));
      if (buf[i] != want) {
        std::printf("rank %d: iteration %d element %zu is %g, want %g\n", rank, it, i, buf[i], want);
        return 20;
      }
    }
    if (it % 10 == 5) {
      int64_t token = rank == 2 ? it : -1;
      RANK_CHECK(ringrt_broadcast(&token, 1, RINGRT_INT64, 2));
      if (token != it) {
        std::printf("rank %d: broadcast gave %lld, want %d\n", rank, static_cast<long long>(token), it);
        return 21;
      }
    }
    if (it % 10 == 9) RANK_CHECK(ringrt_barrier());
  }
  std::printf("rank %d: %d iterations in %.1f s\n", rank, iters, mono_s() - t0);
  RANK_CHECK(ringrt_barrier());
  RANK_CHECK(ringrt_finalize());
  return 0;
}

// A 1000 ms peer timeout is several times the longest compute time (400 ms) and much less than
// the run, so a detector that counts a busy laggard as stalled fails within the first seconds.
void uneven_world(const std::string& backend, int iters) {
  WorldEnv env;
  env.world = 4;
  env.port = free_port();
  env.backend = backend;
  env.timeout_ms = 1000;
  const double t0 = mono_s();
  auto out = run_world(env, [&](int r) { return uneven_rank(r, env.world, iters); }, 60);
  std::printf("     %s: 4 ranks, %d uneven iterations: %.1f s\n", backend.c_str(), iters, mono_s() - t0);
  for (int r = 0; r < env.world; ++r) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[r].status);
}

// A few collectives, then the last one is entered at skewed times (rank r waits r * skew_ms,
// reversed on odd rounds so that the first and last to leave change) and every rank leaves the
// process at once afterwards, without finalize's help or a linger.
int exit_rank(int rank, int world, int round, int skew_ms, bool last_is_barrier) {
  RANK_CHECK(ringrt_init());
  std::vector<float> buf(50000);
  for (int it = 0; it < 3; ++it) {
    for (float& v : buf) v = static_cast<float>(rank + 1);
    RANK_CHECK(ringrt_allreduce(nullptr, buf.data(), buf.size(), RINGRT_FLOAT32, RINGRT_SUM));
    if (buf[0] != world * (world + 1) / 2.0f) return 20;
  }
  const int order = round % 2 == 0 ? rank : world - 1 - rank;
  usleep(static_cast<useconds_t>(order * skew_ms) * 1000);
  if (last_is_barrier) {
    RANK_CHECK(ringrt_barrier());
  } else {
    for (float& v : buf) v = static_cast<float>(rank + 1);
    RANK_CHECK(ringrt_allreduce(nullptr, buf.data(), buf.size(), RINGRT_FLOAT32, RINGRT_SUM));
    if (buf.back() != world * (world + 1) / 2.0f) return 21;
  }
  if (round % 3 == 2) _exit(0);  // no finalize at all: the process just goes away
  RANK_CHECK(ringrt_finalize());
  return 0;
}

void exit_worlds(const std::string& backend, int rounds) {
  for (int round = 0; round < rounds; ++round) {
    WorldEnv env;
    env.world = 4;
    env.port = free_port();
    env.backend = backend;
    env.timeout_ms = 2000;
    const int skew_ms = 1 + (round * 37) % 60;  // from about together to 180 ms apart
    const bool barrier = round % 2 == 0;
    auto out = run_world(env, [&](int r) { return exit_rank(r, env.world, round, skew_ms, barrier); }, 30);
    for (int r = 0; r < env.world; ++r)
      CPPUNIT_ASSERT_EQUAL_MESSAGE("round " + std::to_string(round) + ": " + describe(out), 0, out[r].status);
  }
}

}  // namespace

class RingrtSkewTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(RingrtSkewTest);
  CPPUNIT_TEST(testUnevenComputeShm);
  CPPUNIT_TEST(testUnevenComputeTcp);
  CPPUNIT_TEST(testExitAfterLastCollectiveShm);
  CPPUNIT_TEST(testExitAfterLastCollectiveTcp);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testUnevenComputeShm() { uneven_world("shm", 150); }
  void testUnevenComputeTcp() { uneven_world("tcp", 150); }
  void testExitAfterLastCollectiveShm() { exit_worlds("shm", 24); }
  void testExitAfterLastCollectiveTcp() { exit_worlds("tcp", 24); }
};

CPPUNIT_TEST_SUITE_REGISTRATION(RingrtSkewTest);
