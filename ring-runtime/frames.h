// SPDX-License-Identifier: GPL-2.0-or-later
// frames.h -- the 32-byte header of every frame on a TCP ring's data connections.
#ifndef RINGRT_FRAMES_H
#define RINGRT_FRAMES_H

#include <cstdint>

namespace ringrt {

constexpr uint32_t kFrameMagic = 0x31545252u;  // "RRT1" little-endian
enum FrameType : uint8_t { kFrameData = 1, kFrameKeepalive = 2, kFrameAbort = 3 };
enum CollKind : uint8_t { kCollAllreduce = 1, kCollAllgatherReduce = 2, kCollBroadcast = 3,
                          kCollBarrier = 4, kCollAllreduceHalving = 5, kCollAllgather = 6 };
struct FrameHeader {
  uint32_t magic;
  uint8_t type;
  uint8_t kind;
  uint8_t dtype;
  uint8_t op;      // for aborts: the error code
  uint32_t seq;    // op sequence number
  uint32_t item;   // index of this frame in the op's stream
  uint32_t length; // payload bytes
  int32_t src;     // sending rank
  int32_t aux;     // aborts: the blamed rank
  uint32_t check;  // checksum of the 28 bytes before it
};
static_assert(sizeof(FrameHeader) == 32, "frame header is 32 bytes");
uint32_t header_check(const FrameHeader& h);
void seal_header(FrameHeader* h);
const char* coll_name(uint8_t kind);

}  // namespace ringrt

#endif  // RINGRT_FRAMES_H
