/* SPDX-License-Identifier: MIT */
/*
 * Fused all-reduce + residual add + RMSNorm for oneshot-flagfree on the LSA path
 * (arb_rmsnorm_args_t): one kernel per launch, the ranks' x travel as flag-free lines
 * pushed into the peers' symmetric scratch windows (the lines of lsa_flagfree.cu).
 *
 * Work split. The grid is fixed per instance (cfg.fused_ctas = G CTAs, every CTA runs
 * in every launch, so the per-CTA epochs W_FUSED + b count launches and agree on every
 * CTA and rank). A launch groups the G CTAs into NC = G/P clusters of P CTAs (P a
 * power of two <= 8, chosen per call by lsa_kernels.cu; P = 1: plain CTAs). Row t of
 * the launch belongs to cluster t % NC; unit j of a row (4 bf16 elements, the 8
 * payload bytes of one line) to thread j % (P*T) of CTA (j / T) % P of that cluster.
 * A thread keeps all its units (at most lsa_fused_kmax: upt per row x its rows) in
 * registers from the first load to the last store; the host splits calls with more
 * rows into launches of whole rows.
 *
 * Lines and their memory ordering: unit u of row t (index t*upr + u) goes to every
 * peer as the 16-byte line {d0, epoch, d1, epoch} with ONE st.volatile.v4 into the
 * peer's fused area (set epoch&1, source slot = my rank). No flag, no fence: each
 * naturally aligned 8-byte half {d, epoch} lands single-copy atomically over NVLink
 * and PCIe P2P (the property NCCL's LL protocol relies on), so a reader that sees
 * this launch's epoch in both halves has this launch's payload. The reader polls its
 * own window with ld.volatile (system scope, served from L2, not the SM's incoherent
 * L1) and needs no acquire: it reads nothing else the writer published. The line
 * store and poll carry no "memory" clobber, so the compiler keeps the thread's
 * independent loads (x, residual, weight of all its units) ahead of them; nothing
 * else has to be ordered against a line, it validates itself.
 *
 * Epochs: CTA b reads W_FUSED + b at its start (every thread reads it itself, so no
 * barrier stands before the sends), epoch = count + 1, and thread 0 writes it back
 * after the CTA's (or cluster's) barrier, which every thread reaches after its read.
 * Never a kernel argument, so a captured graph replays correctly. The window starts
 * zeroed, the first epoch is 1, epochs only grow: a stale line carries an older epoch.
 * Two sets by epoch parity suffice: rank r writes set k%2 again in launch k+2 only
 * after its launch k+1 kernel finished (stream order), and that kernel received a
 * line of launch k+1 from every peer, which the peer wrote after its launch k kernel
 * (the last reader of set k%2 in its window) had finished. Whichever CTA or cluster
 * size handles a unit in a launch does not matter: the argument is at kernel level.
 *
 * Sums: fp32, ranks in order 0..n-1 (my own unit from x), residual = bf16(residual +
 * sum) stored, the squares of the stored values summed per thread in unit order, per
 * warp by an xor butterfly (every lane ends with the same bits: fp addition commutes),
 * per row: after ONE barrier (the CTA's, or the cluster's at cluster scope with
 * release/acquire, which orders the distributed shared memory reads after the writes)
 * every warp adds the row's P x nwarps warp partials itself in the same order. So
 * every warp, CTA and rank computes the same 1/rms, and residual and out are bitwise
 * identical on every rank. out = bf16(residual * rsqrt(sumsq/hidden + eps) * weight),
 * the formula of src/rmsnorm.cu.
 *
 * Spins are bounded: a thread that waited timeout_ns for a rank's lines records (CTA,
 * peer, epoch) in the error words and stops; it stores nothing, and its rows' sums
 * become NaN (so their outputs are NaN or unwritten, never plausibly wrong). It still
 * passes the cluster barrier (a CTA missing there would hang its cluster). Later
 * kernels on this rank see the error flag and send and wait for nothing, so the peers
 * time out too instead of hanging.
 */
#include "lsa_device.cuh"

#include <cooperative_groups.h>
#include <math.h>

namespace cg = cooperative_groups;

namespace {

constexpr int kWarp = 32;
constexpr int kE = LSA_FUSED_UNIT_ELEMS;

__host__ __device__ constexpr int kmax_for(int maxt) { return maxt <= 256 ? 8 : maxt <= 512 ? 4 : 2; }

union unit4 {
    uint2 u;
    __nv_bfloat16 e[kE];
};

/* One 16-byte store {d0, epoch, d1, epoch}; no "memory" clobber (see the top). */
__device__ __forceinline__ void st_line_free(uint4 *p, uint2 d, uint32_t epoch)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(epoch), "r"(d.y),
                 "r"(epoch));
}

