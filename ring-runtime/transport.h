// SPDX-License-Identifier: GPL-2.0-or-later
// transport.h -- the one interface through which a world moves data. Each backend (the TCP ring,
// a node's shared memory, the two stacked as the hierarchical path, NCCL for device buffers)
// implements it; world.cpp calls only this, and backends.cpp is the one list of backends.
#ifndef RINGRT_TRANSPORT_H
#define RINGRT_TRANSPORT_H

#include "errors.h"

#include <functional>
#include <string>
#include <vector>

namespace ringrt {

class Transport {
 public:
  virtual ~Transport() = default;
  // Members and this process's place among them (for a world's transport: ranks, and our rank).
  virtual int size() const = 0;
  virtual int index() const = 0;
  // recv[i] = op over the members of send[i], i < count (send == recv: in place). div > 0: the
  // result is then divided by div, an AVG over a world of div ranks, which may be more than this
  // transport's members when it is one level of a stacked one.
  virtual rr allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) = 0;
  // root's bytes to every member; root is a global rank, and one of the members.
  virtual rr broadcast(void* buf, size_t bytes, int root) = 0;
  virtual rr barrier() = 0;
  // recv holds every member's `bytes` of send, in member order (send may be recv's own part).
  // This default sums zero-padded copies as 32-bit integers (adding zeros keeps every bit);
  // transports with a native way override it.
  virtual rr allgather(const void* send, void* recv, size_t bytes);
  // Best effort, and harmless when repeated: tell the members that `blamed` failed, so that
  // none of them waits out its timeout.
  virtual void abort(rr code, int blamed, const std::string& why) = 0;
  // Device transports take only the buffers they can reach; a host transport takes any.
  virtual bool takes(const void* buf) const {
    (void)buf;
    return true;
  }
  // Stacked transports keep each other's peers informed: while one waits on its peers it runs
  // `waiting`, which calls keep_alive() of the other.
  virtual void keep_alive() {}
  virtual void on_wait(std::function<void()> waiting) { (void)waiting; }
  // What is worth knowing of it beyond its backend's name, for the debug line of a formed world
  // ("TCP congestion control cubic"); may be empty.
  virtual std::string describe() const = 0;

 private:
  std::vector<char> gather_work_;  // the default allgather's buffer, kept between calls
};

// send != recv: copy send into recv, where the host transports work in place.
void copy_in(const void* send, void* recv, size_t bytes);

}  // namespace ringrt

#endif  // RINGRT_TRANSPORT_H
