// SPDX-License-Identifier: MIT
// Streaming read: every 16-byte vector of a buffer read once (past L1, in flight four per
// thread), folded into one word per block so the reads cannot be elided. The floor's
// denominator: what the device delivers to a kernel that only reads.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/common.cuh"

namespace arbk {
namespace {

constexpr int kBwThreads = 512;

__global__ void __launch_bounds__(kBwThreads) read_kernel(const uint4 *__restrict__ src, size_t nvec, uint32_t *sink)
{
    uint32_t x = 0;
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < nvec; i += 4 * stride) {
        const uint4 a = ld_stream(src + i), b = ld_stream(src + i + stride);
        const uint4 c = ld_stream(src + i + 2 * stride), d = ld_stream(src + i + 3 * stride);
        x ^= a.x ^ a.y ^ a.z ^ a.w ^ b.x ^ b.y ^ b.z ^ b.w ^ c.x ^ c.y ^ c.z ^ c.w ^ d.x ^ d.y ^ d.z ^ d.w;
    }
    for (; i < nvec; i += stride) {
        const uint4 a = ld_stream(src + i);
        x ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (x == 0x9e3779b9u) // practically never; keeps the loads live
        sink[blockIdx.x] = x;
}

} // namespace

cudaError_t stream_read(cudaStream_t s, const void *src, size_t bytes, uint32_t *sink, int sms)
{
    const launch_ctx c = {s, 0, {}, 0, 0, 0, 0};
    return launch(c, read_kernel, dim3(sms * 4), dim3(kBwThreads), 0, static_cast<const uint4 *>(src), bytes / 16,
                  sink);
}

} // namespace arbk
