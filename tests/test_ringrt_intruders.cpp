// SPDX-License-Identifier: GPL-2.0-or-later
// libringrt's listeners under attack by strangers on the same host: rank 0's rendezvous port
// (predictable: it may come from the job id) and a rank's ring port receive idle connections,
// garbage, floods, byte-by-byte senders and peers with the wrong secret, from separate processes
// over real sockets, while a real job forms its world. The job must neither fail nor wait for
// the strangers: its ranks join in well under the per-connection handshake deadline.
#include <cppunit/extensions/HelperMacros.h>

#include "internal.h"
#include "ringrt.h"
#include "ringrt_harness.h"
#include "test_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <fstream>
#include <memory>

using namespace ringrt_test;

namespace {

// A join slower than this waited for some stranger: the per-connection deadline is 2000 ms.
constexpr double kPromptJoinS = 1.5;

// A blocking connection to 127.0.0.1:port, retried while nobody listens yet (up to 10 s).
int connect_to(int port) {
  const double give_up = mono_s() + 10;
  while (mono_s() < give_up) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
    close(fd);
    usleep(20 * 1000);
  }
  return -1;
}

// Waits (up to 10 s) for a stranger process to say it is in place.
bool wait_for(const std::string& path) {
  const double give_up = mono_s() + 10;
  while (mono_s() < give_up) {
    if (access(path.c_str(), F_OK) == 0) return true;
    usleep(10 * 1000);
  }
  return false;
}

void mark(const std::string& path) { std::ofstream(path) << "ready\n"; }

// What a stranger does with each of its connections.
enum class Stranger { kIdle, kGarbage, kFlood, kSlowLoris };

// Opens `count` connections to port and treats each as `kind` for `hold_s` seconds, then exits.
// Writes `ready` once all are open. Returns how many connections rank 0 closed on it within the
// time (for a flood: refused before the flood was through).
int stranger(Stranger kind, int port, int count, double hold_s, const std::string& ready) {
  std::vector<int> fds;
  for (int i = 0; i < count; ++i) {
    int fd = connect_to(port);
    if (fd < 0) {
      std::printf("stranger: cannot connect to port %d\n", port);
      return 90;
    }
    fds.push_back(fd);
    if (kind == Stranger::kGarbage) {
      std::string junk(64 + i, static_cast<char>('A' + i % 26));
      if (write(fd, junk.data(), junk.size()) < 0) {}
    }
  }
  mark(ready);
  const double until = mono_s() + hold_s;
  int closed = 0;
  std::vector<bool> open(fds.size(), true);
  if (kind == Stranger::kFlood) {
    // 64 MiB each, as fast as they will take it: refused after the first header, so the
    // connection breaks long before
    std::vector<char> junk(1 << 20, 'Z');
    for (size_t i = 0; i < fds.size(); ++i) {
      for (int mb = 0; mb < 64; ++mb) {
        if (send(fds[i], junk.data(), junk.size(), MSG_NOSIGNAL) < 0) { closed++; break; }
      }
    }
  }
  // byte by byte, one every 200 ms: a well-formed header (magic "RRTM", a hello of 200 bytes)
  // would take 2.4 s, more than the handshake deadline
  const uint32_t head[3] = {0x4d545252u, 2, 200};
  size_t trickled = 0;
  while (mono_s() < until) {
    if (kind == Stranger::kSlowLoris) {
      const char* byte = reinterpret_cast<const char*>(head) + trickled % sizeof head;
      for (size_t i = 0; i < fds.size(); ++i)
        if (open[i] && send(fds[i], byte, 1, MSG_NOSIGNAL) < 0) {
          open[i] = false;
          closed++;
        }
      trickled++;
    }
    usleep(200 * 1000);
  }
  for (int fd : fds) close(fd);
  std::printf("stranger: %d of %zu connections closed on us\n", closed, fds.size());
  return 0;
}

// A rank of the real job: waits for the strangers, joins, checks an allreduce, and fails when
// joining took longer than kPromptJoinS.
int prompt_rank(const WorldEnv& env, int rank, const std::string& ready) {
  env.apply(rank);
  if (rank > 0 && !wait_for(ready)) return 91;
  const double t0 = mono_s();
  RANK_CHECK(ringrt_init());
  const double took = mono_s() - t0;
  int64_t v = rank + 1;
  RANK_CHECK(ringrt_allreduce(nullptr, &v, 1, RINGRT_INT64, RINGRT_SUM));
  RANK_CHECK(ringrt_finalize());
  std::printf("rank %d: joined in %.0f ms, sum %ld\n", rank, took * 1000, static_cast<long>(v));
  if (v != static_cast<int64_t>(env.world) * (env.world + 1) / 2) return 92;
  if (rank > 0 && took > kPromptJoinS) return 93;
  return 0;
}

