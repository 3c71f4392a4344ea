// SPDX-License-Identifier: MIT
// Skinny bf16 GEMV for T <= 8 tokens: y[t][n] = sum_k W[n][k] x[t][k], W [N x K] bf16
// row-major (a Hugging Face Linear weight), x [T x K] bf16, fp32 accumulation. At these
// shapes the weights are read once and dominate: one warp per output row (rowdot.cuh).
// Epilogues: bf16 store, fp32 store, and SiLU(gate) * up over two weight matrices read
// in the same pass (the MLP's gate/up in one launch, the product rounded once).
#include "kernels.h"

#include "rowdot.cuh"

namespace arbk {
namespace {

constexpr int kRowsPerBlock = 8; // one warp per row

template <int T, int EPI>
__global__ void __launch_bounds__(kRowsPerBlock *kWarp)
    gemv_kernel(const bf16 *__restrict__ W, const bf16 *__restrict__ W2, const bf16 *__restrict__ x, int ldx,
                int N, int K, void *__restrict__ y, int ldy)
{
    constexpr bool two = EPI == GEMV_SILU_MUL;
    const int row = blockIdx.x * kRowsPerBlock + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    pdl_launch_dependents();
    if (row < N) { // weights do not depend on the predecessor: fetch them while it finishes
        warp_prefetch_l2(W + (size_t)row * K, (size_t)K * 2);
        if (two)
            warp_prefetch_l2(W2 + (size_t)row * K, (size_t)K * 2);
    }
    pdl_wait();
    if (row >= N)
        return;
    float acc[T], acc2[T];
    warp_rowdot<T, two>(W + (size_t)row * K, two ? W2 + (size_t)row * K : nullptr, x, ldx, K, acc, acc2);
#pragma unroll
    for (int t = 0; t < T; t++) {
        if (lane != t)
            continue;
        if (EPI == GEMV_F32)
            static_cast<float *>(y)[(size_t)t * ldy + row] = acc[t];
        else if (EPI == GEMV_BF16)
            static_cast<bf16 *>(y)[(size_t)t * ldy + row] = to_bf(acc[t]);
        else
            static_cast<bf16 *>(y)[(size_t)t * ldy + row] = to_bf(acc[t] / (1.0f + expf(-acc[t])) * acc2[t]);
    }
}

template <int EPI>
cudaError_t gemv_dispatch(const launch_ctx &c, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx, int N, int K,
                          void *y, int ldy, int T)
{
    const dim3 grid((N + kRowsPerBlock - 1) / kRowsPerBlock), block(kRowsPerBlock * kWarp);
    switch (T) {
    case 1: return launch(c, gemv_kernel<1, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 2: return launch(c, gemv_kernel<2, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 3: return launch(c, gemv_kernel<3, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 4: return launch(c, gemv_kernel<4, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 5: return launch(c, gemv_kernel<5, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 6: return launch(c, gemv_kernel<6, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 7: return launch(c, gemv_kernel<7, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    case 8: return launch(c, gemv_kernel<8, EPI>, grid, block, 0, W, W2, x, ldx, N, K, y, ldy);
    default: return cudaErrorInvalidValue;
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
