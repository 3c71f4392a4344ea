/* SPDX-License-Identifier: MIT */
/*
 * libarbench: the all-reduce that `arbench sweep` + `arbench profile` chose, callable from
 * a server. Link with `pkg-config --cflags --libs arbench`.
 *
 * A communicator is created from a tuning profile (the CSV or JSON of `arbench profile`,
 * docs/profile.md) over MPI_COMM_WORLD (MPI is initialized here when the caller has not),
 * or, since 1.1, without MPI: from the caller's allgather (arbench_comm_create_allgather),
 * an NCCL unique id (arbench_comm_create_nccl_id) or an existing NCCL communicator
 * (arbench_comm_create_nccl). Without MPI the implementations' collective setup runs over
 * that allgather (over NCCL: a small device buffer, ncclAllGather, a stream sync);
 * implementations that call MPI themselves (mpi-host) decline there, and host memory is
 * served by ops-host (every rank's buffer gathered, summed in rank order).
 * At creation it opens, on every rank, each implementation the profile can choose for this
 * job (fabric, ranks, mode, sizes up to max_bytes) and the fallback: NCCL for device
 * memory, the MPI host backend for host memory. Each call then picks its implementation
 * by size with the engine's per-call-site rule (fabric and ranks equal, bf16, the mode of
 * the call, the size in the entry's range); a size the profile does not cover, a profile
 * of other ranks or fabric, an fp32 call, an entry that names a reference floor (which
 * moves no data) or an implementation that declined to open here: the fallback. The choice
 * for each (op, size, mode) is written once to stderr on rank 0, and arbench_explain
 * returns it.
 *
 * Calls are not collective on the host: they enqueue on the caller's stream (a
 * cudaStream_t; ignored for host memory) and every rank must make the same calls in the
 * same order, as with NCCL. With config.graph set they may be captured in CUDA graphs: the
 * per-size choice is made on the host at capture time. Buffers are the caller's: each call
 * stages through buffers the communicator allocated once per implementation at creation
 * (a device-to-device copy on the stream; a plain copy on the host), unless the buffer
 * was registered (arbench_register, since 1.1) and the chosen implementation reduces in
 * place (NCCL, mpi-host, ops-host): then the buffer is used as it is, with no copy.
 *
 * The staging buffers are shared by a communicator's calls: order them (one stream, or
 * streams ordered by events), as a server orders its TP all-reduces anyway.
 *
 * Every function returns an arbench_status_t and, unless ARBENCH_OK, writes one line into
 * the caller's why buffer (may be NULL). Not thread safe per communicator.
 *
 * Versioning: ARBENCH_API_VERSION is major * 10000 + minor * 100 + patch. A minor version
 * only adds functions or appends fields to arbench_config_t (sized by struct_size); a new
 * major version may change them. arbench_api_version() is the version of the library
 * loaded at run time: a caller of a 1.1 function checks it is at least 10100.
 *   1.0.0  create over MPI, allreduce, allreduce_rmsnorm, explain, destroy
 *   1.1.0  create without MPI (allgather callback, NCCL unique id, NCCL communicator),
 *          arbench_nccl_unique_id, arbench_register / arbench_deregister
 */
#ifndef ARBENCH_ARBENCH_H
#define ARBENCH_ARBENCH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARBENCH_API_VERSION_MAJOR 1
#define ARBENCH_API_VERSION_MINOR 1
#define ARBENCH_API_VERSION_PATCH 0
#define ARBENCH_API_VERSION (ARBENCH_API_VERSION_MAJOR * 10000 + ARBENCH_API_VERSION_MINOR * 100 + ARBENCH_API_VERSION_PATCH)

#if defined(__GNUC__)
#define ARBENCH_API __attribute__((visibility("default")))
#else
#define ARBENCH_API
#endif

