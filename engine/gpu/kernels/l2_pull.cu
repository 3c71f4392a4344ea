// SPDX-License-Identifier: MIT
// Weights toward L2 ahead of the kernels that read them, from a side branch of the step
// (gpu_step.cu's --l2-side): the launch chain's latency-bound stretches (the attention's
// q_b .. W_uv read ~12 MB in ~17 us of a Kimi-K2 decode layer on an H100) leave the memory
// idle, and the pull fills it with a later kernel's weights. kL2PullCtas CTAs of one warp, so
// the branch takes a few warp slots beside the chain's kernels, not whole SMs.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

// [p, p + bytes) toward L2; p 16-byte aligned, bytes a multiple of 16 and at most kL2PullPiece.
__device__ __forceinline__ void pull_piece(const char *p, unsigned bytes)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(p), "r"(bytes) : "memory");
#else // before SM90 (not built by default): a line an instruction
    for (unsigned off = 0; off < bytes; off += 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(p + off));
#endif
}

__global__ void __launch_bounds__(kWarp) l2_pull_kernel(l2_pulls a)
{
    ARB_TL(ARB_TL_L2_PULL);
    const size_t lanes = (size_t)gridDim.x * blockDim.x, me = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    size_t first = 0; // the ranges' pieces numbered end to end, piece i to lane i % lanes
    for (int q = 0; q < a.n; q++) {
        const uintptr_t b = (reinterpret_cast<uintptr_t>(a.r[q].p) + 15) & ~(uintptr_t)15;
        const uintptr_t e = (reinterpret_cast<uintptr_t>(a.r[q].p) + a.r[q].bytes) & ~(uintptr_t)15;
        const size_t bytes = e > b ? e - b : 0, pieces = (bytes + kL2PullPiece - 1) / kL2PullPiece;
        for (size_t i = (me + lanes - first % lanes) % lanes; i < pieces; i += lanes) {
            const size_t off = i * kL2PullPiece;
            pull_piece(reinterpret_cast<const char *>(b + off),
                       (unsigned)(bytes - off < kL2PullPiece ? bytes - off : kL2PullPiece));
        }
        first += pieces;
    }
}

} // namespace

cudaError_t l2_pull(cudaStream_t s, const l2_pulls &a)
{
    if (a.n < 0 || a.n > kL2PullRanges)
        return cudaErrorInvalidValue;
    for (int q = 0; q < a.n; q++)
        if (a.r[q].bytes && !a.r[q].p)
            return cudaErrorInvalidValue;
    const launch_ctx c = {s, 0, {}, 0, 0, 0, 0};
    return launch(c, l2_pull_kernel, dim3(kL2PullCtas), dim3(kWarp), 0, a);
}

ARB_TL_TU(l2_pull)

} // namespace arbk
