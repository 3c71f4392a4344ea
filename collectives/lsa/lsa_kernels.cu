/* SPDX-License-Identifier: MIT */
/*
 * One-shot all-reduce kernels on NCCL's device API (LSA = load/store accessible
 * peers, reached through pointers into symmetric windows: ncclGetLsaPointer), and the
 * device communicator and scratch window they use. The flag-free variant is in
 * lsa_flagfree.cu.
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
 * Peer addresses: ncclGetLsaPointer(window, 0, r) is resolved once per window (at
 * create for the scratch window, at mem_alloc for send buffers) by a one-thread-per-
 * rank kernel; the kernels get plain pointers in their arguments, so no call pays a
 * dependent load of the window descriptor before its first remote access.
 *
 * Barriers pair CTA b of every rank (barrier slot b). Two implementations:
 *   bounded (default): our own flags in the scratch window; a spin gives up after
 *                      timeout_ns, records the failure and the kernel returns, so a
 *                      lost peer never hangs the GPU (query_error reports it).
 *   nccl:              ncclLsaBarrierSession (NCCL's LSA barrier; spins forever).
 * Both keep their epochs in device memory, never in kernel arguments, so a captured
 * CUDA graph replays correctly.
 */
#include "lsa_device.cuh"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symm_boot.h"

#define LSA_THREADS 512

/* Our barrier over the scratch window's inboxes. Memory ordering: __syncthreads()
 * orders every thread's earlier writes (local and remote stores into peers' staging)
 * before the release store below by CTA-scope synchronization, and a release at
 * system scope is cumulative, so a peer that acquires the flag sees them. The waiting
 * thread's acquire load, then __syncthreads(), orders the whole CTA's later reads
 * after the peer's writes. Epochs only grow (wrap-safe compare), never reset: nothing
 * per call lives in the kernel arguments. */
