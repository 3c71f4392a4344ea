// SPDX-License-Identifier: MIT
// One block index of mla_prep (mla_prep.cu) and of the absorption (mla.cu), for their own
// kernels and persist.cu's persistent launch alike (P: common.cuh's sync). See those files
// for what they compute.
#ifndef ARB_ENGINE_KERNELS_MLA_OPS_CUH
#define ARB_ENGINE_KERNELS_MLA_OPS_CUH

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/norm.cuh"

namespace arbk {

// Job (t, y) of mla_prep by one warp: y 0 normalizes the query latent of token t, y 1 writes
// its cache row (the KV latent's norm, RoPE on the key part). The same operations whichever
// warp, block or launch runs it (warp_rmsnorm), so every form's results are bit-identical.
// rq, rkv multiples of 8 (mla_prep checks). COH: qkva was written within this launch.
template <bool COH>
__device__ __forceinline__ void mla_prep_job(const bf16 *qkva, const bf16 *__restrict__ q_a_norm,
                                             const bf16 *__restrict__ kv_a_norm, const float2 *__restrict__ rope_cs,
                                             const int32_t *__restrict__ pos0, bf16 *qa, bf16 *cache_ckv,
                                             bf16 *cache_kpe, int rq, int rkv, int dr, float eps, int t, int y)
{
    const int width = rq + rkv + dr;
    const bf16 *row = qkva + (size_t)t * width;
    if (y == 0) {
        warp_rmsnorm<COH>(row, q_a_norm, qa + (size_t)t * rq, rq, eps);
        return;
    }
    const int pos = *pos0 + t;
    warp_rmsnorm<COH>(row + rq, kv_a_norm, cache_ckv + (size_t)pos * rkv, rkv, eps);
    const bf16 *pe = row + rq + rkv;
    for (int i = threadIdx.x % kWarp; i < dr / 2; i += kWarp) {
        const bf16 a = COH ? ldcg_bf16(pe + 2 * i) : pe[2 * i];
        const bf16 b = COH ? ldcg_bf16(pe + 2 * i + 1) : pe[2 * i + 1];
        rope_pair(bf(a), bf(b), rope_cs[(size_t)pos * (dr / 2) + i], cache_kpe + (size_t)pos * dr + 2 * i);
    }
}

// Job (t, 1) of mla_prep_job, the same bits with few registers (mla_qb.cu's --fuse prep_qb):
// row is token t's qkva row, the KV latent's norm by warp_rmsnorm_staged (stage: rkv values of
// shared memory; kv_a_norm staged in w_s), then the same RoPE. (mla_prep_job keeps its own loop:
// calling a shared one changed the default kernels' code, measured in their cubins.)
__device__ __forceinline__ void mla_prep_job_staged(const bf16 *row, const bf16 *w_s, bf16 *stage,
                                                    const float2 *__restrict__ rope_cs, int pos, bf16 *cache_ckv,
                                                    bf16 *cache_kpe, int rq, int rkv, int dr, float eps)
{
    warp_rmsnorm_staged(row + rq, w_s, stage, cache_ckv + (size_t)pos * rkv, rkv, eps);
    const bf16 *pe = row + rq + rkv;
    for (int i = threadIdx.x % kWarp; i < dr / 2; i += kWarp)
        rope_pair(bf(ldcg_bf16(pe + 2 * i)), bf(ldcg_bf16(pe + 2 * i + 1)), rope_cs[(size_t)pos * (dr / 2) + i],
                  cache_kpe + (size_t)pos * dr + 2 * i);
}

// Every job of a step of T tokens by the block's warps (warp w: jobs w, w + warps, ..).
template <bool COH>
__device__ __forceinline__ void mla_prep_all(const bf16 *qkva, const bf16 *__restrict__ q_a_norm,
                                             const bf16 *__restrict__ kv_a_norm, const float2 *__restrict__ rope_cs,
                                             const int32_t *__restrict__ pos0, bf16 *qa, bf16 *cache_ckv,
                                             bf16 *cache_kpe, int rq, int rkv, int dr, float eps, int T)
{
    for (int j = threadIdx.x / kWarp; j < 2 * T; j += blockDim.x / kWarp)
        mla_prep_job<COH>(qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, j / 2,
                          j % 2);
}

// Tile (t, y) of the persistent launch's prep stage: job (t, y) by the CTA's first warp.
template <class P>
__device__ __forceinline__ void mla_prep_tile(const P &p, const bf16 *qkva, const bf16 *__restrict__ q_a_norm,
                                              const bf16 *__restrict__ kv_a_norm, const float2 *__restrict__ rope_cs,
                                              const int32_t *__restrict__ pos0, bf16 *qa, bf16 *cache_ckv,
                                              bf16 *cache_kpe, int rq, int rkv, int dr, float eps, int t, int y)
{
    p.wait();
    p.launch_dependents();
    if (threadIdx.x < kWarp)
        mla_prep_job<P::coherent>(qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps,
                                  t, y);
}

constexpr int kAbsorbCols = 64; // latent columns per absorb block: 2 per lane
constexpr int kAbsorbWarps = 8; // the nope dimension split over the block's warps

// Shared memory of one absorb block (sm: 16-byte aligned): qn [kMaxT][kMaxNope] and
// red [kAbsorbWarps][kMaxT][kAbsorbCols], fp32.
constexpr size_t kAbsorbSmem = sizeof(float) * ((size_t)kMaxT * kMaxNope + (size_t)kAbsorbWarps * kMaxT * kAbsorbCols);

// Block (h, y) of the grid (nh_r, gy): y < gy - 1 the latent columns y * 64 .. of head h,
// y = gy - 1 the head's rope part.
template <class P>
__device__ __forceinline__ void mla_absorb_tile(const P &p, const bf16 *q, const bf16 *__restrict__ kv_b,
                                                const float2 *__restrict__ rope_cs, const int32_t *__restrict__ pos0,
                                                bf16 *qlat, bf16 *qpe, int nh_r, int dn, int dr, int dv, int rkv, int T,
                                                int h, int y, int gy, float *sm, const l2_ahead &ahead = l2_ahead())
{
    float(*qn)[kMaxNope] = reinterpret_cast<float(*)[kMaxNope]>(sm);
    float(*red)[kMaxT][kAbsorbCols] = reinterpret_cast<float(*)[kMaxT][kAbsorbCols]>(sm + kMaxT * kMaxNope);
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int qw = dn + dr; // one head's query width
    const int d_per_warp = (dn + kAbsorbWarps - 1) / kAbsorbWarps;
    const int d0 = warp * d_per_warp, d1 = min(dn, d0 + d_per_warp);
    const bf16 *wuk = kv_b + (size_t)h * (dn + dv) * rkv;
    p.launch_dependents();
    if (y != gy - 1) // this block's W_uk columns (128 bytes a row) toward L2 before waiting
        for (int d = d0 + lane; d < d1; d += kWarp)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(wuk + (size_t)d * rkv + y * kAbsorbCols));
    p.wait();
    // a later kernel's weights toward L2 (--l2-ahead) while this latency-bound one runs
    grid_prefetch_l2(ahead);
    if (y == gy - 1) { // the rope part of the query
        const int pairs = dr / 2;
        for (int i = threadIdx.x; i < T * pairs; i += blockDim.x) {
            const int t = i / pairs, k = i % pairs;
            const bf16 *src = q + ((size_t)t * nh_r + h) * qw + dn + 2 * k;
            const bf16 a = P::coherent ? ldcg_bf16(src) : src[0], b = P::coherent ? ldcg_bf16(src + 1) : src[1];
            rope_pair(bf(a), bf(b), rope_cs[(size_t)(*pos0 + t) * pairs + k],
                      qpe + ((size_t)t * nh_r + h) * dr + 2 * k);
        }
        return;
    }
    for (int i = threadIdx.x; i < T * dn; i += blockDim.x) {
        const bf16 *src = q + ((size_t)(i / dn) * nh_r + h) * qw + i % dn;
        qn[i / dn][i % dn] = bf(P::coherent ? ldcg_bf16(src) : *src);
    }
    __syncthreads();
    const int c = y * kAbsorbCols + 2 * lane; // this lane's two latent columns
    float acc[kMaxT][2] = {};
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
        const int t = i / kAbsorbCols, col = i % kAbsorbCols, cc = y * kAbsorbCols + col;
        if (cc >= rkv)
            continue;
        float s = 0.0f;
        for (int w = 0; w < kAbsorbWarps; w++) // fixed order
            s += red[w][t][col];
        qlat[((size_t)t * nh_r + h) * rkv + cc] = to_bf(s);
    }
}

// The absorb grid's y extent: the latent column blocks, then the rope block.
__host__ __device__ constexpr int mla_absorb_gy(int rkv) { return (rkv + kAbsorbCols - 1) / kAbsorbCols + 1; }

} // namespace arbk

#endif
