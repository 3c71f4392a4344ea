// SPDX-License-Identifier: MIT
// Device-side pieces shared by lsa_kernels.cu and lsa_flagfree.cu: the kernel
// arguments, the rank-local word layout (epochs, call counters, error record), the
// timer, and 16-byte vector helpers with fp32 accumulation.
#ifndef ARB_LSA_DEVICE_CUH
#define ARB_LSA_DEVICE_CUH

#include <stdint.h>

#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
/* NCCL's device headers trip -Wunused-parameter in host code; they are not ours. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include "arb_device.cuh"
#include "arbench/status.h"
#include "arb_ff_fused.cuh"
#include "lsa_kernels.h"

/* Rank-local device words (uint32), never seen by peers:
 *   [W_BAR_EPOCH + b]  bounded-barrier epoch of CTA b (one per barrier passed)
 *   [W_CALLS + b]      calls CTA b completed (push staging parity, flag-free epoch)
 *   [W_FUSED + b]      fused launches CTA b completed (lsa_fused.cu: its own epochs
 *                      and line area, so all-reduce and fused calls may interleave)
 *   W_ERR_*            first failure: flag (also "abort": later kernels return at
 *                      once so that the peers time out too instead of hanging),
 *                      CTA, peer, what it waited for, the epoch it waited for. */
enum {
    W_BAR_EPOCH = 0,
    W_CALLS = LSA_MAX_CTAS,
    W_FUSED = 2 * LSA_MAX_CTAS,
    W_ERR_FLAG = 3 * LSA_MAX_CTAS,
    W_ERR_CTA,
    W_ERR_PEER,
    W_ERR_WHAT,
    W_ERR_EPOCH,
    W_COUNT
};
/* W_ERR_WHAT values: barrier 0 or 1 of a call, flag-free lines, fused lines. */
enum { LSA_WAIT_BARRIER0 = 0, LSA_WAIT_BARRIER1 = 1, LSA_WAIT_LINES = 2, LSA_WAIT_FUSED_LINES = 3 };

/* Largest payload one flag-free launch reduces (bytes); larger calls are split into
 * launches of this size, each a complete all-reduce of its slice. */
#define LSA_FF_CHUNK_BYTES ((size_t)4 << 20)

struct lsa_kargs {
    ncclDevComm dev;                      /* only barrier=nccl reads it */
    char *scratch_peer[LSA_MAX_RANKS];    /* scratch window byte 0 on each LSA rank */
    const char *send_peer[LSA_MAX_RANKS]; /* pull: send on each LSA rank */
    const void *send;
    void *recv;
    size_t count;                         /* elements */
    size_t staging_off, slot_bytes;       /* push: slot s, source r at staging_off + (s*n + r)*slot_bytes */
    size_t lines_off, lines_bytes;        /* flag-free: set s, source r at lines_off + (s*n + r)*lines_bytes */
    uint32_t *words;
    unsigned long long timeout_ns;
    int lsa_rank, lsa_size;
    int hang;                             /* flag-free test hook: send no lines */
};

/* The error words W_ERR_FLAG .. W_ERR_EPOCH are the common spin error record
 * (arb_spin.h: failed, cta, peer, what, epoch, in that order). */
static_assert(W_ERR_CTA == W_ERR_FLAG + 1 && W_ERR_PEER == W_ERR_FLAG + 2 && W_ERR_WHAT == W_ERR_FLAG + 3 &&
                  W_ERR_EPOCH == W_ERR_FLAG + 4 && sizeof(arb_spin_error_t) == 5 * sizeof(uint32_t),
              "lsa error words = arb_spin_error_t");
static __device__ __forceinline__ arb_spin_error_t *lsa_error(uint32_t *words)
{
    return (arb_spin_error_t *)(words + W_ERR_FLAG);
}

/* True once this rank gave up on a spin (this or an earlier kernel). */
static __device__ __forceinline__ bool lsa_failed(const lsa_kargs &a) { return arb_spin_failed(lsa_error(a.words)); }

/* Records the first failure of this rank (later ones keep the first record). */
static __device__ __forceinline__ void lsa_record_timeout(const lsa_kargs &a, int peer, uint32_t what, uint32_t epoch)
{
    arb_spin_record(lsa_error(a.words), peer, what, epoch);
}

template <typename T> using vec_traits = arb_vec_traits<T>;

/* Peer data (and data peers write into our window) is read with ld.global.cg (L2,
 * not L1): L1 is not coherent with peers' writes. */
static __device__ __forceinline__ uint4 load_cg(const void *base, size_t v) { return arb_ld_cg((const uint4 *)base + v); }

