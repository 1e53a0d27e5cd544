// SPDX-License-Identifier: GPL-2.0-or-later
// ringrt_leak_worker N -- two forked ranks run N mixed collectives on the TCP ring and then on
// shared memory, finalizing in between. Run under valgrind by ringrt-leakcheck.sh: every
// process must end with no definitely or indirectly lost block.
#include "ringrt.h"
#include "ringrt_harness.h"

#include <cstdio>
#include <cstdlib>
#include <vector>

static int rank_main(int rank, int port, ringrt_backend_t backend, int n) {
  ringrt_config_t cfg{};
  cfg.rank = rank;
  cfg.world_size = 2;
  cfg.master_addr = "127.0.0.1";
  cfg.master_port = port;
  cfg.secret = "leak-check-secret";
  cfg.timeout_ms = 60000;  // valgrind is slow
  cfg.backend = backend;
  if (ringrt_init_config(&cfg) != RINGRT_OK) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, ringrt_error_detail());
    return 1;
  }
  std::vector<float> a(3000, 1.f), b(40000, 2.f);
  for (int i = 0; i < n / 4; ++i) {
    ringrt_bucket_t bk[2] = {{a.data(), 100, nullptr, 0}, {b.data(), 500, nullptr, 0}};
    int depth[2] = {2, 1};
    if (ringrt_allreduce(nullptr, a.data(), a.size(), RINGRT_FLOAT32, RINGRT_AVG) != RINGRT_OK ||
        ringrt_allreduce(nullptr, b.data(), b.size(), RINGRT_FLOAT32, RINGRT_MAX) != RINGRT_OK ||
        ringrt_broadcast(a.data(), 10, RINGRT_FLOAT32, i % 2) != RINGRT_OK ||
        ringrt_allreduce_spb_depth(bk, 2, RINGRT_FLOAT32, depth) != RINGRT_OK) {
      std::fprintf(stderr, "rank %d: collective: %s\n", rank, ringrt_error_detail());
      return 1;
    }
  }
  return ringrt_finalize() == RINGRT_OK ? 0 : 1;
}

int main(int argc, char** argv) {
  int n = argc > 1 ? std::atoi(argv[1]) : 400;
  for (ringrt_backend_t backend : {RINGRT_BACKEND_TCP, RINGRT_BACKEND_SHM}) {
    int port = ringrt_test::free_port();
    std::vector<std::function<int()>> fns = {[&] { return rank_main(0, port, backend, n); },
                                             [&] { return rank_main(1, port, backend, n); }};
    auto out = ringrt_test::run_procs(fns, 600);
    for (auto& o : out) {
      std::fputs(o.output.c_str(), stdout);
      if (o.status != 0) {
        std::printf("ringrt_leak_worker: a rank ended with status %d\n", o.status);
        return 1;
      }
    }
  }
  std::printf("ringrt_leak_worker: %d collectives per rank on tcp and shm, clean\n", n);
  return 0;
}
