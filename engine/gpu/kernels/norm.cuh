// SPDX-License-Identifier: MIT
// RMSNorm of one row by a block or by a warp (forward.md's rmsnorm: the mean over the stored
// bf16 inputs), the embedding's and the MLA latents' (mla_ops.cuh, mla_qb.cu).
#ifndef ARB_ENGINE_KERNELS_NORM_CUH
#define ARB_ENGINE_KERNELS_NORM_CUH

#include "gpu/kernels/common.cuh"

namespace arbk {

// out = bf16(in / sqrt(mean(in^2) + eps) * w) over one row of n values, by the whole
// block (forward.md's rmsnorm; the mean over the stored bf16 inputs). The embedding's norm;
// the latent norms are warp_rmsnorm below.
__device__ __forceinline__ void block_rmsnorm(const bf16 *in, const bf16 *w, bf16 *out, int n, float eps,
                                              float *scratch)
{
    float ss = 0.0f;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const float v = bf(in[i]);
        ss += v * v;
    }
    const float inv = 1.0f / sqrtf(block_sum(ss, scratch) / (float)n + eps);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        out[i] = to_bf(bf(in[i]) * inv * bf(w[i]));
}

// Eight normed values: bf16(x * inv * w) for the eight bf16 of x and of w, rounded in pairs
// (warp_rmsnorm and warp_rmsnorm_staged alike, so their bits are the same).
__device__ __forceinline__ uint4 norm_pack8(uint4 x, uint4 wx, float inv)
{
    float f[8], g[8];
    unpack8(x, f);
    unpack8(wx, g);
    uint32_t o[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const __nv_bfloat162 pr = __floats2bfloat162_rn(f[2 * j] * inv * g[2 * j], f[2 * j + 1] * inv * g[2 * j + 1]);
        o[j] = *reinterpret_cast<const uint32_t *>(&pr);
    }
    return make_uint4(o[0], o[1], o[2], o[3]);
}

// out = bf16(in / sqrt(mean(in^2) + eps) * w) over one row of n values by one warp (the
// block_rmsnorm formula): lane l sums the squares of the row's 16-byte vectors l, l + 32, ..
// in order, then the lanes' sums in warp_sum's fixed order. in, w, out 16-byte aligned,
// n a multiple of 8. A row of up to kWarpNormVecs vectors a lane stays in registers (one
// round of loads); a longer one is read twice. COH: `in` was written within this launch.
constexpr int kWarpNormVecs = 8; // 2048 values
template <bool COH>
__device__ __forceinline__ void warp_rmsnorm(const bf16 *in, const bf16 *__restrict__ w, bf16 *out, int n, float eps)
{
    const int lane = threadIdx.x % kWarp, nv = n / 8;
    const uint4 *iv = reinterpret_cast<const uint4 *>(in);
    const uint4 *wv = reinterpret_cast<const uint4 *>(w);
    uint4 *ov = reinterpret_cast<uint4 *>(out);
    uint4 keep[kWarpNormVecs], wkeep[kWarpNormVecs]; // the row and its weights, loaded together
    float ss = 0.0f;
#pragma unroll
    for (int i = 0; i < kWarpNormVecs; i++) {
        const int v = lane + kWarp * i;
        keep[i] = v < nv ? (COH ? __ldcg(iv + v) : iv[v]) : make_uint4(0u, 0u, 0u, 0u);
        wkeep[i] = v < nv ? __ldg(wv + v) : make_uint4(0u, 0u, 0u, 0u);
    }
#pragma unroll
    for (int i = 0; i < kWarpNormVecs; i++) {
        float f[8];
        unpack8(keep[i], f);
#pragma unroll
        for (int j = 0; j < 8; j++)
            ss = fmaf(f[j], f[j], ss);
    }
    for (int v = lane + kWarp * kWarpNormVecs; v < nv; v += kWarp) {
        float f[8];
        unpack8(COH ? __ldcg(iv + v) : iv[v], f);
#pragma unroll
        for (int j = 0; j < 8; j++)
            ss = fmaf(f[j], f[j], ss);
    }
    const float inv = 1.0f / sqrtf(warp_sum(ss) / (float)n + eps);
    auto store = [&](int v, uint4 x, uint4 wx) { ov[v] = norm_pack8(x, wx, inv); };
#pragma unroll
    for (int i = 0; i < kWarpNormVecs; i++)
        if (lane + kWarp * i < nv)
            store(lane + kWarp * i, keep[i], wkeep[i]);
    for (int v = lane + kWarp * kWarpNormVecs; v < nv; v += kWarp)
        store(v, COH ? __ldcg(iv + v) : iv[v], __ldg(wv + v));
}

// warp_rmsnorm's bits with few registers (mla_qb.cu's --fuse prep_qb holds its own loads in
// flight meanwhile): the same sum of squares (lane l its vectors l, l + 32, .. in order, then
// warp_sum) and the same rounding of in * inv * w, with `in` (written by an earlier launch) copied
// once into `stage` (shared memory, may be `out`: each lane reads back only what it copied) and
// w from shared memory (staged by the caller). n a multiple of 8, all 16-byte aligned. The row's
// copies are cp.async (through L2, as __ldcg), all issued before any is waited on (the form before
// a2dc9cc loaded a vector into registers and stored it to `stage` before the next load, in its
// PTX; it measured the same on an H100: results/engine-h100/a2dc9cc-staged-cp/). Waits on all of
// the calling thread's cp.async copies.
__device__ __forceinline__ void warp_rmsnorm_staged(const bf16 *in, const bf16 *w_s, bf16 *stage, bf16 *out, int n,
                                                    float eps)
{
    const int lane = threadIdx.x % kWarp, nv = n / 8;
    const uint4 *iv = reinterpret_cast<const uint4 *>(in);
    uint4 *sv = reinterpret_cast<uint4 *>(stage);
    for (int v = lane; v < nv; v += kWarp)
        cp_async16(sv + v, iv + v);
    cp_async_wait_all();
    float ss = 0.0f;
    for (int v = lane; v < nv; v += kWarp) {
        float f[8];
        unpack8(sv[v], f);
#pragma unroll
        for (int j = 0; j < 8; j++)
            ss = fmaf(f[j], f[j], ss);
    }
    const float inv = 1.0f / sqrtf(warp_sum(ss) / (float)n + eps);
    const uint4 *wv = reinterpret_cast<const uint4 *>(w_s);
    uint4 *ov = reinterpret_cast<uint4 *>(out);
    for (int v = lane; v < nv; v += kWarp)
        ov[v] = norm_pack8(sv[v], wv[v], inv);
}

} // namespace arbk

#endif