/* The same values as the plugin ABI's arb_status_t. */
typedef enum arbench_status {
    ARBENCH_OK = 0,
    ARBENCH_ERR_DECLINE = 1, /* nothing can serve this job here (not even the fallback) */
    ARBENCH_ERR_INVALID = 2, /* bad arguments: a size over the registered maximum, a bad profile */
    ARBENCH_ERR_SYSTEM = 3,  /* a CUDA, NCCL, MPI or OS call failed */
    ARBENCH_ERR_TIMEOUT = 4, /* a device-side spin gave up */
} arbench_status_t;

typedef enum arbench_dtype {
    ARBENCH_BF16 = 0,
    ARBENCH_FP32 = 1, /* always served by the fallback: profiles are measured in bf16 */
} arbench_dtype_t;

typedef enum arbench_op {
    ARBENCH_OP_ALLREDUCE = 0,
    ARBENCH_OP_ALLREDUCE_RMSNORM = 1,
} arbench_op_t;

typedef struct arbench_config {
    size_t struct_size;   /* sizeof(arbench_config_t), set by arbench_config_init */
    const char *profile;  /* profile path (CSV, or JSON when it starts with '{'); NULL: fallback everywhere */
    const char *fabric;   /* the profile's fabric label for this job; NULL: detected (docs/topology.md)
                           * over MPI; without MPI it must be given when a profile is */
    int cuda_device;      /* the caller's current CUDA device; -1: host memory, the MPI host backend */
    int graph;            /* 1: calls may be captured in CUDA graphs (implementations must be graph safe) */
    size_t max_bytes;     /* largest arbench_allreduce per rank, bytes (the registered size) */
    unsigned max_tokens;  /* largest arbench_allreduce_rmsnorm, rows; 0: no fused calls */
    unsigned hidden;      /* row length of fused calls, elements */
    const char *fallback; /* implementation where the profile has nothing; NULL: "nccl" on device, "mpi-host" on
                           * host ("ops-host" when created without MPI) */
} arbench_config_t;

typedef struct arbench_comm arbench_comm_t;

/* The version of the loaded library (ARBENCH_API_VERSION of its build). */
ARBENCH_API int arbench_api_version(void);

/* Defaults: no profile, detected fabric, host memory, eager, 64 MiB, no fused calls. */
ARBENCH_API void arbench_config_init(arbench_config_t *cfg);

/* Collective over MPI_COMM_WORLD. Reads the profile (a malformed one is
 * ARBENCH_ERR_INVALID naming the file), opens the implementations and the fallback, and
 * allocates their staging buffers. *out is NULL unless ARBENCH_OK. */
ARBENCH_API arbench_status_t arbench_comm_create(const arbench_config_t *cfg, arbench_comm_t **out, char *why,
                                                 size_t why_len);

/* ---- 1.1: creation without MPI. Each is collective over its ranks; cfg as above. ---- */

/* The caller's host allgather: recv holds size * bytes, rank r's block at r * bytes.
 * Returns 0 on success. Called from arbench functions only (creation, destroy, and host
 * memory calls, which ops-host serves with it), on the caller's thread; ctx must outlive
 * the communicator. */
typedef int (*arbench_allgather_fn)(void *ctx, const void *send, void *recv, size_t bytes);

/* A communicator of `size` ranks whose host collectives are the caller's allgather (e.g.
 * over a server's gloo group). */
ARBENCH_API arbench_status_t arbench_comm_create_allgather(const arbench_config_t *cfg, int rank, int size,
                                                           arbench_allgather_fn allgather, void *ctx,
                                                           arbench_comm_t **out, char *why, size_t why_len);

#define ARBENCH_NCCL_UNIQUE_ID_BYTES 128 /* sizeof(ncclUniqueId) */

/* ncclGetUniqueId into id (id_len >= ARBENCH_NCCL_UNIQUE_ID_BYTES), on one rank; the
 * caller sends the bytes to the others. ARBENCH_ERR_DECLINE in a build without NCCL. */
ARBENCH_API arbench_status_t arbench_nccl_unique_id(void *id, size_t id_len, char *why, size_t why_len);

