// SPDX-License-Identifier: GPL-2.0-or-later
// shm_group.cpp -- collectives among the ranks of one node through a POSIX shared-memory segment
// (mode 0600, unlinked as soon as every local rank has mapped it). Each rank owns two slots
// (double buffering) and a phase counter; waits spin briefly, then sleep on a futex that is only
// woken when someone actually sleeps, so an operation costs no thread wake-ups when ranks are
// on their own cores. Every wait has a deadline: a rank that died (its pid is gone) is named at
// once, a rank that neither progresses nor waits (no heartbeat) is named after the timeout.
#include "shm_group.h"

#include "backends.h"
#include "crypto.h"
#include "reduce.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdio>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RINGRT_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define RINGRT_PAUSE() asm volatile("yield" ::: "memory")
#else
#define RINGRT_PAUSE() do {} while (0)
#endif

namespace ringrt {

namespace {
constexpr uint64_t kShmMagic = 0x314d485354525252ull;  // "RRRTSHM1"
constexpr size_t kHeaderBytes = 1024;
constexpr size_t kRankBytes = 128;
constexpr unsigned kPauseSpins = 256;  // pause-only spins of a wait (a few microseconds)

struct alignas(64) RankSlot {
  std::atomic<uint64_t> phase;
  char pad0[56];
  std::atomic<int64_t> heartbeat_ns;
  std::atomic<int32_t> pid;
  int32_t rank;
  uint64_t pidns;
  char pad1[40];
};
static_assert(sizeof(RankSlot) == kRankBytes, "rank slot is 128 bytes");

uint64_t read_pidns() {
  char buf[64] = {};
  ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof buf - 1);
  if (n <= 0) return 0;
  const char* p = std::strchr(buf, '[');
  return p ? std::strtoull(p + 1, nullptr, 10) : 0;
}

// true when pid is certainly gone (no such process, or a zombie)
bool pid_dead(int pid) {
  if (pid <= 0) return false;
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (!f) return kill(pid, 0) != 0 && errno == ESRCH;
  char buf[512] = {};
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[n] = 0;
  const char* rp = std::strrchr(buf, ')');
  if (!rp || rp[1] != ' ') return false;
  char st = rp[2];
  return st == 'Z' || st == 'X';
}

long futex(std::atomic<uint32_t>* addr, int op, uint32_t val, const timespec* ts) {
  return syscall(SYS_futex, reinterpret_cast<uint32_t*>(addr), op, val, ts, nullptr, 0);
}
}  // namespace

struct ShmSegment {
  uint64_t magic;
  uint32_t version;
  uint32_t nlocal;
  uint64_t slot_bytes;
  uint64_t data_offset;
  std::atomic<uint32_t> ready;
  std::atomic<uint32_t> attached;
  std::atomic<uint32_t> futex_word;
  std::atomic<uint32_t> waiters;
  std::atomic<int32_t> abort_state;  // 0 none, 1 being written, 2 set
  int32_t abort_rank;
  int32_t abort_code;
  char abort_msg[512];
  RankSlot* ranks() { return reinterpret_cast<RankSlot*>(reinterpret_cast<char*>(this) + kHeaderBytes); }
};
static_assert(sizeof(ShmSegment) <= kHeaderBytes, "segment header fits");

ShmGroup::~ShmGroup() {
  if (seg_) {
    munmap(seg_, map_bytes_);
    seg_ = nullptr;
  }
  if (index_ == 0 && !name_.empty()) shm_unlink(name_.c_str());  // no-op when already unlinked
}

char* ShmGroup::slot(int idx, int buf) {
  return reinterpret_cast<char*>(seg_) + seg_->data_offset + (static_cast<size_t>(idx) * 2 + buf) * slot_bytes;
}

