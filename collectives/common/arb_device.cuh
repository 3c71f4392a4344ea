// SPDX-License-Identifier: MIT
// Device helpers shared by the plugins' kernels (header only, C++17):
//   - %globaltimer and the bounded spin (arb_spin_until for one word or line,
//     arb_spin_clock for loops that poll several lines per pass) with its error
//     record (arb_spin.h);
//   - programmatic dependent launch on the kernel side (arb_pdl_enter);
//   - LL lines: 16-byte {d0, epoch, d1, epoch} stores and polls;
//   - vector traits: 16-byte vectors of bf16 or fp32 accumulated in fp32;
//   - bf16 units (E elements moved as one 8- or 16-byte access) and the row RMSNorm
//     epilogue (residual add, warp sum, 1/rms, out) in the formula of src/rmsnorm/rmsnorm.cu.
// Every function is __forceinline__: a kernel that calls them compiles to the code it
// had with private copies.
#ifndef ARB_COMMON_DEVICE_CUH
#define ARB_COMMON_DEVICE_CUH

#include <stddef.h>
#include <stdint.h>

#include <cuda/atomic>
#include <cuda_bf16.h>

#include "arb_spin.h"

// ---- programmatic dependent launch ----

// A kernel's first step when it may be launched with programmatic stream serialization
// (arb_launch.cuh's pdl; both instructions are no-ops without the attribute): wait until the
// previous kernel on the stream completed and its memory is visible, before any load, then
// let the next launch begin (it waits the same way for this kernel). Wait first, then
// trigger: the other order was slower for p2p's fused op in the engine
// (results/engine-h200/6a5c641-p2p-pdl/).
__device__ __forceinline__ void arb_pdl_enter()
{
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// ---- time and bounded spins ----

// Nanoseconds of the GPU's global timer (the same clock on every SM).
__device__ __forceinline__ unsigned long long arb_globaltimer_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// True once a spin of this rank gave up (this kernel or an earlier one): stop waiting.
// A relaxed device-scope load: the flag only ever goes 0 -> 1 and carries no data.
__device__ __forceinline__ bool arb_spin_failed(arb_spin_error_t *e)
{
    return cuda::atomic_ref<uint32_t, cuda::thread_scope_device>(e->failed).load(cuda::memory_order_relaxed) != 0;
}

// Records the first failure of this rank; later ones keep the first record.
__device__ __forceinline__ void arb_spin_record(arb_spin_error_t *e, int peer, uint32_t what, uint32_t epoch)
{
    if (atomicCAS(&e->failed, 0u, 1u) == 0u) {
        e->cta = blockIdx.x;
        e->peer = (uint32_t)peer;
        e->what = what;
        e->epoch = epoch;
    }
}

// Polls ready() until it holds: true. False when this rank already gave up (checked
// every 256 polls) or after timeout_ns (then the failure is recorded: peer, what, epoch).
template <typename Ready>
__device__ __forceinline__ bool arb_spin_until(Ready ready, arb_spin_error_t *err, int peer, uint32_t what,
                                               uint32_t epoch, unsigned long long timeout_ns)
{
    if (ready())
        return true;
    const unsigned long long t0 = arb_globaltimer_ns();
    for (unsigned spin = 1;; spin++) {
        if (ready())
            return true;
        if ((spin & 255u) == 0 && arb_spin_failed(err))
            return false;
        if (arb_globaltimer_ns() - t0 > timeout_ns) {
            arb_spin_record(err, peer, what, epoch);
            return false;
        }
    }
}

// The clock of a poll loop that re-reads several lines per pass: call give_up() after
// every pass that left something pending. The first call starts the clock; later ones
// stop the wait when this rank already gave up (every 256 passes) or after timeout_ns
// (recorded).
struct arb_spin_clock {
    bool timing = false;
    unsigned spin = 0;
    unsigned long long t0 = 0;
    __device__ __forceinline__ bool give_up(arb_spin_error_t *err, int peer, uint32_t what, uint32_t epoch,
                                            unsigned long long timeout_ns)
    {
        if (!timing) {
            t0 = arb_globaltimer_ns();
            timing = true;
        } else if ((++spin & 255u) == 0 && arb_spin_failed(err)) {
            return true;
        } else if (arb_globaltimer_ns() - t0 > timeout_ns) {
            arb_spin_record(err, peer, what, epoch);
            return true;
        }
        return false;
    }
};

// ---- LL lines ----
// A 16-byte line carries 8 payload bytes and the epoch twice: {d0, epoch, d1, epoch},
// written with ONE st.volatile.v4. Memory ordering: no flag, no fence. Each naturally
// aligned 8-byte half {d, epoch} lands in the peer's memory single-copy atomically
// (over NVLink and PCIe P2P; the property NCCL's LL protocol relies on), so a reader
// that sees the current epoch in both halves has this call's 8 payload bytes. The
// reader polls with ld.volatile (system scope, served from L2, not the SM's L1, which
// is not coherent with peer writes) and needs no acquire: it reads nothing else the
// writer published. Lines are never reset: windows start zeroed, the first epoch is
// 1 and epochs only grow, so a stale line carries an older epoch.

// With a "memory" clobber: the compiler keeps the thread's other accesses in order
// around it (the all-reduce kernels).
__device__ __forceinline__ void arb_st_line(uint4 *p, uint32_t d0, uint32_t d1, uint32_t epoch)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d0), "r"(epoch), "r"(d1),
                 "r"(epoch)
                 : "memory");
}

