// SPDX-License-Identifier: MIT
// Skinny bf16 GEMV for T <= 8 tokens: y[t][n] = sum_k W[n][k] x[t][k], W [N x K] bf16
// row-major (a Hugging Face Linear weight), x [T x K] bf16, fp32 accumulation. At these
// shapes the weights are read once and dominate: one warp per output row (rowdot.cuh).
// Epilogues: bf16 store, fp32 store, and SiLU(gate) * up over two weight matrices read
// in the same pass (the MLP's gate/up in one launch, the product rounded once). Long rows
// are split over up to four warps (gemv_parts); rows split in four are taken two per warp
// (T <= 6, one matrix), each input vector loaded once for both.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/rowdot.cuh"

namespace arbk {
namespace {

constexpr int kGemvWarps = 8;

// Split S: each row's K inputs in S contiguous parts, one warp each (S = 1: a warp per
// row); the parts' sums added in a fixed order by the first warp.
// More warps stream a long row at once, each with its loads in flight together.
// PAIR (bf16 and fp32 epilogues): each warp takes two rows, row and row + 8 / S, with both
// rows' loads in flight together and each input vector loaded once for both (warp_rowdot's
// second row, as gate and up); each row's operations are those of a row alone.
template <int T, int EPI, int S, bool PAIR>
__global__ void __launch_bounds__(kGemvWarps *kWarp)
    gemv_kernel(const bf16 *__restrict__ W, const bf16 *__restrict__ W2, const bf16 *__restrict__ x, int ldx,
                int N, int K, void *__restrict__ y, int ldy)
{
    constexpr bool silu = EPI == GEMV_SILU_MUL, two = silu || PAIR;
    static_assert(!(silu && PAIR), "gate/up already reads two rows per warp");
    constexpr int rows = kGemvWarps / S;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int row = blockIdx.x * rows * (PAIR ? 2 : 1) + warp / S, part = warp % S, Ks = K / S, k0 = part * Ks;
    const int row2 = row + rows; // PAIR: the warp's second row (past N: the first row again, not stored)
    const bf16 *w1 = W + (size_t)row * K + k0;
    const bf16 *w2 = silu ? W2 + (size_t)row * K + k0 : PAIR ? W + (size_t)(row2 < N ? row2 : row) * K + k0 : nullptr;
    // Weights do not depend on the predecessor: the part past the first round of loads
    // toward L2, the first round into registers (warp_rowdot's WAIT), then the wait.
    constexpr int first = kRowdotUnroll * kWarp * 8; // inputs of the first round
    pdl_launch_dependents();
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
        warp_rowdot<T, two, true>(w1, w2, x + k0, ldx, Ks, acc, acc2);
    else
        pdl_wait();
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

// PAIR where rows are split in four (K >= 4096: Kimi-K2's qkv_a and lm_head), the epilogue
// reads one matrix and T <= 6: there the pair's registers (88-128 on sm_90) still leave two
// CTAs of 4 rows per SM, as many rows in flight as four CTAs of 2 at T <= 3 (more at 4..6);
// at T = 7, 8 (150+) one CTA. See the kernels README (not measured).
template <int T, int EPI, int S>
cudaError_t gemv_t(const launch_ctx &c, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx, int N, int K,
                   void *y, int ldy)
{
    constexpr bool pair = S == 4 && EPI != GEMV_SILU_MUL && T <= 6;
    constexpr int rows = kGemvWarps / S * (pair ? 2 : 1);
    const dim3 grid((N + rows - 1) / rows), block(kGemvWarps * kWarp);
    return launch(c, gemv_kernel<T, EPI, S, pair>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
}

template <int EPI, int S>
cudaError_t gemv_split(const launch_ctx &c, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx, int N, int K,
                       void *y, int ldy, int T)
{
    switch (T) {
    case 1: return gemv_t<1, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 2: return gemv_t<2, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 3: return gemv_t<3, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 4: return gemv_t<4, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 5: return gemv_t<5, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 6: return gemv_t<6, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 7: return gemv_t<7, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    case 8: return gemv_t<8, EPI, S>(c, W, W2, x, ldx, N, K, y, ldy);
    default: return cudaErrorInvalidValue;
    }
}

// The split of a row: four parts of at least 128 vectors (four loads per lane), else two
// of at least 96, K / 8 a multiple of the parts; else one (measured against one part
// for every row: README).
int gemv_parts(int K)
{
    const int nvec = K / 8;
    if (nvec >= 4 * 128 && nvec % 4 == 0)
        return 4;
    if (nvec >= 2 * 96 && nvec % 2 == 0)
        return 2;
    return 1;
}

template <int EPI>
cudaError_t gemv_dispatch(const launch_ctx &c, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx, int N, int K,
                          void *y, int ldy, int T)
{
    switch (gemv_parts(K)) {
    case 4: return gemv_split<EPI, 4>(c, W, W2, x, ldx, N, K, y, ldy, T);
    case 2: return gemv_split<EPI, 2>(c, W, W2, x, ldx, N, K, y, ldy, T);
    default: return gemv_split<EPI, 1>(c, W, W2, x, ldx, N, K, y, ldy, T);
    }
}

} // namespace

cudaError_t gemv(const launch_ctx &c, gemv_epilogue epi, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx,
                 int N, int K, void *y, int ldy, int T)
{
    if (K % 8 || ldx % 8 || N <= 0 || T < 1 || T > kMaxT || (epi == GEMV_SILU_MUL && !W2))
        return cudaErrorInvalidValue;
    switch (epi) {
    case GEMV_BF16: return gemv_dispatch<GEMV_BF16>(c, W, W2, x, ldx, N, K, y, ldy, T);
    case GEMV_F32: return gemv_dispatch<GEMV_F32>(c, W, W2, x, ldx, N, K, y, ldy, T);
    case GEMV_SILU_MUL: return gemv_dispatch<GEMV_SILU_MUL>(c, W, W2, x, ldx, N, K, y, ldy, T);
    }
    return cudaErrorInvalidValue;
}

} // namespace arbk
