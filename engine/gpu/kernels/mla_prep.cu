// SPDX-License-Identifier: MIT
// After the fused q_a + kv_a projection: the query latent's norm and the KV latent's
// norm, RoPE on the shared key part, both written into the replicated cache.
//   qkva [T x (rq + rkv + dr)] bf16 = h @ [q_a ; kv_a]^T
//   qa[t]                = rmsnorm(qkva[t, :rq], q_a_layernorm)          -> qa   [T x rq]
//   cache_ckv[P0 + t]    = rmsnorm(qkva[t, rq : rq + rkv], kv_a_layernorm)
//   cache_kpe[P0 + t]    = rope(qkva[t, rq + rkv :], P0 + t)
// Grid (T, 2): blockIdx.y 0 normalizes the query latent, 1 writes the cache row.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/mla_ops.cuh"

namespace arbk {

namespace {

__global__ void __launch_bounds__(256)
    mla_prep_kernel(const bf16 *__restrict__ qkva, const bf16 *__restrict__ q_a_norm,
                    const bf16 *__restrict__ kv_a_norm, const float2 *__restrict__ rope_cs,
                    const int32_t *__restrict__ pos0, bf16 *__restrict__ qa, bf16 *__restrict__ cache_ckv,
                    bf16 *__restrict__ cache_kpe, int rq, int rkv, int dr, float eps)
{
    mla_prep_tile(pdl_sync(), qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps,
                  (int)blockIdx.x, (int)blockIdx.y);
}

} // namespace

cudaError_t mla_prep(const launch_ctx &c, const bf16 *qkva, const bf16 *q_a_norm, const bf16 *kv_a_norm,
                     const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv, bf16 *cache_kpe, int rq,
                     int rkv, int dr, float eps, int T)
{
    return launch(c, mla_prep_kernel, dim3(T, 2), dim3(256), 0, qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa,
                  cache_ckv, cache_kpe, rq, rkv, dr, eps);
}

} // namespace arbk