rr ShmGroup::attach(const Config& cfg, const Table& table, const std::vector<int>& members, int64_t deadline) {
  members_ = members;
  rank_ = cfg.rank;
  timeout_ms = cfg.timeout_ms;
  auto it = std::find(members_.begin(), members_.end(), rank_);
  if (it == members_.end()) return fail(RINGRT_ERR_STATE, -1, "rank %d not in its node group", rank_);
  index_ = static_cast<int>(it - members_.begin());
  const int L = size();
  const size_t data_off = (kHeaderBytes + kRankBytes * L + 4095) & ~static_cast<size_t>(4095);
  map_bytes_ = data_off + static_cast<size_t>(L) * 2 * slot_bytes;
  name_ = "/ringrt-" + hex(table.session, 8) + "-" + std::to_string(members_[0]);
  my_pidns_ = read_pidns();
  int fd = -1;
  if (index_ == 0) {
    fd = shm_open(name_.c_str(), O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0)
      return fail(RINGRT_ERR_SYSTEM, -1, "shm_open(%s): %s", name_.c_str(), std::strerror(errno));
    fchmod(fd, 0600);
    if (ftruncate(fd, static_cast<off_t>(map_bytes_)) != 0) {
      int e = errno;
      ::close(fd);
      shm_unlink(name_.c_str());
      return fail(RINGRT_ERR_SYSTEM, -1, "cannot size shared memory %s to %zu bytes: %s", name_.c_str(), map_bytes_,
                  std::strerror(e));
    }
  } else {
    while (true) {
      fd = shm_open(name_.c_str(), O_RDWR | O_CLOEXEC, 0);
      if (fd >= 0) {
        struct stat st;
        if (fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077) == 0 &&
            static_cast<size_t>(st.st_size) >= map_bytes_)
          break;
        if (fstat(fd, &st) == 0 && (st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
          ::close(fd);
          return fail(RINGRT_ERR_AUTH, members_[0], "shared memory %s is not ours or not private", name_.c_str());
        }
        ::close(fd);
        fd = -1;
      }
      if (now_ns() > deadline)
        return fail(RINGRT_ERR_PEER, members_[0], "rank %d did not create the node's shared memory in time",
                    members_[0]);
      usleep(1000);
    }
  }
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return fail(RINGRT_ERR_SYSTEM, -1, "mmap of %zu bytes: %s", map_bytes_, std::strerror(errno));
  seg_ = static_cast<ShmSegment*>(p);
  const int64_t now = now_ns();
  if (index_ == 0) {
    seg_->magic = kShmMagic;
    seg_->version = 1;
    seg_->nlocal = static_cast<uint32_t>(L);
    seg_->slot_bytes = slot_bytes;
    seg_->data_offset = data_off;
    for (int i = 0; i < L; ++i) {
      seg_->ranks()[i].phase.store(0);
      seg_->ranks()[i].heartbeat_ns.store(now);
      seg_->ranks()[i].pid.store(0);
      seg_->ranks()[i].rank = members_[i];
    }
    seg_->ready.store(1, std::memory_order_release);
  } else {
    while (seg_->ready.load(std::memory_order_acquire) != 1) {
      if (now_ns() > deadline)
        return fail(RINGRT_ERR_PEER, members_[0], "rank %d did not initialise the node's shared memory in time",
                    members_[0]);
      usleep(500);
    }
    if (seg_->magic != kShmMagic || seg_->nlocal != static_cast<uint32_t>(L) || seg_->slot_bytes != slot_bytes)
      return fail(RINGRT_ERR_PROTOCOL, members_[0], "shared memory %s has an unexpected layout", name_.c_str());
  }
  RankSlot& me = seg_->ranks()[index_];
  me.pidns = my_pidns_;
  me.heartbeat_ns.store(now_ns());
  me.pid.store(static_cast<int32_t>(getpid()));
  seg_->attached.fetch_add(1);
  while (seg_->attached.load() < static_cast<uint32_t>(L)) {
    if (now_ns() > deadline) {
      std::string missing;
      for (int i = 0; i < L; ++i)
        if (seg_->ranks()[i].pid.load() == 0) missing += (missing.empty() ? "" : ", ") + std::to_string(members_[i]);
      return fail(RINGRT_ERR_PEER, -1, "rank(s) %s never attached to the node's shared memory", missing.c_str());
    }
    usleep(200);
  }
  if (index_ == 0) shm_unlink(name_.c_str());
  last_hb_ns_ = last_tick_ns_ = last_pidcheck_ns_ = now_ns();
  return RINGRT_OK;
}

