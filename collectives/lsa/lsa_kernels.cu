/* SPDX-License-Identifier: MIT */
/*
 * One-shot all-reduce kernels on NCCL's device API (LSA = load/store accessible
 * peers, reached through pointers into symmetric windows: ncclGetLsaPointer).
 *
 *   oneshot-pull: barrier ("my send is ready"), every rank reads every peer's send
 *                 (in its symmetric window) and sums in rank order 0..n-1, barrier
 *                 ("I am done reading your send"). Two barriers per call.
 *   oneshot-push: every rank writes its send into each peer's staging slot, barrier,
 *                 sums staging (own send for itself) in rank order 0..n-1. One
 *                 barrier per call: staging alternates between two slots by call
 *                 parity (argument at push_kernel).
 *
 * Sums: fp32 accumulation in rank order 0..n-1 starting from rank 0's value, rounded
 * once (bf16) -> bitwise identical on every rank.
 *
 * Barriers pair CTA b of every rank (barrier slot b). Two implementations:
 *   bounded (default): our own flags in the scratch window; a spin gives up after
 *                      timeout_ns, records the failure and the kernel returns, so a
 *                      lost peer never hangs the GPU (query_error reports it).
 *   nccl:              ncclLsaBarrierSession (NCCL's LSA barrier; spins forever).
 * Both keep their epochs in device memory, never in kernel arguments, so a captured
 * CUDA graph replays correctly.
 */
#include "lsa_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda/atomic>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <nccl.h>
/* NCCL's device headers trip -Wunused-parameter in host code; they are not ours. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <nccl_device.h>
#pragma GCC diagnostic pop

#include "symm_boot.h"

#define LSA_THREADS 512

struct lsa_dev {
    ncclDevComm dev;
    int have_dev;
    int lsa_rank, lsa_size;
    size_t max_bytes;
    /* Scratch window (bytes): [0, inbox_bytes) uint32 inbox[LSA_MAX_CTAS][lsa_size];
     * inbox[b][src] on rank dst is written by rank src's CTA b. Then push staging at
     * staging_off: slot s (0/1), source rank r at staging_off + (s*lsa_size + r)*slot_bytes. */
    void *scratch;
    ncclWindow_t scratch_win;
    size_t staging_off, slot_bytes;
    /* Device memory of this rank: words[0..LSA_MAX_CTAS) bounded-barrier epoch per CTA
     * slot; words[LSA_MAX_CTAS] calls completed; [+1] CTAs done in the current call;
     * [+2..+5] error: flag, CTA, peer, barrier index. */
    uint32_t *words;
    int dead; /* a barrier timed out: epochs are out of step, refuse further calls */
};

enum { W_CALLS = LSA_MAX_CTAS, W_DONE, W_ERR_FLAG, W_ERR_CTA, W_ERR_PEER, W_ERR_BARRIER, W_COUNT };

struct lsa_kargs {
    ncclDevComm dev;
    ncclWindow_t scratch;
    ncclWindow_t send_win;
    size_t send_off;
    const void *send;
    void *recv;
    size_t count;          /* elements */
    size_t staging_off, slot_bytes;
    uint32_t *words;
    unsigned long long timeout_ns;
    int lsa_rank, lsa_size;
};

static __device__ __forceinline__ unsigned long long globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* Our barrier over the scratch window's inboxes. Memory ordering: __syncthreads()
 * orders every thread's earlier writes (local and remote stores into peers' staging)
 * before the release store below by CTA-scope synchronization, and a release at
 * system scope is cumulative, so a peer that acquires the flag sees them. The waiting
 * thread's acquire load, then __syncthreads(), orders the whole CTA's later reads
 * after the peer's writes. Epochs only grow (wrap-safe compare), never reset: nothing
 * per call lives in the kernel arguments. Returns false when a spin timed out. */
