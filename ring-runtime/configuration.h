// SPDX-License-Identifier: GPL-2.0-or-later
// configuration.h -- a world's settings, resolved from the environment (ringrt_init) or from a
// ringrt_config_t (ringrt_init_config), with every value checked and named when it is wrong.
#ifndef RINGRT_CONFIGURATION_H
#define RINGRT_CONFIGURATION_H

#include "errors.h"

#include <string>

namespace ringrt {

// How the TCP engine allreduces large buffers: the ring (reduce-scatter + allgather, 2(m-1)
// steps), or, on a ring of exactly four, recursive halving and doubling (4 steps, pairs along
// the ring's own edges: a ring of four is a square, i.e. a 2-cube). Auto: halving on four.
enum class TcpAlgorithm { kAuto, kRing, kHalving };

struct Config {
  int rank = -1;
  int world_size = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string secret;       // the secret bytes themselves (loaded from file if need be)
  int timeout_ms = 5000;
  int init_timeout_ms = 60000;
  // How long one connection to a listener (rank 0's rendezvous port, a rank's ring port) may
  // take to prove itself before it is dropped; a rank dropped by rank 0 connects again.
  int handshake_ms = 2000;
  ringrt_backend_t backend = RINGRT_BACKEND_AUTO;
  TcpAlgorithm tcp_algorithm = TcpAlgorithm::kAuto;  // RINGRT_TCP_ALGORITHM, read by both paths
  std::string tcp_congestion = "auto";  // RINGRT_TCP_CONGESTION, read by both paths: auto, system or a name
  std::string hostname;
};
rr config_from_env(Config* out);
rr config_from_struct(const ringrt_config_t* in, Config* out);
rr parse_int(const char* name, const char* text, long lo, long hi, long* out);
// First host of a Slurm hostlist expression ("gpu[03-05,9],cpu1" -> "gpu03").
std::string slurm_first_host(const std::string& nodelist);
// Reads a secret file: must be a regular file owned by us with no group/other permission bits.
rr load_secret_file(const std::string& path, std::string* secret);

}  // namespace ringrt

#endif  // RINGRT_CONFIGURATION_H
