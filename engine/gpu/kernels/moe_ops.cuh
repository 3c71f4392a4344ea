// SPDX-License-Identifier: MIT
// One block index of the MoE block's two kernels (moe.cu: what they compute), for their own
// launches and persist.cu's persistent launch alike (P: common.cuh's sync).
#ifndef ARB_ENGINE_KERNELS_MOE_OPS_CUH
#define ARB_ENGINE_KERNELS_MOE_OPS_CUH

#include "gpu/kernels/moe_mma.cuh"

namespace arbk {

#if ARB_TIMELINE
namespace {
// A timeline build's count of the MoE down CTAs whose guessed selection (--moe-early spec) was wrong
// (moe_down_tile, EARLY 3): this file's; moe.cu's moe_reissues reads and clears moe.cu's.
__device__ unsigned g_moe_reissues;
} // namespace
#endif

constexpr int kMoeWarps = 8;

// The tiling by T (moe.cu says why): ROWT 16-row tiles per block; NH token halves
// (moe_halves, kernels.h); groups in flight per lane, UNR for the routed bf16 tiles and UNRQ
// for the routed INT4 tiles of gate/up, and the (expert, group) pairs of down. Only the
// loads in flight depend on them, not the sums.
__host__ __device__ constexpr int moe_rowt(int T) { return T <= 3 ? 1 : 2; }
template <int ROWT, int NH = 1> struct moe_tiling;
template <> struct moe_tiling<1, 1> {
    static constexpr int unr = 4, unrq = 7;
};
template <> struct moe_tiling<2, 1> {
    static constexpr int unr = 2, unrq = 4;
};
// T = 9 .. 16: each group's token vectors twice the registers (two halves), so half the
// groups in flight of T 4 .. 8 (ptxas -v, 128 registers: INT4 4 bytes of spill on sm_90
// (gate/up) and sm_120 (both), bf16 4 on sm_90 and 16 on sm_120; kernels/README.md).
template <> struct moe_tiling<2, 2> {
    static constexpr int unr = 1, unrq = 2;
};
// The shared expert's gate/up: each warp of a part takes moe_sh_unr(ROWT) input groups (one
// round of loads: 4 groups of one tile or 2 of two, 64 KB a block), so an item of ROWT tiles
// is moe_sh_parts(H, ROWT) blocks (Kimi-K2: 7 at ROWT 1, 14 at ROWT 2), each reading about
// what a routed INT4 tile reads, not four times it.
__host__ __device__ constexpr int moe_sh_unr(int rowt) { return rowt == 1 ? 4 : 2; }
__host__ __device__ constexpr int moe_sh_parts(int H, int rowt)
{
    return (H / 32 + kMoeWarps * moe_sh_unr(rowt) - 1) / (kMoeWarps * moe_sh_unr(rowt));
}
// Blocks of the shared expert's gate/up at T (the first blocks of the launch).
__host__ __device__ constexpr int moe_sh_items(int H, int Is, int T)
{
    return Is / (16 * moe_rowt(T)) * moe_sh_parts(H, moe_rowt(T));
}
// Down's (expert, group) pairs in flight per warp: INT4 8 at every ROWT (one H200, graph,
// results/engine-h200/5c25ed9-ab/: at two tiles 8 against 4 took verify 6630 -> 6563 us, down
// 15.5 -> 14.3 us a layer at T = 3; decode even; 128 registers, no spill on sm_90 or sm_120), bf16 4 / ROWT.
// T = 9 .. 16 (two token halves): half of that, the token vectors and weights being twice the registers.
__host__ __device__ constexpr int moe_unr_down(bool int4, int rowt, int nh = 1)
{
    return int4 ? 8 / nh : (4 / rowt / nh > 0 ? 4 / rowt / nh : 1);
}
// The down kernel's tiles per block at every T (moe.cu says why; the persistent form's down
// stage keeps moe_rowt(T): the sums do not depend on it, and the forms' results are equal).
__host__ __device__ constexpr int moe_rowt_down() { return 2; }

// --moe-stage smem (launch_ctx.moe_stage): a warp's share of shared memory for SMG more INT4
// groups a round, each lane's fragments, scale pairs and token vectors, lane-major.
template <int SMG, int ROWT, int NH> struct gate_up_stage {
    uint2 qa[SMG][ROWT][kWarp], qb[SMG][ROWT][kWarp];
    uint32_t sa[SMG][ROWT][kWarp], sb[SMG][ROWT][kWarp];
    uint4 xb[SMG][NH][kWarp];
};

// One INT4 group of ROWT tiles into the gate and up sums: the group's two k16 steps, times its
// scale pair.
template <int ROWT, int NH> __device__ __forceinline__ void
gate_up_int4_group(float (&ag)[ROWT][NH][4], float (&au)[ROWT][NH][4], const uint2 (&qa)[ROWT], const uint2 (&qb)[ROWT],
                   const uint32_t (&sa)[ROWT], const uint32_t (&sb)[ROWT], const uint4 (&xb)[NH])
{
#pragma unroll
    for (int k = 0; k < ROWT; k++) {
        float p[NH][4];
        mma_int4_group<NH>(p, qa[k], xb);
        add_scaled<NH>(ag[k], p, sa[k]);
        mma_int4_group<NH>(p, qb[k], xb);
        add_scaled<NH>(au[k], p, sb[k]);
    }
}

// ROWT tiles of gate and up over groups [g0, g1) of the lane's share: INT4 fragments
// (gq, uq: the first tile's uint2 per (group, lane); tiles 32 G apart) and scale pairs
// (gs, us: per (group, gi); tiles 8 G apart), for NH token halves. UNR groups' loads in
// flight per lane. SMG > 0 (--moe-stage smem): SMG more groups a round copied into the warp's
// shared memory `st` by cp.async (no registers held), issued with the register loads and added
// after them, so the groups are still added in ascending order and the sums are the same bits
// (Kimi-K2 at T <= 3: 28 groups a warp in 3 round trips instead of 4).
template <int ROWT, int NH, int UNR, bool COH, int SMG = 0>
__device__ __forceinline__ void gate_up_int4(const uint2 *__restrict__ gq, const uint2 *__restrict__ uq,
                                             const uint32_t *__restrict__ gs, const uint32_t *__restrict__ us, int G,
                                             const bf16 *__restrict__ x, int ldx, int T, int g0, int g1,
                                             float (&ag)[ROWT][NH][4], float (&au)[ROWT][NH][4],
                                             gate_up_stage<(SMG > 0 ? SMG : 1), ROWT, NH> *st = nullptr)
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4;
    for (int g = g0; g < g1; g += UNR + SMG) {
        uint2 qa[UNR][ROWT], qb[UNR][ROWT];
        uint32_t sa[UNR][ROWT], sb[UNR][ROWT];
        uint4 xb[UNR][NH];
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
            ld_b_halves<NH, COH>(xb[j], x, ldx, g + j, T);
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                const size_t o = ((size_t)k * G + g + j) * kWarp + lane, so = ((size_t)k * G + g + j) * 8 + gi;
                qa[j][k] = ld_stream2(gq + o), qb[j][k] = ld_stream2(uq + o);
                sa[j][k] = __ldg(gs + so), sb[j][k] = __ldg(us + so);
            }
        }
        if constexpr (SMG > 0) {
#pragma unroll
            for (int s = 0; s < SMG; s++) { // the staged groups, issued with the register loads
                const int gg = g + UNR + s;
                if (gg >= g1)
                    break;
#pragma unroll
                for (int hf = 0; hf < NH; hf++) { // ld_b's vector, zero past T
                    const int n = 8 * hf + gi;
                    if (n < T)
                        cp_async16(&st->xb[s][hf][lane], x + (size_t)n * ldx + gg * 32 + lane % 4 * 8);
                    else
                        st->xb[s][hf][lane] = make_uint4(0u, 0u, 0u, 0u);
                }
#pragma unroll
                for (int k = 0; k < ROWT; k++) {
                    const size_t o = ((size_t)k * G + gg) * kWarp + lane, so = ((size_t)k * G + gg) * 8 + gi;
                    cp_async8(&st->qa[s][k][lane], gq + o), cp_async8(&st->qb[s][k][lane], uq + o);
                    cp_async4(&st->sa[s][k][lane], gs + so), cp_async4(&st->sb[s][k][lane], us + so);
                }
            }
            cp_async_commit();
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
            gate_up_int4_group<ROWT, NH>(ag, au, qa[j], qb[j], sa[j], sb[j], xb[j]);
        }
        if constexpr (SMG > 0) {
            cp_async_wait_all(); // the lane's own copies; each lane reads only its own slots
#pragma unroll
            for (int s = 0; s < SMG; s++) {
                if (g + UNR + s >= g1)
                    break;
                uint2 qa_s[ROWT], qb_s[ROWT];
                uint32_t sa_s[ROWT], sb_s[ROWT];
                uint4 xs[NH];
#pragma unroll
                for (int k = 0; k < ROWT; k++)
                    qa_s[k] = st->qa[s][k][lane], qb_s[k] = st->qb[s][k][lane], sa_s[k] = st->sa[s][k][lane],
                    sb_s[k] = st->sb[s][k][lane];
#pragma unroll
                for (int hf = 0; hf < NH; hf++)
                    xs[hf] = st->xb[s][hf][lane];
                gate_up_int4_group<ROWT, NH>(ag, au, qa_s, qb_s, sa_s, sb_s, xs);
            }
        }
    }
}