/* volatile: every poll re-reads memory; no "memory" clobber. */
__device__ __forceinline__ uint4 ld_line_free(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
    for (int o = kWarp / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Unit j of a row of `hidden` elements; elements past the row read as zero. WHOLE:
 * 8-byte aligned units, one load. */
template <bool WHOLE> __device__ __forceinline__ unit4 load_unit(const __nv_bfloat16 *row, unsigned j, unsigned hidden)
{
    unit4 x;
    if constexpr (WHOLE) {
        x.u = *(const uint2 *)(row + (size_t)j * kE);
    } else {
#pragma unroll
        for (int e = 0; e < kE; e++)
            x.e[e] = j * kE + e < hidden ? row[(size_t)j * kE + e] : __ushort_as_bfloat16(0);
    }
    return x;
}

template <bool WHOLE> __device__ __forceinline__ void store_unit(__nv_bfloat16 *row, unsigned j, unsigned hidden, unit4 x)
{
    if constexpr (WHOLE) {
        *(uint2 *)(row + (size_t)j * kE) = x.u;
    } else {
#pragma unroll
        for (int e = 0; e < kE; e++)
            if (j * kE + e < hidden)
                row[(size_t)j * kE + e] = x.e[e];
    }
}

/* KMAX: the units a thread may hold (kmax_for(MAXT), or 1 for launches where no
 * thread has more than one: less code on the latency path). */
template <int MAXT, int KMAX, bool CLUSTER, bool WHOLE>
__global__ void __launch_bounds__(MAXT, 1) fused_kernel(const lsa_fargs a)
{
    __shared__ float s_warp[KMAX][MAXT / kWarp]; /* [row of this CTA][warp]: sum of squares */
    unsigned P = 1, q = 0;
    if constexpr (CLUSTER) {
        P = cg::this_cluster().num_blocks();
        q = cg::this_cluster().block_rank();
    }
    const unsigned cl = blockIdx.x / P, NC = gridDim.x / P;
    const unsigned upr = (a.hidden + kE - 1) / kE, ustride = P * blockDim.x, u0 = q * blockDim.x + threadIdx.x;
    const unsigned rows_mine = a.rows > cl ? (a.rows - cl + NC - 1) / NC : 0;
    const int n = a.lsa_size, me = a.lsa_rank;
    const unsigned upt = a.upt;

    /* Programmatic dependent launch (pdl=1): this kernel may start while the previous
     * one on the stream runs; wait here until it completed and its memory is visible
     * (the epoch words, x, residual), before any load. Let the next launch start its
     * own preamble now: it waits the same way for this kernel to complete. Without
     * PDL both are no-ops. */
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");

    /* 1. Every load first. Slot k: unit u0 + (k % upt) * ustride of my row k / upt. */
    const uint32_t epoch = a.words[W_FUSED + blockIdx.x] + 1;
    bool failed = lsa_failed(a.words);
    const size_t set = epoch & 1u;
    unsigned valid = 0, row_of[KMAX];
    size_t idx[KMAX]; /* line index in a source's area: row * upr + unit */
    size_t off[KMAX]; /* the row's first element in x, residual and out */
    unsigned unit[KMAX];
    unit4 xv[KMAX], rv[KMAX], wv[KMAX];
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        const unsigned i = (unsigned)k / upt, j = u0 + ((unsigned)k % upt) * ustride;
        row_of[k] = i;
        idx[k] = 0;
        off[k] = 0;
        unit[k] = j;
        xv[k].u = rv[k].u = wv[k].u = make_uint2(0, 0);
        if (i < rows_mine && j < upr) {
            const size_t t = cl + (size_t)i * NC;
            valid |= 1u << k;
            idx[k] = t * upr + j;
            off[k] = t * a.hidden;
            xv[k] = load_unit<WHOLE>((const __nv_bfloat16 *)a.x + off[k], j, a.hidden);
            rv[k] = load_unit<WHOLE>((const __nv_bfloat16 *)a.residual + off[k], j, a.hidden);
            wv[k] = load_unit<WHOLE>((const __nv_bfloat16 *)a.weight, j, a.hidden);
        }
    }

    /* 2. My lines into every peer's source slot `me` of this set, next rank first so
     * that not every rank writes into rank 0 first. */
    if (!failed && !a.hang)
        for (int s = 1; s < n; s++) {
            const int p = me + s < n ? me + s : me + s - n;
            uint4 *dst = (uint4 *)(a.scratch_peer[p] + a.area_off + (set * n + me) * a.area_bytes);
#pragma unroll
            for (int k = 0; k < KMAX; k++)
                if (valid >> k & 1)
                    st_line_free(dst + idx[k], xv[k].u, epoch);
        }

    /* 3. Sum in rank order 0..n-1 (fp32). A rank's lines are polled together: each pass
     * re-reads only the ones still stale. */
    float acc[KMAX][kE];
#pragma unroll
    for (int k = 0; k < KMAX; k++)
#pragma unroll
        for (int e = 0; e < kE; e++)
            acc[k][e] = 0.0f;
    for (int r = 0; r < n && !failed; r++) {
        unit4 d[KMAX];
        if (r == me) {
#pragma unroll
            for (int k = 0; k < KMAX; k++)
                d[k] = xv[k];
        } else {
            const uint4 *src = (const uint4 *)(a.scratch_peer[me] + a.area_off + (set * n + r) * a.area_bytes);
            unsigned pending = valid, spin = 0;
            bool timing = false;
            unsigned long long t0 = 0;
            while (pending) {
                uint4 l[KMAX];
#pragma unroll
                for (int k = 0; k < KMAX; k++)
                    if (pending >> k & 1)
                        l[k] = ld_line_free(src + idx[k]);
#pragma unroll
                for (int k = 0; k < KMAX; k++)
                    if ((pending >> k & 1) && l[k].y == epoch && l[k].w == epoch) {
                        d[k].u = make_uint2(l[k].x, l[k].z);
                        pending &= ~(1u << k);
                    }
                if (!pending)
                    break;
                if (!timing) {
                    t0 = lsa_globaltimer_ns();
                    timing = true;
                } else if ((++spin & 255u) == 0 && lsa_failed(a.words)) {
                    failed = true;
                } else if (lsa_globaltimer_ns() - t0 > a.timeout_ns) {
                    lsa_record_timeout(a.words, r, LSA_WAIT_FUSED_LINES, epoch);
                    failed = true;
                }
                if (failed)
                    break;
            }
            if (failed)
                break;
        }
#pragma unroll
        for (int k = 0; k < KMAX; k++)
            if (valid >> k & 1)
#pragma unroll
                for (int e = 0; e < kE; e++)
                    acc[k][e] += __bfloat162float(d[k].e[e]);
    }

    /* 4. residual = bf16(residual + sum), stored; squares of the stored values per row
     * (elements past the row are zero in every term). */
    float sq[KMAX];
#pragma unroll
    for (int i = 0; i < KMAX; i++)
        sq[i] = 0.0f;
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        if (!(valid >> k & 1))
            continue;
        float s = 0.0f;
#pragma unroll
        for (int e = 0; e < kE; e++) {
            rv[k].e[e] = __float2bfloat16_rn(__bfloat162float(rv[k].e[e]) + acc[k][e]);
            const float f = __bfloat162float(rv[k].e[e]);
            s += f * f;
        }
        if (!failed)
            store_unit<WHOLE>((__nv_bfloat16 *)a.residual + off[k], unit[k], a.hidden, rv[k]);
        /* A select, not sq[row_of[k]]: a computed index would put sq in local memory. */
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            sq[i] += row_of[k] == (unsigned)i ? s : 0.0f;
    }
    if (failed)
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            sq[i] = NAN;
    const unsigned warp = threadIdx.x / kWarp, nwarps = blockDim.x / kWarp, lane = threadIdx.x % kWarp;
#pragma unroll
    for (int i = 0; i < KMAX; i++)
        if ((unsigned)i < rows_mine) {
            const float w = warp_sum(sq[i]);
            if (lane == 0)
                s_warp[i][warp] = w;
        }
    /* The one barrier: every CTA's s_warp is written before any warp reads it. */
    if constexpr (CLUSTER)
        cg::this_cluster().sync();
    else
        __syncthreads();

    /* Every warp adds the row's P * nwarps partials itself (CTA-major, lane l takes
     * l, l + 32, ... in order, then the butterfly): the same bits everywhere. */
    float inv[KMAX];
#pragma unroll
    for (int i = 0; i < KMAX; i++) {
        inv[i] = 0.0f;
        if ((unsigned)i < rows_mine) {
            float v = 0.0f;
            for (unsigned x = lane; x < P * nwarps; x += kWarp) {
                const unsigned b = x / nwarps, w = x % nwarps;
                if constexpr (CLUSTER)
                    v += *cg::this_cluster().map_shared_rank(&s_warp[i][w], b);
                else
                    v += s_warp[i][w];
            }
            inv[i] = rsqrtf(warp_sum(v) / (float)a.hidden + a.eps);
        }
    }
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_arrive(); /* my reads of the other CTAs' s_warp are done */
    /* Every thread of this CTA read the epoch before the barrier above. */
    if (threadIdx.x == 0)
        a.words[W_FUSED + blockIdx.x] = epoch;

#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        if (!(valid >> k & 1) || failed)
            continue;
        float r_inv = 0.0f;
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            r_inv = row_of[k] == (unsigned)i ? inv[i] : r_inv;
        unit4 o;
#pragma unroll
        for (int e = 0; e < kE; e++)
            o.e[e] = __float2bfloat16_rn(__bfloat162float(rv[k].e[e]) * r_inv * __bfloat162float(wv[k].e[e]));
        store_unit<WHOLE>((__nv_bfloat16 *)a.out + off[k], unit[k], a.hidden, o);
    }
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_wait(); /* no CTA exits while another reads its s_warp */
}