/* A communicator over an NCCL communicator of its own (ncclCommInitRank with the id, on
 * cfg->cuda_device, which must be >= 0), freed by destroy. */
ARBENCH_API arbench_status_t arbench_comm_create_nccl_id(const arbench_config_t *cfg, int rank, int size,
                                                         const void *id, size_t id_len, arbench_comm_t **out,
                                                         char *why, size_t why_len);

/* A communicator over the caller's NCCL communicator (an ncclComm_t, on cfg->cuda_device):
 * its rank and size; used for the host collectives of creation and destroy only, on a
 * stream of the library's; not freed by destroy, and must outlive the communicator. */
ARBENCH_API arbench_status_t arbench_comm_create_nccl(const arbench_config_t *cfg, void *nccl_comm,
                                                      arbench_comm_t **out, char *why, size_t why_len);

ARBENCH_API int arbench_comm_rank(const arbench_comm_t *comm);
ARBENCH_API int arbench_comm_size(const arbench_comm_t *comm);

/* In place: buf = sum over ranks of buf, count elements of dtype. count * element size
 * over config.max_bytes is ARBENCH_ERR_INVALID. */
ARBENCH_API arbench_status_t arbench_allreduce(arbench_comm_t *comm, void *buf, size_t count, arbench_dtype_t dtype,
                                               void *stream, char *why, size_t why_len);

/* Fused all-reduce + residual add + RMSNorm, all bf16 [tokens x hidden] (weight [hidden]):
 *   residual += sum over ranks of x;  out = residual / sqrt(mean(residual^2) + eps) * weight
 * hidden must equal config.hidden and tokens be at most config.max_tokens. x is not changed. */
ARBENCH_API arbench_status_t arbench_allreduce_rmsnorm(arbench_comm_t *comm, const void *x, void *residual,
                                                       const void *weight, void *out, unsigned tokens,
                                                       unsigned hidden, float eps, void *stream, char *why,
                                                       size_t why_len);

/* ---- 1.1: registered buffers. Not collective. ---- */

/* buf (device memory on cfg.cuda_device, or host memory for a host communicator) of
 * `bytes` (at most config.max_bytes) will be passed to arbench_allreduce, at its start or
 * inside it, until deregistered: a call whose buffer lies in it runs in place without the
 * staging copy when the chosen implementation reduces in place (ARB_CAP_IN_PLACE; the
 * others keep the staging path), and a call that starts inside it but runs past its end
 * is ARBENCH_ERR_INVALID (never a partial or wrong sum). Overlapping registrations are
 * ARBENCH_ERR_INVALID. The fused op stages x only for implementations with their own
 * buffers, with or without registration. */
ARBENCH_API arbench_status_t arbench_register(arbench_comm_t *comm, void *buf, size_t bytes, char *why,
                                              size_t why_len);
/* buf as given to arbench_register; ARBENCH_ERR_INVALID when it is not registered. */
ARBENCH_API arbench_status_t arbench_deregister(arbench_comm_t *comm, void *buf, char *why, size_t why_len);

/* What serves a call of `bytes` per rank (fused: tokens x hidden x 2) in eager (graph 0)
 * or graph (graph 1) mode, and why: one line, e.g. "allreduce 4096 B eager: mpi-host:algo=
 * reduce-bcast from prof.csv (...)". Returns the implementation name (valid until destroy),
 * or NULL with the reason in `note` for a size the communicator cannot serve. */
ARBENCH_API const char *arbench_explain(arbench_comm_t *comm, arbench_op_t op, size_t bytes, int graph, char *note,
                                        size_t note_len);

/* Collective. Frees everything the communicator opened. MPI, when arbench_comm_create
 * initialized it, is finalized at process exit (atexit), so a process may create again. */
ARBENCH_API void arbench_comm_destroy(arbench_comm_t *comm);

#ifdef __cplusplus
}
#endif

#endif
