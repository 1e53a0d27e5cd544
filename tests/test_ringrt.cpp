// SPDX-License-Identifier: GPL-2.0-or-later
// Collectives of libringrt against a serial reference: every dtype and op, odd counts that the
// world size does not divide, 1..8 ranks as processes over TCP, shared memory and the
// hierarchical ring; broadcast, barrier, SPB averaging, and re-forming the world at a new size.
#include <cppunit/extensions/HelperMacros.h>

#include "internal.h"
#include "ringrt.h"
#include "ringrt_harness.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

using namespace ringrt_test;

namespace {

const ringrt_dtype_t kTypes[] = {RINGRT_FLOAT32, RINGRT_FLOAT64, RINGRT_FLOAT16, RINGRT_BFLOAT16, RINGRT_INT32,
                                 RINGRT_INT64};
const ringrt_op_t kOps[] = {RINGRT_SUM, RINGRT_AVG, RINGRT_MIN, RINGRT_MAX};
const char* kTypeNames[] = {"f32", "f64", "f16", "bf16", "i32", "i64"};
const char* kOpNames[] = {"sum", "avg", "min", "max"};

// Input of rank r at index i, as a double that every dtype represents exactly.
double input(int r, size_t i, ringrt_dtype_t t) {
  long base = static_cast<long>((r * 7 + i * 13) % 31) - 15;
  if (t == RINGRT_INT64) return static_cast<double>(base * 1000000007L + r);
  if (t == RINGRT_INT32) return static_cast<double>(base * 1009 + r);
  return base * 0.5;
}

void store(void* buf, size_t i, ringrt_dtype_t t, double v) {
  switch (t) {
    case RINGRT_FLOAT32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case RINGRT_FLOAT64: static_cast<double*>(buf)[i] = v; break;
    case RINGRT_FLOAT16: static_cast<uint16_t*>(buf)[i] = ringrt::float_to_half(static_cast<float>(v)); break;
    case RINGRT_BFLOAT16: static_cast<uint16_t*>(buf)[i] = ringrt::float_to_bf16(static_cast<float>(v)); break;
    case RINGRT_INT32: static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v); break;
    case RINGRT_INT64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
  }
}

double load(const void* buf, size_t i, ringrt_dtype_t t) {
  switch (t) {
    case RINGRT_FLOAT32: return static_cast<const float*>(buf)[i];
    case RINGRT_FLOAT64: return static_cast<const double*>(buf)[i];
    case RINGRT_FLOAT16: return ringrt::half_to_float(static_cast<const uint16_t*>(buf)[i]);
    case RINGRT_BFLOAT16: return ringrt::bf16_to_float(static_cast<const uint16_t*>(buf)[i]);
    case RINGRT_INT32: return static_cast<const int32_t*>(buf)[i];
    case RINGRT_INT64: return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
  }
  return 0;
}

// Serial reference of op over all ranks at index i.
double reference(int n, size_t i, ringrt_dtype_t t, ringrt_op_t op) {
  if (t == RINGRT_INT64 || t == RINGRT_INT32) {
    int64_t acc = static_cast<int64_t>(input(0, i, t));
    for (int r = 1; r < n; ++r) {
      int64_t v = static_cast<int64_t>(input(r, i, t));
      if (op == RINGRT_MIN) acc = std::min(acc, v);
      else if (op == RINGRT_MAX) acc = std::max(acc, v);
      else acc += v;
    }
    if (op == RINGRT_AVG) acc /= n;
    return static_cast<double>(acc);
  }
  double acc = input(0, i, t);
  for (int r = 1; r < n; ++r) {
    double v = input(r, i, t);
    if (op == RINGRT_MIN) acc = std::min(acc, v);
    else if (op == RINGRT_MAX) acc = std::max(acc, v);
    else acc += v;
  }
  if (op == RINGRT_AVG) acc /= n;
  return acc;
}

double tolerance(ringrt_dtype_t t, ringrt_op_t op, double ref) {
  if (op != RINGRT_AVG) return 0;  // sums of these inputs, mins and maxes are exact in every dtype
  double rel = t == RINGRT_FLOAT16 ? 1e-3 : t == RINGRT_BFLOAT16 ? 8e-3 : t == RINGRT_FLOAT32 ? 1e-6 : 1e-12;
  if (t == RINGRT_INT32 || t == RINGRT_INT64) return 0;
  return rel * std::fabs(ref) + rel;
}