// The same for bf16 tiles of row-major [rows x K] matrices from their first rows (tiles 16 K apart).
template <int ROWT, int NH, int UNR, bool COH>
__device__ __forceinline__ void gate_up_bf16(const bf16 *__restrict__ wg, const bf16 *__restrict__ wu, int K,
                                             const bf16 *__restrict__ x, int T, int g0, int g1,
                                             float (&ag)[ROWT][NH][4], float (&au)[ROWT][NH][4])
{
    for (int g = g0; g < g1; g += UNR) {
        uint4 ga[UNR][ROWT][2], ua[UNR][ROWT][2], xb[UNR][NH];
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
            ld_b_halves<NH, COH>(xb[j], x, K, g + j, T);
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                ld_a_bf16(wg + (size_t)k * 16 * K, K, g + j, ga[j][k][0], ga[j][k][1]);
                ld_a_bf16(wu + (size_t)k * 16 * K, K, g + j, ua[j][k][0], ua[j][k][1]);
            }
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                mma_bf16_group<NH>(ag[k], ga[j][k][0], ga[j][k][1], xb[j]);
                mma_bf16_group<NH>(au[k], ua[j][k][0], ua[j][k][1], xb[j]);
            }
        }
    }
}

// The shared expert's gate/up in parts (moe_sh_parts, below): part `part` of the 16 ROWT-row
// item's input groups, each warp UNR of them (one round of loads, issued before the wait: the
// shared expert does not depend on the router), into ag / au.
template <int ROWT, int NH, int UNR, class P>
__device__ __forceinline__ void gate_up_sh_part(const P &pol, const moe_weights &w, const bf16 *h, int T, int item,
                                                int part, float (&ag)[ROWT][NH][4], float (&au)[ROWT][NH][4])
{
    const int warp = threadIdx.x / kWarp, H = w.H, G = H / 32, rows = 16 * ROWT;
    const int g0 = min(G, (part * kMoeWarps + warp) * UNR), g1 = min(G, g0 + UNR);
    const bf16 *wg = w.sh_gate + (size_t)item * rows * H, *wu = w.sh_up + (size_t)item * rows * H;
    uint4 ga[UNR][ROWT][2], ua[UNR][ROWT][2];
#pragma unroll
    for (int j = 0; j < UNR; j++)
        if (g0 + j < g1)
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                ld_a_bf16(wg + (size_t)k * 16 * H, H, g0 + j, ga[j][k][0], ga[j][k][1]);
                ld_a_bf16(wu + (size_t)k * 16 * H, H, g0 + j, ua[j][k][0], ua[j][k][1]);
            }
    pol.wait();
    constexpr bool coh = P::coherent;
    uint4 xb[UNR][NH];