void ShmGroup::keep_alive() {
  if (seg_) seg_->ranks()[index_].heartbeat_ns.store(now_ns(), std::memory_order_relaxed);
}

void ShmGroup::wake() {
  if (seg_->waiters.load() > 0) {
    seg_->futex_word.fetch_add(1);
    futex(&seg_->futex_word, FUTEX_WAKE, INT_MAX, nullptr);
  }
}

void ShmGroup::abort(rr code, int blamed, const std::string& why) {
  if (!seg_) return;
  int32_t expect = 0;
  if (seg_->abort_state.compare_exchange_strong(expect, 1)) {
    seg_->abort_rank = blamed;
    seg_->abort_code = code;
    std::snprintf(seg_->abort_msg, sizeof seg_->abort_msg, "%s", why.c_str());
    seg_->abort_state.store(2);
  }
  seg_->futex_word.fetch_add(1);
  futex(&seg_->futex_word, FUTEX_WAKE, INT_MAX, nullptr);
}

rr ShmGroup::check_abort() {
  if (seg_->abort_state.load(std::memory_order_acquire) != 2) return RINGRT_OK;
  rr code = static_cast<rr>(seg_->abort_code);
  if (code != RINGRT_ERR_PROTOCOL) code = RINGRT_ERR_PEER;
  return fail(code, seg_->abort_rank, "%s", seg_->abort_msg);
}

rr ShmGroup::signal_phase() {
  phase_++;
  RankSlot& me = seg_->ranks()[index_];
  // Progress is a sign of life too: a rank that always arrives last never waits, so if only
  // waiting stamped the heartbeat, its heartbeat would age through the compute time between
  // collectives and a peer would call it stalled although it keeps up.
  me.heartbeat_ns.store(now_ns(), std::memory_order_relaxed);
  me.phase.store(phase_, std::memory_order_seq_cst);
  wake();
  return RINGRT_OK;
}

rr ShmGroup::blame_laggard(int only_idx, uint64_t phase, int64_t now, bool pidcheck) {
  const int64_t T = ms_to_ns(timeout_ms);
  const int L = size();
  for (int k = 0; k < L; ++k) {
    if (k == index_ || (only_idx >= 0 && k != only_idx)) continue;
    RankSlot& s = seg_->ranks()[k];
    if (s.phase.load() >= phase) continue;
    // Its phase was read before its pid: it may have reached the phase, left the collective and
    // exited in between. A rank that delivered everything before going away is not dead to us, so
    // read the phase again now that the process is known to be gone.
    if (pidcheck && s.pidns == my_pidns_ && pid_dead(s.pid.load()) && s.phase.load() < phase) {
      fail(RINGRT_ERR_PEER, members_[k], "rank %d died (pid %d is gone) [detected by rank %d]", members_[k],
           s.pid.load(), rank_);
      abort(RINGRT_ERR_PEER, members_[k], last_detail());
      return RINGRT_ERR_PEER;
    }
    int64_t hb = s.heartbeat_ns.load();
    if (now - hb > T && s.phase.load() < phase) {
      fail(RINGRT_ERR_PEER, members_[k], "rank %d stalled: no progress for %d ms [detected by rank %d]",
           members_[k], timeout_ms, rank_);
      abort(RINGRT_ERR_PEER, members_[k], last_detail());
      return RINGRT_ERR_PEER;
    }
  }
  return RINGRT_OK;
}