struct bounded_barrier {
    const lsa_kargs &a;
    uint32_t epoch;
    __device__ bounded_barrier(const lsa_kargs &args) : a(args)
    {
        epoch = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(a.words[blockIdx.x])
                    .load(cuda::memory_order_relaxed);
    }
    __device__ bool sync(int which)
    {
        __shared__ int timed_out;
        if (threadIdx.x == 0)
            timed_out = 0;
        __syncthreads();
        const uint32_t target = epoch + 1;
        for (int i = threadIdx.x; i < a.lsa_size - 1; i += blockDim.x) {
            int peer = i + (i >= a.lsa_rank);
            size_t off = ((size_t)blockIdx.x * a.lsa_size + a.lsa_rank) * sizeof(uint32_t);
            uint32_t *box = (uint32_t *)ncclGetLsaPointer(a.scratch, off, peer);
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*box).store(target, cuda::memory_order_release);
        }
        for (int i = threadIdx.x; i < a.lsa_size - 1; i += blockDim.x) {
            int peer = i + (i >= a.lsa_rank);
            size_t off = ((size_t)blockIdx.x * a.lsa_size + peer) * sizeof(uint32_t);
            uint32_t *box = (uint32_t *)ncclGetLsaPointer(a.scratch, off, a.lsa_rank);
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ref(*box);
            unsigned long long t0 = globaltimer_ns();
            while ((int32_t)(ref.load(cuda::memory_order_acquire) - target) < 0) {
                if (globaltimer_ns() - t0 > a.timeout_ns) {
                    if (atomicCAS(&a.words[W_ERR_FLAG], 0u, 1u) == 0u) {
                        a.words[W_ERR_CTA] = blockIdx.x;
                        a.words[W_ERR_PEER] = (uint32_t)peer;
                        a.words[W_ERR_BARRIER] = (uint32_t)which;
                    }
                    timed_out = 1;
                    break;
                }
            }
        }
        epoch = target;
        __syncthreads();
        return !timed_out;
    }
    __device__ void finish()
    {
        if (threadIdx.x == 0)
            a.words[blockIdx.x] = epoch;
    }
};

/* NCCL's LSA barrier (slot blockIdx.x of the device communicator's lsaBarrier). Its
 * session loads the epoch from NCCL's resource memory and stores it back when it ends.
 * acq_rel: the same release/acquire argument as above, inside NCCL. */
struct nccl_barrier {
    ncclLsaBarrierSession<ncclCoopCta> session;
    __device__ nccl_barrier(const lsa_kargs &a) : session(ncclCoopCta(), a.dev, ncclTeamTagLsa(), blockIdx.x) {}
    __device__ bool sync(int)
    {
        session.sync(ncclCoopCta(), cuda::memory_order_acq_rel);
        return true;
    }
    __device__ void finish() {}
};

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
    static __device__ float load1(const void *p, size_t i) { return __bfloat162float(((const __nv_bfloat16 *)p)[i]); }
    static __device__ void store1(void *p, size_t i, float x) { ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(x); }
};
template <> struct vec_traits<float> {
    static constexpr int n = 4;
    static __device__ float get(const uint4 &v, int i) { return reinterpret_cast<const float *>(&v)[i]; }
    static __device__ void put(uint4 &v, int i, float x) { reinterpret_cast<float *>(&v)[i] = x; }
    static __device__ float load1(const void *p, size_t i) { return ((const float *)p)[i]; }
    static __device__ void store1(void *p, size_t i, float x) { ((float *)p)[i] = x; }
};

/* Peer data is read with ld.global.cg (L2, not L1): L1 is not coherent with peers' writes. */
static __device__ __forceinline__ uint4 load_cg(const void *base, size_t v) { return __ldcg((const uint4 *)base + v); }

