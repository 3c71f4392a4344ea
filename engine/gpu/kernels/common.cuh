// SPDX-License-Identifier: MIT
// Device helpers shared by the engine's kernels: bf16 vectors, warp and block reductions,
// tickets, programmatic dependent launch (PDL), and the one launch helper every kernel goes
// through. The RMSNorms are norm.cuh's.
#ifndef ARB_ENGINE_KERNELS_COMMON_CUH
#define ARB_ENGINE_KERNELS_COMMON_CUH

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "gpu/kernels/kernels.h"
#include "gpu/kernels/timeline.cuh"
#include "gpu/kernels/wave_fit.h"

// A minimum of blocks an SM for __launch_bounds__ on SM120 alone, after the threads:
//   __launch_bounds__(256 ARB_SM120_MINB(2))
// is (256, 2) in the sm_120 pass and (256) everywhere else, so the SM90 code is the same bits.
// ptxas gives some kernels many more registers on sm_120 than on sm_90 for the same source
// (qkva_prep at T = 1: 167-168 against 123-128), which halves their blocks an SM there
// (ci/kernel-resources.py lists them); with it sm_120 holds the blocks sm_90 holds.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
#define ARB_SM120_MINB(n) , n
#else
#define ARB_SM120_MINB(n)
#endif
// A constant of a kernel body on SM120 alone: ARB_SM120_PICK(a, b) is a in the sm_120 pass and b
// in every other (host and sm_90 alike), e.g. a smaller unroll where ptxas spills on sm_120 only. A
// kernel's own template arguments must not use it (the host and device passes must name the same
// kernel); its body may.
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1200
#define ARB_SM120_PICK(a, b) (a)
#else
#define ARB_SM120_PICK(a, b) (b)
#endif

