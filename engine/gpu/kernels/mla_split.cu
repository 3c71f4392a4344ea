// SPDX-License-Identifier: MIT
// MLA attention over the latent cache (forward.md), in three launches; partials
// [chunks x T nh_r x (rkv + 4)] fp32:
//   mla_attend_pos  one CTA per kAttnChunk cache positions and group of rows (grid.y:
//                   up to three CTAs per SM with at least four rows a group, or where
//                   the shared memory needs it); the
//                   chunk's rows of earlier steps are staged before the PDL wait. On
//                   tensor cores (mma.sync, SM80+: SM90 and SM120 alike): the scores
//                   Q K^T, then the softmax pieces a lane per position, then E V with E
//                   split into bf16 hi + lo. The wide kernel (--attn-wide-from): the same
//                   tile in CTAs of 16 warps holding up to 32 rows a chunk.
//   mla_merge       one CTA per (row, 64 latent columns): the chunk weights
//                   exp(m_c - M), then a float4 of columns per thread summed over the
//                   chunks in sixteen interleaved strands (at 4096 positions each
//                   thread's eight loads in flight at once), the strands added in a
//                   fixed order; olat rounded to bf16
//   mla_uv          o[t,h] = olat[t,h] @ W_uv[h]^T: a warp per W_uv row (rowdot.cuh)
//   mla_merge_uv    (--fuse merge_uv) the merge's blocks, each also projecting its 64 columns
//                   of olat by W_uv (its columns loaded before the PDL wait), a row's last
//                   block adding the blocks' sums in order: one launch for the two above
// Every sum has a fixed order (no atomics), so replays are bit-identical.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/attend_ops.cuh"
#include "gpu/kernels/qb_fit.h"