rr ShmGroup::wait_cond(int only_idx, uint64_t phase) {
  RankSlot* ranks = seg_->ranks();
  const int L = size();
  auto done = [&]() {
    if (only_idx >= 0) return ranks[only_idx].phase.load(std::memory_order_acquire) >= phase;
    for (int k = 0; k < L; ++k)
      if (ranks[k].phase.load(std::memory_order_acquire) < phase) return false;
    return true;
  };
  if (done()) return RINGRT_OK;
  int64_t start = now_ns();
  const int64_t spin_ns = static_cast<int64_t>(spin_us) * 1000;
  // A few microseconds of pause-spinning catch a peer that is a step behind on its own core;
  // after that the spin yields. Counting ranks against CPUs does not say whether the CPU is ours
  // to burn: a torch rank's backward pass, another job, or the peer itself may be waiting for
  // it (2 ranks on 2 busy cores spent 2 ms spinning per chunk, a 16 MiB allreduce took 194 ms
  // instead of 3). sched_yield costs a system call when nothing else is runnable.
  for (unsigned i = 1;; ++i) {
    if (done()) return RINGRT_OK;
    if (yield_spin || i > kPauseSpins) sched_yield();
    else RINGRT_PAUSE();
    if ((i & 63) == 0) {
      RINGRT_CHECK(check_abort());
      if (now_ns() - start >= spin_ns) break;
    }
  }
  const int64_t T = ms_to_ns(timeout_ms);
  while (true) {
    // a phase every member reached is complete, whatever was raised since: an abort applies
    // to what is still to come (as on the TCP ring, where data already received is kept)
    if (done()) return RINGRT_OK;
    RINGRT_CHECK(check_abort());
    int64_t now = now_ns();
    if (now - last_hb_ns_ > 1000000) { keep_alive(); last_hb_ns_ = now; }
    if (tick_ && now - last_tick_ns_ > T / 8) { tick_(); last_tick_ns_ = now; }
    bool pidcheck = now - last_pidcheck_ns_ > 50 * 1000000LL;
    if (pidcheck) last_pidcheck_ns_ = now;
    RINGRT_CHECK(blame_laggard(only_idx, phase, now, pidcheck));
    seg_->waiters.fetch_add(1);
    // Pairs with the seq_cst phase store and waiters load in signal_phase()/wake(): either the
    // signaller sees us registered and bumps the futex word, or we see its phase in done().
    std::atomic_thread_fence(std::memory_order_seq_cst);
    uint32_t v = seg_->futex_word.load();
    if (!done() && seg_->abort_state.load() == 0) {
      int64_t slice = std::min<int64_t>(T / 8, 20 * 1000000LL);
      timespec ts{static_cast<time_t>(slice / 1000000000LL), static_cast<long>(slice % 1000000000LL)};
      futex(&seg_->futex_word, FUTEX_WAIT, v, &ts);
    }
    seg_->waiters.fetch_sub(1);
  }
}

rr ShmGroup::wait_all(uint64_t phase) { return wait_cond(-1, phase); }
rr ShmGroup::wait_one(int idx, uint64_t phase) { return wait_cond(idx, phase); }

rr ShmGroup::arrive_all() {
  signal_phase();
  return wait_all(phase_);
}

rr ShmGroup::reduce_scatter(const char* mine, size_t n, ringrt_dtype_t t, ringrt_op_t op, int div, int b) {
  const int L = size();
  const size_t esz = dtype_size(t);
  std::memcpy(slot(index_, b), mine, n * esz);
  RINGRT_CHECK(arrive_all());
  const size_t per = n / L, rem = n % L;
  const size_t s0 = (static_cast<size_t>(index_) * per + std::min(static_cast<size_t>(index_), rem)) * esz;
  const size_t len = per + (static_cast<size_t>(index_) < rem ? 1 : 0);
  char* dst = slot(index_, b) + s0;
  const int last = (index_ == L - 1) ? L - 2 : L - 1;
  for (int k = 0; k < L; ++k) {
    if (k == index_) continue;
    if (k == last && div > 1) reduce_into_div(dst, slot(k, b) + s0, len, t, op, div);
    else reduce_into(dst, slot(k, b) + s0, len, t, op);
  }
  return arrive_all();
}

