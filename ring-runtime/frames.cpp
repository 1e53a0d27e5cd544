// SPDX-License-Identifier: GPL-2.0-or-later
// frames.cpp -- the frame header's checksum and the names of the collectives (frames.h).
#include "frames.h"

namespace ringrt {

uint32_t header_check(const FrameHeader& h) {
  // FNV-1a over the first 28 bytes
  const uint8_t* p = reinterpret_cast<const uint8_t*>(&h);
  uint32_t x = 2166136261u;
  for (int i = 0; i < 28; ++i) { x ^= p[i]; x *= 16777619u; }
  return x;
}
void seal_header(FrameHeader* h) { h->check = header_check(*h); }
const char* coll_name(uint8_t kind) {
  switch (kind) {
    case kCollAllreduce: return "allreduce";
    case kCollAllreduceHalving: return "allreduce(halving)";
    case kCollAllgatherReduce: return "allreduce(small)";
    case kCollBroadcast: return "broadcast";
    case kCollBarrier: return "barrier";
  }
  return "collective";
}

}  // namespace ringrt
