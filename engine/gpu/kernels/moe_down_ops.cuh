// SPDX-License-Identifier: MIT
// One block index of the MoE down kernel (moe.cu: what it computes), for its own launch and
// persist.cu's persistent launch alike (P: common.cuh's sync); the tiling is moe_ops.cuh's.
#ifndef ARB_ENGINE_KERNELS_MOE_DOWN_OPS_CUH
#define ARB_ENGINE_KERNELS_MOE_DOWN_OPS_CUH

#include "gpu/kernels/moe_ops.cuh"

namespace arbk {

#if ARB_TIMELINE
namespace {
// A timeline build's count of the MoE down CTAs whose guessed selection (--moe-early spec) was wrong
// (moe_down_tile, EARLY 3): this file's; moe.cu's moe_reissues reads and clears moe.cu's.
__device__ unsigned g_moe_reissues;
} // namespace
#endif

// Block bx: output rows 16 ROWT bx .. for NH token halves (act's and coef's token stride 8 NH).
// EARLY (--moe-early; a kernel of its own, after a gate/up launched with pdl_late): 1 on, the
// selection (written by the router, gate/up's predecessor, complete once gate/up triggers this
// launch) is read through L2 before the wait, and each warp's first round of routed weights is
// issued before it too; 2 l2, also the later rounds' INT4 weights and scales pulled toward L2 there
// (T = 1 at Kimi-K2 has one round). The same loads, sums and order, so the same bits. Both read the
// selection before the wait as if it were final; on and l2 are withdrawn (a race: docs/engine.md).
// 3 spec: the selection read before the wait is a guess only: the first round's weights are
// issued from it, and after the wait the selection is read again (as EARLY 0 reads it); where any
// slot or the count differs, the block takes the one read after the wait and issues its first
// round again. So the weights used are always the selection's after the wait, whatever the guess
// saw (a stale or half-written buffer costs the round trip EARLY 0 pays; the bits are EARLY 0's).
// UNR_ASKED: moe_unr_down's pairs in flight; the tile keeps moe_unr_down_arch's (fewer on SM120).
template <bool INT4, int ROWT, int NH, int UNR_ASKED, class P, int EARLY = 0>
__device__ __forceinline__ void moe_down_tile(const P &pol, const moe_weights &w, const moe_route &rt, const bf16 *act,
                                              const bf16 *act_sh, bf16 *__restrict__ part, int T, int bx)
{
    constexpr int UNR = moe_unr_down_arch(INT4, UNR_ASKED);
    static_assert(EARLY == 0 || !P::coherent, "the early selection is a kernel's own, after a pdl_late gate/up");
    __shared__ float red[kMoeWarps][ROWT][NH][4][kWarp];
    __shared__ int s_uniq[kMaxSlots], s_n, s_stale;
    // each slot's routed weights at the block's first row (INT4: fragment words, scales), set with
    // s_uniq: a pair's loads then cost a shared read and an add, not ~36 instructions of 64-bit
    // index arithmetic a pair (the expert's row times the row's length)
    __shared__ const uint32_t *s_wq[INT4 ? kMaxSlots : 1];
    __shared__ const bf16 *s_ws[INT4 ? kMaxSlots : 1];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const int H = w.H, I = w.I, Is = w.Is, Gi = I / 32, Gs = Is / 32;
    const int r0 = bx * 16 * ROWT;
    const unsigned mgi = udiv_magic(Gi); // a pair's slot q / Gi by a multiply-high (q Gi < 2^32)
    constexpr int TS = 8 * NH;           // act's and coef's token stride
    constexpr bool coh = P::coherent;
    const auto set_slot = [&](int i, int e) {
        s_uniq[i] = e;
        if constexpr (INT4) {
            const size_t r = (size_t)e * H + r0; // first row of the [E x H x I] tensor
            s_wq[i] = static_cast<const uint32_t *>(w.down) + r * (I / 8);
            s_ws[i] = w.down_s + r * Gi;
        }
    };
    pol.launch_dependents();
    // The shared expert does not depend on the predecessor: the warp's first group (g = warp)
    // into registers before the wait, the rest of its rows (Gs > 8 only) toward L2.
    uint4 sa0[ROWT], sa1[ROWT];
    if (warp < Gs)
#pragma unroll
        for (int k = 0; k < ROWT; k++)
            ld_a_bf16(w.sh_down + (size_t)(r0 + 16 * k) * Is, Is, warp, sa0[k], sa1[k]);
    if (Gs > kMoeWarps)
        for (int r = warp; r < 16 * ROWT; r += kMoeWarps)
            warp_prefetch_l2(w.sh_down + (size_t)(r0 + r) * Is, (size_t)Is * 2);
    // The selection once per CTA: n_uniq and all kMaxSlots slots of the buffer in the same
    // round trip (slots past n_uniq are never used); without EARLY after the wait, with the
    // first group's tokens, before the barrier that publishes them.
    const auto selection = [&](bool l2) {
        for (int i = threadIdx.x; i < kMaxSlots; i += blockDim.x)
            set_slot(i, l2 ? __ldcg(rt.uniq + i) : rt.uniq[i]);
        if (threadIdx.x == 0)
            s_n = l2 ? __ldcg(rt.n_uniq) : *rt.n_uniq;
    };
    // EARLY 3's guess: what the buffer held before the wait (an older layer's selection, a half-written
    // one, or never written), clamped so that every load it issues is within the weights
    const auto guess = [&]() {
        for (int i = threadIdx.x; i < kMaxSlots; i += blockDim.x)
            set_slot(i, min(max(__ldcg(rt.uniq + i), 0), w.E - 1));
        if (threadIdx.x == 0)
            s_n = min(max(__ldcg(rt.n_uniq), 0), kMaxSlots), s_stale = 0;
    };
    // Round q0's routed weights: pair q = q0 + 8 j is (slot q / Gi, group q % Gi).
    uint2 qa[UNR][ROWT];
    uint32_t sa[UNR][ROWT];
    uint4 ba[UNR][ROWT][2];
    const auto weights = [&](int q0, int npairs) {
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            const int q = q0 + j * kMoeWarps;
            if (q >= npairs)
                break;
            const int u = udiv(q, Gi, mgi), grp = q - u * Gi;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                if constexpr (INT4) {
                    qa[j][k] =
                        ld_stream2(reinterpret_cast<const uint2 *>(s_wq[u] + 16 * k * (I / 8)) + grp * kWarp + lane);
                    sa[j][k] = __ldg(reinterpret_cast<const uint32_t *>(s_ws[u] + 16 * k * Gi) + grp * 8 + gi);
                } else {
                    const size_t rk = (size_t)s_uniq[u] * H + r0 + 16 * k; // a row of the [E x H x I] tensor
                    ld_a_bf16(static_cast<const bf16 *>(w.down) + rk * I, I, grp, ba[j][k][0], ba[j][k][1]);
                }
            }
        }
    };
    if constexpr (EARLY > 0) {
        if constexpr (EARLY == 3)
            guess();
        else
            selection(true);
        __syncthreads();
        weights(warp, s_n * Gi);
        if (INT4 && EARLY == 2) // a (pair, tile)'s fragments: 256 contiguous bytes, two lines
            for (int q = warp + kMoeWarps * UNR; q < s_n * Gi; q += kMoeWarps) {
                const int u = udiv(q, Gi, mgi), grp = q - u * Gi;
#pragma unroll
                for (int k = 0; k < ROWT; k++) {
                    if (lane % 16 == 0)
                        asm volatile("prefetch.global.L2 [%0];" ::"l"(
                            reinterpret_cast<const uint2 *>(s_wq[u] + 16 * k * (I / 8)) + grp * kWarp + lane));
                    else if (lane == 1)
                        asm volatile("prefetch.global.L2 [%0];" ::"l"(
                            reinterpret_cast<const uint32_t *>(s_ws[u] + 16 * k * Gi) + grp * 8));
                }
            }
    }
    pol.wait();
    if constexpr (EARLY == 0)
        selection(coh);
    // EARLY 3: the selection again, now that the wait orders it (each thread its own slots, as
    // selection() assigns them); compared with the guess, not yet stored: other warps may still
    // be issuing the guess's loads from s_uniq
    constexpr int kSlotsPer = (kMaxSlots + kMoeWarps * kWarp - 1) / (kMoeWarps * kWarp);
    // (only slots below the count are compared: the router leaves the others as they were, and
    // a never-written slot's clamped guess would differ from it every time)
    int fresh[EARLY == 3 ? kSlotsPer : 1], fresh_n = 0;
    if constexpr (EARLY == 3) {
        fresh_n = __ldcg(rt.n_uniq);
#pragma unroll
        for (int k = 0; k < kSlotsPer; k++) {
            const int i = (int)threadIdx.x + k * (int)blockDim.x;
            fresh[k] = i < kMaxSlots ? __ldcg(rt.uniq + i) : 0;
        }
        bool differ = fresh_n != s_n;
#pragma unroll
        for (int k = 0; k < kSlotsPer; k++) {
            const int i = (int)threadIdx.x + k * (int)blockDim.x;
            differ |= i < fresh_n && i < kMaxSlots && fresh[k] != s_uniq[i];
        }
        if (differ)
            s_stale = 1; // any thread; read after the barrier below
    }
    uint4 xs[NH];
