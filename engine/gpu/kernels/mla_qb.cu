// SPDX-License-Identifier: MIT
// q_b and the absorption in one launch (`arbench engine --fuse qb_absorb`, the launches form):
//   q = qa @ q_b_r^T;  qlat[t,h] = q_nope[t,h] @ W_uk[h];  qpe[t,h] = rope(q_pe[t,h], P0 + t)
// with the bits of the two launches it replaces (gemv.cu's q_b, mla.cu's absorb), one launch
// boundary and absorb's own round trips fewer. A CTA per 16 query rows of one head (grid
// (dn / 16 + dr / 16, nh_r)):
//   every CTA  its 16 rows of q as gemv_tile computes them (each row's K inputs in S =
//              gemv_parts(rq) parts, a warp a part and two rows: warp_rowdot's second row;
//              the parts added in part order, rounded to bf16), all of its weight loads
//              issued before the PDL wait (the first round holds a part: Kimi-K2's 96
//              vectors are three a lane);
//   nope CTA p rows d = 16 p .. 16 p + 15 of q_nope are absorb's warp p: the CTA forms that
//              warp's sums over its 16 rows, sum_d q_nope[t][d] W_uk[d][c] for every latent
//              column c, in absorb's order (W_uk's 16 rows staged into shared memory by
//              cp.async before the wait), and stores them; the head's last nope CTA to
//              arrive (a ticket per head) adds the dn / 16 parts in part order from 0, as
//              absorb adds its warps' sums, and rounds qlat to bf16;
//   rope CTA   its 8 RoPE pairs of q_pe into qpe (absorb's rope_pair on the same bf16 values).
// So the fused form's q, qlat and qpe are bit-identical to the split form's (test:
// `engine gpu kernels`). It applies where absorb's warps take 16 rows each (dn = 128, as
// DeepSeek-V3 and Kimi-K2: mla_qb_absorb_fits) and q_b's rows are in one or two parts.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/gemv_ops.cuh"
#include "gpu/kernels/mla_ops.cuh"
#include "gpu/kernels/qb_fit.h"