uint64_t fnv(const void* p, size_t n) {
  const uint8_t* b = static_cast<const uint8_t*>(p);
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) { h ^= b[i]; h *= 1099511628211ull; }
  return h;
}

// The body every rank runs: all dtypes x ops x counts, checked against the reference, then a
// random float32 buffer whose result hash must agree across ranks.
int allreduce_body(int rank, const std::vector<size_t>& counts) {
  RANK_CHECK(ringrt_init());
  int n = 0, me = -1;
  RANK_CHECK(ringrt_world_size(&n));
  RANK_CHECK(ringrt_rank(&me));
  if (me != rank) { std::printf("rank query gave %d\n", me); return 11; }
  int bad = 0;
  for (size_t count : counts) {
    for (int ti = 0; ti < 6; ++ti) {
      ringrt_dtype_t t = kTypes[ti];
      size_t esz = ringrt_dtype_size(t);
      std::vector<char> send(count * esz + 1), recv(count * esz + 1);
      for (int oi = 0; oi < 4; ++oi) {
        ringrt_op_t op = kOps[oi];
        for (size_t i = 0; i < count; ++i) store(send.data(), i, t, input(rank, i, t));
        // alternate in-place and out-of-place
        bool inplace = (oi + ti) % 2 == 0;
        if (inplace) {
          std::memcpy(recv.data(), send.data(), count * esz);
          RANK_CHECK(ringrt_allreduce(recv.data(), recv.data(), count, t, op));
        } else {
          RANK_CHECK(ringrt_allreduce(send.data(), recv.data(), count, t, op));
        }
        for (size_t i = 0; i < count; ++i) {
          double ref = reference(n, i, t, op);
          double got = load(recv.data(), i, t);
          if (!(std::fabs(got - ref) <= tolerance(t, op, ref))) {
            if (bad++ < 5)
              std::printf("rank %d: %s %s count %zu index %zu: got %.9g want %.9g\n", rank, kTypeNames[ti],
                          kOpNames[oi], count, i, got, ref);
            break;
          }
        }
      }
    }
  }
  // non-exact floats: every rank must get bitwise the same result
  std::vector<float> x(50001);
  uint32_t s = 12345u + 7919u * static_cast<uint32_t>(rank);
  for (float& v : x) { s = s * 1664525u + 1013904223u; v = static_cast<float>(s >> 8) / 16777216.0f - 0.5f; }
  RANK_CHECK(ringrt_allreduce(nullptr, x.data(), x.size(), RINGRT_FLOAT32, RINGRT_SUM));
  std::printf("HASH %llx\n", static_cast<unsigned long long>(fnv(x.data(), x.size() * 4)));
  std::vector<uint16_t> h(3001);
  for (size_t i = 0; i < h.size(); ++i) h[i] = ringrt::float_to_half(static_cast<float>((rank + 1) * (i % 13)) * 0.1f);
  RANK_CHECK(ringrt_allreduce(nullptr, h.data(), h.size(), RINGRT_FLOAT16, RINGRT_AVG));
  std::printf("HASH16 %llx\n", static_cast<unsigned long long>(fnv(h.data(), h.size() * 2)));
  RANK_CHECK(ringrt_finalize());
  return bad ? 12 : 0;
}

void check_world(const WorldEnv& env, const std::vector<RankOutcome>& out) {
  std::set<std::string> hashes, hashes16;
  for (size_t r = 0; r < out.size(); ++r) {
    CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[r].status);
    std::istringstream in(out[r].output);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("HASH16 ", 0) == 0) hashes16.insert(line);
      else if (line.rfind("HASH ", 0) == 0) hashes.insert(line);
    }
  }
  CPPUNIT_ASSERT_EQUAL_MESSAGE("results differ across ranks: " + describe(out), size_t(1), hashes.size());
  CPPUNIT_ASSERT_EQUAL_MESSAGE("fp16 results differ across ranks", size_t(1), hashes16.size());
  (void)env;
}

