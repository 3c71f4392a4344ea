// SPDX-License-Identifier: MIT
// Fused all-reduce + residual add + RMSNorm, flag-free, everything in registers
// (p2p_fused.h: "register kernel"). The same lines, epochs, work split and sums as
// fused_rmsnorm<P2P_ONESHOT_FLAGFREE> in p2p_fused.cu, so launches of either kernel
// may follow each other on one instance; this one keeps each thread's units (at most
// KMAX per launch, over all its rows) in registers from the first load to the last
// store, so no memory latency is paid once per unit:
//   1. every load the thread will need (x, residual, weight of all its units) and the
//      CTA's epoch are issued together, before anything waits;
//   2. all its lines go to every peer;
//   3. per source rank in order 0..n-1, all its lines from that rank are polled in one
//      loop (each pass re-reads only the lines still stale), then added in fp32;
//   4. residual is stored, the squares are reduced per row: warp shuffles, one CTA
//      (or cluster) barrier, then every warp adds the row's warp partials itself in
//      a fixed order (no second barrier), and the outputs are stored.
#include "p2p_fused.h"

#include <cooperative_groups.h>
#include <math.h>

#include "p2p_device.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int kWarp = 32;
constexpr int kE = 4; // bf16 elements of a unit: the 8 payload bytes of one line

// Units a thread may hold per launch: the register budget of the launch bound.
__host__ __device__ constexpr int kmax_for(int maxt) { return maxt <= 256 ? 8 : maxt <= 512 ? 4 : 2; }

union unit4 {
    uint2 u;
    __nv_bfloat16 e[kE];
};

// A line store without a "memory" clobber: nothing else this thread does has to be
// ordered against it (a line validates itself, see p2p_st_line), so the compiler may
// keep the loads of later units ahead of it. One 16-byte store: each 8-byte half
// {data, epoch} is written whole (the LL-line argument in p2p_device.cuh).
__device__ __forceinline__ void st_line_free(uint4 *p, uint2 d, uint32_t epoch)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(epoch), "r"(d.y),
                 "r"(epoch));
}

