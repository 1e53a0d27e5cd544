// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * ringrt.h -- libringrt, the ring-allreduce runtime of ringsched.
 *
 * A job's workers (one process per GPU or per CPU worker) form a ring and run collectives over it:
 * allreduce (sum, avg, min, max), broadcast, barrier, and the structured-partial-backprop
 * allreduce in which each gradient bucket is averaged over only the workers that computed it.
 *
 * The world is process-global: ringrt_init() joins it, ringrt_finalize() leaves it. To re-form
 * the ring at a new size (after a resize), call ringrt_finalize() and then ringrt_init() again
 * with the new environment. Every function returns a ringrt_result_t; after a failed collective
 * the world is broken and every further call returns the same error until ringrt_finalize().
 * The calls are not thread-safe: one thread of the process drives the collectives.
 *
 * See libringrt(3) for the environment variables, the backends and the error codes.
 */
#ifndef RINGRT_H
#define RINGRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RINGRT_VERSION_MAJOR 1
#define RINGRT_VERSION_MINOR 1  /* 1.1: ringrt_allgather, ringrt_abort */

typedef enum ringrt_result {
  RINGRT_OK = 0,
  RINGRT_ERR_ARG = 1,          /* invalid argument (NULL buffer, unknown dtype/op, bad root) */
  RINGRT_ERR_STATE = 2,        /* not initialised, or initialised twice */
  RINGRT_ERR_CONFIG = 3,       /* missing or malformed configuration / environment */
  RINGRT_ERR_AUTH = 4,         /* secret missing, secret file not 0600, or peer refused */
  RINGRT_ERR_SYSTEM = 5,       /* a system call failed (socket, shm_open, mmap ...) */
  RINGRT_ERR_TIMEOUT = 6,      /* rendezvous did not complete in time */
  RINGRT_ERR_PEER = 7,         /* a peer died, stalled or aborted; the detail names the rank */
  RINGRT_ERR_PROTOCOL = 8,     /* malformed, mismatched or truncated frame */
  RINGRT_ERR_UNSUPPORTED = 9,  /* backend not built (e.g. NCCL) or operation not supported */
  RINGRT_ERR_NOMEM = 10        /* out of memory */
} ringrt_result_t;

typedef enum ringrt_dtype {
  RINGRT_FLOAT32 = 0,
  RINGRT_FLOAT64 = 1,
  RINGRT_FLOAT16 = 2,   /* IEEE binary16; reduced in float32, rounded to nearest even */
  RINGRT_BFLOAT16 = 3,  /* bfloat16; reduced in float32, rounded to nearest even */
  RINGRT_INT32 = 4,
  RINGRT_INT64 = 5
} ringrt_dtype_t;

typedef enum ringrt_op {
  RINGRT_SUM = 0,
  RINGRT_AVG = 1,  /* sum / world size; integer types divide with truncation toward zero */
  RINGRT_MIN = 2,
  RINGRT_MAX = 3
} ringrt_op_t;

typedef enum ringrt_backend {
  RINGRT_BACKEND_AUTO = 0, /* shm on one node, tcp across nodes, hierarchical when mixed */
  RINGRT_BACKEND_TCP = 1,  /* TCP ring between all ranks */
  RINGRT_BACKEND_SHM = 2,  /* shared memory; all ranks must be on one node */
  RINGRT_BACKEND_NCCL = 3, /* NCCL for device buffers (host buffers use the auto backend) */
  RINGRT_BACKEND_HIER = 4  /* shm inside each node + TCP ring between node leaders */
} ringrt_backend_t;

/* Explicit configuration for ringrt_init_config(). Zero-initialise, then set the fields.
 * String fields are copied; NULL/0 fields take the default or the environment's value as
 * described for each. */
typedef struct ringrt_config {
  int rank;                 /* 0 .. world_size-1 */
  int world_size;           /* >= 1 */
  const char* master_addr;  /* host or IP of rank 0; NULL: 127.0.0.1 */
  int master_port;          /* TCP port rank 0 listens on (1..65535) */
  const char* secret;       /* per-job secret bytes (NUL-terminated) ... */
  const char* secret_file;  /* ... or a file holding it (must be mode 0600); one of the two */
  int timeout_ms;           /* peer deadline; <= 0: 5000 */
  int init_timeout_ms;      /* rendezvous deadline; <= 0: max(60000, timeout_ms) */
  ringrt_backend_t backend; /* RINGRT_BACKEND_AUTO by default */
  const char* hostname;     /* node identity for topology; NULL: gethostname() */
} ringrt_config_t;