// A world of n TCP ranks on a free port.
WorldEnv tcp_world(int n) {
  WorldEnv env;
  env.world = n;
  env.port = free_port();
  env.backend = "tcp";
  return env;
}

int count_of(const std::string& s, const std::string& part) {
  int n = 0;
  for (size_t at = s.find(part); at != std::string::npos; at = s.find(part, at + 1)) n++;
  return n;
}

}  // namespace

class RingrtIntruderTest : public CppUnit::TestFixture {
  CPPUNIT_TEST_SUITE(RingrtIntruderTest);
  CPPUNIT_TEST(testIdleConnections);
  CPPUNIT_TEST(testMoreIdleConnectionsThanTheGateHolds);
  CPPUNIT_TEST(testGarbageAndFloods);
  CPPUNIT_TEST(testSlowLorisIsCutOff);
  CPPUNIT_TEST(testWrongSecretPeersAmongIdleOnes);
  CPPUNIT_TEST(testIdleConnectionsOnRingListener);
  CPPUNIT_TEST_SUITE_END();

 public:
  // Runs a world of `world` TCP ranks while `strangers` (each a process) attack rank 0's port.
  // Returns the outcomes: ranks first, then the strangers.
  std::vector<RankOutcome> attacked_world(int world, const std::vector<std::pair<Stranger, int>>& strangers,
                                          double hold_s, int extra_wait_ms = 0) {
    TempDir dir;
    const WorldEnv env = tcp_world(world);
    std::vector<std::function<int()>> fns;
    const std::string all_ready = dir.path() + "/ready";
    for (int r = 0; r < world; ++r)
      fns.push_back([&, r] {
        if (r > 0) {
          for (size_t s = 0; s < strangers.size(); ++s)
            if (!wait_for(dir.path() + "/stranger" + std::to_string(s))) return 94;
          usleep(static_cast<useconds_t>(extra_wait_ms) * 1000);
          mark(all_ready);
        }
        return prompt_rank(env, r, all_ready);
      });
    for (size_t s = 0; s < strangers.size(); ++s)
      fns.push_back([&, s] {
        return stranger(strangers[s].first, env.port, strangers[s].second, hold_s,
                        dir.path() + "/stranger" + std::to_string(s));
      });
    return run_procs(fns, 90);
  }