// tcp_algorithm: RINGRT_TCP_ALGORITHM ("" unset); long: also a count of several pipelining
// segments per block (slower, for the algorithms' own tests).
void run_allreduce_world(int n, const std::string& backend, const std::vector<std::string>& hosts = {},
                         const std::string& tcp_algorithm = "", bool long_count = false) {
  WorldEnv env;
  env.world = n;
  env.port = free_port();
  env.backend = backend;
  env.hosts = hosts;
  env.tcp_algorithm = tcp_algorithm;
  std::vector<size_t> counts = {1, 3, 1001, 4099, 70001};
  if (long_count) counts.push_back(600011);
  auto out = run_world(env, [&](int r) { return allreduce_body(r, counts); }, 120);
  check_world(env, out);
}

}  // namespace

class RingrtCollectivesTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(RingrtCollectivesTest);
  CPPUNIT_TEST(testTcpOneRank);
  CPPUNIT_TEST(testTcpTwoRanks);
  CPPUNIT_TEST(testTcpThreeRanks);
  CPPUNIT_TEST(testTcpFourRanksHalving);
  CPPUNIT_TEST(testTcpFourRanksRing);
  CPPUNIT_TEST(testTcpFiveRanks);
  CPPUNIT_TEST(testTcpEightRanks);
  CPPUNIT_TEST(testShmTwoRanks);
  CPPUNIT_TEST(testShmThreeRanks);
  CPPUNIT_TEST(testShmEightRanks);
  CPPUNIT_TEST(testHierTwoNodesOfTwo);
  CPPUNIT_TEST(testHierUnevenNodes);
  CPPUNIT_TEST(testHierFourNodes);
  CPPUNIT_TEST(testBroadcastAndBarrier);
  CPPUNIT_TEST(testSpbAveraging);
  CPPUNIT_TEST(testReformAtNewSize);
  CPPUNIT_TEST(testArgumentErrors);
  CPPUNIT_TEST(testTcpCongestionControl);
  CPPUNIT_TEST(testAllgatherTcp);
  CPPUNIT_TEST(testAllgatherShm);
  CPPUNIT_TEST(testAllgatherHier);
  CPPUNIT_TEST(testAbortTellsEveryRank);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testTcpOneRank() { run_allreduce_world(1, "tcp"); }
  void testTcpTwoRanks() { run_allreduce_world(2, "tcp"); }
  void testTcpThreeRanks() { run_allreduce_world(3, "tcp"); }
  // four ranks: recursive halving/doubling (the default there) and the ring
  void testTcpFourRanksHalving() { run_allreduce_world(4, "tcp", {}, "halving", true); }
  void testTcpFourRanksRing() { run_allreduce_world(4, "tcp", {}, "ring", true); }
  void testTcpFiveRanks() { run_allreduce_world(5, "tcp"); }
  void testTcpEightRanks() { run_allreduce_world(8, "tcp"); }
  void testShmTwoRanks() { run_allreduce_world(2, "shm"); }
  void testShmThreeRanks() { run_allreduce_world(3, "shm"); }
  void testShmEightRanks() { run_allreduce_world(8, "shm"); }
  void testHierTwoNodesOfTwo() { run_allreduce_world(4, "auto", {"nodeA", "nodeA", "nodeB", "nodeB"}); }
  void testHierUnevenNodes() { run_allreduce_world(6, "hier", {"n1", "n2", "n2", "n3", "n3", "n3"}); }
  // four node leaders: halving/doubling between nodes
  void testHierFourNodes() { run_allreduce_world(6, "hier", {"a", "a", "b", "c", "c", "d"}); }

  void testBroadcastAndBarrier();
  void testSpbAveraging();
  void testReformAtNewSize();
  void testArgumentErrors();
  void testTcpCongestionControl();
  // ringrt_allgather, every dtype, 1..8 ranks, on each host backend
  void testAllgatherTcp() { run_allgather_worlds("tcp"); }
  void testAllgatherShm() { run_allgather_worlds("shm"); }
  void testAllgatherHier() { run_allgather_worlds("hier"); }
  void testAbortTellsEveryRank();

 private:
  void run_allgather_worlds(const std::string& backend);
};

