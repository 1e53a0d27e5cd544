// internal.h -- libringrt internals shared by the backends, the C API and the white-box tests.
// Not installed. Everything lives in namespace ringrt.
#ifndef RINGRT_INTERNAL_H
#define RINGRT_INTERNAL_H

#include "ringrt.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

// The one error-propagation macro: evaluate an expression returning ringrt_result_t and return it
// from the enclosing function unless it is RINGRT_OK.
#define RINGRT_CHECK(expr)                           \
  do {                                               \
    ringrt_result_t ringrt_check_rc_ = (expr);       \
    if (ringrt_check_rc_ != RINGRT_OK) return ringrt_check_rc_; \
  } while (0)

namespace ringrt {

using rr = ringrt_result_t;

// ---- errors: a thread-local detail string and blamed rank, set by fail() ---------------------
rr fail(rr code, int blamed_rank, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
const std::string& last_detail();
int last_blamed();
void clear_error();
void set_error(rr code, int blamed, const std::string& detail);  // restore a saved error
void log_msg(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
void set_log_rank(int rank);
bool debug_enabled();

// ---- time ---------------------------------------------------------------------------------
int64_t now_ns();
inline int64_t ms_to_ns(int64_t ms) { return ms * 1000000LL; }

// ---- the environment: one accessor per variable; nullptr when unset or empty ---------------
namespace env {
const char* rank();              // RINGRT_RANK
const char* world_size();        // RINGRT_WORLD_SIZE
const char* master_addr();       // RINGRT_MASTER_ADDR
const char* master_port();       // RINGRT_MASTER_PORT
const char* secret_file();       // RINGRT_SECRET_FILE
const char* secret();            // RINGRT_SECRET
const char* timeout_ms();        // RINGRT_TIMEOUT_MS
const char* init_timeout_ms();   // RINGRT_INIT_TIMEOUT_MS
const char* backend();           // RINGRT_BACKEND
const char* tcp_algorithm();     // RINGRT_TCP_ALGORITHM
const char* tcp_congestion();    // RINGRT_TCP_CONGESTION
const char* hostname();          // RINGRT_HOSTNAME
const char* debug();             // RINGRT_DEBUG
const char* slurm_procid();      // SLURM_PROCID
const char* slurm_ntasks();      // SLURM_NTASKS
const char* slurm_job_nodelist();// SLURM_JOB_NODELIST
const char* slurm_job_id();      // SLURM_JOB_ID
}  // namespace env

// ---- resolved configuration ----------------------------------------------------------------
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
rr parse_backend(const char* text, ringrt_backend_t* out);
const char* backend_name(ringrt_backend_t b);
// First host of a Slurm hostlist expression ("gpu[03-05,9],cpu1" -> "gpu03").
std::string slurm_first_host(const std::string& nodelist);
// Reads a secret file: must be a regular file owned by us with no group/other permission bits.
rr load_secret_file(const std::string& path, std::string* secret);

// ---- crypto (OpenSSL libcrypto) ------------------------------------------------------------
void hmac_sha256(const std::string& key, const void* data, size_t len, uint8_t out[32]);
bool random_bytes(void* buf, size_t len);
bool equal_ct(const void* a, const void* b, size_t len);  // constant-time compare
std::string hex(const uint8_t* p, size_t n);

// ---- dtypes and reduction kernels ----------------------------------------------------------
size_t dtype_size(ringrt_dtype_t t);
bool dtype_valid(int t);
bool op_valid(int op);
// dst[i] = dst[i] op src[i]
void reduce_into(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op);
// dst[i] = (dst[i] op src[i]) / div   (the final step of an AVG; div > 1)
void reduce_into_div(void* dst, const void* src, size_t n, ringrt_dtype_t t, ringrt_op_t op, int div);
// dst[i] /= div
void divide(void* dst, size_t n, ringrt_dtype_t t, int div);
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);

// ---- wire frames ---------------------------------------------------------------------------
constexpr uint32_t kFrameMagic = 0x31545252u;  // "RRT1" little-endian
enum FrameType : uint8_t { kFrameData = 1, kFrameKeepalive = 2, kFrameAbort = 3 };
enum CollKind : uint8_t { kCollAllreduce = 1, kCollAllgatherReduce = 2, kCollBroadcast = 3,
                          kCollBarrier = 4, kCollAllreduceHalving = 5 };
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

// ---- sockets -------------------------------------------------------------------------------
struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept;
  ~Fd() { reset(); }
  void reset();
  int release() { int f = fd; fd = -1; return f; }
  bool ok() const { return fd >= 0; }
};
// Listen on addr:port (addr empty: any); port 0 picks one; *bound_port gets it.
rr tcp_listen(const std::string& addr, int port, Fd* out, int* bound_port);
// Connect with retries on refusal until deadline, with the congestion control chosen by
// choose_congestion() (before connecting: see there).
rr tcp_connect(const std::string& host, int port, int64_t deadline_ns, Fd* out, int peer_rank,
               const std::string& congestion);
void tune_socket(int fd);
// The congestion control of the ring's data connections. "system": the kernel's default,
// untouched. "auto": the same, unless it is BBR, which is replaced by the first of cubic and
// reno that the kernel lets this process choose (util.cpp says why). Any other name: that one, or
// an error naming what the kernel allows. Applied to a socket before it connects, or to a
// listener (accepted connections inherit it): a connection that started with BBR keeps pacing.
// congestion_of() tells what a socket has.
rr choose_congestion(int fd, const std::string& want);
std::string congestion_of(int fd);
void set_nonblocking(int fd, bool on);
// Blocking-with-deadline full send / receive on a nonblocking socket. code_on_fail is returned
// (with a detail naming peer_rank) on EOF, error or deadline.
rr send_all(int fd, const void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what);
rr recv_all(int fd, void* buf, size_t len, int64_t deadline_ns, int peer_rank, const char* what);
std::string local_ip_of(int fd);

// ---- rendezvous ----------------------------------------------------------------------------
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

// ---- the TCP ring --------------------------------------------------------------------------
class TcpRing {
 public:
  TcpRing() = default;
  ~TcpRing();
  // Connect the ring formed by members (global ranks, ascending; contains cfg.rank).
  rr connect(const Config& cfg, const Table& table, const std::vector<int>& members, int listen_fd,
             int64_t deadline_ns);
  int size() const { return static_cast<int>(members_.size()); }
  int index() const { return index_; }
  // In-place ring allreduce of count elements; div > 0: divide the result by div (AVG).
  rr allreduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq);
  rr broadcast(void* buf, size_t bytes, int root_index, uint32_t seq);
  rr barrier(uint32_t seq);
  // Best effort: tell both neighbours that `blamed` failed (they pass it on).
  void send_abort(rr code, int blamed, const std::string& why);
  // Send a keepalive to the next member if that stream is at a frame boundary and quiet for a
  // while.
  void keepalive_tick();
  void set_tick(std::function<void()> f) { tick_ = std::move(f); }
  int in_fd() const { return in_.fd; }
  int out_fd() const { return out_.fd; }
  int prev_rank() const { return prev_; }
  // the congestion control of the connections to the next and from the previous member
  const std::string& congestion() const { return congestion_; }
  int next_rank() const { return next_; }
  TcpAlgorithm algorithm = TcpAlgorithm::kAuto;
  size_t segment_bytes = 256 * 1024;     // pipelining unit; sets the framing, so equal on all members
  size_t small_bytes = 16 * 1024;        // at or below: allgather-then-reduce (n-1 hops)
  int spin_us = 0;                       // busy-poll before sleeping in poll()
  // Oversubscribed (more ranks than CPUs): spin with sched_yield(), so that a peer waiting for
  // a CPU runs at once, instead of sleeping in poll() and paying a wake-up on every step.
  bool yield_spin = false;
  int timeout_ms = 5000;