  void assert_job_ok(const std::vector<RankOutcome>& out, size_t ranks) {
    for (size_t i = 0; i < out.size(); ++i)
      CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, out[i].status);
    for (size_t r = 0; r < ranks; ++r)
      CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[r].output, "joined in"));
  }

  // Three were enough to fail a job before; a hundred must not even slow one down.
  void testIdleConnections() {
    auto out = attacked_world(3, {{Stranger::kIdle, 100}}, 3);
    assert_job_ok(out, 3);
  }

  // More than the gate keeps at once (256): the oldest are dropped, the job is not.
  void testMoreIdleConnectionsThanTheGateHolds() {
    auto out = attacked_world(3, {{Stranger::kIdle, 150}, {Stranger::kIdle, 150}}, 3);
    assert_job_ok(out, 3);
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[0].output, "dropped for newer ones"));
  }

  // Garbage is refused at the first header; a flood is cut off after reading a bounded amount;
  // the log names the first few refusals and counts the rest.
  void testGarbageAndFloods() {
    auto out = attacked_world(2, {{Stranger::kGarbage, 100}, {Stranger::kFlood, 4}}, 3);
    assert_job_ok(out, 2);
    const std::string& log0 = out[0].output;
    CPPUNIT_ASSERT_MESSAGE(log0, contains(log0, "rendezvous: turned away"));
    CPPUNIT_ASSERT_MESSAGE(log0, contains(log0, "refused or malformed"));
    CPPUNIT_ASSERT_MESSAGE(log0, contains(log0, "further refusals are counted, not logged"));
    CPPUNIT_ASSERT_MESSAGE(log0, count_of(log0, "refused connection from") <= 8);
    // every flooding connection was broken before it could push 64 MiB into rank 0
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[3].output, "4 of 4 connections closed on us"));
  }

  // Byte-by-byte senders hold no door: the job joins at once, and each of them is cut off at the
  // handshake deadline (the last rank joins only after it, so rank 0 is still serving then).
  void testSlowLorisIsCutOff() {
    auto out = attacked_world(3, {{Stranger::kSlowLoris, 20}}, 4, 2600);
    assert_job_ok(out, 3);
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[0].output, "20 without a handshake before their deadline"));
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[3].output, "20 of 20 connections closed on us"));
  }

  // Processes that claim ranks of the job with the wrong secret are refused at once, amid idle
  // connections, and the job goes on.
  void testWrongSecretPeersAmongIdleOnes() {
    TempDir dir;
    const WorldEnv env = tcp_world(3);
    const std::string idle_ready = dir.path() + "/idle", all_ready = dir.path() + "/all";
    const int intruders = 6;
    std::vector<std::function<int()>> fns;
    for (int r = 0; r < 3; ++r)
      fns.push_back([&, r] {
        // the real ranks 1 and 2 come once every intruder has had its answer
        for (int i = 0; r > 0 && i < intruders; ++i)
          if (!wait_for(dir.path() + "/intruder" + std::to_string(i))) return 95;
        return prompt_rank(env, r, idle_ready);
      });
    fns.push_back([&] { return stranger(Stranger::kIdle, env.port, 100, 3, idle_ready); });
    for (int i = 0; i < intruders; ++i)
      fns.push_back([&, i] {
        env.apply(1 + i % 2);
        setenv("RINGRT_SECRET", "not-the-job-secret", 1);
        if (!wait_for(idle_ready)) return 96;
        const double t0 = mono_s();
        ringrt_result_t rc = ringrt_init();
        const double took = mono_s() - t0;
        std::printf("intruder: %s after %.0f ms: %s\n", ringrt_error_string(rc), took * 1000, ringrt_error_detail());
        mark(dir.path() + "/intruder" + std::to_string(i));
        return rc == RINGRT_ERR_AUTH && took < kPromptJoinS ? 0 : 97;
      });
    auto out = run_procs(fns, 90);
    assert_job_ok(out, 3);
    for (size_t i = 4; i < out.size(); ++i)
      CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[i].output, "wrong job secret"));
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[0].output, "does not prove the job secret"));
  }

  // The ring's data port of a rank is open to anyone too: 100 idle and 20 garbage connections
  // there, made before its previous member connects, must not keep that member out.
  void testIdleConnectionsOnRingListener() {
    TempDir dir;
    const WorldEnv env = tcp_world(2);
    const std::string ready = dir.path() + "/strangers";
    auto rank_fn = [&](int rank) {
      env.apply(rank);
      ringrt::Config cfg;
      if (ringrt::config_from_env(&cfg) != RINGRT_OK) return 98;
      ringrt::Table table;
      ringrt::Fd listener;
      if (ringrt::rendezvous(cfg, &table, &listener) != RINGRT_OK) return 99;
      std::vector<int> fds;
      if (rank == 1) {
        // strangers fill this rank's ring port before its previous member (rank 0) gets there
        for (int i = 0; i < 120; ++i) {
          int fd = connect_to(table.peers[1].port);
          if (fd < 0) return 100;
          const std::string junk(100, 'G');  // more than a ring handshake, and not one
          if (i % 6 == 0 && write(fd, junk.data(), junk.size()) < 0) return 101;
          fds.push_back(fd);
        }
        mark(ready);
      } else if (!wait_for(ready)) {
        return 102;
      }
      const double t0 = mono_s();
      ringrt::TcpRing ring;
      exit_unless_ok(ring.connect(cfg, table, {0, 1}, listener.fd, ringrt::now_ns() + ringrt::ms_to_ns(15000)));
      const double took = mono_s() - t0;
      int32_t v = 3 + rank;
      exit_unless_ok(ring.allreduce(&v, &v, 1, RINGRT_INT32, RINGRT_SUM, 0));
      std::printf("rank %d: ring formed in %.0f ms, sum %d\n", rank, took * 1000, v);
      for (int fd : fds) close(fd);
      return v == 7 && took < kPromptJoinS ? 0 : 103;
    };
    auto out = run_procs({[&] { return rank_fn(0); }, [&] { return rank_fn(1); }}, 60);
    for (const RankOutcome& o : out) CPPUNIT_ASSERT_EQUAL_MESSAGE(describe(out), 0, o.status);
    CPPUNIT_ASSERT_MESSAGE(describe(out), contains(out[1].output, "ring listener: refused connection from"));
  }

 private:
  static void exit_unless_ok(ringrt_result_t rc) {
    if (rc != RINGRT_OK) {
      std::printf("ring: %s: %s\n", ringrt_error_string(rc), ringrt::last_detail().c_str());
      std::fflush(stdout);
      _exit(104);
    }
  }
};

CPPUNIT_TEST_SUITE_REGISTRATION(RingrtIntruderTest);