namespace {
int bcast_world_body(int rank, const char* expect_backend) {
  RANK_CHECK(ringrt_init());
  int n = 0;
  RANK_CHECK(ringrt_world_size(&n));
  ringrt_backend_t b;
  RANK_CHECK(ringrt_backend(&b));
  const char* names[] = {"auto", "tcp", "shm", "nccl", "hier"};
  if (expect_backend && std::strcmp(names[b], expect_backend) != 0) {
    std::printf("backend %s, expected %s\n", names[b], expect_backend);
    return 13;
  }
  for (size_t bytes : {size_t(1), size_t(1000), size_t(300001), size_t(5u << 20) + 7}) {
    for (int root : {0, n - 1, n / 2}) {
      std::vector<uint8_t> buf(bytes);
      for (size_t i = 0; i < bytes; ++i) buf[i] = rank == root ? static_cast<uint8_t>(i * 31 + root) : 0xEE;
      // bytes as int8 is not a dtype: send as many int32 as fit, then the tail as float16 pairs
      size_t words = bytes / 4, tail = bytes - words * 4;
      RANK_CHECK(ringrt_broadcast(buf.data(), words, RINGRT_INT32, root));
      if (tail >= 2) RANK_CHECK(ringrt_broadcast(buf.data() + words * 4, tail / 2, RINGRT_FLOAT16, root));
      if (tail % 2) {
        // the last odd byte travels inside an int32 with padding
        int32_t last = rank == root ? buf[bytes - 1] : -1;
        RANK_CHECK(ringrt_broadcast(&last, 1, RINGRT_INT32, root));
        buf[bytes - 1] = static_cast<uint8_t>(last);
      }
      for (size_t i = 0; i < bytes; ++i)
        if (buf[i] != static_cast<uint8_t>(i * 31 + root)) {
          std::printf("rank %d: broadcast of %zu bytes from %d wrong at %zu\n", rank, bytes, root, i);
          return 14;
        }
      RANK_CHECK(ringrt_barrier());
    }
  }
  RANK_CHECK(ringrt_finalize());
  return 0;
}
}  // namespace

void RingrtCollectivesTest::testBroadcastAndBarrier() {
  struct Case { int n; const char* backend; std::vector<std::string> hosts; const char* expect; };
  std::vector<Case> cases = {{3, "tcp", {}, "tcp"},
                             {4, "shm", {}, "shm"},
                             {5, "auto", {"a", "a", "b", "b", "b"}, "hier"},
                             {3, "auto", {"x", "y", "z"}, "tcp"},
                             {2, "auto", {}, "shm"}};
  for (const Case& c : cases) {
    WorldEnv env;
    env.world = c.n;
    env.port = free_port();
    env.backend = c.backend;
    env.hosts = c.hosts;
    auto out = run_world(env, [&](int r) { return bcast_world_body(r, c.expect); }, 60);
    for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
  }
}

namespace {
int spb_body(int rank) {
  RANK_CHECK(ringrt_init());
  int n = 0;
  RANK_CHECK(ringrt_world_size(&n));
  // depth pattern: rank r computed the first depth[r] buckets (nearest the loss first)
  const size_t nb = 4;
  const size_t counts[nb] = {5, 1000, 77, 3};
  std::vector<int> depth(n);
  for (int r = 0; r < n; ++r) depth[r] = r % 2 == 0 ? 4 : 2;  // half full depth, half half depth
  std::vector<std::vector<float>> data(nb);
  std::vector<ringrt_bucket_t> buckets(nb);
  for (size_t b = 0; b < nb; ++b) {
    data[b].assign(counts[b], 0.f);
    for (size_t i = 0; i < counts[b]; ++i)
      data[b][i] = static_cast<size_t>(depth[rank]) > b ? static_cast<float>(rank + 1) * (i + 1) : 12345.f;
    buckets[b] = {data[b].data(), counts[b], nullptr, 0};
  }
  RANK_CHECK(ringrt_allreduce_spb_depth(buckets.data(), nb, RINGRT_FLOAT32, depth.data()));
  for (size_t b = 0; b < nb; ++b) {
    double sum = 0;
    int k = 0;
    for (int r = 0; r < n; ++r)
      if (static_cast<size_t>(depth[r]) > b) { sum += r + 1; k++; }
    for (size_t i = 0; i < counts[b]; ++i) {
      double want = sum * (i + 1) / k;
      if (std::fabs(data[b][i] - want) > 1e-4 * want) {
        std::printf("rank %d: spb bucket %zu index %zu: got %g want %g (over %d contributors)\n", rank, b, i,
                    data[b][i], want, k);
        return 15;
      }
    }
  }
  // explicit contributor lists, including an empty one and "everyone"
  std::vector<int> odd, only0 = {0};
  for (int r = 1; r < n; r += 2) odd.push_back(r);
  std::vector<int64_t> a(9, rank * 10 + 4), bb(4, rank + 100), c(2, 7), d(3, rank);
  ringrt_bucket_t lists[4] = {{a.data(), a.size(), odd.data(), static_cast<int>(odd.size())},
                              {bb.data(), bb.size(), only0.data(), 1},
                              {c.data(), c.size(), odd.data(), 0},
                              {d.data(), d.size(), nullptr, 0}};
  lists[2].ranks = odd.data();  // zero contributors
  RANK_CHECK(ringrt_allreduce_spb(lists, 4, RINGRT_INT64));
  int64_t s = 0;
  for (int r : odd) s += r * 10 + 4;
  int64_t want_a = odd.empty() ? 0 : s / static_cast<int64_t>(odd.size());
  int64_t all = 0;
  for (int r = 0; r < n; ++r) all += r;
  if (a[8] != want_a || bb[3] != 100 || c[1] != 0 || d[2] != all / n) {
    std::printf("rank %d: spb lists: %lld/%lld %lld/100 %lld/0 %lld/%lld\n", rank, (long long)a[8], (long long)want_a,
                (long long)bb[3], (long long)c[1], (long long)d[2], (long long)(all / n));
    return 16;
  }
  RANK_CHECK(ringrt_finalize());
  return 0;
}
}  // namespace

