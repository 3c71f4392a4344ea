// SPDX-License-Identifier: MIT
// Fused all-reduce + residual add + RMSNorm, flag-free, everything in registers
// (p2p_fused.h: "register kernel"), for launches of whole rows per CTA (row_blocks
// 1). The same lines, epochs, work split and sums as fused_rmsnorm<P2P_ONESHOT_FLAGFREE>
// in p2p_fused.cu, so launches of either kernel may follow each other on one
// instance; this one keeps each thread's units (at most KMAX per launch, over all its
// rows) in registers from the first load to the last store, so no memory latency is
// paid once per unit:
//   1. every load the thread will need (x, residual, weight of all its units) and the
//      CTA's epoch are issued together, before anything waits;
//   2. all its lines go to every peer;
//   3. per source rank in order 0..n-1, all its lines from that rank are polled in one
//      loop (each pass re-reads only the lines still stale), then added in fp32;
//   4. residual is stored, the squares are reduced per row: warp shuffles, one CTA
//      barrier, then every warp adds the row's warp partials itself in a fixed order
//      (no second barrier), and the outputs are stored.
// Measured on 2 x H200 (README.md): faster than the general kernel for whole rows per
// CTA, slower in thread-block clusters (a cluster version, measured, was removed).
#include "p2p_fused.h"

#include <math.h>

#include "p2p_device.cuh"

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
// rows_mine * upt <= KMAX in every CTA (p2p_fused_ff_fits checks). upt: units per
// thread per row, ceil(units per row / T).
template <int MAXT>
__global__ void __launch_bounds__(MAXT, 1) ff_rmsnorm(p2p_fused_launch_t a, unsigned upt)
{
    constexpr int KMAX = kmax_for(MAXT);
    __shared__ float s_warp[KMAX][MAXT / kWarp]; // [row of this CTA][warp]: sum of squares
    __shared__ float s_inv[MAXT / kWarp][KMAX];  // [warp][row]: 1 / rms, each warp its own copy
    // Row t of the launch belongs to CTA t % G (G = gridDim.x, the general kernel's
    // clusters of one CTA), unit j of a row to thread j % T.
    const unsigned cl = blockIdx.x, NC = gridDim.x;
    const unsigned upr = a.hidden / kE, ustride = blockDim.x, u0 = threadIdx.x;
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
    // The one barrier: every warp's s_warp is written before any warp reads it.
    __syncthreads();

    // Every warp adds the row's nwarps partials itself: lane l takes partial l (none
    // past nwarps), then the butterfly. The same values in the same order in every
    // warp and on every rank.
#pragma unroll
    for (int i = 0; i < KMAX; i++) {
        if ((unsigned)i < rows_mine) {
            float v = 0.0f;
            for (unsigned w = lane; w < nwarps; w += kWarp)
                v += s_warp[i][w];
            const float inv = rsqrtf(warp_sum(v) / (float)a.hidden + a.eps);
            if (lane == 0)
                s_inv[warp][i] = inv;
        }
    }
    // A slot's row is known only at run time: it reads its 1/rms from shared memory
    // (a computed index into a register array would go to local memory).
    __syncwarp();
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
}

template <int MAXT> cudaError_t ff_max_blocks_t(int threads, int *blocks)
{
    int dev = 0, sms = 0, per_sm = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ff_rmsnorm<MAXT>, threads, 0);
    *blocks = per_sm * sms;
    return e;
}

} // namespace

int p2p_fused_ff_fits(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, unsigned *upt)
{
    if (row_blocks != 1 || !a->whole_units || a->hidden % kE != 0 || threads > 1024)
        return 0;
    const unsigned upr = a->hidden / kE, per_row = (unsigned)threads;
    const unsigned u = (upr + per_row - 1) / per_row, rows = (a->rows + (unsigned)blocks - 1) / (unsigned)blocks;
    *upt = u;
    return (size_t)u * rows <= (size_t)kmax_for(threads <= 256 ? 256 : threads <= 512 ? 512 : 1024);
}

cudaError_t p2p_fused_ff_launch(const p2p_fused_launch_t *a, unsigned upt, int blocks, int threads,
                                cudaStream_t stream)
{
    if (threads <= 256)
        ff_rmsnorm<256><<<blocks, threads, 0, stream>>>(*a, upt);
    else if (threads <= 512)
        ff_rmsnorm<512><<<blocks, threads, 0, stream>>>(*a, upt);
    else
        ff_rmsnorm<1024><<<blocks, threads, 0, stream>>>(*a, upt);
    return cudaGetLastError();
}

cudaError_t p2p_fused_ff_max_blocks(int threads, int *blocks)
{
    if (threads <= 256)
        return ff_max_blocks_t<256>(threads, blocks);
    if (threads <= 512)
        return ff_max_blocks_t<512>(threads, blocks);
    return ff_max_blocks_t<1024>(threads, blocks);
}