// A line load without a "memory" clobber (volatile: every poll re-reads memory).
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
    // xor butterfly: the same additions in the same order in every warp and on every rank
    for (int o = kWarp / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// Launched only with whole units (hidden % 4 == 0, rows 8-byte aligned) and
// rows_mine * upt <= KMAX in every CTA (p2p_fused_ff_launch checks). upt: units per
// thread per row, ceil(units per row / (P * T)).
template <int MAXT, bool CLUSTER>
__global__ void __launch_bounds__(MAXT, 1) ff_rmsnorm(p2p_fused_launch_t a, unsigned upt)
{
    constexpr int KMAX = kmax_for(MAXT);
    __shared__ float s_warp[KMAX][MAXT / kWarp]; // [row of this CTA][warp]: sum of squares
    __shared__ float s_inv[MAXT / kWarp][KMAX];  // [warp][row]: 1 / rms, each warp its own copy
    unsigned P = 1, q = 0;
    if constexpr (CLUSTER) {
        P = cg::this_cluster().num_blocks();
        q = cg::this_cluster().block_rank();
    }
    const unsigned cl = blockIdx.x / P, NC = gridDim.x / P;
    const unsigned upr = a.hidden / kE, ustride = P * blockDim.x, u0 = q * blockDim.x + threadIdx.x;
    const unsigned rows_mine = a.rows > cl ? (a.rows - cl + NC - 1) / NC : 0;
    const int n = a.net.nranks, me = a.net.rank;

    // 1. Every load first. Slot k holds unit u0 + (k % upt) * ustride of my row k / upt.
    // The epoch: every thread reads it (no barrier before the sends); thread 0 rewrites
    // it only after the CTA barrier below, which every thread reaches after its read.
    const uint32_t epoch = a.net.state->fused_epoch[blockIdx.x] + 1;
    bool failed = p2p_aborted(a.net.state);
    const unsigned set = epoch & 1;
    unsigned valid = 0, row_of[KMAX];
    uint32_t idx[KMAX]; // unit index in the area: row * upr + unit
    uint32_t off[KMAX]; // its first element in x, residual and out (a slot holds < 2^32)
    unit4 xv[KMAX], rv[KMAX], wv[KMAX];
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        const unsigned i = (unsigned)k / upt, j = u0 + ((unsigned)k % upt) * ustride;
        row_of[k] = i;
        idx[k] = 0;
        off[k] = 0;
        if (i < rows_mine && j < upr) {
            const unsigned t = cl + i * NC;
            const uint32_t e0 = t * a.hidden + j * kE;
            valid |= 1u << k;
            idx[k] = t * upr + j;
            off[k] = e0;
            xv[k].u = *(const uint2 *)((const __nv_bfloat16 *)a.x + e0);
            rv[k].u = *(const uint2 *)((const __nv_bfloat16 *)a.residual + e0);
            wv[k].u = *(const uint2 *)((const __nv_bfloat16 *)a.weight + (size_t)j * kE);
        }
    }

    // 2. My lines into every peer's slot `me` of this set (posted stores, start at the
    // next rank to spread the links).
    if (!failed && !a.net.hang)
        for (int s = 1; s < n; s++) {
            const int p = (me + s) % n;
            uint4 *dst = (uint4 *)(a.net.payload[p] + ((size_t)set * n + me) * a.net.area_bytes);
#pragma unroll
            for (int k = 0; k < KMAX; k++)
                if (valid >> k & 1)
                    st_line_free(dst + idx[k], xv[k].u, epoch);
        }

    // 3. Sum in rank order 0..n-1, fp32. Rank r's lines: all of them polled per pass.
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
            const uint4 *src = (const uint4 *)(a.net.payload[me] + ((size_t)set * n + r) * a.net.area_bytes);
            unsigned pending = valid, spin = 0;
            uint64_t t0 = 0;
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
                if (spin++ == 0)
                    t0 = p2p_globaltimer_ns();
                else if ((spin & 255) == 0 && p2p_aborted(a.net.state))
                    failed = true;
                else if (p2p_globaltimer_ns() - t0 > a.net.timeout_ns) {
                    p2p_record_timeout(a.net.state, r, epoch);
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

    // 4. residual = bf16(residual + sum), stored; the squares of the stored values per
    // row. A failed wait stores nothing and makes its rows' sums NaN (out NaN there).
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
            const float f = __bfloat162float(rv[k].e[e]); // the norm uses the value as stored
            s += f * f;
        }
        if (failed)
            s = NAN;
        else
            *(uint2 *)((__nv_bfloat16 *)a.residual + off[k]) = rv[k].u;
        // units in slot order: the same order on every rank. A select, not sq[row_of[k]]:
        // a computed index would put sq in local memory.
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            sq[i] += row_of[k] == (unsigned)i ? s : 0.0f;
    }
    if (failed) // a thread with no valid unit still poisons its rows
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
    // One barrier: the CTA's, or the cluster's (release/acquire at cluster scope: every
    // CTA's s_warp is written before any CTA reads it through distributed shared memory).
    if constexpr (CLUSTER)
        cg::this_cluster().sync();
    else
        __syncthreads();

    // Every warp adds the row's P * nwarps partials itself: lane l takes partials l,
    // l + 32, ... (CTA-major) in order, then the butterfly. The same values in the same
    // order in every warp, every CTA of the cluster and every rank.
    const unsigned parts = P * nwarps;