/* attr holds 2 entries: the cluster size (p > 1), programmatic serialization (pdl). */
cudaLaunchConfig_t launch_config(int ctas, int p, int threads, bool pdl, cudaStream_t s, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)ctas);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 0;
    if (p > 1) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg.numAttrs].val.clusterDim.x = (unsigned)p;
        attr[cfg.numAttrs].val.clusterDim.y = 1;
        attr[cfg.numAttrs].val.clusterDim.z = 1;
        cfg.numAttrs++;
    }
    if (pdl) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs++;
    }
    return cfg;
}

template <int MAXT, int KMAX, bool WHOLE>
cudaError_t launch_k(const lsa_fargs &a, int ctas, int p, int threads, bool pdl, cudaStream_t s)
{
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = launch_config(ctas, p, threads, pdl, s, attr);
    if (p == 1)
        return cudaLaunchKernelEx(&cfg, fused_kernel<MAXT, KMAX, false, WHOLE>, a);
    return cudaLaunchKernelEx(&cfg, fused_kernel<MAXT, KMAX, true, WHOLE>, a);
}

/* single: no thread holds more than one unit in this launch. */
template <int MAXT, bool WHOLE>
cudaError_t launch_t(const lsa_fargs &a, int ctas, int p, int threads, bool pdl, bool single, cudaStream_t s)
{
    return single ? launch_k<MAXT, 1, WHOLE>(a, ctas, p, threads, pdl, s)
                  : launch_k<MAXT, kmax_for(MAXT), WHOLE>(a, ctas, p, threads, pdl, s);
}

