// SPDX-License-Identifier: MIT
// This rank's greedy choice: best[t] = (max logit, global index) over its vocabulary
// shard (logits [T x Vr] fp32 from the lm_head projection), ties to the lower index.
// One block per token; the driver combines the ranks' answers (ties: lower global index).
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

constexpr int kArgmaxThreads = 1024;

__global__ void __launch_bounds__(kArgmaxThreads)
    argmax_kernel(const float *__restrict__ logits, int Vr, int vocab_base, float *best_logit, int32_t *best_index)
{
    ARB_TL(ARB_TL_ARGMAX);
    __shared__ float sv[kArgmaxThreads / kWarp];
    __shared__ int si[kArgmaxThreads / kWarp];
    pdl_begin();
    const int t = blockIdx.x, lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    const float *row = logits + (size_t)t * Vr;
    float bv = -INFINITY;
    int bi = 0x7fffffff;
    for (int v = threadIdx.x; v < Vr; v += blockDim.x) { // ascending per thread: '>' keeps the lower index
        const float x = row[v];
        if (x > bv || (x == bv && v < bi))
            bv = x, bi = v;
    }
    for (int o = kWarp / 2; o > 0; o >>= 1) {
        const float ov = __shfl_xor_sync(0xffffffffu, bv, o);
        const int oi = __shfl_xor_sync(0xffffffffu, bi, o);
        if (ov > bv || (ov == bv && oi < bi))
            bv = ov, bi = oi;
    }
    if (lane == 0)
        sv[warp] = bv, si[warp] = bi;
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int w = 1; w < (int)(blockDim.x / kWarp); w++)
            if (sv[w] > bv || (sv[w] == bv && si[w] < bi))
                bv = sv[w], bi = si[w];
        best_logit[t] = bv;
        best_index[t] = vocab_base + bi;
    }
}

} // namespace

cudaError_t argmax(const launch_ctx &c, const float *logits, int Vr, int vocab_base, float *best_logit,
                   int32_t *best_index, int T)
{
    return launch(c, argmax_kernel, dim3(T), dim3(kArgmaxThreads), 0, logits, Vr, vocab_base, best_logit,
                  best_index);
}

ARB_TL_TU(argmax)

} // namespace arbk
