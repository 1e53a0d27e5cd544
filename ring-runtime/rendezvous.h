// SPDX-License-Identifier: GPL-2.0-or-later
// rendezvous.h -- how the ranks of a world find each other: rank 0 serves on the master address,
// the others prove the job secret and receive the table of every rank (rendezvous.cpp).
#ifndef RINGRT_RENDEZVOUS_H
#define RINGRT_RENDEZVOUS_H

#include "configuration.h"
#include "sockets.h"

#include <string>
#include <vector>

namespace ringrt {

struct PeerInfo {
  int rank = -1;
  std::string host;  // node identity (hostname or RINGRT_HOSTNAME)
  std::string ip;    // where its data listener is
  int port = 0;      // its data listener
  int pid = 0;
};
struct Table {
  uint8_t session[16] = {};
  ringrt_backend_t backend = RINGRT_BACKEND_AUTO;  // requested backend (same on all ranks)
  std::vector<PeerInfo> peers;                     // indexed by rank
};
// Join the world: rank 0 serves on master_addr:port, the others connect. On success *table
// holds every rank's info and *listener this rank's data listener (still open).
rr rendezvous(const Config& cfg, Table* table, Fd* listener);

}  // namespace ringrt

#endif  // RINGRT_RENDEZVOUS_H