/* Sums vector v (or, for the tail, element e) over ranks 0..n-1 from src(r). */
template <typename T, typename Src>
static __device__ void reduce_range(const lsa_kargs &a, Src src)
{
    using tr = vec_traits<T>;
    const size_t nvec = a.count / tr::n;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = first; v < nvec; v += stride) {
        float acc[tr::n];
        for (int i = 0; i < tr::n; i++)
            acc[i] = 0.0f;
        for (int r = 0; r < a.lsa_size; r++) {
            uint4 x = load_cg(src(r), v);
            for (int i = 0; i < tr::n; i++)
                acc[i] += tr::get(x, i);
        }
        uint4 out;
        for (int i = 0; i < tr::n; i++)
            tr::put(out, i, acc[i]);
        ((uint4 *)a.recv)[v] = out;
    }
    /* Tail (< one vector): the first threads of CTA 0, the same CTA on every rank. */
    const size_t e = nvec * tr::n + first;
    if (e < a.count) {
        float acc = 0.0f;
        for (int r = 0; r < a.lsa_size; r++)
            acc += tr::load1(src(r), e);
        tr::store1(a.recv, e, acc);
    }
}

static __device__ __forceinline__ bool failed_before(const lsa_kargs &a)
{
    return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(a.words[W_ERR_FLAG]).load(cuda::memory_order_relaxed) != 0;
}

template <typename T, typename Barrier>
__global__ void __launch_bounds__(LSA_THREADS) pull_kernel(const lsa_kargs a)
{
    if (failed_before(a))
        return;
    Barrier bar(a);
    /* 1: every peer's send is ready (its kernel started, so the work before it on its
     * stream, which wrote send, is complete). */
    if (!bar.sync(0))
        return;
    reduce_range<T>(a, [&](int r) -> const void * { return ncclGetLsaPointer(a.send_win, a.send_off, r); });
    /* 2: nobody reads my send any more once this returns, so the work after this
     * kernel on my stream may overwrite it. CTA b reads the same elements on every
     * rank, and my kernel ends only when all my CTAs passed this barrier. */
    bar.sync(1);
    bar.finish();
}

/* Staging slot parity comes from the call counter (device memory, same on every rank
 * since every rank makes the same calls). Why one barrier is enough: a peer writes
 * slot k%2 again in call k+2 only after its call k+1 kernel ended, i.e. after its
 * CTAs passed barrier k+1 with mine, so my call k+1 kernel had started and my call k
 * kernel (the reader of slot k%2) had finished. */
template <typename T, typename Barrier>
__global__ void __launch_bounds__(LSA_THREADS) push_kernel(const lsa_kargs a)
{
    using tr = vec_traits<T>;
    if (failed_before(a))
        return;
    const uint32_t slot = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(a.words[W_CALLS])
                              .load(cuda::memory_order_relaxed) & 1u;
    Barrier bar(a);
    const size_t mine_off = a.staging_off + ((size_t)slot * a.lsa_size + a.lsa_rank) * a.slot_bytes;
    const size_t nvec = a.count / tr::n;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (int i = 1; i < a.lsa_size; i++) {
        /* Start with the next rank so that not every rank writes into rank 0 first. */
        int peer = (a.lsa_rank + i) % a.lsa_size;
        uint4 *dst = (uint4 *)ncclGetLsaPointer(a.scratch, mine_off, peer);
        for (size_t v = first; v < nvec; v += stride)
            dst[v] = ((const uint4 *)a.send)[v];
        const size_t e = nvec * tr::n + first;
        if (e < a.count)
            ((T *)dst)[e] = ((const T *)a.send)[e];
    }
    if (bar.sync(0)) {
        reduce_range<T>(a, [&](int r) -> const void * {
            return r == a.lsa_rank ? a.send
                                   : ncclGetLsaPointer(a.scratch, a.staging_off + ((size_t)slot * a.lsa_size + r) * a.slot_bytes,
                                                       a.lsa_rank);
        });
    }
    bar.finish();
    /* The last CTA to finish advances the call counter: every CTA read it above,
     * before its own increment of the done count. */
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&a.words[W_DONE], 1u) == gridDim.x - 1) {
            a.words[W_DONE] = 0;
            a.words[W_CALLS] += 1;
            __threadfence();
        }
    }
}

