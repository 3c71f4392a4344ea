// SPDX-License-Identifier: MIT
// The MoE kernels' tensor-core pieces: mma.sync m16n8k16 (bf16 in, fp32 accumulate; SM80
// and later, SM90 and SM120 alike), A fragments of a 16-row weight tile (INT4 from the
// fragment layout of moe_int4_layout.h, or bf16 from a row-major matrix) and B fragments
// of up to 8 token rows (n = 8, rows past T zero), one group of 32 columns at a time; NH
// such halves (tokens 8 h .. 8 h + 7) for T up to 8 NH, sharing each A fragment (an INT4
// word dequantized once for both). Inside a group, lane 4 gi + ti covers columns 8 ti ..
// 8 ti + 7 (the k permutation of moe_int4_layout.h), so its B is one 16-byte vector of the
// token's row.
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

// ((a ^ 8) & 0xf) | 0x4300 in each 16-bit half, by one lop3 (where the mask 0x000f000f is
// set, a ^ c; elsewhere c, with c = 0x43084308; LUT 0x6a = (b & (a ^ c)) | (~b & c)): q + 8
// of the half's low signed nibble q, unsigned, with bf16 128's bits above it. Written as C
// (an xor of the word, then an and and an or a pair), ptxas kept all three: 16 instructions a
// word where this takes 11 (ci/sass-loops.py on moe.cu's gate/up, sm_90).
__device__ __forceinline__ uint32_t int4_pair_bits(uint32_t a)
{
    uint32_t r;
    asm("lop3.b32 %0, %1, %2, %3, 0x6a;" : "=r"(r) : "r"(a), "n"(0x000f000f), "n"(0x43084308));
    return r;
}

// One INT4 fragment word to the A registers of a k16 step (nibble v: register pair v % 4,
// half v / 4), each 4-bit q exact in bf16: (q + 8) | 0x4300 is bf16 128 + q + 8, less 136.
__device__ __forceinline__ void int4_frag(uint32_t word, uint32_t (&a)[4])
{
    const __nv_bfloat162 bias = __floats2bfloat162_rn(136.0f, 136.0f);
#pragma unroll
    for (int p = 0; p < 4; p++) {
        uint32_t x = int4_pair_bits(word >> (4 * p));
        __nv_bfloat162 v = __hsub2(*reinterpret_cast<__nv_bfloat162 *>(&x), bias);
        a[p] = *reinterpret_cast<uint32_t *>(&v);
    }
}

// A group of a bf16 tile: r0 = row gi's 8 columns, r1 = row gi + 8's (the lane's vectors).
__device__ __forceinline__ void mma_bf16_group(float (&d)[4], const uint4 r0, const uint4 r1, const uint4 x)
{
    mma16816(d, r0.x, r1.x, r0.y, r1.y, x.x, x.y);
    mma16816(d, r0.z, r1.z, r0.w, r1.w, x.z, x.w);
}

// The same for NH token halves (x[h]: half h's B vector): d[h] += A B_h.
template <int NH>
__device__ __forceinline__ void mma_bf16_group(float (&d)[NH][4], const uint4 r0, const uint4 r1, const uint4 (&x)[NH])
{
#pragma unroll
    for (int h = 0; h < NH; h++)
        mma_bf16_group(d[h], r0, r1, x[h]);
}

// A group of an INT4 tile into fresh accumulators, one per token half: both k16 steps,
// unscaled, each fragment word dequantized once for all halves.
template <int NH>
__device__ __forceinline__ void mma_int4_group(float (&p)[NH][4], const uint2 w, const uint4 (&x)[NH])
{
#pragma unroll
    for (int h = 0; h < NH; h++)
        p[h][0] = p[h][1] = p[h][2] = p[h][3] = 0.0f;
    uint32_t a[4];
    int4_frag(w.x, a);
#pragma unroll
    for (int h = 0; h < NH; h++)
        mma16816(p[h], a[0], a[1], a[2], a[3], x[h].x, x[h].y);
    int4_frag(w.y, a);
#pragma unroll
    for (int h = 0; h < NH; h++)
        mma16816(p[h], a[0], a[1], a[2], a[3], x[h].z, x[h].w);
}

// The lane's B vector of group grp in token half `half`: token n = 8 half + gi's columns
// 32 grp + 8 ti .. (zero for n >= T). COH: x was written within this launch (persist_sync),
// read through L2.
template <bool COH = false>
__device__ __forceinline__ uint4 ld_b(const bf16 *x, int ld, int grp, int T, int half = 0)
{
    const int lane = threadIdx.x % kWarp, n = 8 * half + lane / 4, ti = lane % 4;
    if (n >= T)
        return make_uint4(0, 0, 0, 0);
    return ld_act<COH>(reinterpret_cast<const uint4 *>(x + (size_t)n * ld + grp * 32 + ti * 8));
}

// The lane's B vectors of group grp in all NH halves.
template <int NH, bool COH = false>
__device__ __forceinline__ void ld_b_halves(uint4 (&xb)[NH], const bf16 *x, int ld, int grp, int T)
{
#pragma unroll
    for (int h = 0; h < NH; h++)
        xb[h] = ld_b<COH>(x, ld, grp, T, h);
}

// The lane's vectors of group grp of a bf16 tile (rows of K columns from `tile`).
__device__ __forceinline__ void ld_a_bf16(const bf16 *tile, int K, int grp, uint4 &r0, uint4 &r1)
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const bf16 *p = tile + (size_t)gi * K + grp * 32 + ti * 8;
    r0 = ld_stream(reinterpret_cast<const uint4 *>(p));
    r1 = ld_stream(reinterpret_cast<const uint4 *>(p + (size_t)8 * K));
}

// acc += s * p with the group's scale pair of the lane's rows (gi: p[0..1], gi + 8: p[2..3]),
// in every token half (the scales are the rows', not the tokens').
template <int NH>
__device__ __forceinline__ void add_scaled(float (&acc)[NH][4], const float (&p)[NH][4], uint32_t s)
{
    const float s0 = bf16_lo(s), s1 = bf16_hi(s);
#pragma unroll
    for (int h = 0; h < NH; h++) {
        acc[h][0] = fmaf(s0, p[h][0], acc[h][0]), acc[h][1] = fmaf(s0, p[h][1], acc[h][1]);
        acc[h][2] = fmaf(s1, p[h][2], acc[h][2]), acc[h][3] = fmaf(s1, p[h][3], acc[h][3]);
    }
}

} // namespace arbk

#endif