#pragma unroll
    for (int j = 0; j < UNR; j++)
        if (g0 + j < g1)
            ld_b_halves<NH, coh>(xb[j], h, H, g0 + j, T);
#pragma unroll
    for (int j = 0; j < UNR; j++)
        if (g0 + j < g1)
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                mma_bf16_group<NH>(ag[k], ga[j][k][0], ga[j][k][1], xb[j]);
                mma_bf16_group<NH>(au[k], ua[j][k][0], ua[j][k][1], xb[j]);
            }
}

// Rows row0 .. of dst: bf16(silu(g) * u) of warp k's tile from the block's sums (k < ROWT; in
// token half `half`, c0, c1 row gi, tokens 8 half + 2 ti, + 1; c2, c3 row gi + 8).
__device__ __forceinline__ void gate_up_store(bf16 *dst, int ld, int row0, int k, int c, float g, float u, int T,
                                              int half)
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const int n = 8 * half + 2 * ti + (c & 1), r = row0 + 16 * k + gi + 8 * (c >> 1);
    if (n < T)
        dst[(size_t)n * ld + r] = to_bf(g / (1.0f + expf(-g)) * u);
}

// Block bx: the shared expert's items first (sh_items blocks: each 16 ROWT-row item in
// moe_sh_parts parts), then (slot, tile) pairs. With more than one part, each part's sums go
// to rt.sh_part and the item's last part to arrive (rt.sh_ticket) adds the parts in part order
// and stores the item. pol_sh: the shared items' wait, pol: the routed tiles' (both forms pass
// the same policy). NH token halves: T <= 8 NH; act's token stride 8 NH (moe_tstride).
// SMG > 0 (INT4 only; --moe-stage smem): the routed tiles stage SMG more groups a round (gate_up_int4).
template <bool INT4, int ROWT, int NH, int UNR, int UNRQ, class P, int SMG = 0>
__device__ __forceinline__ void moe_gate_up_tile(const P &pol_sh, const P &pol, const moe_weights &w,
                                                 const moe_route &rt, const bf16 *h, bf16 *act, bf16 *act_sh, int T,
                                                 int bx)
{
    static_assert(SMG == 0 || INT4, "the staged groups are INT4 tiles'");
    __shared__ float red[kMoeWarps][2 * ROWT][NH][4][kWarp];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int H = w.H, I = w.I, G = H / 32, rows = 16 * ROWT;
    const int parts = moe_sh_parts(H, ROWT), sh_items = w.Is / rows * parts, items = I / rows;
    const bool shared = bx < sh_items;
    pol.launch_dependents();
    constexpr bool coh = P::coherent;
    float ag[ROWT][NH][4] = {}, au[ROWT][NH][4] = {};
    bf16 *dst;
    int ld, row0;
    if (shared) {
        row0 = bx / parts * rows, dst = act_sh, ld = w.Is;
        gate_up_sh_part<ROWT, NH, moe_sh_unr(ROWT)>(pol_sh, w, h, T, bx / parts, bx % parts, ag, au);
    } else {
        const int per = (G + kMoeWarps - 1) / kMoeWarps, g0 = min(G, warp * per), g1 = min(G, g0 + per);
        pol.wait();
        const int slot = (bx - sh_items) / items, it = (bx - sh_items) % items;
        // slot < max_slots <= kMaxSlots, so uniq[slot] is in the buffer: both loads in one round trip
        const int n_uniq = coh ? __ldcg(rt.n_uniq) : *rt.n_uniq, e = coh ? __ldcg(rt.uniq + slot) : rt.uniq[slot];
        if (slot >= n_uniq)
            return;                                         // the whole CTA
        const size_t r = (size_t)e * I + (size_t)it * rows; // first row of the [E x I x H] tensors
        row0 = it * rows, dst = act + (size_t)slot * (8 * NH) * I, ld = I;
        if (INT4) {
            gate_up_stage<(SMG > 0 ? SMG : 1), ROWT, NH> *st = nullptr;
            if constexpr (SMG > 0) {
                __shared__ gate_up_stage<SMG, ROWT, NH> stage[kMoeWarps];
                st = &stage[warp];
            }
            gate_up_int4<ROWT, NH, UNRQ, coh, SMG>(
                reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.gate) + r * (H / 8)),
                reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.up) + r * (H / 8)),
                reinterpret_cast<const uint32_t *>(w.gate_s + r * G),
                reinterpret_cast<const uint32_t *>(w.up_s + r * G), G, h, H, T, g0, g1, ag, au, st);
        } else
            gate_up_bf16<ROWT, NH, UNR, coh>(static_cast<const bf16 *>(w.gate) + r * H,
                                             static_cast<const bf16 *>(w.up) + r * H, H, h, T, g0, g1, ag, au);
    }