extern "C" int lsa_header_version(void)
{
    return NCCL_VERSION_CODE;
}

extern "C" arb_status_t lsa_dev_create(ncclComm_t comm, const arb_host_ops_t *ops, int nranks, size_t max_bytes,
                                       int max_ctas, lsa_dev_t **out, char *why, size_t why_len)
{
    lsa_dev_t *d = (lsa_dev_t *)calloc(1, sizeof *d);
    if (!d) {
        snprintf(why, why_len, "lsa: out of host memory");
        return ARB_ERR_SYSTEM;
    }
    arb_status_t st = ARB_OK;
    ncclDevCommRequirements reqs;
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
    reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
    memset(&reqs, 0, sizeof reqs);
#endif
    reqs.lsaBarrierCount = max_ctas;
    ncclResult_t nr = ncclDevCommCreate(comm, &reqs, &d->dev);
    if (nr != ncclSuccess) {
        snprintf(why, why_len, "ncclDevCommCreate(lsaBarrierCount=%d): %s (the device API needs symmetric memory support: CUDA VMM, P2P or NVLink between all ranks)",
                 max_ctas, ncclGetErrorString(nr));
        st = ARB_DECLINE;
        goto err_free_dev;
    }
    d->have_dev = 1;
    d->lsa_rank = d->dev.lsaRank;
    d->lsa_size = d->dev.lsaSize;
    if (d->lsa_size != nranks) {
        snprintf(why, why_len, "the LSA team holds %d of the %d ranks (no load/store access between some GPUs: P2P disabled, or NCCL_P2P_LEVEL in NCCL <= 2.28.3); lsa needs every rank in it",
                 d->lsa_size, nranks);
        st = ARB_DECLINE;
        goto err_destroy_devcomm;
    }

    d->max_bytes = max_bytes;
    d->slot_bytes = (max_bytes + 255) / 256 * 256;
    d->staging_off = ((size_t)LSA_MAX_CTAS * d->lsa_size * sizeof(uint32_t) + 4095) / 4096 * 4096;
    {
        size_t scratch_bytes = d->staging_off + 2 * (size_t)d->lsa_size * d->slot_bytes;
        st = symm_window_alloc(comm, scratch_bytes, &d->scratch, &d->scratch_win, why, why_len);
        if (st != ARB_OK)
            goto err_destroy_devcomm;
        if (!d->scratch_win) {
            snprintf(why, why_len, "NCCL created no symmetric window for lsa's scratch buffer although the init probe got one");
            st = ARB_ERR_SYSTEM;
            goto err_free_scratch;
        }
        cudaError_t ce = cudaMemset(d->scratch, 0, d->staging_off);
        if (ce == cudaSuccess)
            ce = cudaMalloc((void **)&d->words, W_COUNT * sizeof(uint32_t));
        if (ce == cudaSuccess)
            ce = cudaMemset(d->words, 0, W_COUNT * sizeof(uint32_t));
        if (ce == cudaSuccess)
            ce = cudaDeviceSynchronize();
        if (ce != cudaSuccess) {
            snprintf(why, why_len, "lsa: setting up barrier memory: %s", cudaGetErrorString(ce));
            st = ARB_ERR_SYSTEM;
            goto err_free_words;
        }
    }
    /* No peer may signal into my inboxes before they are zeroed. */
    if (ops->barrier(ops->ctx) != 0) {
        snprintf(why, why_len, "lsa: host barrier after zeroing the inboxes failed");
        st = ARB_ERR_SYSTEM;
        goto err_free_words;
    }
    *out = d;
    return ARB_OK;

err_free_words:
    cudaFree(d->words);
err_free_scratch:
    symm_window_free(comm, d->scratch, d->scratch_win);
err_destroy_devcomm:
    ncclDevCommDestroy(comm, &d->dev);
err_free_dev:
    free(d);
    return st;
}