 private:
  // The two connections: to/from the previous member and to/from the next one. The ring sends
  // on kNext and receives on kPrev; halving/doubling uses both ways of both.
  enum Link : uint8_t { kPrev = 0, kNext = 1 };
  int fd_of(int link) const { return link == kNext ? out_.fd : in_.fd; }
  int peer_of(int link) const { return link == kNext ? next_ : prev_; }
  ssize_t send_pending_frame(int link);
  bool out_partial(int link) const {
    return out_hdr_sent_[link] < 32 || out_payload_sent_[link] < out_payload_len_[link];
  }
  void send_keepalive(int link);
  // action: 0 copy, 1 reduce, 2 reduce+div
  struct RecvItem { char* dst; uint32_t len; uint8_t action; uint8_t link; };
  struct SendItem { const char* src; uint32_t len; int32_t dep; uint8_t link; };
  rr run(uint8_t kind, ringrt_dtype_t t, ringrt_op_t op, int div, uint32_t seq);
  rr on_error(rr code);
  rr check_backward();
  rr allgather_reduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div,
                      uint32_t seq, uint8_t kind);
  void plan_ring_allreduce(char* base, size_t count, size_t esz, int div);
  void plan_halving_allreduce(char* base, size_t count, size_t esz, int div);

  std::vector<int> members_;
  int index_ = 0, rank_ = -1, prev_ = -1, next_ = -1;
  std::string congestion_;
  Fd in_, out_;  // the connection from the previous member and the one to the next
  std::vector<RecvItem> recvs_;
  std::vector<SendItem> sends_;
  // Which links the current collective keeps alive while it waits: one-way ones only the next
  // member (and watch it for abort notices coming back); halving/doubling both, also where all
  // it owes has gone: that partner may be a collective ahead, waiting for what we will owe it
  // next, and must not take our wait on a stalled third rank for a stall of ours. A keepalive
  // to a partner that has exited fails quietly (send_keepalive ignores the error).
  bool one_way_ = true;  // data flows prev -> us -> next only (all but halving/doubling)
  std::vector<char> staging_;
  std::vector<char> gather_;
  // persistent receive state per link (a header may be prefetched across operations)
  FrameHeader in_hdr_[2] = {};
  size_t in_got_[2] = {0, 0};
  // outgoing frame state per link
  FrameHeader out_hdr_[2] = {};
  size_t out_hdr_sent_[2] = {32, 32}, out_payload_sent_[2] = {0, 0}, out_payload_len_[2] = {0, 0};
  const char* out_payload_[2] = {nullptr, nullptr};
  int64_t last_out_ns_[2] = {0, 0};
  std::function<void()> tick_;
  uint8_t kind_ = 0;
  uint32_t seq_ = 0;
  ringrt_dtype_t dtype_ = RINGRT_FLOAT32;
  ringrt_op_t op_ = RINGRT_SUM;
  bool broken_ = false;
};

