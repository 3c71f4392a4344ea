// SPDX-License-Identifier: MIT
// MLA attention with weight absorption over the replicated latent cache (forward.md):
//   mla_absorb   qlat[t,h] = q_nope[t,h] @ W_uk[h]; qpe[t,h] = rope(q_pe[t,h], P0 + t)
//   mla_attend   flash-decoding partials: CTA c reads cache positions [c*C, (c+1)*C) once
//                for every (token, head) row of the rank, scores in fp32 with the causal
//                mask p <= P0 + t, its chunk's max, exp-sum and exp-weighted latent sum
//   mla_combine  merges the chunks in chunk order (deterministic), rounds olat to bf16
//                and projects it: o[t,h] = olat[t,h] @ W_uv[h]^T
// W_uk[h] and W_uv[h] are rows of this rank's kv_b shard: per head dn rows of W_uk then
// dv rows of W_uv, each of kv_lora columns. Rows of a step are r = t * nh_r + h.
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

constexpr int kAbsorbCols = 64; // latent columns per absorb block: 2 per lane

// The nope dimension is split over kAbsorbWarps warps (8; 4 under use_old("absorb")).
template <int kAbsorbWarps>
__global__ void __launch_bounds__(kAbsorbWarps *kWarp)
    mla_absorb_kernel(const bf16 *__restrict__ q, const bf16 *__restrict__ kv_b, const float2 *__restrict__ rope_cs,
                      const int32_t *__restrict__ pos0, bf16 *__restrict__ qlat, bf16 *__restrict__ qpe, int nh_r,
                      int dn, int dr, int dv, int rkv, int T)
{
    __shared__ float qn[kMaxT][kMaxNope];
    __shared__ float red[kAbsorbWarps][kMaxT][kAbsorbCols];
    pdl_begin();
    const int h = blockIdx.x, lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int qw = dn + dr; // one head's query width
    if (blockIdx.y == gridDim.y - 1) { // the rope part of the query
        const int pairs = dr / 2;
        for (int i = threadIdx.x; i < T * pairs; i += blockDim.x) {
            const int t = i / pairs, k = i % pairs;
            const bf16 *src = q + ((size_t)t * nh_r + h) * qw + dn + 2 * k;
            rope_pair(bf(src[0]), bf(src[1]), rope_cs[(size_t)(*pos0 + t) * pairs + k],
                      qpe + ((size_t)t * nh_r + h) * dr + 2 * k);
        }
        return;
    }
    for (int i = threadIdx.x; i < T * dn; i += blockDim.x)
        qn[i / dn][i % dn] = bf(q[((size_t)(i / dn) * nh_r + h) * qw + i % dn]);
    __syncthreads();
    const int c = blockIdx.y * kAbsorbCols + 2 * lane; // this lane's two latent columns
    const bf16 *wuk = kv_b + (size_t)h * (dn + dv) * rkv;
    float acc[kMaxT][2] = {};
    const int d_per_warp = (dn + kAbsorbWarps - 1) / kAbsorbWarps;
    const int d0 = warp * d_per_warp, d1 = min(dn, d0 + d_per_warp);
    if (c < rkv) {
#pragma unroll 16
        for (int d = d0; d < d1; d++) { // 16 loads in flight per lane
            const uint32_t w2 = *reinterpret_cast<const uint32_t *>(wuk + (size_t)d * rkv + c);
            const float wa = bf16_lo(w2), wb = bf16_hi(w2);
#pragma unroll
            for (int t = 0; t < kMaxT; t++)
                if (t < T)
                    acc[t][0] = fmaf(qn[t][d], wa, acc[t][0]), acc[t][1] = fmaf(qn[t][d], wb, acc[t][1]);
        }
    }
#pragma unroll
    for (int t = 0; t < kMaxT; t++)
        if (t < T)
            red[warp][t][2 * lane] = acc[t][0], red[warp][t][2 * lane + 1] = acc[t][1];
    __syncthreads();
    for (int i = threadIdx.x; i < T * kAbsorbCols; i += blockDim.x) {
        const int t = i / kAbsorbCols, col = i % kAbsorbCols, cc = blockIdx.y * kAbsorbCols + col;
        if (cc >= rkv)
            continue;
        float s = 0.0f;
        for (int w = 0; w < kAbsorbWarps; w++) // fixed order
            s += red[w][t][col];
        qlat[((size_t)t * nh_r + h) * rkv + cc] = to_bf(s);
    }
}