__device__ __forceinline__ uint4 arb_ld_line(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p)
                 : "memory");
    return v;
}

// Without a "memory" clobber: nothing else the thread does has to be ordered against
// a line (it validates itself), so the compiler may keep independent loads ahead of
// it (the fused register kernel: every load issued before the first wait).
__device__ __forceinline__ void arb_st_line_free(uint4 *p, uint2 d, uint32_t epoch)
{
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(d.x), "r"(epoch), "r"(d.y),
                 "r"(epoch));
}

__device__ __forceinline__ uint4 arb_ld_line_free(const uint4 *p)
{
    uint4 v;
    asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// True when line l carries `epoch` in both halves (its payload is {l.x, l.z}).
__device__ __forceinline__ bool arb_line_is(const uint4 &l, uint32_t epoch) { return l.y == epoch && l.w == epoch; }

// ---- vector traits: a 16-byte vector holds VEC elements, accumulated in fp32 ----
template <typename T> struct arb_vec_traits;
template <> struct arb_vec_traits<float> {
    static constexpr int VEC = 4;
    static __device__ __forceinline__ float to_f(float x) { return x; }
    static __device__ __forceinline__ float from_f(float x) { return x; }
    static __device__ __forceinline__ float get(const uint4 &v, int i) { return reinterpret_cast<const float *>(&v)[i]; }
    static __device__ __forceinline__ void put(uint4 &v, int i, float x) { reinterpret_cast<float *>(&v)[i] = x; }
    static __device__ __forceinline__ float load1(const void *p, size_t i) { return ((const float *)p)[i]; }
    static __device__ __forceinline__ void store1(void *p, size_t i, float x) { ((float *)p)[i] = x; }
};
template <> struct arb_vec_traits<__nv_bfloat16> {
    static constexpr int VEC = 8;
    static __device__ __forceinline__ float to_f(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 from_f(float x) { return __float2bfloat16_rn(x); }
    static __device__ __forceinline__ float get(const uint4 &v, int i)
    {
        return __bfloat162float(reinterpret_cast<const __nv_bfloat16 *>(&v)[i]);
    }
    static __device__ __forceinline__ void put(uint4 &v, int i, float x)
    {
        reinterpret_cast<__nv_bfloat16 *>(&v)[i] = __float2bfloat16_rn(x);
    }
    static __device__ __forceinline__ float load1(const void *p, size_t i)
    {
        return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    }
    static __device__ __forceinline__ void store1(void *p, size_t i, float x)
    {
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn(x);
    }
};

template <typename T> union arb_vec {
    uint4 u;
    T e[arb_vec_traits<T>::VEC];
};

// Loads from memory another GPU writes (or from a peer's window): .cg keeps it out of
// this SM's L1, which is not coherent with peer writes across kernels.
__device__ __forceinline__ uint4 arb_ld_cg(const uint4 *p) { return __ldcg(p); }

// ---- bf16 units: E elements (4: the 8 payload bytes of a line; 8: a 16-byte vector) ----
template <int E> struct arb_unit_bits;
template <> struct arb_unit_bits<4> {
    using type = uint2;
};
template <> struct arb_unit_bits<8> {
    using type = uint4;
};

template <int E> union arb_unit {
    typename arb_unit_bits<E>::type u;
    __nv_bfloat16 e[E];
};

// Unit j (elements [jE, jE+E)) of a row of `hidden` elements; elements past the row
// read as zero and nothing past it is touched. WHOLE: hidden % E == 0 and the row is
// aligned to 2E bytes: one access.
template <int E, bool WHOLE>
__device__ __forceinline__ arb_unit<E> arb_load_unit(const __nv_bfloat16 *row, unsigned j, unsigned hidden)
{
    arb_unit<E> x;
    if constexpr (WHOLE) {
        x.u = *(const typename arb_unit_bits<E>::type *)(row + (size_t)j * E);
    } else {
#pragma unroll
        for (int k = 0; k < E; k++)
            x.e[k] = j * E + k < hidden ? row[(size_t)j * E + k] : __ushort_as_bfloat16(0);
    }
    return x;
}

template <int E, bool WHOLE>
__device__ __forceinline__ void arb_store_unit(__nv_bfloat16 *row, unsigned j, unsigned hidden, const arb_unit<E> &x)
{
    if constexpr (WHOLE) {
        *(typename arb_unit_bits<E>::type *)(row + (size_t)j * E) = x.u;
    } else {
#pragma unroll
        for (int k = 0; k < E; k++)
            if (j * E + k < hidden)
                row[(size_t)j * E + k] = x.e[k];
    }
}

// The same, with whole decided at run time (one kernel for any row shape; p2p's
// general fused kernel). Kept apart from the WHOLE template above: each compiles to
// the code its kernel was measured with.
template <int E>
__device__ __forceinline__ arb_unit<E> arb_load_unit(const __nv_bfloat16 *row, unsigned j, unsigned hidden, bool whole)
{
    arb_unit<E> x;
    const unsigned first = j * E;
    if (whole) {
        x.u = *(const typename arb_unit_bits<E>::type *)(row + first);
    } else {
#pragma unroll
        for (int k = 0; k < E; k++)
            x.e[k] = first + k < hidden ? row[first + k] : __ushort_as_bfloat16(0);
    }
    return x;
}

template <int E>
__device__ __forceinline__ void arb_store_unit(__nv_bfloat16 *row, unsigned j, unsigned hidden, bool whole,
                                               const arb_unit<E> &x)
{
    const unsigned first = j * E;
    if (whole) {
        *(typename arb_unit_bits<E>::type *)(row + first) = x.u;
    } else {
#pragma unroll
        for (int k = 0; k < E; k++)
            if (first + k < hidden)
                row[first + k] = x.e[k];
    }
}

// ---- the row RMSNorm epilogue ----
constexpr int kArbWarp = 32;

// xor butterfly: the same additions in the same order in every warp and on every rank,
// and every lane ends with the same bits.
__device__ __forceinline__ float arb_warp_sum(float v)
{
    for (int o = kArbWarp / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

// residual = bf16(residual + acc), in place; returns the sum of the squares of the
// stored values (the norm uses the residual as stored).
template <int E> __device__ __forceinline__ float arb_residual_add(arb_unit<E> &res, const float *acc)
{
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < E; k++) {
        res.e[k] = __float2bfloat16_rn(__bfloat162float(res.e[k]) + acc[k]);
        const float f = __bfloat162float(res.e[k]);
        s += f * f;
    }
    return s;
}

// 1 / rms of a row from the sum of the squares of its `hidden` stored values.
__device__ __forceinline__ float arb_rms_inv(float sumsq, unsigned hidden, float eps)
{
    return rsqrtf(sumsq / (float)hidden + eps);
}

// out = bf16(residual * inv_rms * weight), the formula and order of src/rmsnorm/rmsnorm.cu.
template <int E>
__device__ __forceinline__ arb_unit<E> arb_rms_out(const arb_unit<E> &r, const arb_unit<E> &w, float inv_rms)
{
    arb_unit<E> o;
#pragma unroll
    for (int k = 0; k < E; k++)
        o.e[k] = __float2bfloat16_rn(__bfloat162float(r.e[k]) * inv_rms * __bfloat162float(w.e[k]));
    return o;
}

#endif
