// SPDX-License-Identifier: MIT
// Weights generated on the device from the seed (engine/model/wgen.h), bit-identical to the
// CPU reference's (engine/cpu/cpu_ref_weights.c): the same fp32 operations in the same order,
// each rounded once (__fmul_rn/__fadd_rn keep nvcc from contracting them into an FMA),
// then one bf16 rounding to nearest even. A block of rows x cols of an expert-major
// tensor per call; an element's key is its index in the unsharded tensor (INT4 experts
// stored in the fragment layout of moe_int4_layout.h, their values those of the host).
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/moe_int4_layout.h"
#include "model/wgen.h"

namespace arbk {
namespace {

constexpr int kGenThreads = 256;

__device__ __forceinline__ uint64_t global_index(const wgen_block &b, size_t e, size_t r, size_t col)
{
    return ((uint64_t)e * b.grows + b.row0 + r) * b.gcols + b.col0 + col;
}

__global__ void gen_linear_kernel(bf16 *dst, wgen_block b)
{
    const size_t per = (size_t)b.rows * b.cols, n = per * b.experts;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        const size_t e = i / per, r = (i % per) / b.cols, col = i % b.cols;
        const float u = arb_wgen_uniform(b.seed, b.tensor, b.layer, global_index(b, e, r, col));
        dst[i] = to_bf(__fmul_rn(b.c, u));
    }
}

__global__ void gen_norm_kernel(bf16 *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = to_bf(__fadd_rn(1.0f, __fmul_rn(0.1f, arb_wgen_uniform(seed, tensor, layer, i))));
}

__global__ void gen_bias_kernel(float *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __fmul_rn(0.01f, arb_wgen_uniform(seed, tensor, layer, i));
}

// Packed words and group scales of one block, in the mma fragment layout of
// moe_int4_layout.h (each stored word or scale computed from its logical row and column).
__global__ void gen_int4_kernel(uint32_t *packed, bf16 *scale, wgen_block b, uint32_t scale_tensor, float cs)
{
    const size_t wpe = (size_t)b.rows * b.cols / 8, gpr = b.cols / 32, spe = (size_t)b.rows * gpr; // per expert
    const size_t nw = (size_t)b.experts * wpe, ns = (size_t)b.experts * spe;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < nw; i += stride) {
        const size_t e = i / wpe;
        uint32_t w = 0;
        for (int v = 0; v < 8; v++) {
            unsigned r, col;
            int4_frag_rc(i % wpe, v, b.cols, &r, &col);
            w |= ((uint32_t)arb_wgen_int4(b.seed, b.tensor, b.layer, global_index(b, e, r, col)) & 0xfu) << (4 * v);
        }
        packed[i] = w;
    }
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < ns; i += stride) {
        const size_t e = i / spe;
        unsigned r, g;
        int4_frag_scale_rg(i % spe, (unsigned)gpr, &r, &g);
        const uint64_t sidx = ((uint64_t)e * b.grows + b.row0 + r) * (b.gcols / 32) + b.col0 / 32 + g;
        const float u = arb_wgen_uniform(b.seed, scale_tensor, b.layer, sidx);
        scale[i] = to_bf(__fmul_rn(cs, __fadd_rn(1.0f, __fmul_rn(0.25f, u))));
    }
}

int gen_blocks(size_t n, int sms)
{
    const size_t want = (n + kGenThreads - 1) / kGenThreads, cap = (size_t)sms * 16;
    return (int)(want < cap ? (want ? want : 1) : cap);
}

} // namespace

cudaError_t gen_linear(cudaStream_t s, bf16 *dst, const wgen_block &b, int sms)
{
    gen_linear_kernel<<<gen_blocks((size_t)b.experts * b.rows * b.cols, sms), kGenThreads, 0, s>>>(dst, b);
    return cudaGetLastError();
}

cudaError_t gen_norm(cudaStream_t s, bf16 *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer, int sms)
{
    gen_norm_kernel<<<gen_blocks(n, sms), kGenThreads, 0, s>>>(dst, n, seed, tensor, layer);
    return cudaGetLastError();
}

cudaError_t gen_bias(cudaStream_t s, float *dst, size_t n, uint64_t seed, uint32_t tensor, uint32_t layer, int sms)
{
    gen_bias_kernel<<<gen_blocks(n, sms), kGenThreads, 0, s>>>(dst, n, seed, tensor, layer);
    return cudaGetLastError();
}

cudaError_t gen_int4(cudaStream_t s, uint32_t *packed, bf16 *scale, const wgen_block &b, uint32_t scale_tensor,
                     float cs, int sms)
{
    if (b.cols % 32 || b.col0 % 32 || b.gcols % 32 || b.rows % 16)
        return cudaErrorInvalidValue;
    gen_int4_kernel<<<gen_blocks((size_t)b.experts * b.rows * b.cols / 8, sms), kGenThreads, 0, s>>>(
        packed, scale, b, scale_tensor, cs);
    return cudaGetLastError();
}

} // namespace arbk
