// SPDX-License-Identifier: GPL-2.0-or-later
// ringrt-bench -- allreduce benchmark in the style of nccl-tests: for each size it prints the
// median time of the iterations, algbw = size / time and busbw = algbw * 2(n-1)/n. The ranks
// are forked as separate processes on this machine and meet through libringrt's own rendezvous.
#include "bounded_int.h"
#include "loopback.h"
#include "ringrt.h"

#include <getopt.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Options {
  int ranks = 2;
  std::string backend = "auto";
  size_t min_bytes = 4 * 1024;
  size_t max_bytes = 256u * 1024 * 1024;
  int factor = 4;
  int iters = 0;  // 0: adaptive
  int port = 0;
  std::string hosts;  // comma-separated fake node names, one per rank (hierarchical runs)
  bool check = true;
};

void usage(FILE* f) {
  std::fprintf(f,
               "usage: ringrt-bench [--ranks N] [--backend auto|tcp|shm|hier] [--min-bytes B] [--max-bytes B]\n"
               "                    [--factor F] [--iters N] [--port P] [--hosts a,a,b,b] [--no-check]\n"
               "Forks N ranks (default 2) that allreduce float32 sums of each size from --min-bytes (4K)\n"
               "to --max-bytes (256M), multiplying by --factor (4). Prints, per size, the median time\n"
               "over the iterations (each after a barrier; adaptive count unless --iters), algbw = S/t\n"
               "and busbw = algbw * 2(n-1)/n in GB/s, as nccl-tests does. Sizes accept K, M, G.\n"
               "--hosts gives each rank a node name (RINGRT_HOSTNAME) to exercise the hierarchical ring.\n");
}

int bad_number(const char* option, const char* text, long lo, long hi) {
  std::fprintf(stderr, "ringrt-bench: -%s '%s': expected a whole number in %ld..%ld\n", option, text, lo, hi);
  return 2;
}

size_t parse_size(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || v <= 0) { std::fprintf(stderr, "ringrt-bench: bad size %s\n", s); std::exit(2); }
  if (*end == 'K' || *end == 'k') v *= 1024;
  else if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  else if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return static_cast<size_t>(v);
}

using ringrt_local::free_port;
using ringrt_local::mono_s;

#define BENCH_CHECK(call)                                                                          \
  do {                                                                                             \
    ringrt_result_t rc_ = (call);                                                                  \
    if (rc_ != RINGRT_OK) {                                                                        \
      std::fprintf(stderr, "rank %d: %s failed: %s: %s\n", rank, #call, ringrt_error_string(rc_), \
                   ringrt_error_detail());                                                         \
      return 1;                                                                                    \
    }                                                                                              \
  } while (0)

