// SPDX-License-Identifier: MIT
// One block index of the attention's three kernels (mla_split.cu: what they compute), for
// their own launches and persist.cu's persistent launch alike (P: common.cuh's sync).
#ifndef ARB_ENGINE_KERNELS_ATTEND_OPS_CUH
#define ARB_ENGINE_KERNELS_ATTEND_OPS_CUH

#include <cmath>

#include "gpu/kernels/moe_mma.cuh"
#include "gpu/kernels/rowdot.cuh"

namespace arbk {

// The attention merge's chunk weights for one row: base points at the row's partial in
// chunk 0 (chunks cstride floats apart, m at [rkv], l at [rkv + 1]); wch[c] = exp(m_c - M)
// (0 for a wholly masked chunk); returns sum_c wch[c] l_c, the same in every thread, in a
// fixed order. By the whole block; wch (shared) is published on return.
template <bool COH = false> __device__ __forceinline__ float chunk_weights(const float *base, size_t cstride, int rkv,
                                                                           int nch, float *wch, float *scratch)
{
    // the thread's first chunk's (m, l) in one round trip (one chunk a thread up to
    // blockDim.x chunks: 8192 positions at 256 threads); later chunks' read as they come
    const int ch0 = threadIdx.x;
    float m0 = -INFINITY, l0 = 0.0f;
    if (ch0 < nch) {
        m0 = COH ? __ldcg(base + ch0 * cstride + rkv) : base[ch0 * cstride + rkv];
        l0 = COH ? __ldcg(base + ch0 * cstride + rkv + 1) : base[ch0 * cstride + rkv + 1];
    }
    float m = fmaxf(-INFINITY, m0); // as a loop from -inf over the thread's chunks
    for (int ch = ch0 + blockDim.x; ch < nch; ch += blockDim.x)
        m = fmaxf(m, COH ? __ldcg(base + ch * cstride + rkv) : base[ch * cstride + rkv]);
    const float M = block_max(m, scratch);
    float lsum = 0.0f;
    for (int ch = ch0; ch < nch; ch += blockDim.x) {
        const bool first = ch == ch0;
        const float mc = first ? m0 : COH ? __ldcg(base + ch * cstride + rkv) : base[ch * cstride + rkv];
        const float lc = first ? l0 : COH ? __ldcg(base + ch * cstride + rkv + 1) : base[ch * cstride + rkv + 1];
        const float w = mc == -INFINITY ? 0.0f : expf(mc - M);
        wch[ch] = w;
        lsum = fmaf(w, lc, lsum);
    }
    return block_sum(lsum, scratch); // its barriers also publish wch
}

static_assert(kAttnChunk == kWarp, "a lane per position of a chunk in the softmax; two k16 steps in the sum");

// Copies of `rows` rows of `rv` 16-byte vectors global -> shared by the block, each copy's
// shared rows `stride` vectors apart (padded: rows one vector apart in the bank order, so the
// fragment loads below are conflict-free), in one pass: each thread issues its loads of every
// copy (kStage at a time, over the copies' vectors laid end to end) before any of its stores,
// so the copies on one side of the PDL wait cost one round trip (one after another they cost
// one each: 4 after the wait, 2 before it, until the twelfth session).
struct stage_copy {
    uint4 *dst;
    int stride;
    const uint4 *src;
    int rv, rows;
    unsigned mg; // udiv_magic(rv)
};

// Vector i of a stage_copies pass (the copies' vectors laid end to end): where it comes from
// and where it goes (constant indices into cp only, so the copies stay in registers).
// The row of vector off of a copy: off / rv by common.cuh's udiv (off and rv both below 2^16), not
// an integer division a vector (twice a vector in the pass: each vector is located twice).
template <int NC> __device__ __forceinline__ void stage_locate(const stage_copy (&cp)[NC], const int (&nk)[NC], int i,
                                                               const uint4 *&src, uint4 *&dst)
{
    int q = 0, off = i;
#pragma unroll
    for (int k = 0; k + 1 < NC; k++)
        if (q == k && off >= nk[k])
            off -= nk[k], q = k + 1;
    const uint4 *s = cp[0].src;
    uint4 *d = cp[0].dst;
    int stride = cp[0].stride, rv = cp[0].rv;
    unsigned m = cp[0].mg;
#pragma unroll
    for (int k = 1; k < NC; k++)
        if (q == k)
            s = cp[k].src, d = cp[k].dst, stride = cp[k].stride, rv = cp[k].rv, m = cp[k].mg;
    src = s + off;
    const int row = udiv(off, rv, m);
    dst = d + row * stride + (off - row * rv);
}

template <bool COH, int NC> __device__ __forceinline__ void stage_copies(const stage_copy (&cp)[NC])
{
    constexpr int kStage = 8;
    int total = 0, nk[NC];
#pragma unroll
    for (int q = 0; q < NC; q++)
        nk[q] = cp[q].rv * cp[q].rows, total += nk[q];
    const int step = blockDim.x * kStage;
    for (int i0 = threadIdx.x; i0 < total; i0 += step) {
        // the loads, then the stores; each vector located twice, not its destination kept from the
        // load: holding eight took the attend kernel from 80 to 97 registers on sm_90 (three CTAs
        // an SM to two)
        uint4 v[kStage];
        const uint4 *src;
        uint4 *dst;
#pragma unroll
        for (int j = 0; j < kStage; j++)
            if (i0 + j * (int)blockDim.x < total) {
                stage_locate(cp, nk, i0 + j * blockDim.x, src, dst);
                v[j] = COH ? __ldcg(src) : ld_stream(src);
            }
#pragma unroll
        for (int j = 0; j < kStage; j++)
            if (i0 + j * (int)blockDim.x < total) {
                stage_locate(cp, nk, i0 + j * blockDim.x, src, dst);
                *dst = v[j];
            }
    }
}

// Four 8 x 8 bf16 tiles, transposed, from shared memory: lane l names row l % 8 of tile l / 8.
__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], const uint4 *p)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(a));
}