// ---- the shared-memory group (ranks of one node) -------------------------------------------
struct ShmSegment;
class ShmGroup {
 public:
  ShmGroup() = default;
  ~ShmGroup();
  // members: global ranks on this node, ascending; the first creates the segment.
  rr attach(const Config& cfg, const Table& table, const std::vector<int>& members,
            int64_t deadline_ns);
  int size() const { return static_cast<int>(members_.size()); }
  int index() const { return index_; }
  // In-place allreduce among the local ranks; when `hier` is set, local index 0 runs it across
  // nodes on each chunk through `leaders` (ignored on the other ranks). div > 0: divide the
  // final result by div.
  rr allreduce(void* buf, size_t count, ringrt_dtype_t t, ringrt_op_t op, int div,
               TcpRing* leaders, uint32_t* seq);
  // root_rank is a global rank; root_node_leader_index: its node leader's index in `leaders`.
  rr broadcast(void* buf, size_t bytes, int root_rank, TcpRing* leaders, int root_leader_index,
               uint32_t* seq);
  rr barrier(TcpRing* leaders, uint32_t* seq);
  void set_abort(rr code, int blamed, const std::string& why);
  void heartbeat();
  void set_tick(std::function<void()> f) { tick_ = std::move(f); }
  size_t chunk_bytes = 512 * 1024;       // pure-shm pipelining unit (<= slot)
  size_t slot_bytes = 4 * 1024 * 1024;   // per rank per buffer; hierarchical chunk
  int spin_us = 50;
  bool yield_spin = false;               // oversubscribed: yield instead of pause while spinning
  bool hier = false;                     // hierarchical: local index 0 runs `leaders` per chunk
  int timeout_ms = 5000;

 private:
  rr signal_phase();                      // bump own phase counter
  rr wait_all(uint64_t phase);            // every member reached phase
  rr wait_one(int idx, uint64_t phase);   // member idx reached phase
  rr wait_cond(int only_idx, uint64_t phase);
  rr check_abort();
  rr blame_laggard(int only_idx, uint64_t phase, int64_t now, bool final_check);
  char* slot(int idx, int buf);
  void wake();

  std::vector<int> members_;
  int index_ = 0, rank_ = -1;
  ShmSegment* seg_ = nullptr;
  size_t map_bytes_ = 0;
  std::string name_;
  uint64_t phase_ = 0;
  uint64_t chunk_counter_ = 0;
  int64_t last_tick_ns_ = 0, last_pidcheck_ns_ = 0, last_hb_ns_ = 0;
  uint64_t my_pidns_ = 0;
  std::function<void()> tick_;
};

}  // namespace ringrt

#endif  // RINGRT_INTERNAL_H