namespace arbk {
namespace {

// MINB 0: no second __launch_bounds__ argument (80 registers on sm_90 and sm_120, three CTAs an
// SM); 4: compiled for four blocks an SM (64 registers: no spill on sm_90; on sm_120 the bound spills
// 44 bytes and the shared memory holds two such CTAs an SM anyway), on SM90 where mla_setup's fill
// target asks for four or more CTAs an SM (`--attn-fill 4`): the default's 80 registers hold three,
// so a grid of four an SM ran in two waves (verify +2.65% on an H100,
// results/engine-h100/33e58bd-attn-fill/). Measured with it (results/engine-h100/2443bb8-l2-side/):
// slower still, decode +1.60% at the default's grid (the bound alone) and verify +2.76%; kept for
// --attn-fill only. MINB 0 emits no .minnctapersm: its PTX is the unbounded kernel's of before, on
// compute_90 and compute_120 alike.
// <1, kWideWarps>, the wide kernel (--attn-wide-from T): in steps of at least T tokens whose rows pass
// one m16 tile, one CTA of 16 warps a chunk holds up to two tiles of rows (Kimi-K2's 24 at T = 3), each
// warp taking the same share of one tile as the 8-warp kernel's: the chunk staged once a step, not once
// a row group (three times at T = 3 by default), and no warp's work doubled (one group of 24 in the
// 8-warp kernel, --attn-min-rows 16: 21.05 against 12.30 us a layer,
// results/engine-h100/7a9a7ff-attn-rows/). One CTA an SM by registers and shared memory (~84 KB at 32
// rows: SM120's ~99 KB hold it). Measured slower on an H100 (verify +2.04%, attend at T = 3 16.21 ->
// 18.29 us a layer: results/engine-h100/92c6038-wide/); an option, for SM120 (two 8-warp CTAs an SM
// there, not three) to measure.
template <int MINB, int NW = kPosWarps>
__global__ void __launch_bounds__(NW *kWarp, MINB)
    mla_attend_pos_kernel(const bf16 *__restrict__ qlat, const bf16 *__restrict__ qpe,
                          const bf16 *__restrict__ cache_ckv, const bf16 *__restrict__ cache_kpe,
                          const int32_t *__restrict__ pos0, float *__restrict__ partial, int nh_r, int dr, int rkv,
                          float scale, int T, int Rg)
{
    ARB_TL(ARB_TL_ATTEND);
    extern __shared__ uint4 smem_v[];
    mla_attend_tile<NW>(pdl_sync(), qlat, qpe, cache_ckv, cache_kpe, pos0, partial, nh_r, dr, rkv, scale, T, Rg,
                        (int)blockIdx.x, (int)blockIdx.y, smem_v);
}

__global__ void __launch_bounds__(kMergeQuads *kMergeStrands)
    mla_merge_kernel(const float *__restrict__ partial, const int32_t *__restrict__ pos0, bf16 *__restrict__ olat,
                     int R, int rkv, int T)
{
    ARB_TL(ARB_TL_MERGE);
    __shared__ merge_smem sm;
    mla_merge_tile(pdl_sync(), partial, pos0, olat, R, rkv, T, (int)blockIdx.x, (int)blockIdx.y, sm);
}

__global__ void __launch_bounds__(kMergeQuads *kMergeStrands)
    mla_merge_uv_kernel(const float *__restrict__ partial, const int32_t *__restrict__ pos0,
                        const bf16 *__restrict__ kv_b, bf16 *__restrict__ o, float *scratch, unsigned *tickets,
                        int nh_r, int dn, int dv, int rkv, int T)
{
    ARB_TL(ARB_TL_MERGE_UV);
    __shared__ merge_smem sm;
    __shared__ float ol[kMergeCols];
    mla_merge_uv_tile(pdl_sync(), partial, pos0, kv_b, o, scratch, tickets, nh_r, dn, dv, rkv, T, (int)blockIdx.x,
                      (int)blockIdx.y, (int)gridDim.y, sm, ol);
}

template <int T>
__global__ void __launch_bounds__(kUvWarps *kWarp)
    mla_uv_kernel(const bf16 *__restrict__ olat, const bf16 *__restrict__ kv_b, bf16 *__restrict__ o, int nh_r,
                  int dn, int dv, int rkv, l2_ahead ahead)
{
    ARB_TL(ARB_TL_UV);
    mla_uv_tile<T>(pdl_sync(), olat, kv_b, o, nh_r, dn, dv, rkv, (int)blockIdx.x, (int)blockIdx.y, ahead);
}

} // namespace

static int g_attend_rows; // rows per block at most (mla_setup): every row of a step where they fit
static int g_attend_fill; // CTAs a launch aims for (mla_setup): three per SM unless the caller says
static int g_attend_min_rows; // rows a group keeps at least (mla_setup), where the step has them
static bool g_attend_four;    // mla_attend_pos_kernel<4> (mla_setup): SM90 with a fill of four or more CTAs an SM
static int g_attend_wide_from; // the wide kernel <1, kWideWarps> in steps of at least this many tokens (0: never)
constexpr int kWideRows = 2 * 16; // rows a wide CTA holds at most: two m16 tiles, a task for each of its 16 warps

size_t mla_attend_pos_smem(int rkv, int dr, int rows)
{
    return ((size_t)kAttnChunk + rows) * (rkv + 8 + dr + 8) * sizeof(bf16) + 2 * (size_t)rows * kAttnChunk * sizeof(float);
}

cudaError_t mla_setup(int rkv, int dr, int nh_r, size_t smem_cap, int fill_ctas, int min_rows, int wide_from)
{
    if (wide_from < 0 || wide_from > kMaxT)
        return cudaErrorInvalidValue;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && !smem_cap) { // the device's opt-in limit per block: ~227 KB on SM90, ~99 KB on SM120
        int v = 0;
        e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
        smem_cap = (size_t)v;
    }
    // Three CTAs per SM (396 on an H200, 564 on SM120's 188) with at least four rows a group:
    // on one H200 (results/engine-h200/7d85360-ab/, graph, context 4096) three per SM
    // without the floor took attend from 9.87 to 7.82 us a layer at T = 3 (24 rows: groups
    // of 12 -> 8) but from 6.80 to 7.91 at T = 1 (8 rows: 4 -> 3); the floor keeps T = 1 at
    // two groups of 4 and lets T = 3 have three of 8.
    device_shape d = {0, 0, 0};
    if (e == cudaSuccess)
        e = current_device_shape(&d);
    if (e != cudaSuccess)
        return e;
    if (fill_ctas <= 0)
        fill_ctas = 3 * d.sms;
    int rows = kMaxT * nh_r;
    while (rows > 0 && mla_attend_pos_smem(rkv, dr, rows) > smem_cap)
        rows--;
    if (rows < 1)
        return cudaErrorInvalidValue;
    g_attend_rows = rows;
    g_attend_fill = fill_ctas;
    g_attend_min_rows = min_rows > 0 ? min_rows : 4;
    g_attend_four = d.major == 9 && fill_ctas >= 4 * d.sms;
    g_attend_wide_from = wide_from;
    e = cudaFuncSetAttribute(mla_attend_pos_kernel<0>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             (int)mla_attend_pos_smem(rkv, dr, rows));
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(mla_attend_pos_kernel<4>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)mla_attend_pos_smem(rkv, dr, rows));
    if (e == cudaSuccess)
        e = cudaFuncSetAttribute(mla_attend_pos_kernel<1, kWideWarps>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)mla_attend_pos_smem(rkv, dr, min(rows, kWideRows)));
    return e;
}

void mla_attend_grid(int T, int nh_r, int context, int fill, int *chunks, int *groups, int *Rg, int *warps)
{
    const int R = T * nh_r, ch = (context + kAttnChunk - 1) / kAttnChunk;
    *chunks = ch;
    if (warps && g_attend_wide_from && T >= g_attend_wide_from && R > 16) { // wide: even groups of <= 32 rows
        const int cap = min(g_attend_rows, kWideRows), g = (R + cap - 1) / cap, rg = (R + g - 1) / g;
        *Rg = rg, *groups = (R + rg - 1) / rg, *warps = kWideWarps;
        return;
    }
    const int g = max(1, min(max(1, R / g_attend_min_rows), (fill > 0 ? fill : g_attend_fill) / ch));
    const int rg = min(g_attend_rows, (R + g - 1) / g);
    *Rg = rg, *groups = (R + rg - 1) / rg;
    if (warps)
        *warps = kPosWarps;
}