void RingrtCollectivesTest::testSpbAveraging() {
  for (const char* backend : {"tcp", "shm"}) {
    WorldEnv env;
    env.world = 4;
    env.port = free_port();
    env.backend = backend;
    auto out = run_world(env, spb_body, 60);
    for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
  }
}

void RingrtCollectivesTest::testReformAtNewSize() {
  // four ranks work, finalize, then two of them re-form a world of two on a new port
  WorldEnv env;
  env.world = 4;
  env.port = free_port();
  env.backend = "tcp";
  const int port2 = free_port();
  auto out = run_world(env, [&](int rank) {
    RANK_CHECK(ringrt_init());
    int32_t v = rank + 1;
    RANK_CHECK(ringrt_allreduce(nullptr, &v, 1, RINGRT_INT32, RINGRT_SUM));
    if (v != 10) return 20;
    RANK_CHECK(ringrt_finalize());
    if (ringrt_finalize() != RINGRT_ERR_STATE) return 21;
    if (rank >= 2) return 0;
    setenv("RINGRT_WORLD_SIZE", "2", 1);
    setenv("RINGRT_MASTER_PORT", std::to_string(port2).c_str(), 1);
    RANK_CHECK(ringrt_init());
    int n = 0;
    RANK_CHECK(ringrt_world_size(&n));
    v = rank + 1;
    RANK_CHECK(ringrt_allreduce(nullptr, &v, 1, RINGRT_INT32, RINGRT_SUM));
    if (n != 2 || v != 3) return 22;
    RANK_CHECK(ringrt_finalize());
    return 0;
  });
  for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
}

void RingrtCollectivesTest::testArgumentErrors() {
  // before init every call says so
  float x = 1;
  CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_STATE, ringrt_allreduce(nullptr, &x, 1, RINGRT_FLOAT32, RINGRT_SUM));
  CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_STATE, ringrt_barrier());
  int r;
  CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_STATE, ringrt_rank(&r));
  CPPUNIT_ASSERT(std::strstr(ringrt_error_detail(), "not initialised") != nullptr);
  // a world of one in this process: argument errors do not break it
  WorldEnv env;
  env.world = 1;
  env.port = free_port();
  auto out = run_world(env, [](int rank) {
    RANK_CHECK(ringrt_init());
    float v = 2;
    if (ringrt_allreduce(nullptr, &v, 1, static_cast<ringrt_dtype_t>(17), RINGRT_SUM) != RINGRT_ERR_ARG) return 30;
    if (ringrt_allreduce(nullptr, &v, 1, RINGRT_FLOAT32, static_cast<ringrt_op_t>(9)) != RINGRT_ERR_ARG) return 31;
    if (ringrt_allreduce(nullptr, nullptr, 4, RINGRT_FLOAT32, RINGRT_SUM) != RINGRT_ERR_ARG) return 32;
    if (ringrt_broadcast(&v, 1, RINGRT_FLOAT32, 1) != RINGRT_ERR_ARG) return 33;
    if (ringrt_init() != RINGRT_ERR_STATE) return 34;
    RANK_CHECK(ringrt_allreduce(nullptr, &v, 1, RINGRT_FLOAT32, RINGRT_AVG));
    if (v != 2) return 35;
    RANK_CHECK(ringrt_finalize());
    return 0;
  });
  CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[0].status);
}

