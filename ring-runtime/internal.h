// SPDX-License-Identifier: GPL-2.0-or-later
// internal.h -- every internal header of libringrt at once, for the white-box tests. Not
// installed; the library's own files include only the headers they use. Everything lives in
// namespace ringrt:
//   errors.h         result codes' checking macro, error detail, log, clock
//   environment.h    one accessor per environment variable
//   configuration.h  a world's settings, from the environment or a ringrt_config_t
//   crypto.h         HMAC-SHA256, random bytes, constant-time comparison
//   frames.h         the TCP ring's frame header
//   sockets.h        listen/connect/send/receive with deadlines, congestion control
//   reduce.h         dtypes and reduction kernels
//   gate.h           concurrent handshakes on a listener
//   rendezvous.h     rank 0's table of the world
//   transport.h      the interface every backend implements
//   tcp_ring.h, shm_group.h, hierarchical.h   the host backends
//   backends.h       topology, the list of backends, forming a world's transports
#ifndef RINGRT_INTERNAL_H
#define RINGRT_INTERNAL_H

#include "backends.h"
#include "configuration.h"
#include "crypto.h"
#include "environment.h"
#include "errors.h"
#include "frames.h"
#include "gate.h"
#include "hierarchical.h"
#include "reduce.h"
#include "rendezvous.h"
#include "shm_group.h"
#include "sockets.h"
#include "tcp_ring.h"
#include "transport.h"

#endif  // RINGRT_INTERNAL_H