cudaError_t mla_attend_pos(const launch_ctx &c, const bf16 *qlat, const bf16 *qpe, const bf16 *cache_ckv,
                           const bf16 *cache_kpe, const int32_t *pos0, float *partial, int nh_r, int dr, int rkv,
                           float scale, int T, int context)
{
    if (rkv % 8 || rkv > kMaxLatent || dr % 8 || dr > 8 * kWarp || g_attend_rows < 1)
        return cudaErrorInvalidValue; // g_attend_rows: mla_setup not called
    // Row groups: as many as keep the grid within the fill target (one chunk per SM leaves
    // each SM one CTA of eight warps, latency-bound on its serial score and sum loops),
    // at least as many as the shared memory needs.
    int chunks, groups, Rg, warps;
    mla_attend_grid(T, nh_r, context, 0, &chunks, &groups, &Rg, &warps);
    const dim3 grid(chunks, groups);
    if (warps == kWideWarps)
        return launch(c, mla_attend_pos_kernel<1, kWideWarps>, grid, dim3(kWideWarps * kWarp),
                      mla_attend_pos_smem(rkv, dr, Rg), qlat, qpe, cache_ckv, cache_kpe, pos0, partial, nh_r, dr, rkv,
                      scale, T, Rg);
    return launch(c, g_attend_four ? mla_attend_pos_kernel<4> : mla_attend_pos_kernel<0>, grid, dim3(kPosWarps * kWarp),
                  mla_attend_pos_smem(rkv, dr, Rg), qlat, qpe, cache_ckv, cache_kpe, pos0, partial, nh_r, dr, rkv, scale,
                  T, Rg);
}

cudaError_t mla_merge(const launch_ctx &c, const float *partial, const int32_t *pos0, bf16 *olat, int nh_r, int rkv,
                      int T)
{
    if (rkv % 8)
        return cudaErrorInvalidValue;
    const dim3 grid(T * nh_r, (rkv + kMergeCols - 1) / kMergeCols);
    return launch(c, mla_merge_kernel, grid, dim3(kMergeQuads * kMergeStrands), 0, partial, pos0, olat, T * nh_r,
                  rkv, T);
}

bool mla_merge_uv_fits(int dv, int rkv)
{
    static_assert(kMergeUvRows == 128 && kMergeCols * 8 == kMaxLatent, "qb_fit.h's rule: dv up to 128, rkv up to 512");
    return arb_merge_uv_fits(dv, rkv) != 0;
}

size_t mla_merge_uv_scratch_floats(int nh_r, int dv, int rkv)
{
    return (size_t)((rkv + kMergeCols - 1) / kMergeCols) * kMaxT * nh_r * dv;
}

cudaError_t mla_merge_uv(const launch_ctx &c, const float *partial, const int32_t *pos0, const bf16 *kv_b, bf16 *o,
                         float *scratch, unsigned *tickets, int nh_r, int dn, int dv, int rkv, int T)
{
    if (!mla_merge_uv_fits(dv, rkv) || T < 1 || T > kMaxT || nh_r < 1 || !scratch || !tickets)
        return cudaErrorInvalidValue;
    const dim3 grid(T * nh_r, (rkv + kMergeCols - 1) / kMergeCols);
    return launch(c, mla_merge_uv_kernel, grid, dim3(kMergeQuads * kMergeStrands), 0, partial, pos0, kv_b, o, scratch,
                  tickets, nh_r, dn, dv, rkv, T);
}

cudaError_t mla_uv(const launch_ctx &c, const bf16 *olat, const bf16 *kv_b, bf16 *o, int nh_r, int dn, int dv, int rkv,
                   int T)
{
    if (rkv % 8)
        return cudaErrorInvalidValue;
    const dim3 grid(nh_r, (dv + kUvWarps - 1) / kUvWarps), block(kUvWarps * kWarp);
    switch (T) {
    case 1: return launch(c, mla_uv_kernel<1>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 2: return launch(c, mla_uv_kernel<2>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 3: return launch(c, mla_uv_kernel<3>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 4: return launch(c, mla_uv_kernel<4>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 5: return launch(c, mla_uv_kernel<5>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 6: return launch(c, mla_uv_kernel<6>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 7: return launch(c, mla_uv_kernel<7>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    case 8: return launch(c, mla_uv_kernel<8>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv, c.ahead);
    default: return cudaErrorInvalidValue;
    }
}

ARB_TL_TU(mla_split)

} // namespace arbk
