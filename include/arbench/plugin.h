/* SPDX-License-Identifier: MIT */
/*
 * arbench collective plugin ABI.
 *
 * A plugin is a shared module that exports exactly one symbol, ARB_PLUGIN_SYMBOL,
 * a const arb_plugin_t filled with designated initializers. Everything else in the
 * module is hidden (-fvisibility=hidden). The harness owns sweeping, timing,
 * checking and reporting; a plugin only moves and reduces data.
 *
 * Lifecycle, per variant (a parameter string, see `variants`):
 *   init -> [mem_alloc]* -> (allreduce | allreduce_rmsnorm)* -> query_error -> [mem_free]* -> finalize
 * Every rank calls every callback in the same order with the same arguments
 * (except the buffer pointers), so a plugin may use collective host operations
 * (arb_host_ops_t) inside init, mem_alloc, mem_free and finalize.
 *
 * The ABI version is in the symbol name and in the struct: the loader refuses a
 * module whose abi_version differs from ARB_PLUGIN_ABI_VERSION, and names a module
 * built for version 1 (which exports arb_plugin_v1) as such.
 *
 * Version 2 (from version 1): allreduce and allreduce_rmsnorm take a reason buffer
 * (why, why_len) that a call which returns anything but ARB_OK fills with one line.
 * Additions within version 2 (no layout change, a module built before them loads and
 * behaves as before): ARB_CAP_IN_PLACE; info->mpi_comm may be NULL.
 */
#ifndef ARBENCH_PLUGIN_H
#define ARBENCH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_PLUGIN_ABI_VERSION 2u
#define ARB_PLUGIN_SYMBOL "arb_plugin_v2"
/* The symbol of the previous ABI, which the loader recognises only to refuse it by name. */
#define ARB_PLUGIN_SYMBOL_V1 "arb_plugin_v1"

#if defined(__GNUC__)
#define ARB_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define ARB_PLUGIN_EXPORT
#endif

/* Ordered by severity: where ranks must agree on the outcome of a collective step,
 * the outcome is the maximum over ranks (ARB_OK < ARB_DECLINE < ... < ARB_ERR_TIMEOUT),
 * so a decline on one rank declines everywhere and an error anywhere is an error. */
typedef enum arb_status {
    ARB_OK = 0,
    ARB_DECLINE = 1,      /* cannot run here; `why` says why. Not a failure: reported as skip. */
    ARB_ERR_INVALID = 2,  /* bad parameters or arguments */
    ARB_ERR_SYSTEM = 3,   /* a CUDA, NCCL, MPI or OS call failed */
    ARB_ERR_TIMEOUT = 4,  /* a spin-wait gave up (see query_error) */
} arb_status_t;

typedef enum arb_dtype {
    ARB_DTYPE_BF16 = 0, /* our kernels accumulate in fp32 and round once; NCCL rounds at each
                         * step. The harness's check inputs are exact either way. */
    ARB_DTYPE_FP32 = 1,
} arb_dtype_t;

enum arb_cap {
    ARB_CAP_HOST_MEMORY = 1u << 0,   /* buffers are host memory, `stream` is ignored */
    ARB_CAP_DEVICE_MEMORY = 1u << 1, /* buffers are CUDA device memory on info->cuda_device */
    ARB_CAP_GRAPH_SAFE = 1u << 2,    /* allreduce may be captured in a CUDA graph and replayed */
    ARB_CAP_NEEDS_P2P = 1u << 3,     /* needs CUDA peer access between local GPUs */
    ARB_CAP_SINGLE_NODE = 1u << 4,   /* declines when ranks span several nodes */
    ARB_CAP_BF16 = 1u << 5,
    ARB_CAP_FP32 = 1u << 6,
    ARB_CAP_REFERENCE = 1u << 7,     /* a floor (noop, ping): moves no payload, results not checked */
    ARB_CAP_NEEDS_ALLOC = 1u << 8,   /* send/recv buffers must come from mem_alloc */
    ARB_CAP_BASELINE = 1u << 9,      /* what the others are measured against (NCCL): ratios, profiles */
    ARB_CAP_IN_PLACE = 1u << 10,     /* allreduce also accepts send == recv (in place; still no partial overlap) */
};

/* Collective host operations over all ranks, provided by the harness: MPI underneath, or
 * (libarbench created without MPI) the caller's allgather or NCCL; bcast and barrier are
 * then built from allgather. */
