// SPDX-License-Identifier: MIT
// The MoE block of one layer for all experts the step selected, in two launches, on tensor
// cores (moe_mma.cuh: mma.sync m16n8k16, the T <= 8 tokens as n, zero padded, so the work
// is the same at every T; T = 9 .. 16 as two halves of 8 sharing each weight fragment):
//   moe_gate_up  act[u][t] = bf16(silu(gate_e h[t]) * (up_e h[t])) for every distinct
//                expert e = uniq[u], and act_sh[t] for the shared expert: a CTA per ROWT
//                16-row tiles of gate and of up (the same rows of both), its 8 warps
//                splitting the H columns in groups of 32; the warps' fp32 sums added in
//                warp order, then SiLU * up. The shared expert's bf16 tiles (four times a
//                routed INT4 tile's bytes) are split over their columns into parts of a
//                CTA each (moe_sh_parts), its loads issued before the PDL wait; the tile's
//                last part to arrive (a ticket) adds the parts' sums in part order.
//   moe_down     part[t][i] = bf16(shared_down[i] . act_sh[t]
//                                  + sum_u coef[u][t] (down_e[i] . act[u][t]))
//                a CTA per ROWT 16-row tiles of the output; each warp takes the shared
//                expert's groups w, w + 8, .. then the (expert, group) pairs w, w + 8, .. in
//                ascending order (pair = u * groups + group); the warps' sums in warp order.
// INT4 groups (forward.md): the group's two k16 steps into a fresh accumulator, then times
// the group's scale into the sum (down: times the token's weight too). No atomics: every
// sum has one order for a given selection, so reruns and graph replays are bit-identical.
// Routed experts INT4 (W4A16 group 32 in the fragment layout of moe_int4_layout.h) or bf16
// (row-major); the shared expert bf16. An expert shared by several tokens is read once.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/moe_down_ops.cuh"
#include "gpu/kernels/moe_gate_up_ops.cuh"

namespace arbk {
namespace {

// P: pdl_sync, or pdl_late with --moe-early (the trigger after the wait, for down's early loads).
template <bool INT4, int ROWT, int NH, int UNR, int UNRQ, int MINB, int SMG = 0, class P = pdl_sync>
__global__ void __launch_bounds__(kMoeWarps *kWarp, MINB)
    moe_gate_up_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ h, bf16 *__restrict__ act,
                       bf16 *__restrict__ act_sh, int T, int head)
{
    ARB_TL(ARB_TL_GATE_UP);
    // head > 0 (moe_order_head): blocks 0 .. head - 1 run the first routed tiles, the shared
    // expert's parts come next, then the other routed tiles (kernels.h's moe_gate_up_block);
    // each logical block does the same work in every order
    const int bx = moe_gate_up_block((int)blockIdx.x, moe_sh_items(w.H, w.Is, T), head); // head 0: blockIdx.x
    moe_gate_up_tile<INT4, ROWT, NH, UNR, UNRQ, P, SMG>(P(), P(), w, rt, h, act, act_sh, T, bx);
}

// --moe-stage smem: INT4 groups a warp stages in shared memory a round on top of UNRQ in registers
// (one tile, T = 1: 28 groups a warp at Kimi-K2 in rounds of 7 + 3; 30 KB of staging a CTA, two
// CTAs an SM on SM90 and SM120 alike). Not the default: slower on an H100 (decode +1.53%, verify
// +1.61%, results/engine-h100/3744719-stage/).
constexpr int kMoeStageGroups = 3;

template <bool INT4, int ROWT, int NH, int UNR, int EARLY>
__global__ void __launch_bounds__(kMoeWarps *kWarp, 2)
    moe_down_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ act, const bf16 *__restrict__ act_sh,
                    bf16 *__restrict__ part, int T)
{
    ARB_TL(ARB_TL_DOWN);
    moe_down_tile<INT4, ROWT, NH, UNR, pdl_sync, EARLY>(pdl_sync(), w, rt, act, act_sh, part, T, (int)blockIdx.x);
}

// The gate/up grid's order (launch_ctx.moe_order, --moe-order): the hardware hands a launch's
// blocks to SMs in index order as room frees, and under PDL a gate/up launch starts beside the
// router's blocks, with room for about one of its blocks an SM. Shared expert first (1, the
// order before the twenty-seventh session): the shared parts take that first block an SM and
// their loads overlap the router; the routed tiles land where room frees next, at T = 1 on an
// H100 two on 20 of 132 SMs a launch and none on 24, 11.8 us from the wait to the end on an SM
// with two, 10.2 with one (results/engine-h100/e65d516-moe-order/tl). Routed first (2): one
// routed tile an SM while they fit (126 SMs with one there; decode -3.1% in the same run), the
// shared parts in the room that frees before the wait. Auto (0): routed first where the routed
// tiles fit one an SM (Kimi-K2's 128 at T = 1 on 132 or 188 SMs), else shared first (at T = 3
// routed first put the shared parts after routed tiles, past the wait: gate/up +1.3 us a layer
// on an H100, the same run). Spread (3): as many routed tiles as SMs first, then the shared
// parts, then the other routed tiles: auto's order where the routed tiles fit one an SM, and at
// T = 3 (384 on 132 SMs) a routed tile in every SM's first room with the shared parts in the
// room that frees next; verify +0.76% against auto on an H100 (results/engine-h100/ceaad23-spread/).
// The routed tiles that lead the grid (0: the shared parts lead).
static cudaError_t moe_order_head(int order, int routed, int *head)
{
    *head = order == 2 ? routed : 0;
    if (order != 0 && order != 3)
        return cudaSuccess;
    device_shape d;
    const cudaError_t e = current_device_shape(&d);
    if (e == cudaSuccess)
        *head = order == 3 ? min(routed, d.sms) : routed <= d.sms ? routed : 0;
    return e;
}

