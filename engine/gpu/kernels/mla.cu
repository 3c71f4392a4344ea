// SPDX-License-Identifier: MIT
// MLA weight absorption (forward.md): qlat[t,h] = q_nope[t,h] @ W_uk[h] and
// qpe[t,h] = rope(q_pe[t,h], P0 + t); the attention itself is mla_split.cu's.
// W_uk[h] and W_uv[h] are rows of this rank's kv_b shard: per head dn rows of W_uk then
// dv rows of W_uv, each of kv_lora columns. Rows of a step are r = t * nh_r + h.
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

constexpr int kAbsorbCols = 64; // latent columns per absorb block: 2 per lane
constexpr int kAbsorbWarps = 8; // the nope dimension split over the block's warps

__global__ void __launch_bounds__(kAbsorbWarps *kWarp)
    mla_absorb_kernel(const bf16 *__restrict__ q, const bf16 *__restrict__ kv_b, const float2 *__restrict__ rope_cs,
                      const int32_t *__restrict__ pos0, bf16 *__restrict__ qlat, bf16 *__restrict__ qpe, int nh_r,
                      int dn, int dr, int dv, int rkv, int T)
{
    __shared__ float qn[kMaxT][kMaxNope];
    __shared__ float red[kAbsorbWarps][kMaxT][kAbsorbCols];
    const int h = blockIdx.x, lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const int qw = dn + dr; // one head's query width
    const int d_per_warp = (dn + kAbsorbWarps - 1) / kAbsorbWarps;
    const int d0 = warp * d_per_warp, d1 = min(dn, d0 + d_per_warp);
    const bf16 *wuk = kv_b + (size_t)h * (dn + dv) * rkv;
    pdl_launch_dependents();
    if (blockIdx.y != gridDim.y - 1) // this block's W_uk columns (128 bytes a row) toward L2 before waiting
        for (int d = d0 + lane; d < d1; d += kWarp)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(wuk + (size_t)d * rkv + blockIdx.y * kAbsorbCols));
    pdl_wait();
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
        const int t = i / kAbsorbCols, col = i % kAbsorbCols, cc = blockIdx.y * kAbsorbCols + col;
        if (cc >= rkv)
            continue;
        float s = 0.0f;
        for (int w = 0; w < kAbsorbWarps; w++) // fixed order
            s += red[w][t][col];
        qlat[((size_t)t * nh_r + h) * rkv + cc] = to_bf(s);
    }
}

} // namespace

cudaError_t mla_absorb(const launch_ctx &c, const bf16 *q, const bf16 *kv_b, const float2 *rope_cs,
                       const int32_t *pos0, bf16 *qlat, bf16 *qpe, int nh_r, int dn, int dr, int dv, int rkv, int T)
{
    const dim3 grid(nh_r, (rkv + kAbsorbCols - 1) / kAbsorbCols + 1);
    return launch(c, mla_absorb_kernel, grid, dim3(kAbsorbWarps * kWarp), 0, q, kv_b, rope_cs, pos0, qlat, qpe, nh_r,
                  dn, dr, dv, rkv, T);
}

} // namespace arbk
