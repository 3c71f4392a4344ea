// SPDX-License-Identifier: MIT
// One block index of the MoE gate/up kernel (moe.cu: what it computes), for its own launch and
// persist.cu's persistent launch alike (P: common.cuh's sync); the tiling is moe_ops.cuh's.
#ifndef ARB_ENGINE_KERNELS_MOE_GATE_UP_OPS_CUH
#define ARB_ENGINE_KERNELS_MOE_GATE_UP_OPS_CUH

#include "gpu/kernels/moe_ops.cuh"

namespace arbk {

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
// (Kimi-K2 at T = 1: 28 groups a warp in 3 round trips instead of 4).
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

} // namespace arbk

#endif
