// SPDX-License-Identifier: MIT
// One warp, one weight row (or two: gate and up), T input rows: the inner loop of every
// skinny bf16 projection (gemv.cu, the router). The row streams in 16-byte vectors, eight
// in flight per lane; the inputs come through L1. Sums are returned to every lane.
#ifndef ARB_ENGINE_KERNELS_ROWDOT_CUH
#define ARB_ENGINE_KERNELS_ROWDOT_CUH

#include "gpu/kernels/common.cuh"

namespace arbk {

constexpr int kRowdotUnroll = 8;

// Whether warp_rowdot reads x with plain loads (x in shared memory: a policy P with
// `static constexpr bool x_shared = true`, mla_qb.cu's --fuse prep_qb) or ld_act<P::coherent>.
template <class P, class = void> struct rowdot_x_shared {
    static constexpr bool value = false;
};
template <class P> struct rowdot_x_shared<P, decltype((void)P::x_shared)> {
    static constexpr bool value = P::x_shared;
};

// acc[t] = W[row] . x[t] (and acc2[t] = W2[row] . x[t] when TWO), K % 8 == 0, ldx % 8 == 0.
// WAIT: the first round of weight loads is issued, then the kernel waits on its PDL
// predecessor (x is its output; the weights are not), so the row streams meanwhile.
// P: how to wait and how x is loaded (common.cuh's pdl_sync or persist_sync; rowdot_x_shared
// above). With WAIT a lane calls p.wait() in its first round (if K / 8 > lane) and again after the
// loop: pdl_wait returns at once the second time; a policy with a barrier in its wait (mla_qb.cu)
// needs every lane in the first round (K >= 256) and does its work once. U: the vectors
// a lane loads per round (the first round before the wait); each lane still adds its vectors
// lane, lane + 32, .. in ascending order, so the sums do not depend on it.
template <int T, bool TWO, bool WAIT = false, class P = pdl_sync, int U = kRowdotUnroll>
__device__ __forceinline__ void warp_rowdot(const bf16 *__restrict__ wrow, const bf16 *__restrict__ wrow2,
                                            const bf16 *x, int ldx, int K, float (&acc)[T], float (&acc2)[T],
                                            const P &p = P())
{
    const int lane = threadIdx.x % kWarp, nvec = K / 8, ldxv = ldx / 8;
    const uint4 *w = reinterpret_cast<const uint4 *>(wrow);
    const uint4 *w2 = reinterpret_cast<const uint4 *>(wrow2);
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f, acc2[t] = 0.0f;
    for (int v0 = lane; v0 < nvec; v0 += kWarp * U) {
        uint4 wv[U], wv2[U];
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int v = v0 + u * kWarp;
            if (v < nvec) {
                wv[u] = ld_stream(w + v);
                if (TWO)
                    wv2[u] = ld_stream(w2 + v);
            }
        }
        if (WAIT && v0 == lane)
            p.wait();
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int v = v0 + u * kWarp;
            if (v < nvec) {
                float wf[8], wf2[8];
                unpack8(wv[u], wf);
                if (TWO)
                    unpack8(wv2[u], wf2);
#pragma unroll
                for (int t = 0; t < T; t++) {
                    float xf[8];
                    const uint4 *xp = xv + (size_t)t * ldxv + v;
                    unpack8(rowdot_x_shared<P>::value ? *xp : ld_act<P::coherent>(xp), xf);
#pragma unroll
                    for (int j = 0; j < 8; j++) {
                        acc[t] = fmaf(wf[j], xf[j], acc[t]);
                        if (TWO)
                            acc2[t] = fmaf(wf2[j], xf[j], acc2[t]);
                    }
                }
            }
        }
    }
    if (WAIT) // lanes without a vector; a no-op for the others
        p.wait();
#pragma unroll
    for (int t = 0; t < T; t++) {
        acc[t] = warp_sum(acc[t]);
        if (TWO)
            acc2[t] = warp_sum(acc2[t]);
    }
}

} // namespace arbk

#endif
