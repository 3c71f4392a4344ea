// SPDX-License-Identifier: MIT
// Device helpers of the p2p and ping kernels: system-scope flags, bounded spin-waits,
// 16-byte vector loads/stores with a partial tail, fp32 accumulation. The LL lines,
// the timer, the spin and its error record and the vector traits are the common ones
// (collectives/common/arb_device.cuh).
#ifndef P2P_DEVICE_CUH
#define P2P_DEVICE_CUH

#include <cuda_bf16.h>
#include <stdint.h>

#include "arb_device.cuh"
#include "p2p_common.h"
#include "p2p_kernels.h"

// Release store at system scope: every write this thread has made, and every write
// of its CTA ordered before it by __syncthreads(), is visible to a peer GPU that
// observes the flag with an acquire load (PTX memory model, release pattern).
__device__ __forceinline__ void p2p_st_release_sys(uint32_t *p, uint32_t v)
{
    asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Acquire load at system scope: reads issued after it (and, after __syncthreads(), by
// the whole CTA) see everything the releasing peer wrote before its flag.
__device__ __forceinline__ uint32_t p2p_ld_acquire_sys(const uint32_t *p)
{
    uint32_t v;
    asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// Records the first timeout of this rank and disables later kernels.
__device__ __forceinline__ void p2p_record_timeout(p2p_dev_state_t *st, int peer, uint32_t what, uint32_t epoch)
{
    arb_spin_record(&st->err, peer, what, epoch);
}

// True once another CTA of this rank gave up: stop waiting at once.
__device__ __forceinline__ bool p2p_aborted(p2p_dev_state_t *st) { return arb_spin_failed(&st->err); }

// Waits until *flag (written by rank `peer`) reaches epoch; false after timeout_ns or
// when this rank already aborted. Epochs grow by one per call; the signed difference
// keeps the comparison right across a 2^32 wrap.
__device__ __forceinline__ bool p2p_wait_flag(const uint32_t *flag, uint32_t epoch, p2p_dev_state_t *st, int peer,
                                              uint64_t timeout_ns)
{
    return arb_spin_until([&] { return (int32_t)(p2p_ld_acquire_sys(flag) - epoch) >= 0; }, &st->err, peer,
                          P2P_WAIT_FLAG, epoch, timeout_ns);
}

// Waits until the line at p (arb_device.cuh: LL lines) carries `epoch` in both
// halves; false after timeout_ns (recorded, naming `peer`) or when this rank already
// aborted. Not arb_spin_until: this loop's order (test, then abort and clock, then
// re-read) is what p2p's general fused kernel was measured with.
__device__ __forceinline__ bool p2p_wait_line(const uint4 *p, uint32_t epoch, p2p_dev_state_t *st, int peer,
                                              uint64_t timeout_ns, uint4 *line)
{
    uint4 l = arb_ld_line(p);
    if (!arb_line_is(l, epoch)) {
        const uint64_t t0 = arb_globaltimer_ns();
        for (unsigned spin = 1; !arb_line_is(l, epoch); spin++) {
            if ((spin & 255) == 0 && p2p_aborted(st))
                return false;
            if (arb_globaltimer_ns() - t0 > timeout_ns) {
                p2p_record_timeout(st, peer, P2P_WAIT_FUSED_LINES, epoch);
                return false;
            }
            l = arb_ld_line(p);
        }
    }
    *line = l;
    return true;
}

// ---- element types: a 16-byte vector holds VEC elements, accumulated in fp32 ----
template <typename T> using p2p_elt = arb_vec_traits<T>;
template <typename T> using p2p_vec = arb_vec<T>;

// Loads vector v of a count-element array; elements past count read as zero (no
// access beyond the array: the harness may pass a buffer that ends right there).
template <typename T>
__device__ __forceinline__ p2p_vec<T> p2p_load_vec(const T *base, size_t v, size_t count)
{
    constexpr int VEC = p2p_elt<T>::VEC;
    p2p_vec<T> x;
    size_t first = v * VEC;
    if (first + VEC <= count) {
        x.u = *(const uint4 *)(base + first);
    } else {
        x.u = make_uint4(0, 0, 0, 0);
        for (int i = 0; i < VEC && first + i < count; i++)
            x.e[i] = base[first + i];
    }
    return x;
}

template <typename T>
__device__ __forceinline__ void p2p_store_vec(T *base, size_t v, size_t count, const p2p_vec<T> &x)
{
    constexpr int VEC = p2p_elt<T>::VEC;
    size_t first = v * VEC;
    if (first + VEC <= count) {
        *(uint4 *)(base + first) = x.u;
    } else {
        for (int i = 0; i < VEC && first + i < count; i++)
            base[first + i] = x.e[i];
    }
}

__device__ __forceinline__ uint4 p2p_ld_cg(const uint4 *p) { return arb_ld_cg(p); }

template <typename T> __device__ __forceinline__ void p2p_acc(float *acc, const p2p_vec<T> &x)
{
#pragma unroll
    for (int i = 0; i < p2p_elt<T>::VEC; i++)
        acc[i] += p2p_elt<T>::to_f(x.e[i]);
}

template <typename T> __device__ __forceinline__ p2p_vec<T> p2p_round(const float *acc)
{
    p2p_vec<T> y;
#pragma unroll
    for (int i = 0; i < p2p_elt<T>::VEC; i++)
        y.e[i] = p2p_elt<T>::from_f(acc[i]);
    return y;
}

// ---- per-call protocol shared by every kernel ----

__device__ __forceinline__ uint32_t *p2p_flag_at(uint32_t *flags_base, int phase, int block, int src)
{
    return flags_base + ((size_t)phase * P2P_MAX_BLOCKS + block) * P2P_MAX_RANKS + src;
}

// Reads this block's epoch once (into shared memory: thread 0 rewrites the global
// word at the end, which a late warp must not read). False when the rank aborted.
__device__ __forceinline__ bool p2p_begin_call(const p2p_launch_t &a, uint32_t *epoch)
{
    arb_pdl_enter(); // pdl=1: send and the epoch words are read only after the wait
    __shared__ uint32_t s_epoch, s_aborted;
    if (threadIdx.x == 0) {
        s_aborted = p2p_aborted(a.state);
        s_epoch = a.state->epoch[blockIdx.x] + 1;
    }
    __syncthreads();
    *epoch = s_epoch;
    return !s_aborted;
}

__device__ __forceinline__ void p2p_end_call(const p2p_launch_t &a, uint32_t epoch)
{
    if (threadIdx.x == 0)
        a.state->epoch[blockIdx.x] = epoch;
}

// Cross-rank barrier of block b with block b of every rank, for one phase.
// Ordering: __syncthreads() orders every write of this CTA (local staging, or
// posted writes into peers) before thread p's st.release.sys of the flag in peer p;
// peer p's thread that reads the flag with ld.acquire.sys, followed by its
// __syncthreads(), makes those writes visible to all of its CTA.
__device__ __forceinline__ bool p2p_block_barrier(const p2p_launch_t &a, int phase, uint32_t epoch)
{
    __syncthreads();
    const int p = threadIdx.x;
    if (p < a.nranks && p != a.rank && !a.hang)
        p2p_st_release_sys(p2p_flag_at(a.flags[p], phase, blockIdx.x, a.rank), epoch);
    bool ok = true;
    if (p < a.nranks && p != a.rank)
        ok = p2p_wait_flag(p2p_flag_at(a.flags[a.rank], phase, blockIdx.x, p), epoch, a.state, p, a.timeout_ns);
    return __syncthreads_and(ok);
}

#endif