namespace {
// Every rank gathers every dtype at counts of one element, odd ones, and ones of several
// pipelining segments per rank, alternately in place and not, and checks each rank's part
// bitwise; then arbitrary bit patterns (NaNs, denormals) in float16, which must come back as sent.
int allgather_body(int rank) {
  RANK_CHECK(ringrt_init());
  int n = 0;
  RANK_CHECK(ringrt_world_size(&n));
  int bad = 0;
  for (size_t count : {size_t(1), size_t(3), size_t(1001), size_t(70001)}) {
    for (int ti = 0; ti < 6; ++ti) {
      const ringrt_dtype_t t = kTypes[ti];
      const size_t esz = ringrt_dtype_size(t);
      std::vector<char> mine(count * esz), all(n * count * esz, '\x5a'), want(n * count * esz);
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) store(want.data() + r * count * esz, i, t, input(r, i, t));
      std::memcpy(mine.data(), want.data() + rank * count * esz, count * esz);
      if ((ti + count) % 2 == 0) {
        std::memcpy(all.data() + rank * count * esz, mine.data(), count * esz);
        RANK_CHECK(ringrt_allgather(nullptr, all.data(), count, t));
      } else {
        RANK_CHECK(ringrt_allgather(mine.data(), all.data(), count, t));
      }
      if (all != want && bad++ < 5)
        std::printf("rank %d: allgather of %zu %s per rank differs from what the ranks sent\n", rank, count,
                    kTypeNames[ti]);
    }
  }
  std::vector<uint16_t> bits(4097), got(n * bits.size());
  for (size_t i = 0; i < bits.size(); ++i) bits[i] = static_cast<uint16_t>(i * 40503u + rank * 977u);
  RANK_CHECK(ringrt_allgather(bits.data(), got.data(), bits.size(), RINGRT_FLOAT16));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < bits.size(); ++i)
      if (got[r * bits.size() + i] != static_cast<uint16_t>(i * 40503u + r * 977u)) {
        if (bad++ < 5) std::printf("rank %d: float16 bits of rank %d changed at %zu\n", rank, r, i);
        break;
      }
  RANK_CHECK(ringrt_finalize());
  return bad ? 16 : 0;
}
}  // namespace

void RingrtCollectivesTest::run_allgather_worlds(const std::string& backend) {
  for (int n = 1; n <= 8; ++n) {
    WorldEnv env;
    env.world = n;
    env.port = free_port();
    env.backend = backend;
    // hier: two nodes, the second with one rank fewer when n is odd (one node when n is 1)
    if (backend == "hier")
      for (int r = 0; r < n; ++r) env.hosts.push_back(r < (n + 1) / 2 ? "nodeA" : "nodeB");
    auto out = run_world(env, [&](int r) { return allgather_body(r); }, 120);
    for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(backend + " " + std::to_string(n) + " ranks: " + describe(out), 0, o.status);
  }
}