// Rows per CTA (ROWT tiles), groups in flight per lane (UNR for routed bf16 tiles, UNRQ for
// the routed INT4 tiles; moe_ops.cuh's moe_tiling) and CTAs per SM (MINB):
//   gate/up T = 1:  1 tile, bf16 4 groups, INT4 7 (Kimi-K2's 28 groups per warp in 4 round
//                   trips, not 7: ~10 registers a group), two CTAs per SM (Kimi-K2's 112
//                   shared-expert parts and 128 routed CTAs fit one wave of 132 SMs: before
//                   the split the 16 shared CTAs each read 459 KB, the routed 129 KB, and the
//                   launch waited on the shared ones);
//           the shared expert: 4 (T >= 2: 2) groups a warp, one round of loads (moe_sh_unr);
//           T >= 2: 2 tiles (each token vector loaded once for both: at T = 8 the tokens'
//                   bytes would otherwise rival the weights'), bf16 2 groups, INT4 4, two
//                   CTAs per SM (until the thirty-fourth session T = 2..3 had one tile, as
//                   T = 1: at T = 3 ~376 routed blocks + 112 shared parts, two waves; two
//                   tiles measured verify -1.8% on an H200, results/engine-h200/1e86f27-rowt/);
//   down    2 tiles at every T (moe_rowt_down: Kimi-K2's 224 CTAs, one wave at two per SM;
//           each token vector loaded once for both tiles); 8 INT4 or 2 bf16 (expert, group)
//           pairs per warp and round (moe_unr_down). At T <= 3 one tile (448 CTAs, 1.7 waves) measured
//           7.41 -> 5.74 us at T = 1 and 21.10 -> 15.93 us at T = 3 against this (graph,
//           one H200, results/engine-h200/1b0c5e0-ab/).
//   T = 9 .. 16 (tree verify; the MoE kernels alone): two token halves (NH 2), 2 tiles, half
//           the groups in flight of T <= 8 (moe_tiling<2, 2>, moe_unr_down): each group's
//           token vectors are twice the registers. Not tuned on a GPU.
// The unroll only sets how many loads are in flight: each warp's groups are still added in
// ascending order, so the sums do not depend on it. At T = 1 on an H100 rounds of 10 and 14 (the
// token vector staged in shared memory to free the registers) were slower than 7, and a rolling
// buffer (each group's registers loaded again as soon as it is added) too: ptxas waits on all of
// a loop's loads as one scoreboard (results/engine-h100/100aa83-roll/, -xs/, -xc/).
// Down's shared-memory carveout preference (percent; common.cuh's carveout_once): 14, asking ~32 KiB
// of an H100's 228. Which configuration the step's down launches get with and without it is not
// measured (Nsight Compute saw 64 KiB for the prefill's T = 8 down in main and with it alike), so
// why verify gains is not shown. The same code and bits. Three H100 calls, four alternated rounds
// each: verify -0.77%, -0.67%, -0.83% (apart every time); decode +0.06% and -0.05% (not shown) in
// the A/B's step rows, once +0.7% (apart) and once even in the kernels tables' step rows
// (results/engine-h100/f74d203-carve/, ed8cc3d-emb-d14/, 9389fe4-ctl/; the last with a control tree
// of main's own code, which read like main). On sm_120 (~100 KB an SM) 14% asks ~14 KB: not
// measured there.
constexpr int kDownCarveout = 14;