typedef struct arb_host_ops {
    void *ctx;
    /* recv holds nranks * bytes, rank r's block at r * bytes. Returns 0 on success. */
    int (*allgather)(void *ctx, const void *send, void *recv, size_t bytes);
    /* root's bytes copied to every rank. Returns 0 on success. */
    int (*bcast)(void *ctx, void *buf, size_t bytes, int root);
    int (*barrier)(void *ctx);
    /* A diagnostic line on stderr, prefixed with the rank and plugin name. */
    void (*log)(void *ctx, const char *msg);
} arb_host_ops_t;

typedef struct arb_comm_info {
    int rank, nranks;             /* in the job */
    int local_rank, local_nranks; /* on this node (MPI_COMM_TYPE_SHARED) */
    int node, nnodes;             /* this rank's node index, number of nodes */
    int cuda_device;              /* the device the harness made current, -1 for host-only runs */
    size_t max_bytes;             /* largest allreduce payload per rank in this run, bytes */
    unsigned max_tokens, hidden;  /* largest fused call (allreduce_rmsnorm) in this run */
    void *mpi_comm;               /* MPI_Comm * of all ranks; for host plugins that call MPI themselves.
                                   * NULL when the job was bootstrapped without MPI: such a plugin declines. */
} arb_comm_info_t;

/*
 * Fused all-reduce + residual add + RMSNorm, all bf16 in memory, fp32 arithmetic:
 *   s        = sum over ranks of x                        [tokens x hidden]
 *   residual = residual + s                               (in place, rounded to bf16)
 *   out[t,:] = residual[t,:] / sqrt(mean(residual[t,:]^2) + eps) * weight
 * The mean uses the bf16-rounded residual. Every rank's residual and out are identical.
 */
typedef struct arb_rmsnorm_args {
    const void *x;      /* this rank's partial sums, bf16 [tokens x hidden] */
    void *residual;     /* bf16 [tokens x hidden], read and written */
    const void *weight; /* bf16 [hidden] */
    void *out;          /* bf16 [tokens x hidden] */
    unsigned tokens, hidden;
    float eps;
} arb_rmsnorm_args_t;

typedef struct arb_plugin {
    uint32_t abi_version; /* ARB_PLUGIN_ABI_VERSION */
    const char *name;     /* equals the module's name: arb-<name>.so */
    const char *description;
    uint32_t caps;        /* enum arb_cap */
    /* NULL-terminated parameter strings that a plain `--impl NAME` runs, one
     * init/finalize each (e.g. "algo=Ring,proto=LL"). NULL: one run with "". */
    const char *const *variants;

    /* Set up for one variant. On ARB_DECLINE or an error, write a one-line reason
     * into why and leave *state untouched; the harness calls nothing else. */
    arb_status_t (*init)(const arb_comm_info_t *info, const arb_host_ops_t *ops,
                         const char *params, void **state, char *why, size_t why_len);

    /* Optional. Collective: buffers for send/recv (and the fused arguments). Required
     * when caps has ARB_CAP_NEEDS_ALLOC. NULL return is an allocation failure. */
    void *(*mem_alloc)(void *state, size_t bytes);
    void (*mem_free)(void *state, void *ptr);

    /* recv[i] = sum over ranks of send[i], for i < count elements (not bytes). send and
     * recv do not overlap (or, with ARB_CAP_IN_PLACE only, are the same pointer), are 16-byte aligned and lie in buffers from mem_alloc (or
     * the harness's own cudaMalloc/malloc). Enqueue on stream (a cudaStream_t), do not
     * synchronize it; host plugins complete before returning. Must give bitwise
     * identical results on every rank. */
    arb_status_t (*allreduce)(void *state, const void *send, void *recv, size_t count,
                              arb_dtype_t dtype, void *stream, char *why, size_t why_len);

    /* Optional: the fused operation above. NULL means the harness composes it
     * (allreduce, then its own residual + RMSNorm kernel).
     * Both call callbacks may return ARB_DECLINE for one call (a shape or variant the
     * plugin does not handle): the caller records that call as declined with the line
     * written into why (why_len >= 1 always; write nothing on ARB_OK). */
    arb_status_t (*allreduce_rmsnorm)(void *state, const arb_rmsnorm_args_t *args, void *stream,
                                      char *why, size_t why_len);

    /* Optional. Called after the stream was synchronized: reports device-side
     * failures (a spin-wait timeout) since the last call, and clears them. */
    arb_status_t (*query_error)(void *state, char *why, size_t why_len);

    /* Optional. The resolved parameters recorded in the results' `params` column
     * (e.g. "algo=Ring,proto=LL,channels=2"); defaults to the params string. */
    const char *(*describe)(void *state);

    void (*finalize)(void *state);
} arb_plugin_t;

#ifdef __cplusplus
}
#endif

#endif
