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
// With --fuse prep_qb (PREP, kernels.h's qb_prep) it also runs mla_prep's jobs, which qkv_a's
// last block ran behind a ticket: after its wait each CTA forms qa for every token into shared
// memory (warp t: mla_prep_job's q_a norm of qkva's row t, the same bits) behind a barrier, and
// its q_b warps read their inputs from there; head 0's first RoPE CTA, which has no absorb part,
// also runs the latent's jobs (its norm and RoPE into cache rows P0 + t, before attend's wait
// returns: attend waits on this launch) and writes qa for anything after the step.
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

// warp_rowdot's policy with PREP: the PDL wait, then this CTA's qa [T][rq] into shared memory
// (warp t the q_a norm of token t; in the owner CTA warps T .. 2T - 1 the latent's norm and RoPE
// into the cache), a barrier, and in the owner qa copied out. The norms are warp_rmsnorm_staged
// (warp_rmsnorm's bits; the row staged in shared memory and the norm weights, copied there before
// the wait, read from it), so the q_b weights the warps hold in flight keep their registers. Once:
// warp_rowdot calls wait again after its loop, and every thread reaches the first call together
// (mla_qb_prep_fits: every lane has a first-round vector). Inputs from shared memory
// (rowdot.cuh's x_shared).
struct qb_prep_sync {
    static constexpr bool coherent = false;
    static constexpr bool x_shared = true;
    qb_prep pp;
    const float2 *rope_cs;
    const int32_t *pos0;
    bf16 *qa_s, *kv_s, *wq_s, *wkv_s; // shared: [T][rq], [T][rkv], q_a_norm, kv_a_norm
    int rq, rkv, dr, T;
    bool owner;
    mutable bool done;
    __device__ __forceinline__ void wait() const
    {
        if (done)
            return;
        done = true;
        pdl_wait();
        cp_async_wait_all(); // the norm weights (and a nope CTA's W_uk rows), then everyone's
        ARB_TL_MARK(6);      // a timeline's diagnostic marks: thread 0's copies landed, then every warp here
        __syncthreads();
        ARB_TL_MARK(5);
        const int nw = (int)(blockDim.x / kWarp), jobs = owner ? 2 * T : T, width = rq + rkv + dr;
        for (int j = (int)(threadIdx.x / kWarp); j < jobs; j += nw) { // j < T: token j's qa, else its latent
            const int t = j % T;
            const bf16 *row = pp.qkva + (size_t)t * width;
            if (j < T) {
                warp_rmsnorm_staged(row, wq_s, qa_s + (size_t)t * rq, qa_s + (size_t)t * rq, rq, pp.eps);
            } else {
                mla_prep_job_staged(row, wkv_s, kv_s + (size_t)t * rkv, rope_cs, *pos0 + t, pp.cache_ckv, pp.cache_kpe,
                                    rq, rkv, dr, pp.eps);
            }
        }
        __syncthreads();
        ARB_TL_MARK(1); // a timeline's diagnostic mark: the prep done
        if (owner)
            for (int v = (int)threadIdx.x; v < T * rq / 8; v += (int)blockDim.x)
                reinterpret_cast<uint4 *>(pp.qa)[v] = reinterpret_cast<const uint4 *>(qa_s)[v];
    }
};

// PREP's dynamic shared memory (bf16): qa [T][rq], the latent rows [T][rkv], q_a_norm [rq],
// kv_a_norm [rkv].
constexpr size_t qb_prep_smem(int T, int rq, int rkv) { return ((size_t)T + 1) * (rq + rkv) * sizeof(bf16); }
static_assert(qb_prep_smem(kMaxT, 4096, 0) == 72 * 1024, "qb_fit.h's arb_qb_prep_fits bound: rq + rkv <= 4096");

