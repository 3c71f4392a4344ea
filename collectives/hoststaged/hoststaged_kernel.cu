// SPDX-License-Identifier: MIT
//
// The device half of arb-hoststaged.so: a one-shot all-reduce through pinned host
// memory that every local rank has mapped (see hoststaged.h for the layout).
//
// One call, epoch e (per CTA, kept in device memory and advanced by the kernel, so a
// captured CUDA graph replays correctly: nothing per call is frozen in its arguments):
//   1. write: every CTA b stores its share of this rank's input into slot(e % 2, rank)
//      with 16-byte write-through stores (posted PCIe writes to host memory);
//   2. publish: bar.sync, then thread 0 runs fence.sc.sys (__threadfence_system) and
//      stores flag(rank, b) = e;
//   3. wait: thread r polls flag(r, b) with ld.acquire.sys until it reaches e (2 s
//      timeout on %globaltimer), then bar.sync;
//   4. reduce: every CTA b reads the same share of every peer's slot (ld.global.cv,
//      over PCIe) and sums in rank order 0..n-1 in fp32, so all ranks get the same bits.
//
// Memory ordering of the flag. Writer: the CTA's slot stores precede bar.sync; bar.sync
// orders them before thread 0's fence.sc.sys at CTA scope, and a fence is cumulative,
// so every one of those stores is visible at system scope (in host memory) before the
// flag store that follows the fence. Reader: ld.acquire.sys of the flag synchronizes
// with that fence-then-store (a release pattern); the following bar.sync extends the
// ordering to every thread of the reading CTA, whose slot loads then see the data. The
// loads use .cv (fetch again, treat cached lines as stale) so no L1/L2 copy of an
// earlier epoch's slot can be returned.
//
// Reuse of a slot (double buffering by epoch parity, no second "done reading" round):
// CTA a of rank r writes slot(p, r) again at epoch e + 2 only after it passed its wait
// of epoch e + 1, i.e. after it saw flag(q, a) >= e + 1 for every peer q. Peer q's CTA a
// stored that flag in q's kernel of epoch e + 1, which started after q's kernel of
// epoch e had completed (stream order), including every read of slot(p, r) by any of
// q's CTAs. So a slot is never overwritten while a peer still reads it, and the cost is
// one flag round per call instead of two. The flag holds the epoch itself and the wait
// accepts any value >= e (a fast peer may already have published e + 1).
//
// Every CTA of the fixed-size grid takes part in every call (even with no data share),
// so all CTAs' epochs advance together and agree across ranks. The grid is no larger
// than what can be resident at once (checked at init), so a CTA that spins never
// keeps a CTA it waits for from being scheduled.

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "arb_device.cuh"
#include "arb_launch.cuh"
#include "hoststaged.h"