constexpr int kAttendWarps = 8;

// Dynamic shared memory: ckv [C x rkv] bf16, kpe [C x dr] bf16, scores [R x C] fp32.
__global__ void __launch_bounds__(kAttendWarps *kWarp)
    mla_attend_kernel(const bf16 *__restrict__ qlat, const bf16 *__restrict__ qpe,
                      const bf16 *__restrict__ cache_ckv, const bf16 *__restrict__ cache_kpe,
                      const int32_t *__restrict__ pos0, float *__restrict__ partial, int nh_r, int dr, int rkv,
                      float scale, int T)
{
    extern __shared__ uint4 smem_v[];
    pdl_begin();
    const int P0 = *pos0, L = P0 + T, c0 = blockIdx.x * kAttnChunk;
    if (c0 >= L)
        return;
    const int n = min(kAttnChunk, L - c0), R = T * nh_r, ps = rkv + 4;
    bf16 *ckv = reinterpret_cast<bf16 *>(smem_v);
    bf16 *kpe = ckv + (size_t)kAttnChunk * rkv;
    float *sc = reinterpret_cast<float *>(kpe + (size_t)kAttnChunk * dr);
    { // stage the chunk (rows are contiguous in the cache), kStage loads in flight per thread
        constexpr int kStage = 8;
        const uint4 *src = reinterpret_cast<const uint4 *>(cache_ckv + (size_t)c0 * rkv);
        const int nv = n * rkv / 8, step = blockDim.x * kStage;
        for (int i0 = threadIdx.x; i0 < nv; i0 += step) {
            uint4 v[kStage];
#pragma unroll
            for (int j = 0; j < kStage; j++)
                if (i0 + j * (int)blockDim.x < nv)
                    v[j] = ld_stream(src + i0 + j * blockDim.x);
#pragma unroll
            for (int j = 0; j < kStage; j++)
                if (i0 + j * (int)blockDim.x < nv)
                    smem_v[i0 + j * blockDim.x] = v[j];
        }
        const uint4 *srcp = reinterpret_cast<const uint4 *>(cache_kpe + (size_t)c0 * dr);
        uint4 *dstp = reinterpret_cast<uint4 *>(kpe);
        for (int i = threadIdx.x; i < n * dr / 8; i += blockDim.x)
            dstp[i] = ld_stream(srcp + i);
    }
    __syncthreads();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int nv = rkv / 8; // 16-byte vectors of a latent row; lane holds v = lane + 32 i
    for (int r = warp; r < R; r += kAttendWarps) {
        const int t = r / nh_r;
        float qf[kMaxLatVec][8], pf[8] = {};
#pragma unroll
        for (int i = 0; i < kMaxLatVec; i++) {
            const int v = lane + kWarp * i;
            if (v < nv)
                unpack8(reinterpret_cast<const uint4 *>(qlat + (size_t)r * rkv)[v], qf[i]);
        }
        if (lane < dr / 8)
            unpack8(reinterpret_cast<const uint4 *>(qpe + (size_t)r * dr)[lane], pf);
        float *row_sc = sc + (size_t)r * kAttnChunk;
        constexpr int kPos = 4; // positions whose warp reductions interleave
        for (int p0 = 0; p0 < n; p0 += kPos) {
            float s[kPos];
#pragma unroll
            for (int j = 0; j < kPos; j++) {
                const int p = min(p0 + j, n - 1); // a repeated last position is computed, not stored
                s[j] = 0.0f;
#pragma unroll
                for (int i = 0; i < kMaxLatVec; i++) {
                    const int v = lane + kWarp * i;
                    if (v < nv) {
                        float kf[8];
                        unpack8(reinterpret_cast<const uint4 *>(ckv + (size_t)p * rkv)[v], kf);
#pragma unroll
                        for (int q8 = 0; q8 < 8; q8++)
                            s[j] = fmaf(qf[i][q8], kf[q8], s[j]);
                    }
                }
                if (lane < dr / 8) {
                    float kf[8];
                    unpack8(reinterpret_cast<const uint4 *>(kpe + (size_t)p * dr)[lane], kf);
#pragma unroll
                    for (int q8 = 0; q8 < 8; q8++)
                        s[j] = fmaf(pf[q8], kf[q8], s[j]);
                }
            }
#pragma unroll
            for (int o = kWarp / 2; o > 0; o >>= 1)
#pragma unroll
                for (int j = 0; j < kPos; j++)
                    s[j] += __shfl_xor_sync(0xffffffffu, s[j], o);
            if (lane == 0)
#pragma unroll
                for (int j = 0; j < kPos; j++)
                    if (p0 + j < n)
                        row_sc[p0 + j] = c0 + p0 + j <= P0 + t ? s[j] * scale : -INFINITY;
        }
        __syncwarp();
        float m = -INFINITY;
        for (int p = lane; p < n; p += kWarp)
            m = fmaxf(m, row_sc[p]);
        m = warp_max(m);
        float l = 0.0f;
        for (int p = lane; p < n; p += kWarp) {
            const float e = m == -INFINITY ? 0.0f : expf(row_sc[p] - m);
            row_sc[p] = e;
            l += e;
        }
        l = warp_sum(l);
        __syncwarp();
        float o[kMaxLatVec][8] = {};
        for (int p = 0; p < n; p++) {
            const float e = row_sc[p];
#pragma unroll
            for (int i = 0; i < kMaxLatVec; i++) {
                const int v = lane + kWarp * i;
                if (v < nv) {
                    float kf[8];
                    unpack8(reinterpret_cast<const uint4 *>(ckv + (size_t)p * rkv)[v], kf);
#pragma unroll
                    for (int j = 0; j < 8; j++)
                        o[i][j] = fmaf(e, kf[j], o[i][j]);
                }
            }
        }
        float *dst = partial + ((size_t)blockIdx.x * R + r) * ps;
#pragma unroll
        for (int i = 0; i < kMaxLatVec; i++) {
            const int v = lane + kWarp * i;
            if (v < nv) {
                reinterpret_cast<float4 *>(dst)[2 * v] = make_float4(o[i][0], o[i][1], o[i][2], o[i][3]);
                reinterpret_cast<float4 *>(dst)[2 * v + 1] = make_float4(o[i][4], o[i][5], o[i][6], o[i][7]);
            }
        }
        if (lane == 0)
            dst[rkv] = m, dst[rkv + 1] = l;
    }
}