struct bounded_barrier {
    const lsa_kargs &a;
    uint32_t epoch;
    __device__ bounded_barrier(const lsa_kargs &args) : a(args)
    {
        epoch = cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(a.words[W_BAR_EPOCH + blockIdx.x])
                    .load(cuda::memory_order_relaxed);
    }
    /* False when a spin timed out (recorded in the error words). */
    __device__ bool sync(int which)
    {
        const uint32_t target = epoch + 1;
        epoch = target;
        __syncthreads();
        const int i = threadIdx.x;
        const int peer = i + (i >= a.lsa_rank);
        if (i < a.lsa_size - 1) {
            uint32_t *box = (uint32_t *)(a.scratch_peer[peer] + ((size_t)blockIdx.x * a.lsa_size + a.lsa_rank) * 4);
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system>(*box).store(target, cuda::memory_order_release);
        }
        bool ok = true;
        if (i < a.lsa_size - 1) {
            uint32_t *box = (uint32_t *)(a.scratch_peer[a.lsa_rank] + ((size_t)blockIdx.x * a.lsa_size + peer) * 4);
            cuda::atomic_ref<uint32_t, cuda::thread_scope_system> ref(*box);
            const unsigned long long t0 = arb_globaltimer_ns();
            while ((int32_t)(ref.load(cuda::memory_order_acquire) - target) < 0) {
                if (arb_globaltimer_ns() - t0 > a.timeout_ns) {
                    lsa_record_timeout(a, peer, (uint32_t)which, target);
                    ok = false;
                    break;
                }
            }
        }
        return __syncthreads_and(ok);
    }
    /* A CTA with no elements this call: every rank's CTA b skips the same calls, so
     * advancing the epoch without signalling keeps the ranks in step. */
    __device__ void skip() { epoch += 1; }
    /* After a __syncthreads() that follows the constructor's load on every thread. */
    __device__ void finish()
    {
        if (threadIdx.x == 0)
            a.words[W_BAR_EPOCH + blockIdx.x] = epoch;
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
    /* NCCL keeps the epoch itself: an idle CTA still takes part. */
    __device__ void skip() { session.sync(ncclCoopCta(), cuda::memory_order_acq_rel); }
    __device__ void finish() {}
};

/* Sums vector v (or, for the tail, element e) over ranks 0..n-1 from src(r). */
template <typename T, typename Src>
static __device__ void reduce_range(const lsa_kargs &a, Src src)
{
    using tr = vec_traits<T>;
    const size_t nvec = a.count / tr::VEC;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (size_t v = first; v < nvec; v += stride) {
        float acc[tr::VEC];
        for (int i = 0; i < tr::VEC; i++)
            acc[i] = 0.0f;
        for (int r = 0; r < a.lsa_size; r++) {
            uint4 x = load_cg(src(r), v);
            for (int i = 0; i < tr::VEC; i++)
                acc[i] += tr::get(x, i);
        }
        uint4 out;
        for (int i = 0; i < tr::VEC; i++)
            tr::put(out, i, acc[i]);
        ((uint4 *)a.recv)[v] = out;
    }
    /* Tail (< one vector): the first threads of CTA 0, the same CTA on every rank. */
    const size_t e = nvec * tr::VEC + first;
    if (e < a.count) {
        float acc = 0.0f;
        for (int r = 0; r < a.lsa_size; r++)
            acc += tr::load1(src(r), e);
        tr::store1(a.recv, e, acc);
    }
}

template <typename T, typename Barrier>
__global__ void __launch_bounds__(LSA_THREADS) pull_kernel(const lsa_kargs a)
{
    if (lsa_failed(a))
        return;
    Barrier bar(a);
    /* 1: every peer's send is ready (its kernel started, so the work before it on its
     * stream, which wrote send, is complete). */
    if (!bar.sync(LSA_WAIT_BARRIER0))
        return;
    reduce_range<T>(a, [&](int r) -> const void * { return a.send_peer[r]; });
    /* 2: nobody reads my send any more once this returns, so the work after this
     * kernel on my stream may overwrite it. CTA b reads the same elements on every
     * rank, and my kernel ends only when all my CTAs passed this barrier. */
    if (!bar.sync(LSA_WAIT_BARRIER1))
        return;
    bar.finish();
}

/* Every call launches all cfg.ctas CTAs (idle ones skip the data and the barrier),
 * so every CTA's call counter W_CALLS[b] equals the number of calls made, on every
 * rank, and the staging slot is its parity: no grid-wide counter, no atomics at the
 * end of the kernel. Why one barrier is enough: a peer writes slot k%2 again in call
 * k+2 only after its call k+1 kernel ended, i.e. after its CTA 0 (never idle) passed
 * barrier k+1 with my CTA 0, so my call k+1 kernel had started and my call k kernel
 * (the reader of slot k%2) had finished. */
template <typename T, typename Barrier>
__global__ void __launch_bounds__(LSA_THREADS) push_kernel(const lsa_kargs a)
{
    using tr = vec_traits<T>;
    if (lsa_failed(a))
        return;
    const uint32_t calls = a.words[W_CALLS + blockIdx.x];
    Barrier bar(a);
    const size_t nvec = a.count / tr::VEC;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    /* The same on every rank: this CTA owns a vector (or, CTA 0, the tail). */
    if (blockIdx.x == 0 || (size_t)blockIdx.x * blockDim.x < nvec) {
        const size_t slot = calls & 1u;
        const size_t mine_off = a.staging_off + (slot * a.lsa_size + a.lsa_rank) * a.slot_bytes;
        for (int i = 1; i < a.lsa_size; i++) {
            /* Start with the next rank so that not every rank writes into rank 0 first. */
            const int peer = (a.lsa_rank + i) % a.lsa_size;
            uint4 *dst = (uint4 *)(a.scratch_peer[peer] + mine_off);
            for (size_t v = first; v < nvec; v += stride)
                dst[v] = ((const uint4 *)a.send)[v];
            const size_t e = nvec * tr::VEC + first;
            if (e < a.count)
                ((T *)dst)[e] = ((const T *)a.send)[e];
        }
        if (!bar.sync(LSA_WAIT_BARRIER0))
            return;
        const char *mine = a.scratch_peer[a.lsa_rank] + a.staging_off + slot * a.lsa_size * a.slot_bytes;
        reduce_range<T>(a, [&](int r) -> const void * {
            return r == a.lsa_rank ? a.send : (const void *)(mine + (size_t)r * a.slot_bytes);
        });
    } else {
        bar.skip();
    }
    __syncthreads(); /* every thread read W_CALLS and the epoch before thread 0 rewrites them */
    bar.finish();
    if (threadIdx.x == 0)
        a.words[W_CALLS + blockIdx.x] = calls + 1;
}

__global__ void resolve_kernel(ncclWindow_t win, int n, char **out)
{
    for (int r = threadIdx.x; r < n; r += blockDim.x)
        out[r] = (char *)ncclGetLsaPointer(win, 0, r);
}

extern "C" int lsa_header_version(void)
{
    return NCCL_VERSION_CODE;
}

extern "C" int lsa_dev_lsa_size(const lsa_dev_t *d)
{
    return d->lsa_size;
}

extern "C" arb_status_t lsa_dev_resolve(const lsa_dev_t *d, ncclWindow_t win, char **out, char *why, size_t why_len)
{
    resolve_kernel<<<1, 32>>>(win, d->lsa_size, d->resolve_buf);
    ARB_CUDA_TRY(cudaGetLastError(), why, why_len);
    ARB_CUDA_TRY(cudaMemcpy(out, d->resolve_buf, (size_t)d->lsa_size * sizeof *out, cudaMemcpyDeviceToHost), why,
                 why_len);
    for (int r = 0; r < d->lsa_size; r++) {
        if (!out[r]) {
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: ncclGetLsaPointer gave NULL for LSA rank %d of a symmetric window", r);
        }
    }
    return ARB_OK;
}

/* Collective: every rank's SM count, the smallest wins (all ranks agree on the grid). */
static arb_status_t min_sm_count(const arb_host_ops_t *ops, int nranks, int *out, char *why, size_t why_len)
{
    int dev = 0, sm = 0, all[LSA_MAX_RANKS];
    cudaError_t ce = cudaGetDevice(&dev);
    if (ce == cudaSuccess)
        ce = cudaDeviceGetAttribute(&sm, cudaDevAttrMultiProcessorCount, dev);
    if (ce != cudaSuccess)
        sm = 0; /* still take part in the allgather, then fail on every rank */
    if (ops->allgather(ops->ctx, &sm, all, sizeof sm) != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: allgather of SM counts failed");
    }
    *out = sm;
    for (int r = 0; r < nranks; r++)
        *out = all[r] < *out ? all[r] : *out;
    if (*out <= 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: reading the SM count failed on some rank (%s here)", cudaGetErrorString(ce));
    }
    return ARB_OK;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

extern "C" arb_status_t lsa_dev_create(ncclComm_t comm, const arb_host_ops_t *ops, int nranks, size_t max_bytes,
                                       lsa_config_t *cfg, lsa_dev_t **out, char *why, size_t why_len)
{
    lsa_dev_t *d = (lsa_dev_t *)calloc(1, sizeof *d);
    if (!d) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: out of host memory");
    }
    arb_status_t st = ARB_OK;
    ncclDevCommRequirements reqs;
#ifdef NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER
    reqs = NCCL_DEV_COMM_REQUIREMENTS_INITIALIZER;
#else
    memset(&reqs, 0, sizeof reqs);
#endif
    reqs.lsaBarrierCount = cfg->ctas;
    ncclResult_t nr = ncclDevCommCreate(comm, &reqs, &d->dev);
    if (nr != ncclSuccess) {
        ARB_RAISE_GOTO(st, ARB_DECLINE, err_free_dev, why, why_len, "ncclDevCommCreate(lsaBarrierCount=%d): %s (the device API needs symmetric memory support: CUDA VMM, P2P or NVLink between all ranks)",
                 cfg->ctas, ncclGetErrorString(nr));
    }
    d->have_dev = 1;
    d->lsa_rank = d->dev.lsaRank;
    d->lsa_size = d->dev.lsaSize;
    if (d->lsa_size != nranks) {
        ARB_RAISE_GOTO(st, ARB_DECLINE, err_destroy_devcomm, why, why_len, "the LSA team holds %d of the %d ranks (no load/store access between some GPUs: P2P disabled, or NCCL_P2P_LEVEL in NCCL <= 2.28.3); lsa needs every rank in it",
                 d->lsa_size, nranks);
    }
    if (d->lsa_size > LSA_MAX_RANKS) {
        ARB_RAISE_GOTO(st, ARB_DECLINE, err_destroy_devcomm, why, why_len, "the LSA team has %d ranks; lsa supports at most %d", d->lsa_size, LSA_MAX_RANKS);
    }
    {
        int min_sm = 0;
        st = min_sm_count(ops, nranks, &min_sm, why, why_len);
        if (st != ARB_OK)
            goto err_destroy_devcomm;
        /* Every CTA that waits for a peer CTA must be resident: at most one per SM. */
        if (cfg->ctas > min_sm)
            cfg->ctas = min_sm;
    }
    /* Collective: every rank takes part (the fused grid is off where it resolves none). */
    st = lsa_fused_resolve_grid(d, cfg, ops, nranks, why, why_len);
    if (st != ARB_OK)
        goto err_destroy_devcomm;

    d->cfg = *cfg;
    d->max_bytes = max_bytes;
    d->staging_off = round_up((size_t)LSA_MAX_CTAS * d->lsa_size * sizeof(uint32_t), 4096);
    d->slot_bytes = cfg->variant == LSA_ONESHOT_PUSH ? round_up(max_bytes, 256) : 0;
    d->lines_off = d->staging_off + 2 * (size_t)d->lsa_size * d->slot_bytes;
    /* A 16-byte line per 8 payload bytes. */
    d->lines_bytes = cfg->variant == LSA_ONESHOT_FLAGFREE
                         ? round_up(max_bytes < LSA_FF_CHUNK_BYTES ? max_bytes : LSA_FF_CHUNK_BYTES, 256) * 2
                         : 0;
    d->fused_off = d->lines_off + 2 * (size_t)d->lsa_size * d->lines_bytes;
    d->fused_bytes = lsa_fused_set_bytes(cfg);
    {
        size_t scratch_bytes = d->fused_off + 2 * (size_t)d->lsa_size * d->fused_bytes;
        st = symm_window_alloc(comm, scratch_bytes, &d->scratch, &d->scratch_win, why, why_len);
        if (st != ARB_OK)
            goto err_destroy_devcomm;
        if (!d->scratch_win) {
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_scratch, why, why_len, "NCCL created no symmetric window for lsa's scratch buffer although the init probe got one");
        }
        /* Inboxes and lines start at epoch 0; the first call uses epoch 1. The memory
         * may hold an earlier instance's epochs, so zero all of it. */
        ARB_CUDA_GOTO(st, cudaMemset(d->scratch, 0, scratch_bytes), err_free_words, why, why_len);
        ARB_CUDA_GOTO(st, cudaMalloc((void **)&d->words, W_COUNT * sizeof(uint32_t)), err_free_words, why, why_len);
        ARB_CUDA_GOTO(st, cudaMemset(d->words, 0, W_COUNT * sizeof(uint32_t)), err_free_words, why, why_len);
        ARB_CUDA_GOTO(st, cudaMalloc((void **)&d->resolve_buf, LSA_MAX_RANKS * sizeof(char *)), err_free_words, why,
                      why_len);
        ARB_CUDA_GOTO(st, cudaDeviceSynchronize(), err_free_words, why, why_len);
    }
    st = lsa_dev_resolve(d, d->scratch_win, d->scratch_peer, why, why_len);
    if (st != ARB_OK)
        goto err_free_words;
    /* No peer may signal into my inboxes or write my lines before they are zeroed. */
    if (ops->barrier(ops->ctx) != 0) {
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_words, why, why_len, "lsa: host barrier after zeroing the inboxes failed");
    }
    *out = d;
    return ARB_OK;