// Block (j, h): j < kQbParts the nope rows 16 j .. of head h, else its RoPE rows 16 (j - kQbParts) ...
// scratch [nh_r][kQbParts][T][rkv] fp32; tickets [nh_r], zero before the first launch (each
// head's last CTA resets its own). PREP: dynamic shared memory qb_prep_smem(T, rq, rkv) bytes.
template <int T, int S, bool PREP> __global__ void __launch_bounds__(8 * S * kWarp)
    mla_qb_absorb_kernel(const bf16 *__restrict__ qa, const bf16 *__restrict__ Wqb, const bf16 *__restrict__ kv_b,
                         const float2 *__restrict__ rope_cs, const int32_t *__restrict__ pos0, bf16 *__restrict__ q,
                         bf16 *__restrict__ qlat, bf16 *__restrict__ qpe, float *scratch, unsigned *tickets, int nh_r,
                         int rq, int dn, int dr, int dv, int rkv, l2_ahead ahead, qb_prep pp)
{
    ARB_TL(ARB_TL_QB_ABSORB);
    extern __shared__ __align__(16) bf16 qa_dyn[];           // PREP: this CTA's qa
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
    if constexpr (PREP) {
        bf16 *kv_s = qa_dyn + (size_t)T * rq, *wq_s = kv_s + (size_t)T * rkv, *wkv_s = wq_s + rq;
        for (int v = threadIdx.x; v < rq / 8; v += blockDim.x) // weights, not the predecessor's output
            cp_async16(wq_s + (size_t)v * 8, pp.q_a_norm + (size_t)v * 8);
        for (int v = threadIdx.x; v < rkv / 8; v += blockDim.x)
            cp_async16(wkv_s + (size_t)v * 8, pp.kv_a_norm + (size_t)v * 8);
        cp_async_commit();
        const qb_prep_sync pol{pp,   rope_cs, pos0, qa_dyn, kv_s, wq_s, wkv_s, rq, rkv, dr, T, h == 0 && j == kQbParts,
                               false};
        warp_rowdot<T, true, true, qb_prep_sync, kQbUnroll>(w1, w2, qa_dyn + k0, rq, Ks, acc, acc2, pol);
    } else {
        warp_rowdot<T, true, true, pdl_sync, kQbUnroll>(w1, w2, qa + k0, rq, Ks, acc, acc2, pdl_sync());
    }
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
    ARB_TL_MARK(2); // the CTA's q rows stored
    if (!nope) {    // RoPE pairs 8 (j - kQbParts) .. of the head
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
    ARB_TL_MARK(3); // a nope CTA's absorption part stored
    if (!last_to_arrive(tickets + h, (unsigned)kQbParts))
        return;
    ARB_TL_MARK(4); // the head's last CTA past its ticket
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
                                         int rkv, int T, const qb_prep &pp)
{
    const dim3 grid(kQbParts + dr / kQbRows, nh_r), block(8 * S * kWarp);
    return with_t(T, [&](auto tt) {
        constexpr int TT = decltype(tt)::value;
        if (!pp.qkva)
            return launch(c, mla_qb_absorb_kernel<TT, S, false>, grid, block, 0, qa, Wqb, kv_b, rope_cs, pos0, q, qlat,
                          qpe, scratch, tickets, nh_r, rq, dn, dr, dv, rkv, c.ahead, pp);
        const size_t smem = qb_prep_smem(TT, rq, rkv);
        if (smem > 30 * 1024) { // with the static ~18 KB past the default 48 KB: opt in
            const cudaError_t err = cudaFuncSetAttribute(mla_qb_absorb_kernel<TT, S, true>,
                                                         cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
            if (err != cudaSuccess)
                return err;
        }
        return launch(c, mla_qb_absorb_kernel<TT, S, true>, grid, block, smem, qa, Wqb, kv_b, rope_cs, pos0, q, qlat,
                      qpe, scratch, tickets, nh_r, rq, dn, dr, dv, rkv, c.ahead, pp);
    });
}

} // namespace

bool mla_qb_absorb_fits(int rq, int dn, int dr, int rkv)
{
    static_assert(kQbParts * kQbRows == 128 && kMaxLatent == 512, "qb_fit.h's rule: dn 128, rkv up to 512");
    return arb_qb_absorb_fits(rq, dn, dr, rkv) != 0;
}

bool mla_qb_prep_fits(int rq, int dn, int dr, int rkv) { return arb_qb_prep_fits(rq, dn, dr, rkv) != 0; }

size_t mla_qb_absorb_scratch_floats(int nh_r, int rkv) { return (size_t)nh_r * kQbParts * kMaxT * rkv; }

cudaError_t mla_qb_absorb(const launch_ctx &c, const bf16 *qa, const bf16 *Wqb, const bf16 *kv_b, const float2 *rope_cs,
                          const int32_t *pos0, bf16 *q, bf16 *qlat, bf16 *qpe, float *scratch, unsigned *tickets,
                          int nh_r, int rq, int dn, int dr, int dv, int rkv, int T, const qb_prep &prep)
{
    if (!mla_qb_absorb_fits(rq, dn, dr, rkv) || T < 1 || T > kMaxT || nh_r < 1 || !scratch || !tickets)
        return cudaErrorInvalidValue;
    if (prep.qkva ? !mla_qb_prep_fits(rq, dn, dr, rkv) || !prep.q_a_norm || !prep.kv_a_norm || !prep.cache_ckv ||
                        !prep.cache_kpe || !prep.qa
                  : !qa)
        return cudaErrorInvalidValue;
    if (gemv_parts(rq) == 2)
        return qb_absorb_s<2>(c, qa, Wqb, kv_b, rope_cs, pos0, q, qlat, qpe, scratch, tickets, nh_r, rq, dn, dr, dv,
                              rkv, T, prep);
    return qb_absorb_s<1>(c, qa, Wqb, kv_b, rope_cs, pos0, q, qlat, qpe, scratch, tickets, nh_r, rq, dn, dr, dv, rkv, T,
                          prep);
}

ARB_TL_TU(mla_qb)

} // namespace arbk