#pragma unroll
    for (int i = 0; i < KMAX; i++) {
        if ((unsigned)i < rows_mine) {
            float v = 0.0f;
            for (unsigned x = lane; x < parts; x += kWarp) {
                const unsigned b = x / nwarps, w = x % nwarps;
                float part;
                if constexpr (CLUSTER)
                    part = *cg::this_cluster().map_shared_rank(&s_warp[i][w], b);
                else
                    part = s_warp[i][w];
                v += part;
            }
            const float inv = rsqrtf(warp_sum(v) / (float)a.hidden + a.eps);
            if (lane == 0)
                s_inv[warp][i] = inv;
        }
    }
    // A slot's row is known only at run time: it reads its 1/rms from shared memory
    // (a computed index into a register array would go to local memory).
    __syncwarp();
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_arrive(); // my reads of the other CTAs' s_warp are done
    // Every thread of this CTA read the epoch before the barrier above.
    if (threadIdx.x == 0)
        a.net.state->fused_epoch[blockIdx.x] = epoch;

    // out = residual * inv_rms * weight (the formula of src/rmsnorm.cu).
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        if (!(valid >> k & 1) || failed)
            continue;
        const float r_inv = s_inv[warp][row_of[k]];
        unit4 o;
#pragma unroll
        for (int e = 0; e < kE; e++)
            o.e[e] = __float2bfloat16_rn(__bfloat162float(rv[k].e[e]) * r_inv * __bfloat162float(wv[k].e[e]));
        *(uint2 *)((__nv_bfloat16 *)a.out + off[k]) = o.u;
    }
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_wait(); // no CTA exits while another reads its s_warp
}

cudaLaunchConfig_t ff_config(int blocks, int row_blocks, int threads, cudaStream_t stream, cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)blocks);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = stream;
    attr->id = cudaLaunchAttributeClusterDimension;
    attr->val.clusterDim.x = (unsigned)row_blocks;
    attr->val.clusterDim.y = 1;
    attr->val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cfg;
}

template <int MAXT>
cudaError_t ff_launch_t(const p2p_fused_launch_t *a, unsigned upt, int blocks, int row_blocks, int threads,
                        cudaStream_t stream)
{
    if (row_blocks == 1) {
        ff_rmsnorm<MAXT, false><<<blocks, threads, 0, stream>>>(*a, upt);
        return cudaGetLastError();
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = ff_config(blocks, row_blocks, threads, stream, &attr);
    return cudaLaunchKernelEx(&cfg, ff_rmsnorm<MAXT, true>, *a, upt);
}

template <int MAXT> cudaError_t ff_max_clusters_t(int row_blocks, int threads, int *clusters)
{
    if (row_blocks == 1) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ff_rmsnorm<MAXT, false>, threads, 0);
        *clusters = per_sm * sms;
        return e;
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = ff_config(row_blocks, row_blocks, threads, 0, &attr);
    return cudaOccupancyMaxActiveClusters(clusters, ff_rmsnorm<MAXT, true>, &cfg);
}

} // namespace

int p2p_fused_ff_fits(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, unsigned *upt)
{
    if (!a->whole_units || a->hidden % kE != 0 || threads > 1024)
        return 0;
    const unsigned upr = a->hidden / kE, per_row = (unsigned)(row_blocks * threads);
    const unsigned nc = (unsigned)(blocks / row_blocks);
    const unsigned u = (upr + per_row - 1) / per_row, rows = (a->rows + nc - 1) / nc;
    *upt = u;
    return (size_t)u * rows <= (size_t)kmax_for(threads <= 256 ? 256 : threads <= 512 ? 512 : 1024);
}

cudaError_t p2p_fused_ff_launch(const p2p_fused_launch_t *a, unsigned upt, int blocks, int row_blocks, int threads,
                                cudaStream_t stream)
{
    if (threads <= 256)
        return ff_launch_t<256>(a, upt, blocks, row_blocks, threads, stream);
    if (threads <= 512)
        return ff_launch_t<512>(a, upt, blocks, row_blocks, threads, stream);
    return ff_launch_t<1024>(a, upt, blocks, row_blocks, threads, stream);
}

cudaError_t p2p_fused_ff_max_clusters(int row_blocks, int threads, int *clusters)
{
    if (threads <= 256)
        return ff_max_clusters_t<256>(row_blocks, threads, clusters);
    if (threads <= 512)
        return ff_max_clusters_t<512>(row_blocks, threads, clusters);
    return ff_max_clusters_t<1024>(row_blocks, threads, clusters);
}
