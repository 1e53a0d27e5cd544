// SPDX-License-Identifier: GPL-2.0-or-later
// gloo_allreduce_bench -- Gloo's ring allreduce (Debian's libgloo) measured exactly as
// ringrt-bench measures libringrt: N forked ranks on this machine over TCP loopback, float32 sum,
// per size the median over iterations (each after a barrier) of the slowest rank's time;
// algbw = S/t, busbw = algbw * 2(n-1)/n. Built and run by compare-allreduce.sh.
#include <gloo/allreduce_ring.h>
#include <gloo/allreduce_ring_chunked.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int run_rank(int rank, int n, const std::string& dir, size_t minb, size_t maxb, bool chunked) {
  gloo::transport::tcp::attr attr;
  attr.hostname = "127.0.0.1";
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(dir);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, n);
  ctx->connectFullMesh(store, dev);
  std::vector<float> buf(maxb / 4);
  if (rank == 0) {
    std::printf("# gloo %s: %d ranks (processes), tcp loopback, float32 sum, median of iterations\n",
                chunked ? "AllreduceRingChunked" : "AllreduceRing", n);
    std::printf("# %12s %12s %12s %12s %12s %6s\n", "size(B)", "count", "time(us)", "algbw(GB/s)", "busbw(GB/s)",
                "iters");
    std::fflush(stdout);
  }
  gloo::BarrierAllToAll barrier(ctx);
  for (size_t bytes = minb; bytes <= maxb; bytes *= 4) {
    int count = static_cast<int>(bytes / 4);
    int iters = static_cast<int>(std::clamp<size_t>((256u << 20) / bytes, 5, 100));
    int warm = bytes >= (64u << 20) ? 1 : 3;
    std::vector<float*> ptrs = {buf.data()};
    std::unique_ptr<gloo::Algorithm> algo;
    if (chunked) algo.reset(new gloo::AllreduceRingChunked<float>(ctx, ptrs, count));
    else algo.reset(new gloo::AllreduceRing<float>(ctx, ptrs, count));
    std::vector<double> times;
    for (int it = 0; it < warm + iters; ++it) {
      barrier.run();
      double t0 = now_s();
      algo->run();
      double t1 = now_s();
      if (it >= warm) times.push_back(t1 - t0);
    }
    std::vector<double*> tp = {times.data()};
    gloo::AllreduceRing<double> tmax(ctx, tp, static_cast<int>(times.size()), gloo::ReductionFunction<double>::max);
    tmax.run();
    std::sort(times.begin(), times.end());
    double med = times.size() % 2 ? times[times.size() / 2]
                                  : 0.5 * (times[times.size() / 2 - 1] + times[times.size() / 2]);
    double algbw = bytes / med / 1e9;
    if (rank == 0) {
      std::printf("  %12zu %12d %12.1f %12.3f %12.3f %6d\n", bytes, count, med * 1e6, algbw,
                  algbw * 2.0 * (n - 1) / n, iters);
      std::fflush(stdout);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  int n = 2;
  size_t minb = 4096, maxb = 256u << 20;
  bool chunked = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks") && i + 1 < argc) n = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--min-bytes") && i + 1 < argc) minb = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--max-bytes") && i + 1 < argc) maxb = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--chunked")) chunked = true;
    else {
      std::fprintf(stderr, "usage: gloo_allreduce_bench [--ranks N] [--min-bytes B] [--max-bytes B] [--chunked]\n");
      return 2;
    }
  }
  char dir[] = "/tmp/gloo-bench-XXXXXX";
  if (!mkdtemp(dir)) return 1;
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t p = fork();
    if (p == 0) {
      int rc = 1;
      try {
        rc = run_rank(r, n, dir, minb, maxb, chunked);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo rank %d: %s\n", r, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    pids.push_back(p);
  }
  int bad = 0;
  for (pid_t p : pids) {
    int st;
    waitpid(p, &st, 0);
    bad += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
  std::string cmd = std::string("rm -rf ") + dir;
  if (system(cmd.c_str()) != 0) bad++;
  return bad ? 1 : 0;
}
