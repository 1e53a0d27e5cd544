// SPDX-License-Identifier: GPL-2.0-or-later
// nccl_stub.cpp -- stands in for nccl.cpp when configure found no CUDA/NCCL.
#include "backends.h"

namespace ringrt {

rr make_nccl_transport(const BackendContext&, std::unique_ptr<Transport>*) {
  return fail(RINGRT_ERR_UNSUPPORTED, -1, "RINGRT_BACKEND=nccl, but this libringrt was built without CUDA/NCCL");
}

}  // namespace ringrt
