// SPDX-License-Identifier: MIT
// The MoE block's two kernels' tiling (moe.cu: what they compute; moe_gate_up_ops.cuh and
// moe_down_ops.cuh: one block index of each), shared by their own launches and persist.cu's.
#ifndef ARB_ENGINE_KERNELS_MOE_OPS_CUH
#define ARB_ENGINE_KERNELS_MOE_OPS_CUH

#include "gpu/kernels/moe_mma.cuh"

namespace arbk {

constexpr int kMoeWarps = 8;

// The tiling by T (moe.cu says why): ROWT 16-row tiles per block; NH token halves
// (moe_halves, kernels.h); groups in flight per lane, UNR for the routed bf16 tiles and UNRQ
// for the routed INT4 tiles of gate/up, and the (expert, group) pairs of down. Only the
// loads in flight depend on them, not the routed sums (the shared expert's parts follow ROWT:
// moe_sh_unr, moe_sh_parts). One tile at T = 1 only: at T = 3 two tiles (Kimi-K2's ~188 routed
// blocks + 112 shared parts, not ~376 + 112: near one wave at two an SM, each token vector loaded
// once for both tiles) measured verify -1.8% on an H200 (results/engine-h200/1e86f27-rowt/).
__host__ __device__ constexpr int moe_rowt(int T) { return T <= 1 ? 1 : 2; }
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
// 15.5 -> 14.3 us a layer at T = 3; decode even; 128 registers, no spill on sm_90), bf16 4 / ROWT.
// T = 9 .. 16 (two token halves): half of that, the token vectors and weights being twice the registers.
__host__ __device__ constexpr int moe_unr_down(bool int4, int rowt, int nh = 1)
{
    return int4 ? 8 / nh : (4 / rowt / nh > 0 ? 4 / rowt / nh : 1);
}
// What moe_down_tile keeps in flight for moe_unr_down's UNR (its kernel's and the persistent form's
// alike): on SM120 at most 6 INT4 pairs.
// At 8 the sm_120 pass of the default kernel (two tiles, one token half, --moe-early spec) spills 36
// bytes (CUDA 13.0), and in its round loop each of four pairs' scale loads is stored to local memory
// as it is loaded (an STL that waits for that load), so the round's loads go out one round trip
// after another; at 6 it spills nothing. sm_90 keeps 8 (the same SASS). Not timed on an SM120 (none
// lent); the sums do not depend on it (the pairs are added in the same order).
__host__ __device__ constexpr int moe_unr_down_arch(bool int4, int unr)
{
    return int4 && unr > 6 ? ARB_SM120_PICK(6, unr) : unr;
}
// The down kernel's tiles per block at every T (moe.cu says why; the persistent form's down
// stage keeps moe_rowt(T): the sums do not depend on it, and the forms' results are equal).
__host__ __device__ constexpr int moe_rowt_down() { return 2; }

} // namespace arbk

#endif