// Two fp32 as bf16 pairs, hi = bf16(x) and lo = bf16(x - hi): hi + lo is x to ~2^-17.
__device__ __forceinline__ void split_bf16(float x0, float x1, uint32_t &hi, uint32_t &lo)
{
    const __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
    const __nv_bfloat162 l = __floats2bfloat162_rn(x0 - __low2float(h), x1 - __high2float(h));
    hi = *reinterpret_cast<const uint32_t *>(&h);
    lo = *reinterpret_cast<const uint32_t *>(&l);
}

// The scores' groups [ga, gb) of one source (the latent's or the rope's rows, `lim` vectors a row) into
// d: the lane's query rows ra (pa) and rb (pb) against key row p (pk), each pointer at the lane's first
// vector (ti); va, vb: whether the lane's rows are the block's. RB: some lane's row rb is (else every
// lane's rb fragment is zero, as it was, without a check); FULL: lim is a
// multiple of 4, so every group in range is whole. The loads and mma.sync of one loop over both
// sources with a check per group, in the same order; compiled once per case so that the group's
// instructions are its loads and mma.sync (~48 instructions a group with the checks inside:
// results/engine-h100/689ba2e-attend-ncu/).
template <bool RB, bool FULL> __device__ __forceinline__ void score_groups(float (&d)[4], const uint4 *pa,
                                                                           const uint4 *pb, const uint4 *pk, int lim,
                                                                           int ti, bool va, bool vb, int ga, int gb)
{
    const uint4 zero = make_uint4(0u, 0u, 0u, 0u);
#pragma unroll 4
    for (int g = ga; g < gb; g++) {
        const int v = g * 4;
        const bool ok = FULL || v + ti < lim;
        const uint4 a0 = ok && va ? pa[v] : zero;
        const uint4 a1 = RB && ok && vb ? pb[v] : zero;
        const uint4 x = ok ? pk[v] : zero;
        mma_bf16_group(d, a0, a1, x);
    }
}