#pragma unroll
    for (int k = 0; k < ROWT; k++)
#pragma unroll
        for (int hf = 0; hf < NH; hf++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                red[warp][k][hf][c][lane] = ag[k][hf][c], red[warp][ROWT + k][hf][c][lane] = au[k][hf][c];
    __syncthreads();
    const int k = warp; // warp k < ROWT finishes tile k: the warps' sums in warp order
    float gk[NH][4] = {}, uk[NH][4] = {};
    if (warp < ROWT)
#pragma unroll
        for (int hf = 0; hf < NH; hf++)
#pragma unroll
            for (int c = 0; c < 4; c++)
                for (int v = 0; v < kMoeWarps; v++)
                    gk[hf][c] += red[v][k][hf][c][lane], uk[hf][c] += red[v][ROWT + k][hf][c][lane];
    if (!shared || parts == 1) {
        if (warp < ROWT)
#pragma unroll
            for (int hf = 0; hf < NH; hf++)
#pragma unroll
                for (int c = 0; c < 4; c++)
                    gate_up_store(dst, ld, row0, k, c, gk[hf][c], uk[hf][c], T, hf);
        return;
    }
    // A part of a shared item: its sums [2 ROWT][NH][4][32] at (item, part); the item's last
    // part to arrive adds the parts in part order and stores the item.
    constexpr int kPartFloats = 2 * ROWT * NH * 4 * kWarp;
    const int item = bx / parts;
    const float *all = rt.sh_part + (size_t)item * parts * kPartFloats;
    float *mine = rt.sh_part + ((size_t)item * parts + bx % parts) * kPartFloats;
    if (warp < ROWT)
#pragma unroll
        for (int hf = 0; hf < NH; hf++)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                __stcg(mine + ((k * NH + hf) * 4 + c) * kWarp + lane, gk[hf][c]);
                __stcg(mine + (((ROWT + k) * NH + hf) * 4 + c) * kWarp + lane, uk[hf][c]);
            }
    if (!last_to_arrive(rt.sh_ticket + item, (unsigned)parts) || warp >= ROWT)
        return;
