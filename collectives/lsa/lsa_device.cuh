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

static __device__ __forceinline__ unsigned long long lsa_globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* True once this rank gave up on a spin (this or an earlier kernel). */
static __device__ __forceinline__ bool lsa_failed(uint32_t *words)
{
    return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(words[W_ERR_FLAG]).load(cuda::memory_order_relaxed) != 0;
}
static __device__ __forceinline__ bool lsa_failed(const lsa_kargs &a) { return lsa_failed(a.words); }

/* Records the first failure of this rank (later ones keep the first record). */
static __device__ __forceinline__ void lsa_record_timeout(uint32_t *words, int peer, uint32_t what, uint32_t epoch)
{
    if (atomicCAS(&words[W_ERR_FLAG], 0u, 1u) == 0u) {
        words[W_ERR_CTA] = blockIdx.x;
        words[W_ERR_PEER] = (uint32_t)peer;
        words[W_ERR_WHAT] = what;
        words[W_ERR_EPOCH] = epoch;
    }
}
static __device__ __forceinline__ void lsa_record_timeout(const lsa_kargs &a, int peer, uint32_t what, uint32_t epoch)
{
    lsa_record_timeout(a.words, peer, what, epoch);
}

template <typename T> struct vec_traits;
template <> struct vec_traits<__nv_bfloat16> {
    static constexpr int n = 8; /* elements per 16-byte vector */
    static __device__ float get(const uint4 &v, int i)
    {
        const __nv_bfloat16 *e = reinterpret_cast<const __nv_bfloat16 *>(&v);
        return __bfloat162float(e[i]);
    }
    static __device__ void put(uint4 &v, int i, float x)
    {
        reinterpret_cast<__nv_bfloat16 *>(&v)[i] = __float2bfloat16_rn(x);
    }
    static __device__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
    static __device__ float load1(const void *p, size_t i) { return __bfloat162float(((const __nv_bfloat16 *)p)[i]); }
    static __device__ void store1(void *p, size_t i, float x) { ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(x); }
};
template <> struct vec_traits<float> {
    static constexpr int n = 4;
    static __device__ float get(const uint4 &v, int i) { return reinterpret_cast<const float *>(&v)[i]; }
    static __device__ void put(uint4 &v, int i, float x) { reinterpret_cast<float *>(&v)[i] = x; }
    static __device__ float to_f(float x) { return x; }
    static __device__ float from_f(float x) { return x; }
    static __device__ float load1(const void *p, size_t i) { return ((const float *)p)[i]; }
    static __device__ void store1(void *p, size_t i, float x) { ((float *)p)[i] = x; }
};

/* Peer data (and data peers write into our window) is read with ld.global.cg (L2,
 * not L1): L1 is not coherent with peers' writes. */
static __device__ __forceinline__ uint4 load_cg(const void *base, size_t v) { return __ldcg((const uint4 *)base + v); }

/* Host side, defined in lsa_flagfree.cu. */
cudaError_t lsa_launch_flagfree(const lsa_kargs &a, bool bf16, int ctas, int threads, cudaStream_t s);

/* One fused launch (lsa_fused.cu): `rows` token rows of x/residual/out starting at
 * the pointers below, lines in the fused area of the scratch window. */
struct lsa_fargs {
    char *scratch_peer[LSA_MAX_RANKS]; /* scratch window byte 0 on each LSA rank */
    size_t area_off, area_bytes;       /* set s, source r at area_off + (s*n + r)*area_bytes */
    uint32_t *words;
    unsigned long long timeout_ns;
    int lsa_rank, lsa_size;
    int hang;                          /* test hook: send no lines */
    const void *x;                     /* bf16 [rows x hidden] */
    void *residual;                    /* bf16 [rows x hidden] */
    const void *weight;                /* bf16 [hidden] */
    void *out;                         /* bf16 [rows x hidden] */
    unsigned rows, hidden;             /* elements per row */
    unsigned upt;                      /* units (4 elements) per thread per row */
    float eps;
};

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
#define LSA_FUSED_MAX_P 8 /* largest cluster (CTAs per row): the portable limit */
#define LSA_FUSED_UNIT_ELEMS 4 /* bf16 elements per unit: the 8 payload bytes of a line */
/* Units a thread holds in registers in one launch (over all its rows), by launch
 * bound: the register budget of 255 (256 threads), 128 (512) or 64 (1024) per thread. */
int lsa_fused_kmax(int threads);
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
