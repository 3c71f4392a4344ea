// SPDX-License-Identifier: MIT
// Skinny bf16 GEMV for T <= 8 tokens: y[t][n] = sum_k W[n][k] x[t][k], W [N x K] bf16
// row-major (a Hugging Face Linear weight), x [T x K] bf16, fp32 accumulation. At these
// shapes the weights are read once and dominate: one warp per output row (rowdot.cuh).
// Epilogues: bf16 store, fp32 store, and SiLU(gate) * up over two weight matrices read
// in the same pass (the MLP's gate/up in one launch, the product rounded once). Long rows
// are split over up to four warps (gemv_parts); rows split in four are taken two per warp
// (T <= 6, one matrix), each input vector loaded once for both. With c.wave the grid is
// folded into one wave of resident blocks (wave_fit.h), each block running several tiles.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/gemv_ops.cuh"

namespace arbk {
namespace {

// MULTI: a folded grid (wave_fit.h), each block several tiles; else a block a tile (its own
// instantiation, so the plain grid's code and registers are those of before the fold).
template <int T, int EPI, int S, bool PAIR, bool MULTI>
__global__ void __launch_bounds__(kGemvWarps *kWarp)
    gemv_kernel(const bf16 *__restrict__ W, const bf16 *__restrict__ W2, const bf16 *__restrict__ x, int ldx,
                int N, int K, void *__restrict__ y, int ldy, int tiles)
{
    ARB_TL(ARB_TL_GEMV);
    if (MULTI)
        gemv_tiles<T, EPI, S, PAIR>(pdl_sync(), W, W2, x, ldx, N, K, y, ldy, tiles);
    else
        gemv_tile<T, EPI, S, PAIR>(pdl_sync(), W, W2, x, ldx, N, K, y, ldy, (int)blockIdx.x);
}

// The same compiled for four blocks an SM (64 registers at 256 threads), where gemv_four_blocks
// says so, on SM90: rows of one part at T = 3 with a bf16 or fp32 epilogue (Kimi-K2's o_proj:
// 69 registers and three blocks an SM unbounded on sm_90; 64 on sm_120 unbounded, where the
// bound would spill 12 bytes, so SM120 keeps the plain kernel). On one H200 verify -2.0%, decode
// even (results/engine-h200/5ca6d91-o-proj-t3/). Found through --wave-fit: folding o_proj won
// only at T = 3, the one T where its folded kernel had fewer registers than the plain one
// (results/engine-h200/5f1349e-wave-t/). A separate kernel: a second __launch_bounds__ argument,
// even 1, changes the registers ptxas picks for most other instantiations.
template <int T, int EPI, int S, bool PAIR>
__global__ void __launch_bounds__(kGemvWarps *kWarp, 4)
    gemv_kernel_4(const bf16 *__restrict__ W, const bf16 *__restrict__ W2, const bf16 *__restrict__ x, int ldx,
                  int N, int K, void *__restrict__ y, int ldy, int)
{
    ARB_TL(ARB_TL_GEMV_PAIRS);
    gemv_tile<T, EPI, S, PAIR>(pdl_sync(), W, W2, x, ldx, N, K, y, ldy, (int)blockIdx.x);
}

template <int T, int EPI, int S> constexpr bool gemv_four_blocks() { return S == 1 && T == 3 && EPI != GEMV_SILU_MUL; }

// PAIR where rows are split in four (K >= 4096: Kimi-K2's qkv_a and lm_head), the epilogue
// reads one matrix and T <= 6: there the pair's registers (88-128 on sm_90) still leave two
// CTAs of 4 rows per SM, as many rows in flight as four CTAs of 2 at T <= 3 (more at 4..6);
// at T = 7, 8 (150+) one CTA. Measured on one H200 against one row a warp: a decode step
// 6.0% faster, a verify 3.8% (qkv_a 10.7 against 15.2 us a layer at T = 1;
// results/engine-h200/983fb4a-ab/).
template <int T, int EPI, int S>
cudaError_t gemv_t(const launch_ctx &c, const bf16 *W, const bf16 *W2, const bf16 *x, int ldx, int N, int K,
                   void *y, int ldy)
{
    constexpr bool pair = gemv_pair(S, EPI, T);
    constexpr int rows = gemv_rows_per_block(S, pair);
    auto plain = gemv_kernel<T, EPI, S, pair, false>;
    if constexpr (gemv_four_blocks<T, EPI, S>()) {
        device_shape d; // SM90 only: on sm_120 the unbounded kernel has 64 registers, the bounded spills
        const cudaError_t e = current_device_shape(&d);
        if (e != cudaSuccess)
            return e;
        if (d.major == 9)
            plain = gemv_kernel_4<T, EPI, S, pair>;
    }
    // the folded grid as measured: gemv_kernel's own MULTI instantiation (it has its own registers)
    const int tiles = (N + rows - 1) / rows;
    return wave_launch<gemv_kernel<T, EPI, S, pair, true>>(c, plain, tiles, dim3(kGemvWarps * kWarp), 0, W, W2, x,
                                                             ldx, N, K, y, ldy, tiles);
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

ARB_TL_TU(gemv)

} // namespace arbk
