// SPDX-License-Identifier: MIT
// After the fused q_a + kv_a projection: the query latent's norm and the KV latent's
// norm, RoPE on the shared key part, both written into the replicated cache.
//   qkva [T x (rq + rkv + dr)] bf16 = h @ [q_a ; kv_a]^T
//   qa[t]                = rmsnorm(qkva[t, :rq], q_a_layernorm)          -> qa   [T x rq]
//   cache_ckv[P0 + t]    = rmsnorm(qkva[t, rq : rq + rkv], kv_a_layernorm)
//   cache_kpe[P0 + t]    = rope(qkva[t, rq + rkv :], P0 + t)
// 2T jobs of one warp each (mla_ops.cuh's mla_prep_job), run two ways with the same results:
//   mla_prep   its own launch, one block
//   qkva_prep  the projection (gemv.cu's block) and the jobs in one launch: the last block
//              of the projection to finish (a ticket) runs the jobs, so the step has no
//              launch of its own for them (under PDL each launch costs ~3 us of a decode
//              layer even when it reads nothing: the sixth session's per-kernel table);
//              with c.wave its grid is folded into one wave (wave_fit.h: Kimi-K2's 528
//              blocks at T = 1 are two waves on an H200), the ticket counting the blocks
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/gemv_ops.cuh"
#include "gpu/kernels/mla_ops.cuh"

namespace arbk {

namespace {

constexpr int kPrepThreads = 256;

__global__ void __launch_bounds__(kPrepThreads)
    mla_prep_kernel(const bf16 *__restrict__ qkva, const bf16 *__restrict__ q_a_norm,
                    const bf16 *__restrict__ kv_a_norm, const float2 *__restrict__ rope_cs,
                    const int32_t *__restrict__ pos0, bf16 *__restrict__ qa, bf16 *__restrict__ cache_ckv,
                    bf16 *__restrict__ cache_kpe, int rq, int rkv, int dr, float eps, int T)
{
    ARB_TL(ARB_TL_MLA_PREP);
    pdl_begin();
    mla_prep_all<false>(qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, T);
}

// MULTI: the folded grid (wave_fit.h), each block several tiles (gemv.cu's MULTI). Two blocks an
// SM on SM120 too (ARB_SM120_MINB: left to itself ptxas took 167-168 registers there at T = 1, one
// block an SM, against 123-128 and two on sm_90; capped, 128 and 8 bytes of spill at T = 1).
// JOBS false: the projection only, no ticket (--fuse prep_qb: mla_qb.cu runs the jobs).
template <int T, int S, bool PAIR, bool MULTI, bool JOBS>
__global__ void __launch_bounds__(kGemvWarps *kWarp ARB_SM120_MINB(2))
    qkva_prep_kernel(const bf16 *__restrict__ W, const bf16 *__restrict__ x, int N, int K, bf16 *qkva,
                     const bf16 *__restrict__ q_a_norm, const bf16 *__restrict__ kv_a_norm,
                     const float2 *__restrict__ rope_cs, const int32_t *__restrict__ pos0, bf16 *__restrict__ qa,
                     bf16 *__restrict__ cache_ckv, bf16 *__restrict__ cache_kpe, int rq, int rkv, int dr, float eps,
                     unsigned *ticket, int tiles)
{
    ARB_TL(ARB_TL_QKVA_PREP);
    if (MULTI)
        gemv_tiles<T, GEMV_BF16, S, PAIR>(pdl_sync(), W, nullptr, x, K, N, K, qkva, N, tiles);
    else
        gemv_tile<T, GEMV_BF16, S, PAIR>(pdl_sync(), W, nullptr, x, K, N, K, qkva, N, (int)blockIdx.x);
    if (!JOBS || !grid_last_block(ticket))
        return;
    mla_prep_all<true>(qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, T);
}

bool prep_shapes_ok(int rq, int rkv, int dr) { return rq > 0 && rkv > 0 && dr > 0 && rq % 8 == 0 && rkv % 8 == 0 && dr % 8 == 0; }

template <int S>
cudaError_t qkva_prep_s(const launch_ctx &c, const bf16 *W, const bf16 *x, int K, bf16 *qkva, const bf16 *q_a_norm,
                        const bf16 *kv_a_norm, const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv,
                        bf16 *cache_kpe, int rq, int rkv, int dr, float eps, unsigned *ticket, int T, bool jobs)
{
    return with_t(T, [&](auto t) {
        constexpr int Tc = decltype(t)::value;
        constexpr bool pair = gemv_pair(S, GEMV_BF16, Tc);
        constexpr int rows = gemv_rows_per_block(S, pair);
        const int N = rq + rkv + dr, tiles = (N + rows - 1) / rows;
        auto go = [&](auto jb) {
            constexpr bool J = decltype(jb)::value;
            return wave_launch<qkva_prep_kernel<Tc, S, pair, true, J>>(
                c, qkva_prep_kernel<Tc, S, pair, false, J>, tiles, dim3(kGemvWarps * kWarp), 0, W, x, N, K, qkva,
                q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, ticket, tiles);
        };
        return jobs ? go(std::true_type()) : go(std::false_type());
    });
}

} // namespace

cudaError_t mla_prep(const launch_ctx &c, const bf16 *qkva, const bf16 *q_a_norm, const bf16 *kv_a_norm,
                     const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv, bf16 *cache_kpe, int rq,
                     int rkv, int dr, float eps, int T)
{
    if (!prep_shapes_ok(rq, rkv, dr) || T < 1 || T > kMaxT)
        return cudaErrorInvalidValue;
    return launch(c, mla_prep_kernel, dim3(1), dim3(kPrepThreads), 0, qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa,
                  cache_ckv, cache_kpe, rq, rkv, dr, eps, T);
}

cudaError_t qkva_prep(const launch_ctx &c, const bf16 *W, const bf16 *x, int K, bf16 *qkva, const bf16 *q_a_norm,
                      const bf16 *kv_a_norm, const float2 *rope_cs, const int32_t *pos0, bf16 *qa, bf16 *cache_ckv,
                      bf16 *cache_kpe, int rq, int rkv, int dr, float eps, unsigned *ticket, int T, bool jobs)
{
    if (!prep_shapes_ok(rq, rkv, dr) || K % 8 || K <= 0 || T < 1 || T > kMaxT || (jobs && !ticket))
        return cudaErrorInvalidValue;
    switch (gemv_parts(K)) {
    case 4: return qkva_prep_s<4>(c, W, x, K, qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, ticket, T, jobs);
    case 2: return qkva_prep_s<2>(c, W, x, K, qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, ticket, T, jobs);
    default: return qkva_prep_s<1>(c, W, x, K, qkva, q_a_norm, kv_a_norm, rope_cs, pos0, qa, cache_ckv, cache_kpe, rq, rkv, dr, eps, ticket, T, jobs);
    }
}

ARB_TL_TU(mla_prep)

} // namespace arbk
