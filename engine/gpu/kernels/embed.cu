// SPDX-License-Identifier: MIT
// Embedding: res[t] = embed_tokens[token[t]] (the residual stream starts as the token's
// row) and h[t] = rmsnorm(res[t], input_layernorm of layer 0), one block per token.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/norm.cuh"

namespace arbk {
namespace {

constexpr int kEmbedThreads = 256;
constexpr int kEmbedHeld = 32; // values a thread holds in one round of loads: rows of up to 8192

// Thread i owns values i, i + 256, .. of the row in both forms, and sums their squares in that
// order (block_rmsnorm's), so the two forms give the same bits. HELD: the row's values and the
// norm's weights are all loaded at once and held in registers, one round trip each (the weights'
// beside the token id's: written before the PDL wait, but ptxas puts the wait first on sm_90),
// then stored from there; the loop form (block_rmsnorm, for rows longer than HELD covers) loads as
// its loops go and reads `res` back. At Kimi-K2 (H 7168) on an H100 the step's embed family
// (graph replay less the step without it) was 24-31 us in the loop form and -2 to 14 us held; the
// step decode -0.44%, verify -0.55%, four alternated rounds apart, tokens and logits identical
// (results/engine-h100/ed8cc3d-emb-d14/).
template <bool HELD>
__global__ void __launch_bounds__(kEmbedThreads)
    embed_kernel(const bf16 *__restrict__ table, const int32_t *__restrict__ tokens, const bf16 *__restrict__ norm,
                 bf16 *__restrict__ res, bf16 *__restrict__ h, int H, float eps)
{
    ARB_TL(ARB_TL_EMBED);
    __shared__ float scratch[kWarp];
    const int t = blockIdx.x;
    bf16 *res_t = res + (size_t)t * H, *h_t = h + (size_t)t * H;
    if constexpr (!HELD) {
        pdl_begin();
        const bf16 *row = table + (size_t)tokens[t] * H;
        for (int i = threadIdx.x; i < H; i += kEmbedThreads)
            res_t[i] = row[i];
        __syncthreads(); // block_rmsnorm reads res_t written by other threads
        block_rmsnorm(res_t, norm, h_t, H, eps, scratch);
    } else {
        bf16 w[kEmbedHeld], x[kEmbedHeld];
#pragma unroll
        for (int j = 0; j < kEmbedHeld; j++) {
            const int i = threadIdx.x + j * kEmbedThreads;
            w[j] = i < H ? norm[i] : to_bf(0.0f);
        }
        pdl_begin();
        const bf16 *row = table + (size_t)tokens[t] * H;
#pragma unroll
        for (int j = 0; j < kEmbedHeld; j++) {
            const int i = threadIdx.x + j * kEmbedThreads;
            x[j] = i < H ? row[i] : to_bf(0.0f);
        }
        float ss = 0.0f;
#pragma unroll
        for (int j = 0; j < kEmbedHeld; j++) {
            const int i = threadIdx.x + j * kEmbedThreads;
            if (i < H) {
                res_t[i] = x[j];
                const float v = bf(x[j]);
                ss += v * v;
            }
        }
        const float inv = 1.0f / sqrtf(block_sum(ss, scratch) / (float)H + eps);
#pragma unroll
        for (int j = 0; j < kEmbedHeld; j++) {
            const int i = threadIdx.x + j * kEmbedThreads;
            if (i < H)
                h_t[i] = to_bf(bf(x[j]) * inv * bf(w[j]));
        }
    }
}

} // namespace

cudaError_t embed_rmsnorm(const launch_ctx &c, const bf16 *table, const int32_t *tokens, const bf16 *norm, bf16 *res,
                          bf16 *h, int H, float eps, int T)
{
    const bool held = H <= kEmbedThreads * kEmbedHeld;
    return launch(c, held ? embed_kernel<true> : embed_kernel<false>, dim3(T), dim3(kEmbedThreads), 0, table, tokens,
                  norm, res, h, H, eps);
}

ARB_TL_TU(embed)

} // namespace arbk
