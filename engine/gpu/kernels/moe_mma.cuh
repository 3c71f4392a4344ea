// SPDX-License-Identifier: MIT
// The MoE kernels' tensor-core pieces: mma.sync m16n8k16 (bf16 in, fp32 accumulate; SM80
// and later, SM90 and SM120 alike), A fragments of a 16-row weight tile (INT4 from the
// fragment layout of moe_int4_layout.h, or bf16 from a row-major matrix) and B fragments
// of up to 8 token rows (n = 8, rows past T zero), one group of 32 columns at a time.
// Inside a group, lane 4 gi + ti covers columns 8 ti .. 8 ti + 7 (the k permutation of
// moe_int4_layout.h), so its B is one 16-byte vector of the token's row.
#ifndef ARB_ENGINE_KERNELS_MOE_MMA_CUH
#define ARB_ENGINE_KERNELS_MOE_MMA_CUH

#include "gpu/kernels/common.cuh"

namespace arbk {

// d += A (16 x 16) B (16 x 8): a = {a0a1, a2a3, a4a5, a6a7}, b = {b0b1, b2b3}.
__device__ __forceinline__ void mma16816(float (&d)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1)
{
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint2 ld_stream2(const uint2 *p)
{
    uint2 v;
    asm volatile("ld.global.nc.L1::no_allocate.v2.u32 {%0,%1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
    return v;
}

// One k16 step of a group: A from one INT4 fragment word (nibble v: register pair v % 4,
// half v / 4), each 4-bit q exact in bf16: (q + 8) | 0x4300 is bf16 128 + q + 8, less 136.
__device__ __forceinline__ void mma_int4(float (&d)[4], uint32_t word, uint32_t b0, uint32_t b1)
{
    const uint32_t u = word ^ 0x88888888u; // q + 8 in every nibble, unsigned
    const __nv_bfloat162 bias = __floats2bfloat162_rn(136.0f, 136.0f);
    uint32_t a[4];
#pragma unroll
    for (int p = 0; p < 4; p++) {
        uint32_t x = ((u >> (4 * p)) & 0x000f000fu) | 0x43004300u;
        __nv_bfloat162 v = __hsub2(*reinterpret_cast<__nv_bfloat162 *>(&x), bias);
        a[p] = *reinterpret_cast<uint32_t *>(&v);
    }
    mma16816(d, a[0], a[1], a[2], a[3], b0, b1);
}

// A group of a bf16 tile: r0 = row gi's 8 columns, r1 = row gi + 8's (the lane's vectors).
__device__ __forceinline__ void mma_bf16_group(float (&d)[4], const uint4 r0, const uint4 r1, const uint4 x)
{
    mma16816(d, r0.x, r1.x, r0.y, r1.y, x.x, x.y);
    mma16816(d, r0.z, r1.z, r0.w, r1.w, x.z, x.w);
}

// A group of an INT4 tile into a fresh accumulator: both k16 steps, unscaled.
__device__ __forceinline__ void mma_int4_group(float (&p)[4], const uint2 w, const uint4 x)
{
    p[0] = p[1] = p[2] = p[3] = 0.0f;
    mma_int4(p, w.x, x.x, x.y);
    mma_int4(p, w.y, x.z, x.w);
}

// The lane's B vector of group grp: token gi's columns 32 grp + 8 ti .. (zero for gi >= T).
// COH: x was written within this launch (persist_sync), read through L2.
template <bool COH = false>
__device__ __forceinline__ uint4 ld_b(const bf16 *x, int ld, int grp, int T)
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    if (gi >= T)
        return make_uint4(0, 0, 0, 0);
    return ld_act<COH>(reinterpret_cast<const uint4 *>(x + (size_t)gi * ld + grp * 32 + ti * 8));
}

// The lane's vectors of group grp of a bf16 tile (rows of K columns from `tile`).
__device__ __forceinline__ void ld_a_bf16(const bf16 *tile, int K, int grp, uint4 &r0, uint4 &r1)
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const bf16 *p = tile + (size_t)gi * K + grp * 32 + ti * 8;
    r0 = ld_stream(reinterpret_cast<const uint4 *>(p));
    r1 = ld_stream(reinterpret_cast<const uint4 *>(p + (size_t)8 * K));
}

// acc += s * p with the group's scale pair of the lane's rows (gi: p[0..1], gi + 8: p[2..3]).
__device__ __forceinline__ void add_scaled(float (&acc)[4], const float (&p)[4], uint32_t s)
{
    const float s0 = bf16_lo(s), s1 = bf16_hi(s);
    acc[0] = fmaf(s0, p[0], acc[0]), acc[1] = fmaf(s0, p[1], acc[1]);
    acc[2] = fmaf(s1, p[2], acc[2]), acc[3] = fmaf(s1, p[3], acc[3]);
}

} // namespace arbk

#endif
