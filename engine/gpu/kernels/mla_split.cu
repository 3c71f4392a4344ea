// SPDX-License-Identifier: MIT
// MLA attention over the latent cache (forward.md), in three launches; partials
// [chunks x T nh_r x (rkv + 4)] fp32:
//   mla_attend_pos  one CTA per kAttnChunk cache positions, every head of the rank; the
//                   chunk's rows of earlier steps are staged before the PDL wait.
//                   Scores: each warp holds kPosPerWarp positions' latent and rope rows
//                   in registers (widened once) and sweeps every (token, head) row of
//                   the step, the queries from shared memory. Softmax: a lane per
//                   position. Exp-weighted sum: a thread per 8 latent columns and a
//                   strand of rows.
//   mla_merge       one CTA per (row, 64 latent columns): the chunk weights
//                   exp(m_c - M), then a float4 of columns per thread summed over the
//                   chunks in sixteen interleaved strands (at 4096 positions each
//                   thread's eight loads in flight at once), the strands added in a
//                   fixed order; olat rounded to bf16
//   mla_uv          o[t,h] = olat[t,h] @ W_uv[h]^T: a warp per W_uv row (rowdot.cuh)
// Every sum has a fixed order (no atomics), so replays are bit-identical.
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/rowdot.cuh"

namespace arbk {
namespace {

constexpr int kPosWarps = 8;
constexpr int kPosPerWarp = kAttnChunk / kPosWarps;
constexpr int kLatVecs = kMaxLatent / 8;                 // 16-byte vectors of a latent row, at most
constexpr int kPvStrands = kPosWarps * kWarp / kLatVecs; // row strands of the weighted sum
constexpr int kPvRows = 4;                               // rows of a strand per pass
static_assert(kAttnChunk <= kWarp && kAttnChunk % kPosWarps == 0, "a lane per position of a chunk");
static_assert(kPvStrands >= 1, "a thread per latent vector");

// Copy `nvec` 16-byte vectors global -> shared by the block, kStage loads in flight per thread.
template <bool STREAM>
__device__ __forceinline__ void stage(uint4 *dst, const uint4 *src, int nvec)
{
    constexpr int kStage = 8;
    const int step = blockDim.x * kStage;
    for (int i0 = threadIdx.x; i0 < nvec; i0 += step) {
        uint4 v[kStage];
#pragma unroll
        for (int j = 0; j < kStage; j++)
            if (i0 + j * (int)blockDim.x < nvec)
                v[j] = STREAM ? ld_stream(src + i0 + j * blockDim.x) : src[i0 + j * blockDim.x];
#pragma unroll
        for (int j = 0; j < kStage; j++)
            if (i0 + j * (int)blockDim.x < nvec)
                dst[i0 + j * blockDim.x] = v[j];
    }
}

// A block holds one chunk of C positions against Rg of the step's R = T nh_r rows (grid.y
// row groups of Rg: one group wherever the shared memory allows all rows; SM120's ~99 KB
// does not at T >= 7). Rows are independent, so the groups change no operation of a row.
// Dynamic shared memory (16-byte vectors): ckv [C x nv], kpe [C x nvr], qlat [Rg x nv],
// qpe [Rg x nvr]; then scores [Rg x C] fp32.
__global__ void __launch_bounds__(kPosWarps *kWarp)
    mla_attend_pos_kernel(const bf16 *__restrict__ qlat, const bf16 *__restrict__ qpe,
                          const bf16 *__restrict__ cache_ckv, const bf16 *__restrict__ cache_kpe,
                          const int32_t *__restrict__ pos0, float *__restrict__ partial, int nh_r, int dr, int rkv,
                          float scale, int T, int Rg)
{
    extern __shared__ uint4 smem_v[];
    pdl_launch_dependents();
    // P0 is set before the step; cache rows below P0 are earlier steps' (mla_prep of this
    // step writes rows P0 .. P0 + T - 1 only), so they are staged before the PDL wait and
    // the chunk's fetch overlaps the kernels before this one.
    const int P0 = *pos0, L = P0 + T, c0 = blockIdx.x * kAttnChunk;
    if (c0 >= L)
        return;
    const int n = min(kAttnChunk, L - c0), R = T * nh_r, ps = rkv + 4, nv = rkv / 8, nvr = dr / 8;
    const int r0 = blockIdx.y * Rg, Rl = min(Rg, R - r0); // this block's rows r0 .. r0 + Rl - 1
    const int old = max(0, min(n, P0 - c0)); // rows staged before the wait
    uint4 *ckv = smem_v;
    uint4 *kpe = ckv + kAttnChunk * nv;
    uint4 *ql = kpe + kAttnChunk * nvr;
    uint4 *qp = ql + (size_t)Rg * nv;
    float *sc = reinterpret_cast<float *>(qp + (size_t)Rg * nvr);
    stage<true>(ckv, reinterpret_cast<const uint4 *>(cache_ckv + (size_t)c0 * rkv), old * nv);
    stage<true>(kpe, reinterpret_cast<const uint4 *>(cache_kpe + (size_t)c0 * dr), old * nvr);
    pdl_wait();
    stage<true>(ckv + old * nv, reinterpret_cast<const uint4 *>(cache_ckv + (size_t)(c0 + old) * rkv), (n - old) * nv);
    stage<true>(kpe + old * nvr, reinterpret_cast<const uint4 *>(cache_kpe + (size_t)(c0 + old) * dr),
                (n - old) * nvr);
    stage<false>(ql, reinterpret_cast<const uint4 *>(qlat) + (size_t)r0 * nv, Rl * nv);
    stage<false>(qp, reinterpret_cast<const uint4 *>(qpe) + (size_t)r0 * nvr, Rl * nvr);
    __syncthreads();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    { // scores: this warp's positions against every row; lane holds latent vectors lane + 32 i
        float kf[kPosPerWarp][kMaxLatVec][8], rf[kPosPerWarp][8];
#pragma unroll
        for (int j = 0; j < kPosPerWarp; j++) {
            const int p = warp * kPosPerWarp + j;
#pragma unroll
            for (int i = 0; i < kMaxLatVec; i++) {
                const int v = lane + kWarp * i;
                if (p < n && v < nv)
                    unpack8(ckv[p * nv + v], kf[j][i]);
                else
#pragma unroll
                    for (int q8 = 0; q8 < 8; q8++)
                        kf[j][i][q8] = 0.0f;
            }
            if (p < n && lane < nvr)
                unpack8(kpe[p * nvr + lane], rf[j]);
            else
#pragma unroll
                for (int q8 = 0; q8 < 8; q8++)
                    rf[j][q8] = 0.0f;
        }
        for (int r = 0; r < Rl; r++) { // local row r, global r0 + r
            const int t = (r0 + r) / nh_r;
            float s[kPosPerWarp] = {};
#pragma unroll
            for (int i = 0; i < kMaxLatVec; i++) {
                const int v = lane + kWarp * i;
                if (v < nv) {
                    float qf[8];
                    unpack8(ql[r * nv + v], qf);
#pragma unroll
                    for (int j = 0; j < kPosPerWarp; j++)
#pragma unroll
                        for (int q8 = 0; q8 < 8; q8++)
                            s[j] = fmaf(qf[q8], kf[j][i][q8], s[j]);
                }
            }
            if (lane < nvr) {
                float qf[8];
                unpack8(qp[r * nvr + lane], qf);
#pragma unroll
                for (int j = 0; j < kPosPerWarp; j++)
#pragma unroll
                    for (int q8 = 0; q8 < 8; q8++)
                        s[j] = fmaf(qf[q8], rf[j][q8], s[j]);
            }
#pragma unroll
            for (int o = kWarp / 2; o > 0; o >>= 1)
#pragma unroll
                for (int j = 0; j < kPosPerWarp; j++)
                    s[j] += __shfl_xor_sync(0xffffffffu, s[j], o);
            float mine = s[0]; // lane j < kPosPerWarp stores position j of the warp
#pragma unroll
            for (int j = 1; j < kPosPerWarp; j++)
                mine = lane == j ? s[j] : mine;
            if (lane < kPosPerWarp) {
                const int p = warp * kPosPerWarp + lane; // p >= n: past L, so masked
                sc[r * kAttnChunk + p] = c0 + p <= P0 + t ? mine * scale : -INFINITY;
            }
        }
    }
    __syncthreads();
    for (int r = warp; r < Rl; r += kPosWarps) { // softmax pieces: a lane per position
        const float s = lane < kAttnChunk ? sc[r * kAttnChunk + lane] : -INFINITY;
        const float m = warp_max(s);
        const float e = m == -INFINITY ? 0.0f : expf(s - m);
        const float l = warp_sum(e);
        if (lane < kAttnChunk)
            sc[r * kAttnChunk + lane] = e;
        if (lane == 0) {
            float *dst = partial + ((size_t)blockIdx.x * R + r0 + r) * ps;
            dst[rkv] = m, dst[rkv + 1] = l;
        }
    }
    __syncthreads();
    const int cv = threadIdx.x % kLatVecs, strand = threadIdx.x / kLatVecs;
    if (cv >= nv)
        return;
    for (int rb = strand; rb < Rl; rb += kPvStrands * kPvRows) {
        float o[kPvRows][8] = {};
        for (int p = 0; p < n; p++) {
            float kf[8];
            unpack8(ckv[p * nv + cv], kf);
#pragma unroll
            for (int q = 0; q < kPvRows; q++) {
                const int r = rb + q * kPvStrands;
                if (r < Rl) {
                    const float e = sc[r * kAttnChunk + p];
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        o[q][j] = fmaf(e, kf[j], o[q][j]);
                }
            }
        }
#pragma unroll
        for (int q = 0; q < kPvRows; q++) {
            const int r = rb + q * kPvStrands;
            if (r < Rl) {
                float4 *dst = reinterpret_cast<float4 *>(partial + ((size_t)blockIdx.x * R + r0 + r) * ps) + 2 * cv;
                dst[0] = make_float4(o[q][0], o[q][1], o[q][2], o[q][3]);
                dst[1] = make_float4(o[q][4], o[q][5], o[q][6], o[q][7]);
            }
        }
    }
}

constexpr int kMergeCols = 64; // latent columns per merge block
constexpr int kMergeQuads = kMergeCols / 4;
constexpr int kMergeStrands = 16;

__global__ void __launch_bounds__(kMergeQuads *kMergeStrands)
    mla_merge_kernel(const float *__restrict__ partial, const int32_t *__restrict__ pos0, bf16 *__restrict__ olat,
                     int R, int rkv, int T)
{
    __shared__ float wch[kMaxChunks]; // exp(m_c - M)
    __shared__ float4 red[kMergeStrands][kMergeQuads];
    __shared__ float scratch[kWarp];
    pdl_begin();
    const int r = blockIdx.x, ps = rkv + 4;
    const int nch = (*pos0 + T + kAttnChunk - 1) / kAttnChunk;
    const size_t cstride = (size_t)R * ps; // floats, a multiple of 4 (rkv % 8 == 0)
    const float *base = partial + (size_t)r * ps;
    const float lsum = chunk_weights(base, cstride, rkv, nch, wch, scratch);
    const int q = threadIdx.x % kMergeQuads, strand = threadIdx.x / kMergeQuads;
    const int c = blockIdx.y * kMergeCols + 4 * q;
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (c < rkv) {
#pragma unroll 8
        for (int ch = strand; ch < nch; ch += kMergeStrands) {
            const float w = wch[ch];
            const float4 v = *reinterpret_cast<const float4 *>(base + ch * cstride + c);
            acc.x = fmaf(w, v.x, acc.x), acc.y = fmaf(w, v.y, acc.y);
            acc.z = fmaf(w, v.z, acc.z), acc.w = fmaf(w, v.w, acc.w);
        }
    }
    red[strand][q] = acc;
    __syncthreads();
    if (strand == 0 && c < rkv) {
        float4 s = red[0][q];
#pragma unroll
        for (int j = 1; j < kMergeStrands; j++) { // fixed order
            const float4 v = red[j][q];
            s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
        }
        bf16 *dst = olat + (size_t)r * rkv + c; // olat is stored bf16 (forward.md)
        dst[0] = to_bf(s.x / lsum), dst[1] = to_bf(s.y / lsum), dst[2] = to_bf(s.z / lsum), dst[3] = to_bf(s.w / lsum);
    }
}

constexpr int kUvWarps = 8; // W_uv rows per block

template <int T>
__global__ void __launch_bounds__(kUvWarps *kWarp)
    mla_uv_kernel(const bf16 *__restrict__ olat, const bf16 *__restrict__ kv_b, bf16 *__restrict__ o, int nh_r,
                  int dn, int dv, int rkv)
{
    const int h = blockIdx.x, j = blockIdx.y * kUvWarps + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const bf16 *w = kv_b + ((size_t)h * (dn + dv) + dn + j) * rkv;
    pdl_launch_dependents();
    if (j < dv)
        warp_prefetch_l2(w, (size_t)rkv * 2);
    pdl_wait();
    if (j >= dv)
        return;
    float acc[T], unused[T];
    warp_rowdot<T, false>(w, nullptr, olat + (size_t)h * rkv, nh_r * rkv, rkv, acc, unused);
#pragma unroll
    for (int t = 0; t < T; t++)
        if (lane == t)
            o[((size_t)t * nh_r + h) * dv + j] = to_bf(acc[t]);
}

} // namespace

static int g_attend_rows; // rows per block at most (mla_setup): every row of a step where they fit
static int g_attend_fill; // CTAs a launch aims for (mla_setup): two per SM unless the caller says

size_t mla_attend_pos_smem(int rkv, int dr, int rows)
{
    return ((size_t)kAttnChunk + rows) * (rkv + dr) * sizeof(bf16) + (size_t)rows * kAttnChunk * sizeof(float);
}

cudaError_t mla_setup(int rkv, int dr, int nh_r, size_t smem_cap, int fill_ctas)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess && !smem_cap) { // the device's opt-in limit per block: ~227 KB on SM90, ~99 KB on SM120
        int v = 0;
        e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
        smem_cap = (size_t)v;
    }
    if (e == cudaSuccess && fill_ctas <= 0) { // two CTAs per SM: 264 on an H200, 376 on SM120's 188
        int v = 0;
        e = cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev);
        fill_ctas = 2 * v;
    }
    if (e != cudaSuccess)
        return e;
    int rows = kMaxT * nh_r;
    while (rows > 0 && mla_attend_pos_smem(rkv, dr, rows) > smem_cap)
        rows--;
    if (rows < 1)
        return cudaErrorInvalidValue;
    g_attend_rows = rows;
    g_attend_fill = fill_ctas;
    return cudaFuncSetAttribute(mla_attend_pos_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)mla_attend_pos_smem(rkv, dr, rows));
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
    const int R = T * nh_r, chunks = (context + kAttnChunk - 1) / kAttnChunk;
    const int groups = max(1, min(R, g_attend_fill / chunks));
    const int Rg = min(g_attend_rows, (R + groups - 1) / groups);
    const dim3 grid(chunks, (R + Rg - 1) / Rg);
    return launch(c, mla_attend_pos_kernel, grid, dim3(kPosWarps * kWarp), mla_attend_pos_smem(rkv, dr, Rg), qlat,
                  qpe, cache_ckv, cache_kpe, pos0, partial, nh_r, dr, rkv, scale, T, Rg);
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

cudaError_t mla_uv(const launch_ctx &c, const bf16 *olat, const bf16 *kv_b, bf16 *o, int nh_r, int dn, int dv, int rkv,
                   int T)
{
    if (rkv % 8)
        return cudaErrorInvalidValue;
    const dim3 grid(nh_r, (dv + kUvWarps - 1) / kUvWarps), block(kUvWarps * kWarp);
    switch (T) {
    case 1: return launch(c, mla_uv_kernel<1>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 2: return launch(c, mla_uv_kernel<2>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 3: return launch(c, mla_uv_kernel<3>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 4: return launch(c, mla_uv_kernel<4>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 5: return launch(c, mla_uv_kernel<5>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 6: return launch(c, mla_uv_kernel<6>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 7: return launch(c, mla_uv_kernel<7>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    case 8: return launch(c, mla_uv_kernel<8>, grid, block, 0, olat, kv_b, o, nh_r, dn, dv, rkv);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace arbk
