// SPDX-License-Identifier: MIT
// Residual add + RMSNorm on the device: the "unfused" path the harness runs after any
// all-reduce plugin (all-reduce into `sum`, then this kernel). One block per token row.
#include "rmsnorm/rmsnorm.h"

#include <climits>
#include <cmath>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "arbench/status.h"

namespace {

constexpr unsigned kMaxThreads = 1024;
constexpr unsigned kWarp = 32;

// VEC bf16 values moved as one load/store: 16 bytes for VEC = 8.
template <int VEC> struct alignas(2 * VEC) bf16_vec {
    __nv_bfloat16 v[VEC];
};

// Sum of v over the block, returned to every thread. blockDim.x is a multiple of 32.
// Every warp reduces the same per-warp partials in the same order, so the result is
// identical in all threads (and deterministic run to run) without a broadcast.
__device__ float block_sum(float v, float *warp_sums)
{
    for (int offset = kWarp / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    const unsigned lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    if (lane == 0)
        warp_sums[warp] = v;
    __syncthreads();
    const unsigned nwarps = blockDim.x / kWarp;
    v = lane < nwarps ? warp_sums[lane] : 0.0f;
    for (int offset = kWarp / 2; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Vectors per thread kept in registers between the two passes: with up to 1024
// threads this covers hidden <= 32768 at VEC 8 (4096 scalar); beyond, the rest of
// the row is read back from memory.
constexpr int kKeptVecs = 4;

// residual[i] = bf16(residual[i] + sum[i]) for one vector; the stored values, as
// float, go to `stored`, their squares into sum_sq.
template <int VEC>
__device__ void add_residual(bf16_vec<VEC> *res_row, const bf16_vec<VEC> *sum_row, unsigned i,
                             float (&stored)[VEC], float &sum_sq)
{
    bf16_vec<VEC> r = res_row[i];
    const bf16_vec<VEC> s = sum_row[i];
#pragma unroll
    for (int k = 0; k < VEC; k++) {
        r.v[k] = __float2bfloat16_rn(__bfloat162float(r.v[k]) + __bfloat162float(s.v[k]));
        stored[k] = __bfloat162float(r.v[k]);
        sum_sq += stored[k] * stored[k];
    }
    res_row[i] = r;
}

template <int VEC>
__device__ void write_out(bf16_vec<VEC> *out_row, const bf16_vec<VEC> &w, unsigned i, const float (&stored)[VEC],
                          float inv_rms)
{
    bf16_vec<VEC> o;
#pragma unroll
    for (int k = 0; k < VEC; k++)
        o.v[k] = __float2bfloat16_rn(stored[k] * inv_rms * __bfloat162float(w.v[k]));
    out_row[i] = o;
}

// One block per token row. hidden is a multiple of VEC and every pointer is aligned
// to 2 * VEC bytes. Vector i of a row belongs to thread i % blockDim.x in both passes.
template <int VEC>
__global__ void __launch_bounds__(kMaxThreads)
residual_rmsnorm_kernel(__nv_bfloat16 *residual, const __nv_bfloat16 *sum,
                        const __nv_bfloat16 *weight, __nv_bfloat16 *out, unsigned hidden, float eps)
{
    using vec_t = bf16_vec<VEC>;
    __shared__ float warp_sums[kMaxThreads / kWarp];

    const size_t row = (size_t)blockIdx.x * hidden; // elements
    const unsigned nvec = hidden / VEC;
    vec_t *res_row = reinterpret_cast<vec_t *>(residual + row);
    const vec_t *sum_row = reinterpret_cast<const vec_t *>(sum + row);
    const vec_t *weight_row = reinterpret_cast<const vec_t *>(weight);
    vec_t *out_row = reinterpret_cast<vec_t *>(out + row);
    const unsigned kept_end = kKeptVecs * blockDim.x; // vectors below this stay in registers

    // Programmatic dependent launch on both sides (no-ops when launched without it): let the
    // next kernel start its launch at once (it waits for this one's completion before reading
    // residual or out), then wait for the kernel that wrote sum. The weight's kept vectors are
    // loaded first (the weight is not a predecessor's output: rmsnorm.h), so their trip to
    // memory overlaps the wait instead of following the norm's reduction.
    vec_t wkept[kKeptVecs];
#pragma unroll
    for (int j = 0; j < kKeptVecs; j++) {
        const unsigned i = threadIdx.x + j * blockDim.x;
        if (i < nvec)
            wkept[j] = weight_row[i];
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif

    // Pass 1: residual = bf16(residual + sum), stored; the norm uses the stored value.
    // The loops over kept[] are unrolled so that kept[] lives in registers.
    float kept[kKeptVecs][VEC];
    float sum_sq = 0.0f;
#pragma unroll
    for (int j = 0; j < kKeptVecs; j++) {
        const unsigned i = threadIdx.x + j * blockDim.x;
        if (i < nvec)
            add_residual<VEC>(res_row, sum_row, i, kept[j], sum_sq);
    }
    for (unsigned i = threadIdx.x + kept_end; i < nvec; i += blockDim.x) {
        float stored[VEC];
        add_residual<VEC>(res_row, sum_row, i, stored, sum_sq);
    }
    const float inv_rms = rsqrtf(block_sum(sum_sq, warp_sums) / (float)hidden + eps);

    // Pass 2: out = residual * inv_rms * weight. Past kept_end each thread re-reads only
    // vectors it stored itself in pass 1, so program order makes its stores visible.
#pragma unroll
    for (int j = 0; j < kKeptVecs; j++) {
        const unsigned i = threadIdx.x + j * blockDim.x;
        if (i < nvec)
            write_out<VEC>(out_row, wkept[j], i, kept[j], inv_rms);
    }
    for (unsigned i = threadIdx.x + kept_end; i < nvec; i += blockDim.x) {
        const vec_t r = res_row[i];
        float stored[VEC];
#pragma unroll
        for (int k = 0; k < VEC; k++)
            stored[k] = __bfloat162float(r.v[k]);
        write_out<VEC>(out_row, weight_row[i], i, stored, inv_rms);
    }
}

bool aligned_to(const void *p, unsigned bytes)
{
    return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// The widest vector (in elements) that hidden and all four pointers allow.
int pick_vec(const void *residual, const void *sum, const void *weight, const void *out, unsigned hidden)
{
    for (int vec = 8; vec > 1; vec /= 2) {
        const unsigned bytes = 2u * (unsigned)vec;
        if (hidden % (unsigned)vec == 0 && aligned_to(residual, bytes) && aligned_to(sum, bytes) &&
            aligned_to(weight, bytes) && aligned_to(out, bytes))
            return vec;
    }
    return 1;
}

template <int VEC>
void launch(void *residual, const void *sum, const void *weight, void *out, unsigned tokens,
            unsigned hidden, float eps, int pdl, cudaStream_t stream)
{
    // Enough threads for one vector each, up to 1024: with 1-64 tokens there are
    // fewer blocks than SMs, so a wide block is what shortens the row.
    const unsigned nvec = hidden / VEC;
    unsigned threads = (nvec + kWarp - 1) / kWarp * kWarp;
    if (threads > kMaxThreads)
        threads = kMaxThreads;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(tokens);
    cfg.blockDim = dim3(threads);
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = pdl ? 1 : 0;
    cudaLaunchKernelEx(&cfg, residual_rmsnorm_kernel<VEC>, static_cast<__nv_bfloat16 *>(residual),
                       static_cast<const __nv_bfloat16 *>(sum), static_cast<const __nv_bfloat16 *>(weight),
                       static_cast<__nv_bfloat16 *>(out), hidden, eps);
}

} // namespace

extern "C" arb_status_t arb_rmsnorm_residual_launch(void *residual, const void *sum, const void *weight,
                                                    void *out, unsigned tokens, unsigned hidden, float eps,
                                                    void *stream, char *why, size_t why_len)
{
    return arb_rmsnorm_residual_launch_pdl(residual, sum, weight, out, tokens, hidden, eps, 0, stream, why, why_len);
}

extern "C" arb_status_t arb_rmsnorm_residual_launch_pdl(void *residual, const void *sum, const void *weight,
                                                        void *out, unsigned tokens, unsigned hidden, float eps,
                                                        int pdl, void *stream, char *why, size_t why_len)
{
    if (hidden == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: hidden is 0; expected the row length in elements, >= 1");
    if (!(eps >= 0.0f) || std::isinf(eps))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: eps %g is not a finite number >= 0", (double)eps);
    if (tokens == 0)
        return ARB_OK;
    if (tokens > (unsigned)INT_MAX)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: tokens %u exceeds the grid limit of %d rows", tokens, INT_MAX);
    if (!residual || !sum || !weight || !out)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: NULL buffer (residual %p, sum %p, weight %p, out %p); expected device pointers",
                  residual, sum, weight, out);

    cudaStream_t s = static_cast<cudaStream_t>(stream);
    switch (pick_vec(residual, sum, weight, out, hidden)) {
    case 8: launch<8>(residual, sum, weight, out, tokens, hidden, eps, pdl, s); break;
    case 4: launch<4>(residual, sum, weight, out, tokens, hidden, eps, pdl, s); break;
    case 2: launch<2>(residual, sum, weight, out, tokens, hidden, eps, pdl, s); break;
    default: launch<1>(residual, sum, weight, out, tokens, hidden, eps, pdl, s); break;
    }
    /* No device or no driver is a system error here, not a decline: the caller already
     * holds device buffers, so the device was there. */
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "rmsnorm: kernel launch (%u tokens x %u hidden) failed: %s", tokens, hidden,
                  cudaGetErrorString(e));
    return ARB_OK;
}