constexpr int kCombineWarps = 8;
constexpr int kCombineRows = 32; // W_uv rows per block: 4 per warp

__global__ void __launch_bounds__(kCombineWarps *kWarp)
    mla_combine_kernel(const float *__restrict__ partial, const bf16 *__restrict__ kv_b,
                       const int32_t *__restrict__ pos0, bf16 *__restrict__ o, int nh_r, int dn, int dv, int rkv,
                       int T)
{
    __shared__ __align__(16) float olat[kMaxT][kMaxLatent];
    __shared__ float wch[kMaxChunks]; // per chunk: exp(m_c - M) / sum_c exp(m_c - M) l_c
    __shared__ float scratch[kWarp];
    pdl_begin();
    const int h = blockIdx.x, R = T * nh_r, ps = rkv + 4;
    const int nch = (*pos0 + T + kAttnChunk - 1) / kAttnChunk;
    const size_t cstride = (size_t)R * ps;
    for (int t = 0; t < T; t++) {
        const float *base = partial + (size_t)(t * nh_r + h) * ps;
        const float lsum = chunk_weights(base, cstride, rkv, nch, wch, scratch);
        for (int d = threadIdx.x; d < rkv; d += blockDim.x) {
            float acc = 0.0f;
#pragma unroll 16
            for (int ch = 0; ch < nch; ch++)
                acc = fmaf(wch[ch], base[ch * cstride + d], acc);
            olat[t][d] = bf(to_bf(acc / lsum)); // olat is stored bf16 (forward.md)
        }
        __syncthreads(); // wch is rewritten for the next token
    }
    __syncthreads();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, nv = rkv / 8;
    for (int q = 0; q < kCombineRows / kCombineWarps; q++) {
        const int j = blockIdx.y * kCombineRows + warp * (kCombineRows / kCombineWarps) + q;
        if (j >= dv)
            break;
        const uint4 *w = reinterpret_cast<const uint4 *>(kv_b + ((size_t)h * (dn + dv) + dn + j) * rkv);
        float acc[kMaxT] = {};
        for (int v = lane; v < nv; v += kWarp) {
            float wf[8];
            unpack8(ld_stream(w + v), wf);
#pragma unroll
            for (int t = 0; t < kMaxT; t++) {
                if (t < T) {
                    const float4 a = reinterpret_cast<const float4 *>(olat[t])[2 * v];
                    const float4 b = reinterpret_cast<const float4 *>(olat[t])[2 * v + 1];
                    acc[t] += wf[0] * a.x + wf[1] * a.y + wf[2] * a.z + wf[3] * a.w + wf[4] * b.x + wf[5] * b.y +
                              wf[6] * b.z + wf[7] * b.w;
                }
            }
        }
#pragma unroll
        for (int t = 0; t < kMaxT; t++) {
            if (t < T) {
                const float s = warp_sum(acc[t]);
                if (lane == 0)
                    o[((size_t)t * nh_r + h) * dv + j] = to_bf(s);
            }
        }
    }
}

} // namespace