/* Join the world described by the environment (see libringrt(3)): RINGRT_RANK,
 * RINGRT_WORLD_SIZE, RINGRT_MASTER_ADDR, RINGRT_MASTER_PORT, RINGRT_SECRET_FILE or RINGRT_SECRET,
 * RINGRT_TIMEOUT_MS, RINGRT_INIT_TIMEOUT_MS, RINGRT_BACKEND, RINGRT_HOSTNAME; with Slurm's
 * SLURM_PROCID, SLURM_NTASKS, SLURM_JOB_NODELIST and SLURM_JOB_ID standing in for the first four
 * where those are absent. Collective: every rank of the world must call it. */
ringrt_result_t ringrt_init(void);

/* Join the world described by cfg (environment not read). Collective. */
ringrt_result_t ringrt_init_config(const ringrt_config_t* cfg);

/* Leave the world; releases sockets, shared memory and buffers. Always succeeds once
 * initialised (RINGRT_ERR_STATE otherwise). Not a barrier. */
ringrt_result_t ringrt_finalize(void);

/* Rank and world size of this process; local (same-node) rank and size. */
ringrt_result_t ringrt_rank(int* rank);
ringrt_result_t ringrt_world_size(int* size);
ringrt_result_t ringrt_local_rank(int* local_rank);
ringrt_result_t ringrt_local_size(int* local_size);
/* The backend the world runs on host buffers (TCP, SHM or HIER; AUTO is resolved at init). */
ringrt_result_t ringrt_backend(ringrt_backend_t* backend);

/* recvbuf[i] = op over all ranks of sendbuf[i], for i < count. sendbuf == recvbuf or
 * sendbuf == NULL means in place. Every rank must pass the same count, dtype and op.
 * The result is bitwise identical on every rank. Collective. */
ringrt_result_t ringrt_allreduce(const void* sendbuf, void* recvbuf, size_t count,
                                 ringrt_dtype_t dtype, ringrt_op_t op);

/* Copy root's buf to every rank's buf. Collective. */
ringrt_result_t ringrt_broadcast(void* buf, size_t count, ringrt_dtype_t dtype, int root);

/* Return once every rank has entered. Collective. */
ringrt_result_t ringrt_barrier(void);

/* recvbuf (world_size * count elements) receives every rank's count elements of sendbuf, rank r's
 * at recvbuf + r * count. sendbuf == NULL means in place: this rank's part is already at its
 * place in recvbuf. Every rank passes the same count and dtype. Collective. (Since 1.1.) */
ringrt_result_t ringrt_allgather(const void* sendbuf, void* recvbuf, size_t count, ringrt_dtype_t dtype);

/* Break the world on purpose, from the thread that drives the collectives (e.g. after a failure
 * of its own between collectives): every other rank's current or next collective returns
 * RINGRT_ERR_PEER naming this rank, with reason (may be NULL) in the detail, instead of waiting
 * out its timeout; this rank's further calls return RINGRT_ERR_PEER until ringrt_finalize().
 * Not a collective. (Since 1.1.) */
ringrt_result_t ringrt_abort(const char* reason);

/* Structured partial backprop (SPB). One gradient bucket. */
typedef struct ringrt_bucket {
  void* buf;          /* count elements of the call's dtype, in and out */
  size_t count;
  const int* ranks;   /* the ranks that computed this bucket (no duplicates) ... */
  int nranks;         /* ... how many; ranks == NULL && nranks == 0 means every rank */
} ringrt_bucket_t;

/* Average each bucket over only the ranks that computed it: a rank not listed for a bucket
 * contributes zeros (its buffer content is ignored) and the divisor is the bucket's number of
 * contributors. A bucket with no contributor comes back as zeros. Every rank passes the same
 * bucket counts and contributor lists. Collective. */
ringrt_result_t ringrt_allreduce_spb(ringrt_bucket_t* buckets, size_t nbuckets,
                                     ringrt_dtype_t dtype);

/* The same with a depth pattern: buckets are given in backprop order (bucket 0 nearest the
 * loss) and rank r computed buckets 0 .. depth[r]-1; depth has world_size entries.
 * The ranks/nranks fields of the buckets are ignored. Collective. */
ringrt_result_t ringrt_allreduce_spb_depth(ringrt_bucket_t* buckets, size_t nbuckets,
                                           ringrt_dtype_t dtype, const int* depth);

/* Static description of a result code ("RINGRT_ERR_PEER: a peer died or stalled"). */
const char* ringrt_error_string(ringrt_result_t result);

/* Detail of the last error in the calling thread, e.g. "rank 2 stalled: no data for 5000 ms
 * (op 17, allreduce)"; "" when there was none. Valid until the next ringrt call. */
const char* ringrt_error_detail(void);

/* The rank blamed by the last RINGRT_ERR_PEER / RINGRT_ERR_PROTOCOL (-1 when unknown). */
ringrt_result_t ringrt_failed_rank(int* rank);

/* Bytes of one element of dtype (0 for an unknown dtype). */
size_t ringrt_dtype_size(ringrt_dtype_t dtype);

#ifdef __cplusplus
}
#endif

#endif /* RINGRT_H */