int run_rank(const Options& o, int rank, const std::string& secret, const std::vector<std::string>& hosts) {
  ringrt_config_t cfg{};
  cfg.rank = rank;
  cfg.world_size = o.ranks;
  cfg.master_addr = "127.0.0.1";
  cfg.master_port = o.port;
  cfg.secret = secret.c_str();
  cfg.timeout_ms = 20000;
  ringrt_backend_t b = RINGRT_BACKEND_AUTO;
  if (o.backend == "tcp") b = RINGRT_BACKEND_TCP;
  else if (o.backend == "shm") b = RINGRT_BACKEND_SHM;
  else if (o.backend == "hier") b = RINGRT_BACKEND_HIER;
  cfg.backend = b;
  if (!hosts.empty()) cfg.hostname = hosts[rank].c_str();
  BENCH_CHECK(ringrt_init_config(&cfg));
  ringrt_backend_t used;
  ringrt_backend(&used);
  const int n = o.ranks;
  const char* bname = used == RINGRT_BACKEND_TCP ? "tcp" : used == RINGRT_BACKEND_SHM ? "shm" : "hier";
  if (rank == 0) {
    std::printf("# ringrt-bench: %d ranks (processes), backend %s, float32 sum, median of iterations\n", n, bname);
    std::printf("# %12s %12s %12s %12s %12s %6s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                "iters");
    std::fflush(stdout);
  }
  std::vector<float> buf(o.max_bytes / sizeof(float) + 1);
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= static_cast<size_t>(o.factor)) {
    const size_t count = bytes / sizeof(float);
    int iters = o.iters > 0 ? o.iters
                            : static_cast<int>(std::clamp<size_t>((256u << 20) / std::max<size_t>(bytes, 1), 5, 100));
    int warm = bytes >= (64u << 20) ? 1 : 3;
    if (o.check) {
      for (size_t i = 0; i < count; ++i) buf[i] = static_cast<float>((rank + 1) * ((i % 7) + 1));
      BENCH_CHECK(ringrt_allreduce(nullptr, buf.data(), count, RINGRT_FLOAT32, RINGRT_SUM));
      const float tri = static_cast<float>(n * (n + 1) / 2);
      for (size_t i = 0; i < count; ++i) {
        if (buf[i] != tri * static_cast<float>((i % 7) + 1)) {
          std::fprintf(stderr, "rank %d: WRONG RESULT at %zu of %zu: %g\n", rank, i, count, buf[i]);
          return 1;
        }
      }
    }
    std::vector<double> times;
    for (int it = 0; it < warm + iters; ++it) {
      BENCH_CHECK(ringrt_barrier());
      double t0 = mono_s();
      BENCH_CHECK(ringrt_allreduce(nullptr, buf.data(), count, RINGRT_FLOAT32, RINGRT_SUM));
      double t1 = mono_s();
      if (it >= warm) times.push_back(t1 - t0);
    }
    // the slowest rank's time per iteration decides: reduce with max
    std::vector<double> tmax(times);
    BENCH_CHECK(ringrt_allreduce(nullptr, tmax.data(), tmax.size(), RINGRT_FLOAT64, RINGRT_MAX));
    std::sort(tmax.begin(), tmax.end());
    double med = tmax[tmax.size() / 2];
    if (tmax.size() % 2 == 0) med = 0.5 * (tmax[tmax.size() / 2 - 1] + tmax[tmax.size() / 2]);
    double algbw = bytes / med / 1e9;
    double busbw = algbw * 2.0 * (n - 1) / n;
    if (rank == 0) {
      std::printf("  %12zu %12zu %12.1f %12.3f %12.3f %6d\n", bytes, count, med * 1e6, algbw, busbw, iters);
      std::fflush(stdout);
    }
  }
  BENCH_CHECK(ringrt_finalize());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  static const option longopts[] = {{"ranks", required_argument, nullptr, 'n'},
                                    {"backend", required_argument, nullptr, 'b'},
                                    {"min-bytes", required_argument, nullptr, 'a'},
                                    {"max-bytes", required_argument, nullptr, 'e'},
                                    {"factor", required_argument, nullptr, 'f'},
                                    {"iters", required_argument, nullptr, 'i'},
                                    {"port", required_argument, nullptr, 'p'},
                                    {"hosts", required_argument, nullptr, 'H'},
                                    {"no-check", no_argument, nullptr, 'C'},
                                    {"help", no_argument, nullptr, 'h'},
                                    {nullptr, 0, nullptr, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "n:b:a:e:f:i:p:H:Ch", longopts, nullptr)) != -1) {
    switch (c) {
      case 'n': if (!ringsched::parse_int(optarg, 1, 64, &o.ranks)) return bad_number("n", optarg, 1, 64); break;
      case 'b': o.backend = optarg; break;
      case 'a': o.min_bytes = parse_size(optarg); break;
      case 'e': o.max_bytes = parse_size(optarg); break;
      case 'f': if (!ringsched::parse_int(optarg, 2, 1024, &o.factor)) return bad_number("f", optarg, 2, 1024); break;
      case 'i': if (!ringsched::parse_int(optarg, 1, 100000000, &o.iters)) return bad_number("i", optarg, 1, 100000000); break;
      case 'p': if (!ringsched::parse_int(optarg, 0, 65535, &o.port)) return bad_number("p", optarg, 0, 65535); break;
      case 'H': o.hosts = optarg; break;
      case 'C': o.check = false; break;
      case 'h': usage(stdout); return 0;
      default: usage(stderr); return 2;
    }
  }
  if (o.ranks < 1 || o.ranks > 64 || o.factor < 2 || o.min_bytes < 4 || o.min_bytes > o.max_bytes ||
      (o.backend != "auto" && o.backend != "tcp" && o.backend != "shm" && o.backend != "hier")) {
    usage(stderr);
    return 2;
  }
  std::vector<std::string> hosts;
  if (!o.hosts.empty()) {
    size_t pos = 0;
    while (pos <= o.hosts.size()) {
      size_t e = o.hosts.find(',', pos);
      if (e == std::string::npos) e = o.hosts.size();
      hosts.push_back(o.hosts.substr(pos, e - pos));
      pos = e + 1;
    }
    if (static_cast<int>(hosts.size()) != o.ranks) {
      std::fprintf(stderr, "ringrt-bench: --hosts names %zu nodes for %d ranks\n", hosts.size(), o.ranks);
      return 2;
    }
  }
  if (o.port == 0) o.port = free_port();
  char secret[33];
  std::snprintf(secret, sizeof secret, "bench-%d-%ld", static_cast<int>(getpid()), static_cast<long>(time(nullptr)));
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < o.ranks; ++r) {
    pid_t p = fork();
    if (p == 0) _exit(run_rank(o, r, secret, hosts));
    pids.push_back(p);
  }
  int bad = 0;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) bad++;
  }
  if (bad) std::fprintf(stderr, "ringrt-bench: %d rank(s) failed\n", bad);
  return bad ? 1 : 0;
}