void ShmGroup::gather_shares(char* mine, size_t n, size_t esz, int b) {
  const int L = size();
  const size_t per = n / L, rem = n % L;
  for (int k = 0; k < L; ++k) {
    const size_t s0 = (static_cast<size_t>(k) * per + std::min(static_cast<size_t>(k), rem)) * esz;
    const size_t len = per + (static_cast<size_t>(k) < rem ? 1 : 0);
    std::memcpy(mine + s0, slot(k, b) + s0, len * esz);
  }
}

void ShmGroup::publish(const char* data, size_t bytes, int b) {
  if (bytes) std::memcpy(slot(0, b), data, bytes);
  signal_phase();
}

rr ShmGroup::receive_published(char* dst, size_t bytes, int b) {
  RINGRT_CHECK(wait_one(0, phase_ + 1));
  if (dst && bytes) std::memcpy(dst, slot(0, b), bytes);
  signal_phase();
  return RINGRT_OK;
}

rr ShmGroup::allreduce(const void* send, void* recv, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div) {
  const size_t esz = dtype_size(t);
  copy_in(send, recv, count * esz);
  char* base = static_cast<char*>(recv);
  if (size() == 1) {
    if (div > 1) divide(base, count, t, div);
    return RINGRT_OK;
  }
  const size_t ce = std::max<size_t>(1, std::min(chunk_bytes, slot_bytes) / esz);
  for (size_t off = 0; off < count; off += ce) {
    const size_t n = std::min(ce, count - off);
    const int b = next_buffer();
    char* mine = base + off * esz;
    RINGRT_CHECK(reduce_scatter(mine, n, t, op, div, b));
    gather_shares(mine, n, esz, b);
  }
  return RINGRT_OK;
}

int ShmGroup::index_of(int rank) const {
  const auto it = std::find(members_.begin(), members_.end(), rank);
  return it == members_.end() ? -1 : static_cast<int>(it - members_.begin());
}

rr ShmGroup::broadcast(void* buf, size_t bytes, int root) {
  if (size() == 1) return RINGRT_OK;
  const int r = index_of(root);
  if (r < 0) return fail(RINGRT_ERR_ARG, -1, "broadcast root %d is not on this node", root);
  char* base = static_cast<char*>(buf);
  const size_t cap = std::min(chunk_bytes, slot_bytes);
  for (size_t off = 0; off < bytes; off += cap) {
    const size_t nb = std::min(cap, bytes - off);
    const int b = next_buffer();
    if (index_ == r) std::memcpy(slot(r, b), base + off, nb);
    RINGRT_CHECK(arrive_all());
    if (index_ != r) std::memcpy(base + off, slot(r, b), nb);
  }
  return RINGRT_OK;
}

rr ShmGroup::barrier() {
  if (size() == 1) return RINGRT_OK;
  return arrive_all();
}

rr ShmGroup::allgather(const void* send, void* recv, size_t bytes) {
  char* out = static_cast<char*>(recv);
  const char* in = static_cast<const char*>(send);
  const int L = size();
  const size_t cap = std::min(chunk_bytes, slot_bytes);
  for (size_t off = 0; off < bytes; off += cap) {
    const size_t nb = std::min(cap, bytes - off);
    const int b = next_buffer();
    std::memcpy(slot(index_, b), in + off, nb);
    RINGRT_CHECK(arrive_all());
    for (int k = 0; k < L; ++k) std::memcpy(out + static_cast<size_t>(k) * bytes + off, slot(k, b), nb);
  }
  return RINGRT_OK;
}

rr make_shm_transport(const BackendContext& ctx, std::unique_ptr<Transport>* out) {
  std::unique_ptr<ShmGroup> group(new ShmGroup);
  group->yield_spin = ctx.topo.oversubscribed();
  group->spin_us = ctx.topo.oversubscribed() ? 20 : 200;
  RINGRT_CHECK(group->attach(ctx.cfg, ctx.table, ctx.topo.local, ctx.deadline));
  *out = std::move(group);
  return RINGRT_OK;
}

}  // namespace ringrt
