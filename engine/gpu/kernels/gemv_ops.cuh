// SPDX-License-Identifier: MIT
// The skinny GEMV's block (gemv.cu): one block index of y[t][n] = W[n] . x[t], T <= 8,
// for gemv.cu's kernel and persist.cu's persistent launch alike (P: common.cuh's sync).
#ifndef ARB_ENGINE_KERNELS_GEMV_OPS_CUH
#define ARB_ENGINE_KERNELS_GEMV_OPS_CUH

#include "gpu/kernels/qb_fit.h"
#include "gpu/kernels/rowdot.cuh"

namespace arbk {

constexpr int kGemvWarps = 8;

// Split S: each row's K inputs in S contiguous parts, one warp each (S = 1: a warp per
// row); the parts' sums added in a fixed order by the first warp.
// More warps stream a long row at once, each with its loads in flight together.
// PAIR (bf16 and fp32 epilogues): each warp takes two rows, row and row + 8 / S, with both
// rows' loads in flight together and each input vector loaded once for both (warp_rowdot's
// second row, as gate and up); each row's operations are those of a row alone.
// Block bx of the launch (one op: gemv_kernel below, or a stage of persist.cu's launch).
template <int T, int EPI, int S, bool PAIR, class P>
__device__ __forceinline__ void gemv_tile(const P &p, const bf16 *__restrict__ W, const bf16 *__restrict__ W2,
                                          const bf16 *x, int ldx, int N, int K, void *__restrict__ y, int ldy, int bx)
{
    constexpr bool silu = EPI == GEMV_SILU_MUL, two = silu || PAIR;
    static_assert(!(silu && PAIR), "gate/up already reads two rows per warp");
    constexpr int rows = kGemvWarps / S;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int row = bx * rows * (PAIR ? 2 : 1) + warp / S, part = warp % S, Ks = K / S, k0 = part * Ks;
    const int row2 = row + rows; // PAIR: the warp's second row (past N: the first row again, not stored)
    const bf16 *w1 = W + (size_t)row * K + k0;
    const bf16 *w2 = silu ? W2 + (size_t)row * K + k0 : PAIR ? W + (size_t)(row2 < N ? row2 : row) * K + k0 : nullptr;
    // Weights do not depend on the predecessor: the part past the first round of loads
    // toward L2, the first round into registers (warp_rowdot's WAIT), then the wait.
    constexpr int first = kRowdotUnroll * kWarp * 8; // inputs of the first round
    p.launch_dependents();
    if (row < N && Ks > first) {
        warp_prefetch_l2(w1 + first, (size_t)(Ks - first) * 2);
        if (two)
            warp_prefetch_l2(w2 + first, (size_t)(Ks - first) * 2);
    }
    float acc[T], acc2[T];
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f, acc2[t] = 0.0f;
    if (row < N)
        warp_rowdot<T, two, true>(w1, w2, x + k0, ldx, Ks, acc, acc2, p);
    else
        p.wait();
    if (S == 1 && row >= N)
        return;
    if (S > 1) {
        __shared__ float red[kGemvWarps][2][T];
        if (lane == 0)
#pragma unroll
            for (int t = 0; t < T; t++)
                red[warp][0][t] = acc[t], red[warp][1][t] = acc2[t];
        __syncthreads();
        if (part != 0 || row >= N)
            return;
#pragma unroll
        for (int t = 0; t < T; t++) {
            float a = red[warp][0][t], b = red[warp][1][t];
#pragma unroll
            for (int q = 1; q < S; q++)
                a += red[warp + q][0][t], b += red[warp + q][1][t];
            acc[t] = a, acc2[t] = b;
        }
    }
#pragma unroll
    for (int t = 0; t < T; t++) {
        if (lane != t)
            continue;
        if (EPI == GEMV_F32) {
            static_cast<float *>(y)[(size_t)t * ldy + row] = acc[t];
            if (PAIR && row2 < N)
                static_cast<float *>(y)[(size_t)t * ldy + row2] = acc2[t];
        } else if (EPI == GEMV_BF16) {
            static_cast<bf16 *>(y)[(size_t)t * ldy + row] = to_bf(acc[t]);
            if (PAIR && row2 < N)
                static_cast<bf16 *>(y)[(size_t)t * ldy + row2] = to_bf(acc2[t]);
        } else {
            static_cast<bf16 *>(y)[(size_t)t * ldy + row] = to_bf(acc[t] / (1.0f + expf(-acc[t])) * acc2[t]);
        }
    }
}

// Tile bx's weights toward L2 as gemv_tile<.., EPI, S, PAIR> reads them: this warp's rows
// (two for PAIR and for the gate/up epilogue) and part. For a block of a folded grid
// (wave_fit.h, gemv_tiles below): its later tiles' weights stream before the PDL wait.
template <int EPI, int S, bool PAIR>
__device__ __forceinline__ void gemv_tile_prefetch(const bf16 *W, const bf16 *W2, int N, int K, int bx)
{
    constexpr int rows = kGemvWarps / S;
    const int warp = threadIdx.x / kWarp;
    const int row = bx * rows * (PAIR ? 2 : 1) + warp / S, Ks = K / S, k0 = warp % S * Ks, row2 = row + rows;
    if (row >= N)
        return;
    warp_prefetch_l2(W + (size_t)row * K + k0, (size_t)Ks * 2);
    if (EPI == GEMV_SILU_MUL)
        warp_prefetch_l2(W2 + (size_t)row * K + k0, (size_t)Ks * 2);
    else if (PAIR && row2 < N)
        warp_prefetch_l2(W + (size_t)row2 * K + k0, (size_t)Ks * 2);
}

// The sync of a folded grid's first tile: its wait first pulls the block's later tiles'
// weights toward L2 (once: warp_rowdot may wait twice), so they are issued after the first
// tile's own loads and before the PDL wait.
template <class P, int EPI, int S, bool PAIR> struct gemv_pull_then_wait {
    static constexpr bool coherent = P::coherent;
    const P &p;
    const bf16 *W, *W2;
    int N, K, tiles;
    mutable bool pulled;
    __device__ __forceinline__ void wait() const
    {
        if (!pulled) {
            pulled = true;
            for (int b = (int)blockIdx.x + (int)gridDim.x; b < tiles; b += (int)gridDim.x)
                gemv_tile_prefetch<EPI, S, PAIR>(W, W2, N, K, b);
        }
        p.wait();
    }
    __device__ __forceinline__ void launch_dependents() const { p.launch_dependents(); }
};

// The block's tiles of a grid of gridDim.x blocks over `tiles` (wave_fit.h): blockIdx.x,
// blockIdx.x + gridDim.x, .. in turn; the later ones' weights toward L2 before the wait (the
// first tile's sync above). Each tile's operations are gemv_tile's, so the output is the
// plain grid's.
template <int T, int EPI, int S, bool PAIR, class P>
__device__ __forceinline__ void gemv_tiles(const P &p, const bf16 *__restrict__ W, const bf16 *__restrict__ W2,
                                           const bf16 *x, int ldx, int N, int K, void *__restrict__ y, int ldy,
                                           int tiles)
{
    const gemv_pull_then_wait<P, EPI, S, PAIR> first = {p, W, W2, N, K, tiles, false};
    gemv_tile<T, EPI, S, PAIR>(first, W, W2, x, ldx, N, K, y, ldy, (int)blockIdx.x);
    for (int b = (int)blockIdx.x + (int)gridDim.x; b < tiles; b += (int)gridDim.x) {
        __syncthreads(); // the previous tile's part sums (gemv_tile's red) read before they are rewritten
        gemv_tile<T, EPI, S, PAIR>(p, W, W2, x, ldx, N, K, y, ldy, b);
    }
}

// Whether rows split in S parts are taken two per warp (gemv.cu's rule).
__host__ __device__ constexpr bool gemv_pair(int S, int EPI, int T) { return S == 4 && EPI != GEMV_SILU_MUL && T <= 6; }

// Rows per block of gemv_tile<.., S, PAIR>.
__host__ __device__ constexpr int gemv_rows_per_block(int S, bool pair) { return kGemvWarps / S * (pair ? 2 : 1); }

// The split of a row (qb_fit.h's arb_gemv_parts; measured against one part for every row: README).
__host__ __device__ inline int gemv_parts(int K) { return arb_gemv_parts(K); }

} // namespace arbk

#endif