err_free_words:
    cudaFree(d->resolve_buf);
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
    cudaFree(d->resolve_buf);
    cudaFree(d->words);
    symm_window_free(comm, d->scratch, d->scratch_win);
    if (d->have_dev)
        ncclDevCommDestroy(comm, &d->dev);
    free(d);
}

template <typename T>
static cudaError_t launch(const lsa_config_t &c, int ctas, const lsa_kargs &a, cudaStream_t s)
{
    if (c.variant == LSA_ONESHOT_PULL) {
        if (c.barrier == LSA_BARRIER_NCCL)
            pull_kernel<T, nccl_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
        else
            pull_kernel<T, bounded_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
    } else {
        if (c.barrier == LSA_BARRIER_NCCL)
            push_kernel<T, nccl_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
        else
            push_kernel<T, bounded_barrier><<<ctas, LSA_THREADS, 0, s>>>(a);
    }
    return cudaGetLastError();
}

extern "C" arb_status_t lsa_dev_allreduce(lsa_dev_t *d, const void *send, const char *const *send_peer, void *recv,
                                          size_t count, arb_dtype_t dtype, void *stream, char *why, size_t why_len)
{
    if (d->dead) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: an earlier spin timed out, this variant's epochs are out of step; re-init it");
    }
    const size_t elt = dtype == ARB_DTYPE_BF16 ? 2 : 4;
    if (count * elt > d->max_bytes) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: %zu bytes is more than info->max_bytes (%zu) given at init", count * elt, d->max_bytes);
    }
    if (count == 0)
        return ARB_OK;

    lsa_kargs a;
    memset(&a, 0, sizeof a);
    a.dev = d->dev;
    memcpy(a.scratch_peer, d->scratch_peer, sizeof a.scratch_peer);
    if (send_peer)
        memcpy(a.send_peer, send_peer, (size_t)d->lsa_size * sizeof *send_peer);
    a.send = send;
    a.recv = recv;
    a.count = count;
    a.staging_off = d->staging_off;
    a.slot_bytes = d->slot_bytes;
    a.lines_off = d->lines_off;
    a.lines_bytes = d->lines_bytes;
    a.words = d->words;
    a.timeout_ns = d->cfg.timeout_ns;
    a.lsa_rank = d->lsa_rank;
    a.lsa_size = d->lsa_size;
    a.hang = d->cfg.hang_rank == d->lsa_rank;
    cudaStream_t s = (cudaStream_t)stream;
    cudaError_t ce = cudaSuccess;
    int ctas = d->cfg.ctas;
    if (d->cfg.variant == LSA_ONESHOT_FLAGFREE) {
        /* Slices of at most LSA_FF_CHUNK_BYTES, one launch each (a multiple of 16 B). */
        const size_t chunk = LSA_FF_CHUNK_BYTES / elt;
        for (size_t off = 0; off < count && ce == cudaSuccess; off += chunk) {
            a.send = (const char *)send + off * elt;
            a.recv = (char *)recv + off * elt;
            a.count = count - off < chunk ? count - off : chunk;
            ce = lsa_launch_flagfree(a, dtype == ARB_DTYPE_BF16, ctas, d->cfg.threads, s);
        }
    } else {
        if (d->cfg.variant == LSA_ONESHOT_PULL) {
            /* One 16-byte vector per thread per pass; more CTAs only while each has a full
             * pass. (Push always launches all its CTAs: see push_kernel.) */
            const size_t nvec = (count * elt + 15) / 16;
            const size_t need = (nvec + LSA_THREADS - 1) / LSA_THREADS;
            ctas = need < (size_t)ctas ? (int)need : ctas;
        }
        ce = dtype == ARB_DTYPE_BF16 ? launch<__nv_bfloat16>(d->cfg, ctas, a, s) : launch<float>(d->cfg, ctas, a, s);
    }
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: kernel launch (%d CTAs): %s", ctas, cudaGetErrorString(ce));
    }
    return ARB_OK;
}

