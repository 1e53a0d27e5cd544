// SPDX-License-Identifier: GPL-2.0-or-later
// transport.cpp -- what every transport shares: the allgather built on allreduce.
#include "transport.h"

#include <cstring>

namespace ringrt {

void copy_in(const void* send, void* recv, size_t bytes) {
  if (send && send != recv && bytes) std::memmove(recv, send, bytes);
}

rr Transport::allgather(const void* send, void* recv, size_t bytes) {
  const int m = size(), me = index();
  const size_t stride = (bytes + 3) / 4 * 4;
  const size_t total = stride * static_cast<size_t>(m);
  if (gather_work_.size() < total) gather_work_.resize(total);
  std::memset(gather_work_.data(), 0, total);
  std::memcpy(gather_work_.data() + static_cast<size_t>(me) * stride, send, bytes);
  RINGRT_CHECK(allreduce(gather_work_.data(), gather_work_.data(), total / 4, RINGRT_INT32, RINGRT_SUM, 0));
  char* out = static_cast<char*>(recv);
  for (int k = 0; k < m; ++k)
    std::memcpy(out + static_cast<size_t>(k) * bytes, gather_work_.data() + static_cast<size_t>(k) * stride, bytes);
  return RINGRT_OK;
}

}  // namespace ringrt