// ringrt_abort: the collective the other ranks wait in fails at once, naming the rank and its
// reason, long before the timeout would name a rank that merely stays away (the aborting one
// lingers, alive).
void RingrtCollectivesTest::testAbortTellsEveryRank() {
  struct Case { const char* backend; std::vector<std::string> hosts; };
  for (const Case& c : {Case{"tcp", {}}, Case{"shm", {}}, Case{"hier", {"a", "a", "b"}}}) {
    WorldEnv env;
    env.world = 3;
    env.port = free_port();
    env.backend = c.backend;
    env.hosts = c.hosts;
    env.timeout_ms = 3000;
    auto out = run_world(env, [&](int rank) {
      RANK_CHECK(ringrt_init());
      float v[4] = {1, 2, 3, 4};
      RANK_CHECK(ringrt_allreduce(nullptr, v, 4, RINGRT_FLOAT32, RINGRT_SUM));
      if (rank == 1) {
        usleep(300 * 1000);  // the others wait in their next collective meanwhile
        RANK_CHECK(ringrt_abort("giving up on purpose"));
        const ringrt_result_t again = ringrt_barrier();
        std::printf("rank 1 after aborting: %s: %s\n", ringrt_error_string(again), ringrt_error_detail());
        usleep(2500 * 1000);  // alive, and away from the collectives
        ringrt_finalize();
        return again == RINGRT_ERR_PEER ? 0 : 17;
      }
      const double t0 = mono_s();
      const ringrt_result_t rc = ringrt_allreduce(nullptr, v, 4, RINGRT_FLOAT32, RINGRT_SUM);
      const double took = mono_s() - t0;
      int failed = -2;
      ringrt_failed_rank(&failed);
      std::printf("rank %d: %s after %.0f ms, failed rank %d: %s\n", rank, ringrt_error_string(rc), took * 1000,
                  failed, ringrt_error_detail());
      const std::string detail = ringrt_error_detail();
      ringrt_finalize();
      if (rc != RINGRT_ERR_PEER || failed != 1) return 18;
      if (detail.find("giving up on purpose") == std::string::npos) return 19;
      return took * 1000 < env.timeout_ms / 2 ? 0 : 20;
    }, 60);
    for (auto& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(std::string(c.backend) + ": " + describe(out), 0, o.status);
  }
}

CPPUNIT_TEST_SUITE_REGISTRATION(RingrtCollectivesTest);

namespace {
std::string system_congestion() {
  std::ifstream f("/proc/sys/net/ipv4/tcp_congestion_control");
  std::string name;
  f >> name;
  return name;
}
// the congestion control each rank's debug line reports for its ring connections
std::vector<std::string> reported_congestion(const std::vector<RankOutcome>& out) {
  std::vector<std::string> names;
  const std::string key = "TCP congestion control ";
  for (const RankOutcome& o : out) {
    size_t at = o.output.find(key);
    names.push_back(at == std::string::npos ? "(none)" : o.output.substr(at + key.size(), o.output.find('\n', at) -
                                                                                        at - key.size()));
  }
  return names;
}
}  // namespace

// RINGRT_TCP_CONGESTION: a named algorithm is used on both of every rank's ring connections
// (the accepted one inherits it from the listener); auto never leaves BBR's pacing on; a name
// the kernel does not have fails every rank at init with the reason.
void RingrtCollectivesTest::testTcpCongestionControl() {
  WorldEnv env;
  env.world = 4;
  env.backend = "tcp";
  const std::vector<size_t> counts = {1001, 70001, 600011};
  for (const char* choice : {"reno", "", "system"}) {
    env.port = free_port();
    env.tcp_congestion = choice;
    auto out = run_world(env, [&](int r) {
      setenv("RINGRT_DEBUG", "1", 1);
      return allreduce_body(r, counts);
    }, 120);
    check_world(env, out);
    const std::string sys = system_congestion();
    for (const std::string& got : reported_congestion(out)) {
      const std::string what = std::string("RINGRT_TCP_CONGESTION=") + choice + " (system: " + sys + "): " + got;
      if (std::string(choice) == "reno") CPPUNIT_ASSERT_EQUAL_MESSAGE(what, std::string("reno"), got);
      else if (std::string(choice) == "system") CPPUNIT_ASSERT_EQUAL_MESSAGE(what, sys, got);
      else if (sys.rfind("bbr", 0) == 0) CPPUNIT_ASSERT_MESSAGE(what, got == "cubic" || got == "reno");
      else CPPUNIT_ASSERT_EQUAL_MESSAGE(what, sys, got);
    }
  }
  env.port = free_port();
  env.tcp_congestion = "no-such-cc";
  auto bad = run_world(env, [&](int) {
    ringrt_result_t rc = ringrt_init();
    std::printf("%s: %s\n", ringrt_error_string(rc), ringrt_error_detail());
    return rc == RINGRT_ERR_CONFIG && std::strstr(ringrt_error_detail(), "RINGRT_TCP_CONGESTION=\"no-such-cc\"") &&
                   std::strstr(ringrt_error_detail(), "available: ")
               ? 0
               : 90;
  }, 60);
  for (const RankOutcome& o : bad) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(bad), 0, o.status);
}