size_t mla_attend_smem(int rkv, int dr, int nh_r, int T)
{
    return (size_t)kAttnChunk * (rkv + dr) * sizeof(bf16) + (size_t)T * nh_r * kAttnChunk * sizeof(float);
}

cudaError_t mla_setup(int rkv, int dr, int nh_r)
{
    const cudaError_t e = cudaFuncSetAttribute(mla_attend_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                               (int)mla_attend_smem(rkv, dr, nh_r, kMaxT));
    return e != cudaSuccess ? e : mla_split_setup(rkv, dr, nh_r);
}

cudaError_t mla_absorb(const launch_ctx &c, const bf16 *q, const bf16 *kv_b, const float2 *rope_cs,
                       const int32_t *pos0, bf16 *qlat, bf16 *qpe, int nh_r, int dn, int dr, int dv, int rkv, int T)
{
    const dim3 grid(nh_r, (rkv + kAbsorbCols - 1) / kAbsorbCols + 1);
    if (use_old("absorb"))
        return launch(c, mla_absorb_kernel<4>, grid, dim3(4 * kWarp), 0, q, kv_b, rope_cs, pos0, qlat, qpe, nh_r, dn,
                      dr, dv, rkv, T);
    return launch(c, mla_absorb_kernel<8>, grid, dim3(8 * kWarp), 0, q, kv_b, rope_cs, pos0, qlat, qpe, nh_r, dn, dr,
                  dv, rkv, T);
}

cudaError_t mla_attend(const launch_ctx &c, const bf16 *qlat, const bf16 *qpe, const bf16 *cache_ckv,
                       const bf16 *cache_kpe, const int32_t *pos0, float *partial, int nh_r, int dr, int rkv,
                       float scale, int T, int context)
{
    const dim3 grid((context + kAttnChunk - 1) / kAttnChunk);
    return launch(c, mla_attend_kernel, grid, dim3(kAttendWarps * kWarp), mla_attend_smem(rkv, dr, nh_r, T), qlat,
                  qpe, cache_ckv, cache_kpe, pos0, partial, nh_r, dr, rkv, scale, T);
}

cudaError_t mla_combine(const launch_ctx &c, const float *partial, const bf16 *kv_b, const int32_t *pos0, bf16 *o,
                        int nh_r, int dn, int dv, int rkv, int T)
{
    const dim3 grid(nh_r, (dv + kCombineRows - 1) / kCombineRows);
    return launch(c, mla_combine_kernel, grid, dim3(kCombineWarps * kWarp), 0, partial, kv_b, pos0, o, nh_r, dn, dv,
                  rkv, T);
}

} // namespace arbk
