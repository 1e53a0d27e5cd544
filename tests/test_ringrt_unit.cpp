// SPDX-License-Identifier: GPL-2.0-or-later
// libringrt's pieces that need no world, no process and no peer: float16 and bfloat16
// conversions, Slurm hostlists, the environment and its errors, frame checksums, the reduction
// kernels, the result strings. The unit tier (make check).
#include <cppunit/extensions/HelperMacros.h>

#include "internal.h"
#include "ringrt.h"
#include "test_util.h"

#include <cmath>
#include <cstdlib>
#include <cstring>

class RingrtUnitTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(RingrtUnitTest);
  CPPUNIT_TEST(testHalfConversions);
  CPPUNIT_TEST(testSlurmFirstHost);
  CPPUNIT_TEST(testEnvParsing);
  CPPUNIT_TEST(testHeaderChecksum);
  CPPUNIT_TEST(testKernels);
  CPPUNIT_TEST(testErrorStrings);
  CPPUNIT_TEST(testSkipIsReportedWithReason);
  CPPUNIT_TEST_SUITE_END();

 public:
  void testHalfConversions() {
    using namespace ringrt;
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3c00), float_to_half(1.0f));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x7bff), float_to_half(65504.0f));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x7c00), float_to_half(70000.0f));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0xc000), float_to_half(-2.0f));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x0001), float_to_half(5.9604645e-8f));  // smallest subnormal
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3c00), float_to_half(1.0f + 1.0f / 2048));  // tie rounds to even
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3c02), float_to_half(1.0f + 3.0f / 2048));  // tie rounds to even (up)
    for (uint32_t h = 0; h < 0x7c00; ++h)  // every finite positive half survives the round trip
      CPPUNIT_ASSERT_EQUAL(uint16_t(h), float_to_half(half_to_float(static_cast<uint16_t>(h))));
    CPPUNIT_ASSERT(std::isnan(half_to_float(float_to_half(NAN))));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3f80), float_to_bf16(1.0f));
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3f80), float_to_bf16(1.00390625f));  // tie to even
    CPPUNIT_ASSERT_EQUAL(uint16_t(0x3f82), float_to_bf16(1.01171875f));  // tie to even (up)
    CPPUNIT_ASSERT_EQUAL(3.0f, bf16_to_float(float_to_bf16(3.0f)));
  }
  void testSlurmFirstHost() {
    using ringrt::slurm_first_host;
    CPPUNIT_ASSERT_EQUAL(std::string("gpu03"), slurm_first_host("gpu[03-05,9],cpu1"));
    CPPUNIT_ASSERT_EQUAL(std::string("node7"), slurm_first_host("node7,node8"));
    CPPUNIT_ASSERT_EQUAL(std::string("a1"), slurm_first_host("a[1,4]"));
    CPPUNIT_ASSERT_EQUAL(std::string("solo"), slurm_first_host("solo"));
  }
  void testEnvParsing() {
    const char* vars[] = {"RINGRT_RANK", "RINGRT_WORLD_SIZE", "RINGRT_MASTER_ADDR", "RINGRT_MASTER_PORT",
                          "RINGRT_SECRET", "RINGRT_SECRET_FILE", "RINGRT_BACKEND", "RINGRT_TIMEOUT_MS",
                          "RINGRT_INIT_TIMEOUT_MS", "RINGRT_HOSTNAME", "SLURM_PROCID", "SLURM_NTASKS",
                          "SLURM_JOB_NODELIST", "SLURM_JOB_ID"};
    for (const char* v : vars) unsetenv(v);
    ringrt::Config c;
    CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_CONFIG, ringrt::config_from_env(&c));
    // Slurm's variables stand in
    setenv("SLURM_PROCID", "3", 1);
    setenv("SLURM_NTASKS", "8", 1);
    setenv("SLURM_JOB_NODELIST", "gpu[12-15]", 1);
    setenv("SLURM_JOB_ID", "1234567", 1);
    setenv("RINGRT_SECRET", "s", 1);
    ringrt::Config s;
    CPPUNIT_ASSERT_EQUAL(RINGRT_OK, ringrt::config_from_env(&s));
    CPPUNIT_ASSERT_EQUAL(3, s.rank);
    CPPUNIT_ASSERT_EQUAL(8, s.world_size);
    CPPUNIT_ASSERT_EQUAL(std::string("gpu12"), s.master_addr);
    // from the job id, and below the ephemeral ports (32768 and up) for any id
    CPPUNIT_ASSERT_EQUAL(20000 + 1234567 % 12000, s.master_port);
    CPPUNIT_ASSERT(s.master_port < 32768);
    CPPUNIT_ASSERT_EQUAL(5000, s.timeout_ms);
    // explicit ones win; malformed ones are named
    setenv("RINGRT_RANK", "1", 1);
    setenv("RINGRT_TIMEOUT_MS", "12x", 1);
    ringrt::Config e;
    CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_CONFIG, ringrt::config_from_env(&e));
    CPPUNIT_ASSERT(ringrt::last_detail().find("RINGRT_TIMEOUT_MS") != std::string::npos);
    setenv("RINGRT_TIMEOUT_MS", "250", 1);
    setenv("RINGRT_BACKEND", "carrier-pigeon", 1);
    CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_CONFIG, ringrt::config_from_env(&e));
    setenv("RINGRT_BACKEND", "hier", 1);
    setenv("RINGRT_RANK", "9", 1);
    CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_CONFIG, ringrt::config_from_env(&e));  // rank >= world size
    setenv("RINGRT_RANK", "1", 1);
    ringrt::Config ok;
    CPPUNIT_ASSERT_EQUAL(RINGRT_OK, ringrt::config_from_env(&ok));
    CPPUNIT_ASSERT_EQUAL(1, ok.rank);
    CPPUNIT_ASSERT_EQUAL(250, ok.timeout_ms);
    CPPUNIT_ASSERT_EQUAL(RINGRT_BACKEND_HIER, ok.backend);
    CPPUNIT_ASSERT_EQUAL(std::string("auto"), ok.tcp_congestion);
    setenv("RINGRT_TCP_CONGESTION", "BBR; rm", 1);  // not a kernel name: refused before any socket
    CPPUNIT_ASSERT_EQUAL(RINGRT_ERR_CONFIG, ringrt::config_from_env(&e));
    CPPUNIT_ASSERT(ringrt::last_detail().find("RINGRT_TCP_CONGESTION") != std::string::npos);
    setenv("RINGRT_TCP_CONGESTION", "reno", 1);  // every process may choose reno
    ringrt::Config reno;
    CPPUNIT_ASSERT_EQUAL(RINGRT_OK, ringrt::config_from_env(&reno));
    CPPUNIT_ASSERT_EQUAL(std::string("reno"), reno.tcp_congestion);
    unsetenv("RINGRT_TCP_CONGESTION");
    for (const char* v : vars) unsetenv(v);
  }
  void testHeaderChecksum() {
    ringrt::FrameHeader h{};
    h.magic = ringrt::kFrameMagic;
    h.length = 1234;
    ringrt::seal_header(&h);
    CPPUNIT_ASSERT_EQUAL(h.check, ringrt::header_check(h));
    for (int byte = 0; byte < 28; ++byte) {
      ringrt::FrameHeader x = h;
      reinterpret_cast<uint8_t*>(&x)[byte] ^= 0x10;
      CPPUNIT_ASSERT(x.check != ringrt::header_check(x));
    }
  }
  void testKernels() {
    int32_t a[5] = {1, -2, 3, 7, -9}, b[5] = {4, 5, -6, 7, 0};
    int32_t s[5];
    std::memcpy(s, a, sizeof a);
    ringrt::reduce_into(s, b, 5, RINGRT_INT32, RINGRT_MIN);
    CPPUNIT_ASSERT(s[0] == 1 && s[1] == -2 && s[2] == -6 && s[4] == -9);
    std::memcpy(s, a, sizeof a);
    ringrt::reduce_into_div(s, b, 5, RINGRT_INT32, RINGRT_AVG, 2);
    CPPUNIT_ASSERT(s[0] == 2 && s[1] == 1 && s[2] == -1 && s[3] == 7 && s[4] == -4);
    uint16_t h[2] = {ringrt::float_to_bf16(1.5f), ringrt::float_to_bf16(-4.f)};
    uint16_t g[2] = {ringrt::float_to_bf16(2.5f), ringrt::float_to_bf16(8.f)};
    ringrt::reduce_into(h, g, 2, RINGRT_BFLOAT16, RINGRT_MAX);
    CPPUNIT_ASSERT_EQUAL(2.5f, ringrt::bf16_to_float(h[0]));
    CPPUNIT_ASSERT_EQUAL(8.f, ringrt::bf16_to_float(h[1]));
  }
  void testErrorStrings() {
    for (int r = 0; r <= RINGRT_ERR_NOMEM; ++r) {
      const char* s = ringrt_error_string(static_cast<ringrt_result_t>(r));
      CPPUNIT_ASSERT(std::strncmp(s, "RINGRT_", 7) == 0);
    }
    CPPUNIT_ASSERT_EQUAL(size_t(2), ringrt_dtype_size(RINGRT_BFLOAT16));
    CPPUNIT_ASSERT_EQUAL(size_t(0), ringrt_dtype_size(static_cast<ringrt_dtype_t>(99)));
  }
  // A test whose tool is missing (here valgrind, hidden by an empty PATH) says SKIP with its
  // reason, and the closing line counts it as skipped, not as passed.
  void testSkipIsReportedWithReason() {
    const auto [status, out] = ringsched_test::run_command(
        std::string("cd ") + RINGSCHED_BUILDDIR + "/tests && env PATH=/nonexistent " +
        "./test_ringrt_faults RingrtFaultTest::testValgrindLeakCheck");
    CPPUNIT_ASSERT_EQUAL_MESSAGE(out, 0, status);
    CPPUNIT_ASSERT_MESSAGE(out, out.find("SKIP RingrtFaultTest::testValgrindLeakCheck") != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(out, out.find("valgrind is not installed") != std::string::npos);
    CPPUNIT_ASSERT_MESSAGE(out, out.find("\n0 passed, 0 failed, 1 skipped\n") != std::string::npos);
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(RingrtUnitTest);