extern "C" arb_status_t lsa_dev_query_error(lsa_dev_t *d, char *why, size_t why_len)
{
    uint32_t err[W_COUNT - W_ERR_FLAG];
    cudaError_t ce = cudaMemcpy(err, d->words + W_ERR_FLAG, sizeof err, cudaMemcpyDeviceToHost);
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: reading the error word: %s", cudaGetErrorString(ce));
    }
    if (err[0] && !d->dead) {
        /* Reported once. The device flag stays set so every later kernel returns at
         * once instead of waiting out another timeout; allreduce refuses from now on. */
        d->dead = 1;
        const uint32_t cta = err[W_ERR_CTA - W_ERR_FLAG], peer = err[W_ERR_PEER - W_ERR_FLAG],
                       what = err[W_ERR_WHAT - W_ERR_FLAG], epoch = err[W_ERR_EPOCH - W_ERR_FLAG];
        if (what == LSA_WAIT_FUSED_LINES)
            ARB_WHY(why, why_len, "lsa: oneshot-flagfree fused allreduce_rmsnorm CTA %u timed out waiting for LSA peer %u's lines of fused launch %u (peer not running the same call, or no P2P); this instance stays disabled",
                     cta, peer, epoch);
        else if (what == LSA_WAIT_LINES)
            ARB_WHY(why, why_len, "lsa: oneshot-flagfree CTA %u timed out waiting for LSA peer %u's lines of call %u (peer not running the same call, or no P2P); this instance stays disabled",
                     cta, peer, epoch);
        else
            ARB_RAISE(ARB_ERR_TIMEOUT, why, why_len, "lsa: barrier %u of CTA %u timed out waiting for LSA peer %u (epoch %u; peer not running the same call, or no P2P); this instance stays disabled",
                     what, cta, peer, epoch);
    }
    return ARB_OK;
}