/* Host side, defined in lsa_flagfree.cu. */
cudaError_t lsa_launch_flagfree(const lsa_kargs &a, bool bf16, int ctas, int threads, cudaStream_t s);

/* How the fused kernel (collectives/common/arb_ff_fused.cuh) reaches the line areas
 * on the LSA path: the scratch window's LSA pointers, resolved once at init. */
struct lsa_peers {
    char *scratch_peer[LSA_MAX_RANKS]; /* scratch window byte 0 on each LSA rank */
    size_t area_off, area_bytes;       /* set s, source r at area_off + (s*n + r)*area_bytes */
    uint32_t *words;                   /* W_COUNT rank-local words */
    static constexpr uint32_t kWaitWhat = LSA_WAIT_FUSED_LINES;
    using index_t = size_t;
    __device__ __forceinline__ uint4 *lines(int owner, int src, size_t set, int n) const
    {
        return (uint4 *)(scratch_peer[owner] + area_off + (set * n + src) * area_bytes);
    }
    __device__ __forceinline__ uint32_t *epoch_word() const { return words + W_FUSED + blockIdx.x; }
    __device__ __forceinline__ arb_spin_error_t *error() const { return (arb_spin_error_t *)(words + W_ERR_FLAG); }
};
/* One fused launch: `rows` token rows of x/residual/out starting at its pointers. */
typedef arb_ff_args<lsa_peers> lsa_fargs;

/* The instance (lsa_kernels.h's opaque lsa_dev_t), shared by lsa_kernels.cu and
 * lsa_fused.cu. */
struct lsa_dev {
    ncclDevComm dev;
    int have_dev;
    int lsa_rank, lsa_size;
    size_t max_bytes;
    lsa_config_t cfg;
    /* Scratch window (bytes): [0, inbox_bytes) uint32 inbox[LSA_MAX_CTAS][lsa_size];
     * inbox[b][src] on rank dst is written by rank src's CTA b. Push staging at
     * staging_off, flag-free lines at lines_off (layouts at lsa_kargs). */
    void *scratch;
    ncclWindow_t scratch_win;
    char *scratch_peer[LSA_MAX_RANKS];
    size_t staging_off, slot_bytes, lines_off, lines_bytes;
    size_t fused_off, fused_bytes; /* fused lines: set s, source r at fused_off + (s*n + r)*fused_bytes */
    char fused_why[160];           /* why the fused op is off (fused_ctas == 0), for its declines */
    uint32_t *words;     /* W_COUNT rank-local words (lsa_device.cuh) */
    char **resolve_buf;  /* LSA_MAX_RANKS device pointers, lsa_dev_resolve's output */
    int dead;            /* a spin timed out: epochs are out of step, refuse further calls */
};

/* Host side, defined in lsa_fused.cu. */
#define LSA_FUSED_MAX_P kArbFfMaxP            /* largest cluster (CTAs per row) */
#define LSA_FUSED_UNIT_ELEMS kArbFfUnitElems  /* bf16 elements per unit of a line */
/* Units a thread holds in registers in one launch (arb_ff_kmax of its launch bound). */
static inline int lsa_fused_kmax(int threads) { return arb_ff_kmax(arb_ff_maxt(threads)); }
/* Clusters of p CTAs of `threads` threads that can be resident at once (p = 1: CTAs),
 * the fewer of the two kernels (whole units, element-wise). */
cudaError_t lsa_fused_max_clusters(int p, int threads, int *clusters);
/* Enqueues one launch of `ctas` CTAs in clusters of p (plain CTAs for p = 1). whole:
 * hidden % 4 == 0 and x, residual, weight, out 8-byte aligned. pdl: programmatic
 * dependent launch (the kernel waits in griddepcontrol.wait before any load). */
cudaError_t lsa_fused_launch(const lsa_fargs &a, bool whole, int ctas, int p, int threads, bool pdl, cudaStream_t s);
/* lsa_fused_host.cu. Bytes of one fused line set of one source (0: no fused op for
 * this config). */
size_t lsa_fused_set_bytes(const lsa_config_t *cfg);
/* Collective (every rank, after cfg->ctas was clamped): resolves cfg->fused_ctas,
 * fused_pmax and fused_pmask from every rank's resident-cluster counts; leaves them 0
 * with the reason in d->fused_why when no grid fits. ARB_ERR_SYSTEM when the
 * allgather fails. */
arb_status_t lsa_fused_resolve_grid(lsa_dev_t *d, lsa_config_t *cfg, const arb_host_ops_t *ops, int nranks, char *why,
                                    size_t why_len);

#endif
