// SPDX-License-Identifier: MIT
// The INT4 gate/up walk of one 16-row tile for T <= kMoeStageT tokens, staged through
// shared memory: each warp keeps kMoeStages groups of gate and up (fragment words and scale
// pairs, moe_int4_layout.h) and the tokens' inputs of each group in flight with cp.async
// (SM80 and later: SM90 and SM120 alike) instead of registers: a CTA holds 8 x kMoeStages
// x 576 bytes of weights in flight, 1.7 x what the register form can (4 groups per lane
// within the two-CTAs-per-SM register budget). The sums are added in the register form's
// order: per group, ascending, a fresh accumulator scaled into the row's sum.
#ifndef ARB_ENGINE_KERNELS_MOE_STAGE_CUH
#define ARB_ENGINE_KERNELS_MOE_STAGE_CUH

#include "gpu/kernels/moe_mma.cuh"

namespace arbk {

constexpr int kMoeStages = 6; // groups in flight per warp
constexpr int kMoeStageT = 3; // tokens a stage holds

// One group of one tile of gate and up as the warp's lanes read it: lane l's fragment words
// at [l], the scale pair of rows (gi, gi + 8) at [gi], token t's 32 inputs at x[t].
// 768 bytes, 16-byte pieces.
struct alignas(16) int4_stage {
    uint2 gq[kWarp], uq[kWarp];
    uint32_t gs[8], us[8];
    uint4 x[kMoeStageT][4];
};
static_assert(sizeof(int4_stage) == 768, "int4_stage: 2 x 256 bytes of words, 2 x 32 of scales, 3 x 64 of inputs");

__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> __device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// Group g of the tile into stage s when g < g1 (lanes 0-15 the gate words, 16-31 the up
// words, lanes 0-3 the scales, lanes 4 .. 4 T + 3 the tokens' inputs), then a commit in
// every case, so that each step of the walk has committed the same number of groups.
// Every address 16-byte aligned (the launcher checks the pointers; ldx is a multiple of 32).
__device__ __forceinline__ void stage_int4_group(int4_stage &s, const uint2 *gq, const uint2 *uq, const uint32_t *gs,
                                                 const uint32_t *us, const bf16 *x, int ldx, int T, int g, int g1)
{
    const int lane = threadIdx.x % kWarp;
    if (g < g1) {
        const uint2 *src = (lane < 16 ? gq : uq) + (size_t)g * kWarp + 2 * (lane % 16);
        cp_async16(lane < 16 ? &s.gq[2 * lane] : &s.uq[2 * (lane - 16)], src);
        if (lane < 4)
            cp_async16(lane < 2 ? &s.gs[4 * lane] : &s.us[4 * (lane - 2)], (lane < 2 ? gs : us) + (size_t)g * 8 + 4 * (lane % 2));
        else if (lane < 4 + 4 * T) {
            const int t = (lane - 4) / 4, piece = lane % 4;
            cp_async16(&s.x[t][piece], x + (size_t)t * ldx + (size_t)g * 32 + 8 * piece);
        }
    }
    cp_async_commit();
}

// ag, au += the tile's gate and up rows over groups [g0, g1) (gq, uq: the tile's uint2 per
// (group, lane); gs, us: its scale pairs per (group, gi); x: T <= kMoeStageT rows of ldx);
// st: this warp's stages.
__device__ __forceinline__ void gate_up_int4_staged(int4_stage (&st)[kMoeStages], const uint2 *__restrict__ gq,
                                                    const uint2 *__restrict__ uq, const uint32_t *__restrict__ gs,
                                                    const uint32_t *__restrict__ us, const bf16 *__restrict__ x,
                                                    int ldx, int T, int g0, int g1, float (&ag)[4], float (&au)[4])
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
#pragma unroll
    for (int i = 0; i < kMoeStages; i++)
        stage_int4_group(st[i], gq, uq, gs, us, x, ldx, T, g0 + i, g1);
    for (int g = g0; g < g1; g++) {
        int4_stage &s = st[(g - g0) % kMoeStages];
        cp_async_wait<kMoeStages - 1>(); // this lane's pieces of group g have landed
        __syncwarp();                    // and every lane's
        const uint2 qg = s.gq[lane], qu = s.uq[lane];
        const uint32_t sg = s.gs[gi], su = s.us[gi];
        const uint4 xb = gi < T ? s.x[gi][ti] : make_uint4(0, 0, 0, 0);
        __syncwarp(); // every lane has read stage s: refill it
        stage_int4_group(s, gq, uq, gs, us, x, ldx, T, g + kMoeStages, g1);
        float p[4];
        mma_int4_group(p, qg, xb);
        add_scaled(ag, p, sg);
        mma_int4_group(p, qu, xb);
        add_scaled(au, p, su);
    }
    cp_async_wait<0>();
}

} // namespace arbk

#endif
