// SPDX-License-Identifier: MIT
// Embedding: res[t] = embed_tokens[token[t]] (the residual stream starts as the token's
// row) and h[t] = rmsnorm(res[t], input_layernorm of layer 0), one block per token.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/common.cuh"
#include "gpu/kernels/norm.cuh"

namespace arbk {
namespace {

__global__ void __launch_bounds__(256) embed_kernel(const bf16 *__restrict__ table, const int32_t *__restrict__ tokens,
                                                     const bf16 *__restrict__ norm, bf16 *__restrict__ res,
                                                     bf16 *__restrict__ h, int H, float eps)
{
    ARB_TL(ARB_TL_EMBED);
    __shared__ float scratch[kWarp];
    pdl_begin();
    const int t = blockIdx.x;
    const bf16 *row = table + (size_t)tokens[t] * H;
    bf16 *res_t = res + (size_t)t * H;
    for (int i = threadIdx.x; i < H; i += blockDim.x)
        res_t[i] = row[i];
    __syncthreads(); // block_rmsnorm reads res_t written by other threads
    block_rmsnorm(res_t, norm, h + (size_t)t * H, H, eps, scratch);
}

} // namespace

cudaError_t embed_rmsnorm(const launch_ctx &c, const bf16 *table, const int32_t *tokens, const bf16 *norm, bf16 *res,
                          bf16 *h, int H, float eps, int T)
{
    return launch(c, embed_kernel, dim3(T), dim3(256), 0, table, tokens, norm, res, h, H, eps);
}

ARB_TL_TU(embed)

} // namespace arbk