namespace arbk {
namespace {

constexpr int kQbRows = 16;            // query rows per CTA: one of absorb's warps' share at dn = 128
constexpr int kQbParts = kAbsorbWarps; // nope CTAs per head: absorb's warps
constexpr int kQbUnroll = 4;           // vectors a lane loads per round: a q_b part of up to 1024 inputs in one
static_assert(kQbRows == 2 * 8, "a warp takes rows i and i + 8 of its part");

// Block (j, h): j < kQbParts the nope rows 16 j .. of head h, else its RoPE rows 16 (j - kQbParts) ...
// scratch [nh_r][kQbParts][T][rkv] fp32; tickets [nh_r], zero before the first launch (each
// head's last CTA resets its own).
template <int T, int S> __global__ void __launch_bounds__(8 * S * kWarp)
    mla_qb_absorb_kernel(const bf16 *__restrict__ qa, const bf16 *__restrict__ Wqb, const bf16 *__restrict__ kv_b,
                         const float2 *__restrict__ rope_cs, const int32_t *__restrict__ pos0, bf16 *__restrict__ q,
                         bf16 *__restrict__ qlat, bf16 *__restrict__ qpe, float *scratch, unsigned *tickets, int nh_r,
                         int rq, int dn, int dr, int dv, int rkv, l2_ahead ahead)
{
    ARB_TL(ARB_TL_QB_ABSORB);
    __shared__ __align__(16) bf16 wuk[kQbRows * kMaxLatent]; // W_uk rows d0 .. d0 + 15, rkv columns each
    __shared__ float qv[T][kQbRows];                         // this CTA's q rows, bf16 values
    __shared__ float red[8 * S][2][T];                       // the warps' part sums (rows i, i + 8)
    const int j = (int)blockIdx.x, h = (int)blockIdx.y, qw = dn + dr;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, part = warp % S, i = warp / S;
    const bool nope = j < kQbParts;
    const int r0 = nope ? j * kQbRows : dn + (j - kQbParts) * kQbRows; // first row within the head
    const int Ks = rq / S, k0 = part * Ks;
    const bf16 *w1 = Wqb + ((size_t)h * qw + r0 + i) * rq + k0;
    const bf16 *w2 = w1 + (size_t)8 * rq;
    pdl_launch_dependents();
    if (nope) { // W_uk's 16 rows (weights, not the predecessor's output) into shared memory meanwhile
        const int rv = rkv / 8;
        const bf16 *src = kv_b + ((size_t)h * (dn + dv) + r0) * rkv;
        for (int v = threadIdx.x; v < kQbRows * rv; v += blockDim.x)
            cp_async16(wuk + (size_t)v * 8, src + (size_t)v * 8);
        cp_async_commit();
    }
    constexpr int first = kQbUnroll * kWarp * 8; // inputs of the first round (gemv_tile's rule)
    if (Ks > first) {
        warp_prefetch_l2(w1 + first, (size_t)(Ks - first) * 2);
        warp_prefetch_l2(w2 + first, (size_t)(Ks - first) * 2);
    }
    float acc[T], acc2[T];
    warp_rowdot<T, true, true, pdl_sync, kQbUnroll>(w1, w2, qa + k0, rq, Ks, acc, acc2, pdl_sync());
    grid_prefetch_l2(ahead); // a later kernel's weights (--l2-ahead), as absorb did
    if (lane == 0)
#pragma unroll
        for (int t = 0; t < T; t++)
            red[warp][0][t] = acc[t], red[warp][1][t] = acc2[t];
    __syncthreads();
    for (int x = threadIdx.x; x < T * kQbRows; x += blockDim.x) { // row rr = i + 8 which, parts in order
        const int t = x / kQbRows, rr = x % kQbRows, ri = rr % 8, which = rr / 8;
        float a = red[ri * S][which][t];
#pragma unroll
        for (int p = 1; p < S; p++)
            a += red[ri * S + p][which][t];
        const bf16 v = to_bf(a);
        q[((size_t)t * nh_r + h) * qw + r0 + rr] = v; // as the split form's q_b stores it
        qv[t][rr] = bf(v);
    }
    __syncthreads();
    if (!nope) { // RoPE pairs 8 (j - kQbParts) .. of the head
        const int pairs = dr / 2, P0 = *pos0;
        for (int x = threadIdx.x; x < T * (kQbRows / 2); x += blockDim.x) {
            const int t = x / (kQbRows / 2), kk = x % (kQbRows / 2), k = (r0 - dn) / 2 + kk;
            rope_pair(qv[t][2 * kk], qv[t][2 * kk + 1], rope_cs[(size_t)(P0 + t) * pairs + k],
                      qpe + ((size_t)t * nh_r + h) * dr + 2 * k);
        }
        return;
    }
    cp_async_wait_all();
    __syncthreads();
    float *mine = scratch + ((size_t)h * kQbParts + j) * T * rkv;
    for (int c = threadIdx.x; c < rkv; c += blockDim.x) { // absorb's warp j: d ascending, fmaf from 0
        float s[T];
#pragma unroll
        for (int t = 0; t < T; t++)
            s[t] = 0.0f;
#pragma unroll
        for (int d = 0; d < kQbRows; d++) {
            const float w = bf(wuk[(size_t)d * rkv + c]);
#pragma unroll
            for (int t = 0; t < T; t++)
                s[t] = fmaf(qv[t][d], w, s[t]);
        }
#pragma unroll
        for (int t = 0; t < T; t++)
            __stcg(mine + (size_t)t * rkv + c, s[t]);
    }
    if (!last_to_arrive(tickets + h, (unsigned)kQbParts))
        return;
    const float *all = scratch + (size_t)h * kQbParts * T * rkv;
    for (int x = threadIdx.x; x < T * rkv; x += blockDim.x) { // absorb's warps in order, from 0
        float s = 0.0f;
#pragma unroll
        for (int p = 0; p < kQbParts; p++)
            s += __ldcg(all + (size_t)p * T * rkv + x);
        const int t = x / rkv, c = x % rkv;
        qlat[((size_t)t * nh_r + h) * rkv + c] = to_bf(s);
    }
}

template <int S> cudaError_t qb_absorb_s(const launch_ctx &c, const bf16 *qa, const bf16 *Wqb, const bf16 *kv_b,
                                         const float2 *rope_cs, const int32_t *pos0, bf16 *q, bf16 *qlat, bf16 *qpe,
                                         float *scratch, unsigned *tickets, int nh_r, int rq, int dn, int dr, int dv,
                                         int rkv, int T)
{
    const dim3 grid(kQbParts + dr / kQbRows, nh_r), block(8 * S * kWarp);
    return with_t(T, [&](auto tt) {
        constexpr int TT = decltype(tt)::value;
        return launch(c, mla_qb_absorb_kernel<TT, S>, grid, block, 0, qa, Wqb, kv_b, rope_cs, pos0, q, qlat, qpe,
                      scratch, tickets, nh_r, rq, dn, dr, dv, rkv, c.ahead);
    });
}

} // namespace

bool mla_qb_absorb_fits(int rq, int dn, int dr, int rkv)
{
    static_assert(kQbParts * kQbRows == 128 && kMaxLatent == 512, "qb_fit.h's rule: dn 128, rkv up to 512");
    return arb_qb_absorb_fits(rq, dn, dr, rkv) != 0;
}

size_t mla_qb_absorb_scratch_floats(int nh_r, int rkv) { return (size_t)nh_r * kQbParts * kMaxT * rkv; }

cudaError_t mla_qb_absorb(const launch_ctx &c, const bf16 *qa, const bf16 *Wqb, const bf16 *kv_b, const float2 *rope_cs,
                          const int32_t *pos0, bf16 *q, bf16 *qlat, bf16 *qpe, float *scratch, unsigned *tickets,
                          int nh_r, int rq, int dn, int dr, int dv, int rkv, int T)
{
    if (!mla_qb_absorb_fits(rq, dn, dr, rkv) || T < 1 || T > kMaxT || nh_r < 1 || !scratch || !tickets)
        return cudaErrorInvalidValue;
    if (gemv_parts(rq) == 2)
        return qb_absorb_s<2>(c, qa, Wqb, kv_b, rope_cs, pos0, q, qlat, qpe, scratch, tickets, nh_r, rq, dn, dr, dv,
                              rkv, T);
    return qb_absorb_s<1>(c, qa, Wqb, kv_b, rope_cs, pos0, q, qlat, qpe, scratch, tickets, nh_r, rq, dn, dr, dv, rkv,
                          T);
}

ARB_TL_TU(mla_qb)

} // namespace arbk