namespace {

constexpr int kMaxRanksInFlight = 8; // peer loads issued before summing, per pass

__device__ __forceinline__ uint32_t ld_acquire_sys(const volatile uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void st_relaxed_sys(volatile uint32_t *p, uint32_t v)
{
    asm volatile("st.relaxed.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

__device__ __forceinline__ volatile uint32_t *flag_ptr(const hs_launch_t &l, int r, unsigned b)
{
    return reinterpret_cast<volatile uint32_t *>(
        reinterpret_cast<volatile char *>(l.flags) +
        ((size_t)r * l.max_blocks + b) * HS_FLAG_PITCH);
}

__device__ __forceinline__ char *slot_ptr(const hs_launch_t &l, uint32_t epoch, int r)
{
    return l.slots + ((size_t)(epoch & 1u) * l.nranks + r) * l.slot_bytes;
}

// Element traits: how 16 bytes unpack into fp32 lanes and pack back.
struct Bf16 {
    using elem = unsigned short; // raw bf16 bits
    static constexpr int lanes = 8;
    __device__ static void add(float (&acc)[8], uint4 v)
    {
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int i = 0; i < 4; i++) {
            acc[2 * i] += __uint_as_float(w[i] << 16);
            acc[2 * i + 1] += __uint_as_float(w[i] & 0xffff0000u);
        }
    }
    __device__ static uint32_t pack2(float lo, float hi)
    {
        __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi); // round once, to nearest even
        return *reinterpret_cast<uint32_t *>(&h);
    }
    __device__ static uint4 pack(const float (&acc)[8])
    {
        return make_uint4(pack2(acc[0], acc[1]), pack2(acc[2], acc[3]),
                          pack2(acc[4], acc[5]), pack2(acc[6], acc[7]));
    }
    __device__ static float to_float(elem e) { return __uint_as_float((uint32_t)e << 16); }
    __device__ static elem from_float(float f)
    {
        __nv_bfloat16 h = __float2bfloat16_rn(f);
        return *reinterpret_cast<elem *>(&h);
    }
};

struct Fp32 {
    using elem = float;
    static constexpr int lanes = 4;
    __device__ static void add(float (&acc)[4], uint4 v)
    {
        acc[0] += __uint_as_float(v.x);
        acc[1] += __uint_as_float(v.y);
        acc[2] += __uint_as_float(v.z);
        acc[3] += __uint_as_float(v.w);
    }
    __device__ static uint4 pack(const float (&acc)[4])
    {
        return make_uint4(__float_as_uint(acc[0]), __float_as_uint(acc[1]),
                          __float_as_uint(acc[2]), __float_as_uint(acc[3]));
    }
    __device__ static float to_float(elem e) { return e; }
    __device__ static elem from_float(float f) { return f; }
};

// Thread 0 of a CTA records the first timeout of the communicator (later ones keep
// the first record: it names the rank that stopped first).
__device__ void record_timeout(const hs_launch_t &l, int peer, uint32_t epoch)
{
    if (atomicCAS(&l.err->timed_out, 0u, 1u) == 0u) {
        l.err->peer = peer;
        l.err->epoch = epoch;
    }
}

// Step 3: thread r waits for flag(r, b) >= e. Returns 0, or 1 after a timeout (its own
// or another CTA's, seen through err->timed_out).
__device__ int wait_peers(const hs_launch_t &l, unsigned b, uint32_t e)
{
    int failed = 0;
    for (int r = threadIdx.x; r < l.nranks; r += blockDim.x) {
        if (r == l.rank)
            continue;
        const volatile uint32_t *f = flag_ptr(l, r, b);
        const uint64_t start = arb_globaltimer_ns();
        for (unsigned polls = 1;; polls++) {
            // Signed difference: the epoch counter may wrap after 2^32 calls.
            if ((int32_t)(ld_acquire_sys(f) - e) >= 0)
                break;
            if ((polls & 63u) == 0 && *(volatile uint32_t *)&l.err->timed_out) {
                failed = 1; // another CTA gave up: the epochs no longer agree
                break;
            }
            if (arb_globaltimer_ns() - start > HS_TIMEOUT_NS) {
                record_timeout(l, r, e);
                failed = 1;
                break;
            }
        }
        if (failed)
            break;
    }
    return failed;
}

template <typename Tr>
__global__ void __launch_bounds__(1024) hs_oneshot(hs_launch_t l, const void *send_v,
                                                   void *recv_v, size_t count)
{
    using elem = typename Tr::elem;
    __shared__ uint32_t s_epoch;
    __shared__ int s_abort;
    const unsigned b = blockIdx.x;

    if (threadIdx.x == 0) {
        s_abort = *(volatile uint32_t *)&l.err->timed_out != 0;
        s_epoch = l.epochs[b] + 1;
    }
    __syncthreads();
    if (s_abort)
        return; // an earlier call timed out: the ranks' epochs disagree, do nothing
    const uint32_t e = s_epoch;

    // Units: nvec in 16-byte vectors; count, tail_first, ntail in elements.
    const size_t nvec = count * sizeof(elem) / 16;
    const size_t tail_first = nvec * Tr::lanes;
    const unsigned ntail = (unsigned)(count - tail_first);
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    const size_t tid = (size_t)b * blockDim.x + threadIdx.x;
    const uint4 *send = static_cast<const uint4 *>(send_v);
    uint4 *recv = static_cast<uint4 *>(recv_v);

    // 1. write. Vector i belongs to CTA (i / blockDim) % grid in both this step and
    //    step 4, on every rank: a CTA only ever reads what the same CTA index wrote.
    //    The < 16-byte tail belongs to CTA 0.
    char *mine = slot_ptr(l, e, l.rank);
    for (size_t i = tid; i < nvec; i += stride)
        __stwt(reinterpret_cast<uint4 *>(mine) + i, send[i]);
    if (b == 0 && threadIdx.x < ntail)
        __stwt(reinterpret_cast<elem *>(mine) + tail_first + threadIdx.x,
               static_cast<const elem *>(send_v)[tail_first + threadIdx.x]);

    // 2. publish (ordering argument at the top of this file).
    __syncthreads();
    if (threadIdx.x == 0 && l.rank != l.hang_rank) {
        __threadfence_system();
        st_relaxed_sys(flag_ptr(l, l.rank, b), e);
    }

    // 3. wait.
    if (wait_peers(l, b, e))
        s_abort = 1;
    __syncthreads();
    if (s_abort)
        return; // recv is left as it was; query_error reports the timeout

    // 4. reduce in rank order; own data comes from `send` (same bits as our slot).
    for (size_t i = tid; i < nvec; i += stride) {
        float acc[Tr::lanes] = {};
        for (int r0 = 0; r0 < l.nranks; r0 += kMaxRanksInFlight) {
            uint4 v[kMaxRanksInFlight];
#pragma unroll
            for (int k = 0; k < kMaxRanksInFlight; k++) {
                const int r = r0 + k;
                if (r < l.nranks)
                    v[k] = r == l.rank ? send[i]
                                       : __ldcv(reinterpret_cast<const uint4 *>(slot_ptr(l, e, r)) + i);
            }
#pragma unroll
            for (int k = 0; k < kMaxRanksInFlight; k++)
                if (r0 + k < l.nranks)
                    Tr::add(acc, v[k]);
        }
        recv[i] = Tr::pack(acc);
    }
    if (b == 0 && threadIdx.x < ntail) {
        const size_t j = tail_first + threadIdx.x;
        float acc = 0.f;
        for (int r = 0; r < l.nranks; r++) {
            const elem x = r == l.rank ? static_cast<const elem *>(send_v)[j]
                                       : __ldcv(reinterpret_cast<const elem *>(slot_ptr(l, e, r)) + j);
            acc += Tr::to_float(x);
        }
        static_cast<elem *>(recv_v)[j] = Tr::from_float(acc);
    }

    if (threadIdx.x == 0)
        l.epochs[b] = e; // read again only by CTA b of the next kernel on this stream
}

} // namespace

extern "C" cudaError_t hs_launch_allreduce(const hs_launch_t *l, const void *send, void *recv,
                                           size_t count, int dtype, unsigned blocks, unsigned threads,
                                           void *stream)
{
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    if (dtype == 0)
        hs_oneshot<Bf16><<<blocks, threads, 0, s>>>(*l, send, recv, count);
    else
        hs_oneshot<Fp32><<<blocks, threads, 0, s>>>(*l, send, recv, count);
    return cudaGetLastError();
}

extern "C" cudaError_t hs_max_coresident_blocks(unsigned threads, int *blocks)
{
    int bf16 = 0, fp32 = 0;
    cudaError_t e = arb_resident_clusters(hs_oneshot<Bf16>, 1, (int)threads, &bf16);
    if (e == cudaSuccess)
        e = arb_resident_clusters(hs_oneshot<Fp32>, 1, (int)threads, &fp32);
    *blocks = bf16 < fp32 ? bf16 : fp32;
    return e;
}