template <int MAXT, int KMAX, bool WHOLE> cudaError_t max_clusters_t(int p, int threads, int *clusters)
{
    if (p == 1) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fused_kernel<MAXT, KMAX, false, WHOLE>, threads, 0);
        *clusters = per_sm * sms;
        return e;
    }
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = launch_config(p, p, threads, false, 0, attr);
    return cudaOccupancyMaxActiveClusters(clusters, fused_kernel<MAXT, KMAX, true, WHOLE>, &cfg);
}

/* The fewest over the four kernels a launch of this size may run. */
template <int MAXT> cudaError_t max_clusters_m(int p, int threads, int *clusters)
{
    constexpr int K = kmax_for(MAXT);
    int n[4] = {0, 0, 0, 0};
    cudaError_t e = max_clusters_t<MAXT, K, true>(p, threads, &n[0]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, K, false>(p, threads, &n[1]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, 1, true>(p, threads, &n[2]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, 1, false>(p, threads, &n[3]);
    *clusters = n[0];
    for (int i = 1; i < 4; i++)
        *clusters = n[i] < *clusters ? n[i] : *clusters;
    return e;
}

} // namespace

int lsa_fused_kmax(int threads)
{
    return kmax_for(threads <= 256 ? 256 : threads <= 512 ? 512 : 1024);
}

cudaError_t lsa_fused_max_clusters(int p, int threads, int *clusters)
{
    *clusters = 0;
    if (threads <= 256)
        return max_clusters_m<256>(p, threads, clusters);
    if (threads <= 512)
        return max_clusters_m<512>(p, threads, clusters);
    return max_clusters_m<1024>(p, threads, clusters);
}

cudaError_t lsa_fused_launch(const lsa_fargs &a, bool whole, int ctas, int p, int threads, bool pdl, cudaStream_t s)
{
    /* Every thread holds at most one unit: one unit per row (upt 1) and at most one row
     * per cluster. */
    const bool single = a.upt == 1 && a.rows <= (unsigned)(ctas / p);
    if (threads <= 256)
        return whole ? launch_t<256, true>(a, ctas, p, threads, pdl, single, s)
                     : launch_t<256, false>(a, ctas, p, threads, pdl, single, s);
    if (threads <= 512)
        return whole ? launch_t<512, true>(a, ctas, p, threads, pdl, single, s)
                     : launch_t<512, false>(a, ctas, p, threads, pdl, single, s);
    return whole ? launch_t<1024, true>(a, ctas, p, threads, pdl, single, s)
                 : launch_t<1024, false>(a, ctas, p, threads, pdl, single, s);
}