extern "C" void lsa_dev_destroy(ncclComm_t comm, lsa_dev_t *d)
{
    if (!d)
        return;
    cudaFree(d->words);
    symm_window_free(comm, d->scratch, d->scratch_win);
    if (d->have_dev)
        ncclDevCommDestroy(comm, &d->dev);
    free(d);
}

template <typename T>
static cudaError_t launch(lsa_variant_t variant, lsa_barrier_t barrier, int ctas, const lsa_kargs &a, cudaStream_t s)
{
    if (variant == LSA_ONESHOT_PULL) {
        if (barrier == LSA_BARRIER_NCCL)
            pull_kernel<T, nccl_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
        else
            pull_kernel<T, bounded_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
    } else {
        if (barrier == LSA_BARRIER_NCCL)
            push_kernel<T, nccl_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
        else
            push_kernel<T, bounded_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
    }
    return cudaGetLastError();
}

extern "C" arb_status_t lsa_dev_allreduce(lsa_dev_t *d, lsa_variant_t variant, lsa_barrier_t barrier, int max_ctas,
                                          uint64_t timeout_ns, const void *send, ncclWindow_t send_win,
                                          size_t send_off, void *recv, size_t count, arb_dtype_t dtype, void *stream,
                                          char *why, size_t why_len)
{
    if (d->dead) {
        snprintf(why, why_len, "lsa: an earlier barrier timed out, this variant's barrier epochs are out of step; re-init it");
        return ARB_ERR_SYSTEM;
    }
    const size_t elt = dtype == ARB_DTYPE_BF16 ? 2 : 4;
    if (count * elt > d->max_bytes) {
        snprintf(why, why_len, "lsa: %zu bytes is more than info->max_bytes (%zu) given at init", count * elt, d->max_bytes);
        return ARB_ERR_INVALID;
    }
    if (count == 0)
        return ARB_OK;
    /* One 16-byte vector per thread per pass; more CTAs only while each has a full pass. */
    const size_t nvec = (count * elt + 15) / 16;
    int ctas = (int)((nvec + LSA_THREADS - 1) / LSA_THREADS);
    if (ctas > max_ctas)
        ctas = max_ctas;
    if (ctas < 1)
        ctas = 1;

    lsa_kargs a;
    memset(&a, 0, sizeof a);
    a.dev = d->dev;
    a.scratch = d->scratch_win;
    a.send_win = send_win;
    a.send_off = send_off;
    a.send = send;
    a.recv = recv;
    a.count = count;
    a.staging_off = d->staging_off;
    a.slot_bytes = d->slot_bytes;
    a.words = d->words;
    a.timeout_ns = timeout_ns;
    a.lsa_rank = d->lsa_rank;
    a.lsa_size = d->lsa_size;
    cudaError_t ce = dtype == ARB_DTYPE_BF16
                         ? launch<__nv_bfloat16>(variant, barrier, ctas, a, (cudaStream_t)stream)
                         : launch<float>(variant, barrier, ctas, a, (cudaStream_t)stream);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "lsa: kernel launch (%d CTAs): %s", ctas, cudaGetErrorString(ce));
        return ARB_ERR_SYSTEM;
    }
    return ARB_OK;
}

extern "C" arb_status_t lsa_dev_query_error(lsa_dev_t *d, char *why, size_t why_len)
{
    uint32_t err[4];
    cudaError_t ce = cudaMemcpy(err, d->words + W_ERR_FLAG, sizeof err, cudaMemcpyDeviceToHost);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "lsa: reading the error word: %s", cudaGetErrorString(ce));
        return ARB_ERR_SYSTEM;
    }
    if (err[0] && !d->dead) {
        /* Reported once. The device flag stays set so every later kernel returns at
         * once instead of waiting out another timeout; allreduce refuses from now on. */
        d->dead = 1;
        snprintf(why, why_len, "lsa: barrier %u of CTA %u timed out waiting for LSA peer %u (peer not running the same call, or no P2P)",
                 err[3], err[1], err[2]);
        return ARB_ERR_TIMEOUT;
    }
    return ARB_OK;
}