#pragma unroll
    for (int hf = 0; hf < NH; hf++)
        xs[hf] = warp < Gs ? ld_b<coh>(act_sh, Is, warp, T, hf) : make_uint4(0, 0, 0, 0);
    __syncthreads();
    bool reissue = false; // EARLY 3: the guess was wrong, the first round is issued again below
    if constexpr (EARLY == 3) {
        reissue = s_stale != 0; // the same in every thread: set only before the barrier
        if (reissue) {
#if ARB_TIMELINE
            if (threadIdx.x == 0)
                atomicAdd(&g_moe_reissues, 1u);
#endif
#pragma unroll
            for (int k = 0; k < kSlotsPer; k++) {
                const int i = (int)threadIdx.x + k * (int)blockDim.x;
                if (i < kMaxSlots)
                    set_slot(i, fresh[k]);
            }
            if (threadIdx.x == 0)
                s_n = fresh_n;
            __syncthreads();
        }
    }
    float acc[ROWT][NH][4] = {};
    if (warp < Gs) // the shared expert (weight 1): groups warp, warp + 8, .. in that order
#pragma unroll
        for (int k = 0; k < ROWT; k++)
            mma_bf16_group<NH>(acc[k], sa0[k], sa1[k], xs);
    for (int g = warp + kMoeWarps; g < Gs; g += kMoeWarps) {
        uint4 xb[NH];
        ld_b_halves<NH, coh>(xb, act_sh, Is, g, T);
#pragma unroll
        for (int k = 0; k < ROWT; k++) {
            uint4 a0, a1;
            ld_a_bf16(w.sh_down + (size_t)(r0 + 16 * k) * Is, Is, g, a0, a1);
            mma_bf16_group<NH>(acc[k], a0, a1, xb);
        }
    }
    const int npairs = s_n * Gi;
    for (int q0 = warp; q0 < npairs; q0 += kMoeWarps * UNR) {
        uint4 xb[UNR][NH];
        float2 cf[UNR][NH];
        if (EARLY == 0 || q0 != warp || reissue) // EARLY: the first round's are in flight since before the wait
            weights(q0, npairs);
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            const int q = q0 + j * kMoeWarps;
            if (q >= npairs)
                break;
            const int u = udiv(q, Gi, mgi), grp = q - u * Gi;
            ld_b_halves<NH, coh>(xb[j], act + (size_t)u * TS * I, I, grp, T);
#pragma unroll
            for (int hf = 0; hf < NH; hf++) {
                const float2 *cp = reinterpret_cast<const float2 *>(rt.coef + u * TS + 8 * hf + 2 * ti);
                cf[j][hf] = coh ? __ldcg(cp) : *cp;
            }
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (q0 + j * kMoeWarps >= npairs)
                break;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                float p[NH][4];
                float s0 = 1.0f, s1 = 1.0f;
                if (INT4) {
                    mma_int4_group<NH>(p, qa[j][k], xb[j]);
                    s0 = bf16_lo(sa[j][k]), s1 = bf16_hi(sa[j][k]);
                } else {
#pragma unroll
                    for (int hf = 0; hf < NH; hf++)
                        p[hf][0] = p[hf][1] = p[hf][2] = p[hf][3] = 0.0f;
                    mma_bf16_group<NH>(p, ba[j][k][0], ba[j][k][1], xb[j]);
                }
#pragma unroll
                for (int hf = 0; hf < NH; hf++) {
                    const float2 f = cf[j][hf];
                    float *a = acc[k][hf];
                    a[0] = fmaf(f.x, s0 * p[hf][0], a[0]), a[1] = fmaf(f.y, s0 * p[hf][1], a[1]);
                    a[2] = fmaf(f.x, s1 * p[hf][2], a[2]), a[3] = fmaf(f.y, s1 * p[hf][3], a[3]);
                }
            }
        }
    }
#pragma unroll
    for (int k = 0; k < ROWT; k++)
#pragma unroll
        for (int hf = 0; hf < NH; hf++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                red[warp][k][hf][c][lane] = acc[k][hf][c];
    __syncthreads();
    if (warp >= ROWT)
        return;
    const int k = warp;
#pragma unroll
    for (int hf = 0; hf < NH; hf++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            float s = 0.0f;
            for (int v = 0; v < kMoeWarps; v++)
                s += red[v][k][hf][c][lane];
            const int n = 8 * hf + 2 * ti + (c & 1), r = r0 + 16 * k + gi + 8 * (c >> 1);
            if (n < T)
                part[(size_t)n * H + r] = to_bf(s);
        }
}

} // namespace arbk

#endif
