/* SPDX-License-Identifier: MIT */
/*
 * The device side of arb-lsa.so (lsa_kernels.cu, lsa_flagfree.cu; C++17): NCCL device
 * communicator, scratch window (barrier inboxes, push staging, flag-free lines) and
 * the one-shot kernels. The NCCL device-API types stay inside the .cu files; lsa.c
 * sees an opaque handle.
 */
#ifndef ARB_LSA_KERNELS_H
#define ARB_LSA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most CTAs one call uses; one barrier slot and one call counter per CTA index. */
#define LSA_MAX_CTAS 64
/* Largest LSA team: peer pointers travel in the kernel arguments. */
#define LSA_MAX_RANKS 32

typedef enum lsa_variant {
    LSA_ONESHOT_PULL = 0,
    LSA_ONESHOT_PUSH = 1,
    LSA_ONESHOT_FLAGFREE = 2,
} lsa_variant_t;
typedef enum lsa_barrier { LSA_BARRIER_BOUNDED = 0, LSA_BARRIER_NCCL = 1 } lsa_barrier_t;

/* What one instance (one variant's init) runs; fixed for its lifetime. */
typedef struct lsa_config {
    lsa_variant_t variant;
    lsa_barrier_t barrier; /* pull, push */
    int ctas;              /* pull: most CTAs per call; push, flag-free: CTAs of every call */
    int threads;           /* threads per CTA (pull and push: always 512) */
    uint64_t timeout_ns;   /* bounded spin limit */
    int hang_rank;         /* flag-free test hook: this rank sends no lines; -1: none */
    unsigned max_tokens, hidden; /* largest fused call (info); 0: no fused area */
    /* Resolved by lsa_dev_create (flag-free with a fused area): the fused grid (a
     * multiple of fused_pmax CTAs, every launch runs all of them) and the cluster sizes
     * (bit log2(P)) that every rank can keep resident; 0 when the fused op is off. */
    int fused_ctas, fused_pmax;
    unsigned fused_pmask;
    int fused_row_blocks;    /* forced cluster size of fused launches; 0: auto per call */
    int fused_pdl;         /* fused launches use programmatic dependent launch */
} lsa_config_t;

typedef struct lsa_dev lsa_dev_t;

/* NCCL_VERSION_CODE this file was compiled against (the device API's layouts). */
int lsa_header_version(void);

/* Collective. Creates the device communicator (lsaBarrierCount = cfg->ctas), a
 * symmetric scratch window holding what cfg->variant needs (barrier inboxes; push:
 * 2 x lsa_size x max_bytes staging; flag-free: 2 x lsa_size line sets of 2 x
 * min(max_bytes, LSA_FF_CHUNK_BYTES), and with cfg->max_tokens x cfg->hidden > 0 the
 * fused op's 2 x lsa_size line sets of max_tokens x ceil(hidden / 4) 16-byte lines,
 * at most 8 MiB each), this rank's epoch and error words. Clamps
 * cfg->ctas to the smallest SM count over the ranks (every CTA that waits for a peer
 * CTA must be resident). Declines when the LSA team does not hold every rank. */
arb_status_t lsa_dev_create(ncclComm_t comm, const arb_host_ops_t *ops, int nranks, size_t max_bytes,
                            lsa_config_t *cfg, lsa_dev_t **out, char *why, size_t why_len);
void lsa_dev_destroy(ncclComm_t comm, lsa_dev_t *d);

/* Local (not collective): the address of byte 0 of window `win` on every LSA rank,
 * as ncclGetLsaPointer gives it, resolved once by a small kernel and synchronized.
 * out holds lsa_size entries (lsa_dev_lsa_size). */
arb_status_t lsa_dev_resolve(const lsa_dev_t *d, ncclWindow_t win, char **out, char *why, size_t why_len);
int lsa_dev_lsa_size(const lsa_dev_t *d);

/* Enqueues one all-reduce of `count` elements on stream. For pull, send_peer[r] is
 * the address of send on LSA rank r (send lies at the same offset of the same window
 * on every rank); push and flag-free read send locally (send_peer may be NULL). Never
 * synchronizes. */
arb_status_t lsa_dev_allreduce(lsa_dev_t *d, const void *send, const char *const *send_peer, void *recv,
                               size_t count, arb_dtype_t dtype, void *stream, char *why, size_t why_len);

/* Enqueues the fused all-reduce + residual add + RMSNorm (arb_rmsnorm_args_t, already
 * validated by lsa.c) on stream, split into launches of whole rows when the rows do
 * not fit one launch's registers or the fused area. ARB_DECLINE (reason in why) for
 * variants other than oneshot-flagfree, an instance without a fused area, or a hidden
 * size too large for the grid; never synchronizes. */
arb_status_t lsa_dev_allreduce_rmsnorm(lsa_dev_t *d, const arb_rmsnorm_args_t *args, void *stream, char *why,
                                       size_t why_len);

/* After the stream was synchronized: a spin that timed out since the last call
 * (ARB_ERR_TIMEOUT: which CTA waited for which peer, and what for), then the instance
 * refuses further calls. */
arb_status_t lsa_dev_query_error(lsa_dev_t *d, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