#pragma unroll
    for (int hf = 0; hf < NH; hf++)
#pragma unroll
        for (int c = 0; c < 4; c++) {
            float g = 0.0f, u = 0.0f;
            for (int p = 0; p < parts; p++)
                g += __ldcg(all + (size_t)p * kPartFloats + ((k * NH + hf) * 4 + c) * kWarp + lane),
                    u += __ldcg(all + (size_t)p * kPartFloats + (((ROWT + k) * NH + hf) * 4 + c) * kWarp + lane);
            gate_up_store(dst, ld, row0, k, c, g, u, T, hf);
        }
}

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
template <bool INT4, int ROWT, int NH, int UNR, class P, int EARLY = 0>
__device__ __forceinline__ void moe_down_tile(const P &pol, const moe_weights &w, const moe_route &rt, const bf16 *act,
                                              const bf16 *act_sh, bf16 *__restrict__ part, int T, int bx)
{
    static_assert(EARLY == 0 || !P::coherent, "the early selection is a kernel's own, after a pdl_late gate/up");
    __shared__ float red[kMoeWarps][ROWT][NH][4][kWarp];
    __shared__ int s_uniq[kMaxSlots], s_n, s_stale;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const int H = w.H, I = w.I, Is = w.Is, Gi = I / 32, Gs = Is / 32;
    const int r0 = bx * 16 * ROWT;
    constexpr int TS = 8 * NH; // act's and coef's token stride
    constexpr bool coh = P::coherent;
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
            s_uniq[i] = l2 ? __ldcg(rt.uniq + i) : rt.uniq[i];
        if (threadIdx.x == 0)
            s_n = l2 ? __ldcg(rt.n_uniq) : *rt.n_uniq;
    };
    // EARLY 3's guess: what the buffer held before the wait (an older layer's selection, a half-written
    // one, or never written), clamped so that every load it issues is within the weights
    const auto guess = [&]() {
        for (int i = threadIdx.x; i < kMaxSlots; i += blockDim.x)
            s_uniq[i] = min(max(__ldcg(rt.uniq + i), 0), w.E - 1);
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
            const int u = q / Gi, grp = q % Gi;
            const size_t r = (size_t)s_uniq[u] * H + r0; // first row of the [E x H x I] tensor
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                const size_t rk = r + 16 * k;
                if (INT4) {
                    qa[j][k] = ld_stream2(
                        reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.down) + rk * (I / 8)) +
                        grp * kWarp + lane);
                    sa[j][k] = __ldg(reinterpret_cast<const uint32_t *>(w.down_s + rk * Gi) + grp * 8 + gi);
                } else {
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
                const int u = q / Gi, grp = q % Gi;
                const size_t r = (size_t)s_uniq[u] * H + r0;
#pragma unroll
                for (int k = 0; k < ROWT; k++) {
                    const size_t rk = r + 16 * k;
                    if (lane % 16 == 0)
                        asm volatile("prefetch.global.L2 [%0];" ::"l"(
                            reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.down) + rk * (I / 8)) +
                            grp * kWarp + lane));
                    else if (lane == 1)
                        asm volatile("prefetch.global.L2 [%0];" ::"l"(
                            reinterpret_cast<const uint32_t *>(w.down_s + rk * Gi) + grp * 8));
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
                    s_uniq[i] = fresh[k];
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
            const int u = q / Gi, grp = q % Gi;
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