template <bool RB> __device__ __forceinline__ void score_source(float (&d)[4], const uint4 *qb, const uint4 *kb, int st,
                                                                int lim, int ra, int rb, int p, int ti, bool va,
                                                                bool vb, int ga, int gb)
{
    const uint4 *pa = qb + ra * st + ti, *pb = qb + rb * st + ti, *pk = kb + p * st + ti;
    if (lim % 4 == 0)
        score_groups<RB, true>(d, pa, pb, pk, lim, ti, va, vb, ga, gb);
    else
        score_groups<RB, false>(d, pa, pb, pk, lim, ti, va, vb, ga, gb);
}

// A block holds one chunk of C = 32 positions against Rg of the step's R = T nh_r rows
// (grid.y row groups of Rg: mla_attend_pos sizes them; rows are independent, so the groups
// change no operation of a row). On tensor cores (mma.sync m16n8k16, bf16 in, fp32
// accumulate), rows in m16 tiles (rows past Rl zero):
//   scores  S = Q K^T: a warp per (m tile, 8 positions, half of the 32-column groups of
//           the latent + rope row), the halves added in order (two halves at every row
//           count, so a row's sum does not depend on its group); masked, scaled, then the
//           softmax pieces by a warp per row, a lane per position;
//   sum     O = E V over the chunk's latent rows: a warp per 8 columns (ldmatrix.trans of
//           the rows), E as bf16 hi + lo (two mmas: E to ~2^-17 of fp32).
// Dynamic shared memory (16-byte vectors, rows padded by one): ckv [C x (nv+1)], kpe
// [C x (nvr+1)], qlat [Rg x (nv+1)], qpe [Rg x (nvr+1)]; then scores [2 x Rg x C] fp32.
// Block (chunk bx, row group by) of NW warps (the loops over warp tasks step by NW: each task's
// operations are the same whatever NW, so a row's bits do not depend on it); smem_v:
// mla_attend_pos_smem(rkv, dr, Rg) bytes.
template <int NW = kPosWarps, class P> __device__ __forceinline__ void
mla_attend_tile(const P &pol, const bf16 *qlat, const bf16 *qpe, const bf16 *__restrict__ cache_ckv,
                const bf16 *__restrict__ cache_kpe, const int32_t *__restrict__ pos0, float *__restrict__ partial,
                int nh_r, int dr, int rkv, float scale, int T, int Rg, int bx, int by, uint4 *smem_v)
{
    pol.launch_dependents();
    // P0 is set before the step; cache rows below P0 are earlier steps' (mla_prep of this
    // step writes rows P0 .. P0 + T - 1 only), so they are staged before the PDL wait and
    // the chunk's fetch overlaps the kernels before this one.
    const int P0 = *pos0, L = P0 + T, c0 = bx * kAttnChunk;
    if (c0 >= L)
        return;
    const int n = min(kAttnChunk, L - c0), R = T * nh_r, ps = rkv + 4, nv = rkv / 8, nvr = dr / 8;
    const int sv = nv + 1, svr = nvr + 1;         // padded row strides, vectors
    const int r0 = by * Rg, Rl = min(Rg, R - r0); // this block's rows r0 .. r0 + Rl - 1
    const int old = max(0, min(n, P0 - c0));      // rows staged before the wait
    uint4 *ckv = smem_v;
    uint4 *kpe = ckv + kAttnChunk * sv;
    uint4 *ql = kpe + kAttnChunk * svr;
    uint4 *qp = ql + (size_t)Rg * sv;
    float *sc = reinterpret_cast<float *>(qp + (size_t)Rg * svr); // [2][Rg][C]
    // each side of the wait its copies in one pass (one round trip each, not one a copy)
    const unsigned mv = udiv_magic(nv), mvr = udiv_magic(nvr); // the copies' rows by multiply-high (stage_locate)
    const stage_copy before[2] = {
        {ckv, sv, reinterpret_cast<const uint4 *>(cache_ckv + (size_t)c0 * rkv), nv, old, mv},
        {kpe, svr, reinterpret_cast<const uint4 *>(cache_kpe + (size_t)c0 * dr), nvr, old, mvr}};
    stage_copies<false>(before);
    pol.wait();
    constexpr bool coh = P::coherent; // rows P0.. and the queries: this step's (in a persistent launch, this launch's)
    const stage_copy after[4] = {
        {ckv + old * sv, sv, reinterpret_cast<const uint4 *>(cache_ckv + (size_t)(c0 + old) * rkv), nv, n - old, mv},
        {kpe + old * svr, svr, reinterpret_cast<const uint4 *>(cache_kpe + (size_t)(c0 + old) * dr), nvr, n - old, mvr},
        {ql, sv, reinterpret_cast<const uint4 *>(qlat) + (size_t)r0 * nv, nv, Rl, mv},
        {qp, svr, reinterpret_cast<const uint4 *>(qpe) + (size_t)r0 * nvr, nvr, Rl, mvr}};
    stage_copies<coh>(after);
    for (int i = threadIdx.x; i < (kAttnChunk - n) * sv; i += blockDim.x) // rows past L: zero, not stale
        ckv[n * sv + i] = make_uint4(0u, 0u, 0u, 0u);
    for (int i = threadIdx.x; i < (kAttnChunk - n) * svr; i += blockDim.x)
        kpe[n * svr + i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();
    ARB_TL_MARK(1); // a timeline's diagnostic marks (timeline.cuh): the queries and new rows staged
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, gi = lane / 4, ti = lane % 4;
    // the score columns in two halves, always (a row's sum is then the same whatever its group)
    const int mt = (Rl + 15) / 16, pairs = mt * (kAttnChunk / 8), parts = 2;
    const int glat = (nv + 3) / 4, ng = glat + (nvr + 3) / 4; // 32-column groups: latent, then rope
    for (int it = warp; it < pairs * parts; it += NW) {       // scores
        const int pair = it % pairs, part = it / pairs, m = pair / (kAttnChunk / 8), nt = pair % (kAttnChunk / 8);
        const int ra = m * 16 + gi, rb = ra + 8, p = nt * 8 + gi;
        float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        // groups [g0, g1) of the latent's glat then the rope's: the latent ones, then the rope ones,
        // each run by pointers into its rows (the same loads and mma.sync in the same order as one loop
        // over both, which spent ~48 instructions a group choosing between them: results/engine-h100/
        // 689ba2e-attend-ncu/)
        const int g0 = part * ng / parts, g1 = (part + 1) * ng / parts, gl = min(g1, glat);
        const int gr0 = max(g0, glat) - glat, gr1 = g1 - glat;
        const bool va = ra < Rl, vb = rb < Rl;
        if (m * 16 + 8 < Rl) { // some lane's row rb is the block's (the branch is the warp's)
            score_source<true>(d, ql, ckv, sv, nv, ra, rb, p, ti, va, vb, g0, gl);
            score_source<true>(d, qp, kpe, svr, nvr, ra, rb, p, ti, va, vb, gr0, gr1);
        } else {
            score_source<false>(d, ql, ckv, sv, nv, ra, rb, p, ti, va, vb, g0, gl);
            score_source<false>(d, qp, kpe, svr, nvr, ra, rb, p, ti, va, vb, gr0, gr1);
        }
        float *dst = sc + (size_t)part * Rg * kAttnChunk;
        if (ra < Rl)
            dst[ra * kAttnChunk + nt * 8 + 2 * ti] = d[0], dst[ra * kAttnChunk + nt * 8 + 2 * ti + 1] = d[1];
        if (rb < Rl)
            dst[rb * kAttnChunk + nt * 8 + 2 * ti] = d[2], dst[rb * kAttnChunk + nt * 8 + 2 * ti + 1] = d[3];
    }
    __syncthreads();
    ARB_TL_MARK(2);                       // the scores
    for (int r = warp; r < Rl; r += NW) { // softmax pieces: a lane per position
        const int t = (r0 + r) / nh_r;
        float s = sc[r * kAttnChunk + lane] + sc[(size_t)Rg * kAttnChunk + r * kAttnChunk + lane];
        s = c0 + lane <= P0 + t ? s * scale : -INFINITY; // past L or after token t: masked
        const float m = warp_max(s);
        const float e = m == -INFINITY ? 0.0f : expf(s - m);
        const float l = warp_sum(e);
        sc[r * kAttnChunk + lane] = e;
        if (lane == 0) {
            float *dst = partial + ((size_t)bx * R + r0 + r) * ps;
            dst[rkv] = m, dst[rkv + 1] = l;
        }
    }
    __syncthreads();
    ARB_TL_MARK(3);                // the softmax pieces
    for (int m = 0; m < mt; m++) { // O = E V, 8 latent columns per warp and n tile
        const int ra = m * 16 + gi, rb = ra + 8;
        uint32_t hi[2][4], lo[2][4]; // A fragments of both k16 steps (positions 16 s ..)
#pragma unroll
        for (int s2 = 0; s2 < 2; s2++) {
#pragma unroll
            for (int h = 0; h < 4; h++) { // a0a1 (ra, k), a2a3 (rb, k), a4a5 (ra, k + 8), a6a7 (rb, k + 8)
                const int r = (h & 1) ? rb : ra, k = 16 * s2 + 2 * ti + ((h & 2) ? 8 : 0);
                const float e0 = r < Rl ? sc[r * kAttnChunk + k] : 0.0f;
                const float e1 = r < Rl ? sc[r * kAttnChunk + k + 1] : 0.0f;
                split_bf16(e0, e1, hi[s2][h], lo[s2][h]);
            }
        }
        for (int nt = warp; nt < nv; nt += NW) {
            uint32_t b[4]; // rows 0-7, 8-15 (k16 step 0), 16-23, 24-31 (step 1) of column vector nt
            ldsm_x4_trans(b, ckv + lane * sv + nt);
            float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            mma16816(d, hi[0][0], hi[0][1], hi[0][2], hi[0][3], b[0], b[1]);
            mma16816(d, hi[1][0], hi[1][1], hi[1][2], hi[1][3], b[2], b[3]);
            mma16816(d, lo[0][0], lo[0][1], lo[0][2], lo[0][3], b[0], b[1]);
            mma16816(d, lo[1][0], lo[1][1], lo[1][2], lo[1][3], b[2], b[3]);
            const int col = nt * 8 + 2 * ti;
            if (ra < Rl)
                *reinterpret_cast<float2 *>(partial + ((size_t)bx * R + r0 + ra) * ps + col) = make_float2(d[0], d[1]);
            if (rb < Rl)
                *reinterpret_cast<float2 *>(partial + ((size_t)bx * R + r0 + rb) * ps + col) = make_float2(d[2], d[3]);
        }
    }
}

constexpr int kMergeCols = 64; // latent columns per merge block
constexpr int kMergeQuads = kMergeCols / 4;
constexpr int kMergeStrands = 16;
constexpr int kMergeAhead = 8; // chunks a strand loads before the chunk weights (4096 positions)

// Shared memory of one merge block: the chunk weights, the strands' sums, a reduction's scratch.
struct merge_smem {
    float wch[kMaxChunks]; // exp(m_c - M)
    float4 red[kMergeStrands][kMergeQuads];
    float scratch[kWarp];
};

// The merge of row r's columns y kMergeCols .. (after the PDL wait; every thread of the block
// calls it): true in the threads of strand 0 whose four columns c .. c + 3 are within the row,
// with their sums over the chunks in s (sixteen strands added in order) and the row's softmax
// denominator in lsum; olat's value is s / lsum rounded to bf16.
template <class P> __device__ __forceinline__ bool merge_cols(const float *partial, const int32_t *__restrict__ pos0,
                                                              int R, int rkv, int T, int r, int y, merge_smem &sm,
                                                              float4 &s, float &lsum, int &c)
{
    float *wch = sm.wch;
    float4(*red)[kMergeQuads] = sm.red;
    const int ps = rkv + 4;
    const int nch = (*pos0 + T + kAttnChunk - 1) / kAttnChunk;
    const size_t cstride = (size_t)R * ps; // floats, a multiple of 4 (rkv % 8 == 0)
    const float *base = partial + (size_t)r * ps;
    const int q = threadIdx.x % kMergeQuads, strand = threadIdx.x / kMergeQuads;
    c = y * kMergeCols + 4 * q;
    // the strand's first kMergeAhead chunks' columns (all of them up to 4096 positions) loaded
    // before the chunk weights, so that their round trip and the weights' overlap (loaded
    // after the weights until the twelfth session); the sum's order is unchanged
    float4 ahead[kMergeAhead];
#pragma unroll
    for (int u = 0; u < kMergeAhead; u++) {
        const int ch = strand + u * kMergeStrands;
        const float4 *pv = reinterpret_cast<const float4 *>(base + ch * cstride + c);
        ahead[u] = c < rkv && ch < nch ? (P::coherent ? __ldcg(pv) : *pv) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    lsum = chunk_weights<P::coherent>(base, cstride, rkv, nch, wch, sm.scratch);
    ARB_TL_MARK(1); // a timeline's diagnostic marks (timeline.cuh): the chunk weights
    float4 acc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (c < rkv) {
#pragma unroll
        for (int u = 0; u < kMergeAhead; u++) { // chunks strand, strand + 16, .. in order
            const int ch = strand + u * kMergeStrands;
            if (ch >= nch)
                break;
            const float w = wch[ch];
            const float4 v = ahead[u];
            acc.x = fmaf(w, v.x, acc.x), acc.y = fmaf(w, v.y, acc.y);
            acc.z = fmaf(w, v.z, acc.z), acc.w = fmaf(w, v.w, acc.w);
        }
#pragma unroll 8
        for (int ch = strand + kMergeAhead * kMergeStrands; ch < nch; ch += kMergeStrands) {
            const float w = wch[ch];
            const float4 *pv = reinterpret_cast<const float4 *>(base + ch * cstride + c);
            const float4 v = P::coherent ? __ldcg(pv) : *pv;
            acc.x = fmaf(w, v.x, acc.x), acc.y = fmaf(w, v.y, acc.y);
            acc.z = fmaf(w, v.z, acc.z), acc.w = fmaf(w, v.w, acc.w);
        }
    }
    red[strand][q] = acc;
    __syncthreads();
    ARB_TL_MARK(2); // the strands' sums
    if (strand != 0 || c >= rkv)
        return false;
    s = red[0][q];
#pragma unroll
    for (int j = 1; j < kMergeStrands; j++) { // fixed order
        const float4 v = red[j][q];
        s.x += v.x, s.y += v.y, s.z += v.z, s.w += v.w;
    }
    return true;
}

// Block (row r, column block y).
template <class P> __device__ __forceinline__ void mla_merge_tile(const P &pol, const float *partial,
                                                                  const int32_t *__restrict__ pos0, bf16 *olat, int R,
                                                                  int rkv, int T, int r, int y, merge_smem &sm)
{
    pol.launch_dependents(); // W_uv's launch overlaps the wait (it waits for this launch itself)
    pol.wait();
    float4 s;
    float lsum;
    int c;
    if (merge_cols<P>(partial, pos0, R, rkv, T, r, y, sm, s, lsum, c)) {
        bf16 *dst = olat + (size_t)r * rkv + c; // olat is stored bf16 (forward.md)
        dst[0] = to_bf(s.x / lsum), dst[1] = to_bf(s.y / lsum), dst[2] = to_bf(s.z / lsum), dst[3] = to_bf(s.w / lsum);
    }
}

// --fuse merge_uv: block (row r = t nh_r + h, column block y of ny) merges its kMergeCols columns
// of olat (bf16-rounded, as mla_merge stores them) into shared memory, then two threads a W_uv row
// d sum its products over half of them each (ascending columns, fp32), the halves added; the
// block's sums go to scratch [ny][R][dv], and the row's last block to arrive (tickets[r]) adds the
// ny blocks in order from 0 and rounds o[t, h] to bf16. W_uv's columns of the block (16 KB at dv
// 128) are loaded into registers before the PDL wait: weights, not the predecessor's output.
constexpr int kMergeUvRows = kMergeQuads * kMergeStrands / 2; // W_uv rows a block covers: dv at most
template <class P>
__device__ __forceinline__ void mla_merge_uv_tile(const P &pol, const float *partial, const int32_t *__restrict__ pos0,
                                                  const bf16 *__restrict__ kv_b, bf16 *__restrict__ o, float *scratch,
                                                  unsigned *tickets, int nh_r, int dn, int dv, int rkv, int T, int r,
                                                  int y, int ny, merge_smem &sm, float *ol)
{
    constexpr int kHalf = kMergeCols / 2, kVecs = kHalf / 8;
    const int R = T * nh_r, h = r % nh_r, d = threadIdx.x / 2, half = threadIdx.x % 2;
    const int c0 = y * kMergeCols + half * kHalf;
    pol.launch_dependents(); // o_proj's launch overlaps the wait (it waits for this launch itself)
    uint4 w[kVecs];
    const uint4 *wr = reinterpret_cast<const uint4 *>(kv_b + ((size_t)h * (dn + dv) + dn + d) * rkv + c0);
#pragma unroll
    for (int k = 0; k < kVecs; k++)
        w[k] = d < dv && c0 + 8 * k < rkv ? ld_stream(wr + k) : make_uint4(0u, 0u, 0u, 0u);
    pol.wait();
    float4 s;
    float lsum;
    int c;
    if (merge_cols<P>(partial, pos0, R, rkv, T, r, y, sm, s, lsum, c)) {
        float *dst = ol + (c - y * kMergeCols);
        dst[0] = bf(to_bf(s.x / lsum)), dst[1] = bf(to_bf(s.y / lsum));
        dst[2] = bf(to_bf(s.z / lsum)), dst[3] = bf(to_bf(s.w / lsum));
    }
    __syncthreads();
    float acc = 0.0f;
#pragma unroll
    for (int k = 0; k < kVecs; k++) {
        if (c0 + 8 * k >= rkv)
            break;
        float wf[8];
        unpack8(w[k], wf);
#pragma unroll
        for (int j = 0; j < 8; j++)
            acc = fmaf(wf[j], ol[half * kHalf + 8 * k + j], acc);
    }
    const float other = __shfl_xor_sync(0xffffffffu, acc, 1);
    if (half == 0 && d < dv)
        __stcg(scratch + ((size_t)y * R + r) * dv + d, acc + other); // the lower half's first
    if (!last_to_arrive(tickets + r, (unsigned)ny))
        return;
    for (int j = threadIdx.x; j < dv; j += blockDim.x) { // the blocks in order, from 0
        float sum = 0.0f;
        for (int b = 0; b < ny; b++)
            sum += __ldcg(scratch + ((size_t)b * R + r) * dv + j);
        o[(size_t)r * dv + j] = to_bf(sum);
    }
}

constexpr int kUvWarps = 8; // W_uv rows per block

// Block (head h, row block y).
template <int T, class P>
__device__ __forceinline__ void mla_uv_tile(const P &pol, const bf16 *olat, const bf16 *__restrict__ kv_b,
                                            bf16 *__restrict__ o, int nh_r, int dn, int dv, int rkv, int h, int y,
                                            const l2_ahead &ahead = l2_ahead())
{
    const int j = y * kUvWarps + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const bf16 *w = kv_b + ((size_t)h * (dn + dv) + dn + j) * rkv;
    pol.launch_dependents();
    if (j < dv)
        warp_prefetch_l2(w, (size_t)rkv * 2);
    pol.wait();
    grid_prefetch_l2(ahead); // a later kernel's weights (--l2-ahead)
    if (j >= dv)
        return;
    float acc[T], unused[T];
    warp_rowdot<T, false, false>(w, nullptr, olat + (size_t)h * rkv, nh_r * rkv, rkv, acc, unused, pol);
#pragma unroll
    for (int t = 0; t < T; t++)
        if (lane == t)
            o[((size_t)t * nh_r + h) * dv + j] = to_bf(acc[t]);
}

} // namespace arbk

#endif