namespace arbk {

constexpr int kWarp = 32;

// Two bf16 in a 32-bit word: element 0 in the low half (little endian).
__device__ __forceinline__ float bf16_lo(uint32_t w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_hi(uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

// Eight bf16 (one 16-byte vector) to float.
__device__ __forceinline__ void unpack8(const uint4 v, float (&f)[8])
{
    f[0] = bf16_lo(v.x), f[1] = bf16_hi(v.x), f[2] = bf16_lo(v.y), f[3] = bf16_hi(v.y);
    f[4] = bf16_lo(v.z), f[5] = bf16_hi(v.z), f[6] = bf16_lo(v.w), f[7] = bf16_hi(v.w);
}

// w . x over one vector of eight bf16 inputs, fp32.
__device__ __forceinline__ float dot8(const float (&w)[8], const uint4 xv)
{
    float xf[8], s = 0.0f;
    unpack8(xv, xf);
#pragma unroll
    for (int j = 0; j < 8; j++)
        s = fmaf(w[j], xf[j], s);
    return s;
}

// n / d for 0 <= n and 1 <= d with n d < 2^32, by a multiply-high with m = udiv_magic(d)
// (2^32 / d rounded up, computed once where d is known; 0 for d = 1): exact there, as m d - 2^32
// < d leaves n / d's fraction short of 1. An integer division by a value known only at run time
// is ~15 instructions (the attend kernel's staging, MoE down's pairs).
__device__ __forceinline__ unsigned udiv_magic(int d) { return d > 1 ? 0xffffffffu / (unsigned)d + 1u : 0u; }
__device__ __forceinline__ int udiv(int n, int d, unsigned m) { return d > 1 ? (int)__umulhi((unsigned)n, m) : n; }

__device__ __forceinline__ float bf(bf16 v) { return __bfloat162float(v); }
__device__ __forceinline__ bf16 to_bf(float v) { return __float2bfloat16_rn(v); }

// Weights are read once per step: stream them past L1.
__device__ __forceinline__ uint4 ld_stream(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

__device__ __forceinline__ float warp_sum(float v)
{
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float warp_max(float v)
{
#pragma unroll
    for (int o = kWarp / 2; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// Sum over the block (blockDim.x a multiple of 32, <= 1024), the same value in every
// thread, in a fixed order. scratch: 32 floats of shared memory; reusable after return.
__device__ __forceinline__ float block_sum(float v, float *scratch)
{
    v = warp_sum(v);
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    __syncthreads();
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / kWarp) ? scratch[lane] : 0.0f;
    return warp_sum(v);
}

// Max over the block, the same value in every thread. scratch as block_sum's.
__device__ __forceinline__ float block_max(float v, float *scratch)
{
    v = warp_max(v);
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    __syncthreads();
    if (lane == 0)
        scratch[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / kWarp) ? scratch[lane] : -INFINITY;
    return warp_max(v);
}

// Whether this block is the last of the n blocks that share `ticket` to arrive here (each of
// them calls it once, all its threads): their writes before the call are then visible to the
// last block's reads through L2 (__ldcg). Thread 0 takes the ticket with one acquire-release
// atomic at GPU scope (`atom.acq_rel.gpu.global.add`): its release half orders the block's writes (made
// before the barrier, which the release's cumulativity covers) before the increment, its acquire
// half orders the last block's reads (after the second barrier) after it; the increments form one
// release sequence, so the last block's acquire sees every earlier block's writes. Until the
// twenty-sixth session it was `__threadfence()` (membar.gl, that is fence.sc.gpu, the slow fence)
// before a relaxed atomicAdd and another after the last block's reset, three trips to memory on
// the last block's path instead of one. The last block resets the ticket (a device word, zero
// before the first launch) with a plain store, so the next launch finds it zero: the kernels that
// use one are launched one after another and the next one's use comes after its PDL wait, that is
// after this grid has completed and its writes are visible.
__device__ __forceinline__ bool last_to_arrive(unsigned *ticket, unsigned n)
{
    __shared__ int last;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned old;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(ticket) : "memory");
        last = old == n - 1;
        if (last)
            *ticket = 0;
    }
    __syncthreads();
    return last != 0;
}

// The same for every block of the grid.
__device__ __forceinline__ bool grid_last_block(unsigned *ticket)
{
    return last_to_arrive(ticket, gridDim.x * gridDim.y * gridDim.z);
}

// Interleaved-pair RoPE of forward.md with a (cos * m, sin * m) table per position.
__device__ __forceinline__ void rope_pair(float x0, float x1, float2 cs, bf16 *out)
{
    out[0] = to_bf(x0 * cs.x - x1 * cs.y);
    out[1] = to_bf(x0 * cs.y + x1 * cs.x);
}

// One bf16 through L2 (ld.global.cg) for an activation a predecessor or another block wrote, as a
// volatile asm. cuda_bf16.hpp's __ldcg(const __nv_bfloat16 *) is a plain asm with no memory
// operand, which the compiler may move above a PDL wait (an asm volatile) or a barrier: it did in
// mla_qb.cu's prep at T = 1 (the PTX had six of its loads before griddepcontrol.wait; the RoPE of
// the cache row read qkva before qkv_a had written it). The vector and fp32 __ldcg are volatile.
__device__ __forceinline__ bf16 ldcg_bf16(const bf16 *p)
{
    unsigned short r;
    asm volatile("ld.global.cg.b16 %0, [%1];" : "=h"(r) : "l"(p) : "memory");
    return __ushort_as_bfloat16(r);
}

// PDL: a kernel launched with programmatic stream serialization may start while its
// predecessor runs; it must wait before touching anything the predecessor writes, and
// lets its own successor start launching once it is under way. No-ops without PDL.
__device__ __forceinline__ void pdl_launch_dependents()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void pdl_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    tl_waited(); // a -Dengine_timeline=true build: the wait's return (timeline.cuh); else nothing
}
__device__ __forceinline__ void pdl_begin()
{
    pdl_wait();
    pdl_launch_dependents();
}

// Asynchronous copies global -> shared (cp.async, SM80+: SM90 and SM120 alike), waited for with
// cp_async_wait_all by the issuing thread (then a barrier for other threads' reads). 16 bytes
// through L2 only (.cg: for activations an earlier kernel wrote), 8 and 4 through L1 (.ca: weights).
__device__ __forceinline__ void cp_async16(void *smem, const void *gmem)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(a), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async8(void *smem, const void *gmem)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(a), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async4(void *smem, const void *gmem)
{
    const unsigned a = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(a), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void cp_async_wait_all() { asm volatile("cp.async.wait_all;" ::: "memory"); }

// Pull `bytes` at p (a weight row: nothing a predecessor writes) toward L2 before waiting
// on the predecessor, one 128-byte line per lane and step: under PDL the fetch overlaps
// the previous kernel's tail.
__device__ __forceinline__ void warp_prefetch_l2(const void *p, size_t bytes)
{
    const char *c = static_cast<const char *>(p);
    for (size_t off = (size_t)(threadIdx.x % kWarp) * 128; off < bytes; off += kWarp * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// `bytes` from p toward L2 by the whole block, a 128-byte line per thread and step (the block
// form of warp_prefetch_l2).
__device__ __forceinline__ void block_prefetch_l2(const void *p, size_t bytes)
{
    const char *b = static_cast<const char *>(p);
    for (size_t off = (size_t)threadIdx.x * 128; off < bytes; off += (size_t)blockDim.x * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(b + off));
}

// This CTA's share of `a` toward L2 (kernels.h's l2_ahead): the grid's CTAs take contiguous
// runs of its 128-byte lines in block order, a line per thread and step.
__device__ __forceinline__ void grid_prefetch_l2(const l2_ahead &a)
{
    if (!a.bytes)
        return;
    const size_t lines = (a.bytes + 127) / 128;
    const size_t nb = (size_t)gridDim.x * gridDim.y * gridDim.z;
    const size_t b = ((size_t)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const size_t per = (lines + nb - 1) / nb, l0 = b * per, l1 = l0 + per < lines ? l0 + per : lines;
    const char *c = static_cast<const char *>(a.p);
    for (size_t l = l0 + threadIdx.x; l < l1; l += blockDim.x)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + l * 128));
}

// How an op (a kernel body run for one block index: the *_ops.cuh headers) waits for its
// inputs and loads what an earlier op of the step wrote:
//   pdl_sync     the op is its own kernel: wait = the PDL wait on the previous kernel;
//                activations through the read-only path (written by earlier kernels)
//   persist_sync the op is a stage of a persistent launch (persist.cu): wait = the PDL wait
//                (the stage before is waited for by the launch, once per CTA and stage,
//                before the op runs); activations through L2 (another CTA of this launch
//                may have written them: the read-only path is not coherent within a launch)
struct pdl_sync {
    static constexpr bool coherent = false;
    __device__ __forceinline__ void wait() const { pdl_wait(); }
    __device__ __forceinline__ void launch_dependents() const { pdl_launch_dependents(); }
};

// pdl_sync with the trigger after the wait (--moe-early, moe.cu's gate/up): the kernel's
// dependents launch only once all of its CTAs have waited, that is once its predecessor has
// completed, so a dependent may read what that predecessor wrote before its own wait.
struct pdl_late {
    static constexpr bool coherent = false;
    __device__ __forceinline__ void wait() const { pdl_begin(); }
    __device__ __forceinline__ void launch_dependents() const {}
};

struct persist_sync {
    static constexpr bool coherent = true;
    __device__ __forceinline__ void wait() const { pdl_wait(); }
    __device__ __forceinline__ void launch_dependents() const {}
};

// An activation vector (16 bytes): read-only path for a kernel, L2 within a persistent launch.
template <bool COH>
__device__ __forceinline__ uint4 ld_act(const uint4 *p)
{
    if (COH)
        return __ldcg(p);
    return __ldg(p);
}

// f(std::integral_constant<int, T>()) for T = 1 .. kMaxT (host side: each T a kernel's own
// instantiation); cudaErrorInvalidValue for any other T.
template <typename F> cudaError_t with_t(int T, F f)
{
    switch (T) {
    case 1: return f(std::integral_constant<int, 1>());
    case 2: return f(std::integral_constant<int, 2>());
    case 3: return f(std::integral_constant<int, 3>());
    case 4: return f(std::integral_constant<int, 4>());
    case 5: return f(std::integral_constant<int, 5>());
    case 6: return f(std::integral_constant<int, 6>());
    case 7: return f(std::integral_constant<int, 7>());
    case 8: return f(std::integral_constant<int, 8>());
    default: return cudaErrorInvalidValue;
    }
}
static_assert(kMaxT == 8, "with_t covers T = 1 .. kMaxT");

// Every engine kernel is launched here, so PDL is one switch.
template <typename... KArgs, typename... Args>
cudaError_t launch(const launch_ctx &c, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                   Args... args)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = c.stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = c.pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

// This device's index, SM count and compute capability (major), the attributes read once per
// device: the launchers' choices below ask every launch, and an eager step's time counts the
// host's part of each launch. (The engine drives its device from one host thread.)
struct device_shape {
    int dev, sms, major;
};
constexpr int kMaxDevices = 64;
inline cudaError_t current_device_shape(device_shape *out)
{
    static device_shape seen[kMaxDevices]; // sms 0: not read yet
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    if (dev < 0 || dev >= kMaxDevices)
        return cudaErrorInvalidDevice;
    if (!seen[dev].sms) {
        device_shape d = {dev, 0, 0};
        e = cudaDeviceGetAttribute(&d.sms, cudaDevAttrMultiProcessorCount, dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, dev);
        if (e != cudaSuccess)
            return e;
        seen[dev] = d;
    }
    *out = seen[dev];
    return cudaSuccess;
}

// A kernel's shared-memory carveout preference (cudaFuncAttributePreferredSharedMemoryCarveout:
// percent of the largest shared memory an SM has; the driver still picks the configuration, and a
// kernel needing more gets more), set once a kernel and device before its first launch there:
// setting it at every launch would add host time to each eager launch. Past kMaxCarved (kernel,
// device) pairs it is set again at each launch (the same result, slower).
constexpr int kMaxCarved = 64;
inline cudaError_t carveout_once(const void *kernel, int pct)
{
    struct carved {
        const void *kernel;
        int dev;
    };
    static carved done[kMaxCarved];
    static int n;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    for (int i = 0; i < n; i++)
        if (done[i].kernel == kernel && done[i].dev == dev)
            return cudaSuccess;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout, pct);
    if (e == cudaSuccess && n < kMaxCarved)
        done[n++] = carved{kernel, dev};
    return e;
}

// A launch of `tiles` tiles (wave_fit.h): `plain`, a block a tile, unless c.wave folds the grid
// into one wave of Multi's co-resident blocks on this device (its occupancy read once a device),
// which then runs several tiles a block. Both kernels take the same arguments.
template <auto Multi, typename... KArgs, typename... Args>
cudaError_t wave_launch(const launch_ctx &c, void (*plain)(KArgs...), int tiles, dim3 block, size_t smem,
                        Args... args)
{
    if (c.wave) {
        static int per_sm[kMaxDevices]; // Multi's blocks an SM, 0: not read yet
        device_shape d;
        cudaError_t e = current_device_shape(&d);
        if (e == cudaSuccess && !per_sm[d.dev])
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm[d.dev], Multi, (int)(block.x * block.y * block.z),
                                                              smem);
        if (e != cudaSuccess)
            return e;
        const int grid = arb_wave_grid(tiles, per_sm[d.dev] * d.sms);
        if (grid < tiles)
            return launch(c, Multi, dim3(grid), block, smem, args...);
    }
    return launch(c, plain, dim3(tiles), block, smem, args...);
}

} // namespace arbk

#endif