template <bool INT4, int ROWT, int NH, int MINB>
cudaError_t moe_dispatch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                         bf16 *act_sh, bf16 *part, int T, int max_slots, int which)
{
    constexpr int UNR = moe_tiling<ROWT, NH>::unr, UNRQ = moe_tiling<ROWT, NH>::unrq;
    constexpr int kDown = moe_rowt_down(), kUnrDown = moe_unr_down(INT4, kDown, NH);
    const dim3 block(kMoeWarps * kWarp);
    const int rows = 16 * ROWT;
    cudaError_t e = cudaSuccess;
    if (which & 1) {
        // --moe-early on, l2 and spec: gate/up triggers down after its own wait (spec-sync: at its start)
        const bool late = c.moe_early >= 1 && c.moe_early <= 3;
        auto gate_up = late ? moe_gate_up_kernel<INT4, ROWT, NH, UNR, UNRQ, MINB, 0, pdl_late>
                            : moe_gate_up_kernel<INT4, ROWT, NH, UNR, UNRQ, MINB>;
        if constexpr (INT4 && ROWT == 1 && NH == 1) // --moe-stage smem: where it is built (one tile, T = 1)
            if (c.moe_stage)
                gate_up = late ? moe_gate_up_kernel<INT4, ROWT, NH, UNR, UNRQ, MINB, kMoeStageGroups, pdl_late>
                               : moe_gate_up_kernel<INT4, ROWT, NH, UNR, UNRQ, MINB, kMoeStageGroups>;
        const int routed = max_slots * (w.I / rows);
        int head = 0;
        e = moe_order_head(c.moe_order, routed, &head);
        if (e == cudaSuccess)
            e = launch(c, gate_up, dim3(moe_sh_items(w.H, w.Is, T) + routed), block, 0, w, rt, h, act, act_sh, T,
                       head);
    }
    if (e == cudaSuccess && (which & 2)) {
        const auto down = c.moe_early >= 3 ? moe_down_kernel<INT4, kDown, NH, kUnrDown, 3>
                          : c.moe_early == 2 ? moe_down_kernel<INT4, kDown, NH, kUnrDown, 2>
                          : c.moe_early      ? moe_down_kernel<INT4, kDown, NH, kUnrDown, 1>
                                             : moe_down_kernel<INT4, kDown, NH, kUnrDown, 0>;
        e = carveout_once((const void *)down, kDownCarveout);
        if (e == cudaSuccess)
            e = launch(c, down, dim3(w.H / (16 * kDown)), block, 0, w, rt, (const bf16 *)act, (const bf16 *)act_sh,
                       part, T);
    }
    return e;
}

template <bool INT4>
cudaError_t moe_by_t(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                     bf16 *act_sh, bf16 *part, int T, int max_slots, int which)
{
    if (moe_halves(T) == 2)
        return moe_dispatch<INT4, 2, 2, 2>(c, w, rt, h, act, act_sh, part, T, max_slots, which);
    return moe_rowt(T) == 1 ? moe_dispatch<INT4, 1, 1, 2>(c, w, rt, h, act, act_sh, part, T, max_slots, which)
                            : moe_dispatch<INT4, 2, 1, 2>(c, w, rt, h, act, act_sh, part, T, max_slots, which);
}

} // namespace

// which: 1 gate/up, 2 down, 3 both.
static cudaError_t moe_launch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h,
                              bf16 *act, bf16 *act_sh, bf16 *part, int T, int max_slots, int which)
{
    if (w.H % 32 || w.I % 32 || w.Is % 32 || w.H <= 0 || w.I <= 0 || w.Is <= 0 || T < 1 || T > kMoeMaxT ||
        max_slots < 1 || max_slots > kMaxSlots)
        return cudaErrorInvalidValue;
    if ((which & 1) && moe_sh_parts(w.H, moe_rowt(T)) > 1 && (!rt.sh_part || !rt.sh_ticket))
        return cudaErrorInvalidValue; // the shared expert's parts need their scratch
    if ((which & 2) && c.moe_early >= 3 && w.E < 1)
        return cudaErrorInvalidValue; // spec clamps its guessed selection to the experts there are
    if (c.moe_early < 0 || c.moe_early > 4)
        return cudaErrorInvalidValue;

    return w.gate_s ? moe_by_t<true>(c, w, rt, h, act, act_sh, part, T, max_slots, which)
                    : moe_by_t<false>(c, w, rt, h, act, act_sh, part, T, max_slots, which);
}

size_t moe_sh_part_floats(int H, int Is)
{
    // [Is / 16 ROWT items][parts][2 ROWT x NH x 4 x 32]: Is 16 NH parts floats, the most of
    // (ROWT 1, NH 1), (2, 1) and (2, 2)
    const int p1 = moe_sh_parts(H, 1), p2 = moe_sh_parts(H, 2), p = max(p1, 2 * p2);
    return max(p1, p2) > 1 ? (size_t)Is * 16 * p : 0;
}

int moe_sh_tickets(int Is) { return Is / 16; }

cudaError_t moe_gate_up(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                        bf16 *act_sh, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, nullptr, T, max_slots, 1);
}

cudaError_t moe_down(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *act,
                     const bf16 *act_sh, bf16 *part, int T)
{
    return moe_launch(c, w, rt, nullptr, const_cast<bf16 *>(act), const_cast<bf16 *>(act_sh), part, T, 1, 2);
}

cudaError_t moe_block(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                      bf16 *act_sh, bf16 *part, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, part, T, max_slots, 3);
}

cudaError_t moe_reissues(unsigned *n)
{
#if ARB_TIMELINE
    const unsigned zero = 0;
    cudaError_t e = cudaMemcpyFromSymbol(n, g_moe_reissues, sizeof *n);
    return e == cudaSuccess ? cudaMemcpyToSymbol(g_moe_reissues, &zero, sizeof zero) : e;
#else
    *n = 0;
    return cudaErrorNotSupported;
#endif
}

ARB_TL_TU(moe)

} // namespace arbk
