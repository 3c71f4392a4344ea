// SPDX-License-Identifier: MIT
// engine_chain_bench's waits (engine_chain_modes.cuh says which mode uses which): every
// spin-wait of the bench has one deadline loop (wait_until), on a counter or flag in global
// memory (poll_at_least) or on a p-stream ring slot's mbarrier (mbar_wait), and the ring's bulk
// copies (stream_issue: cp.async.bulk completing on an mbarrier; SM90 and later, SM120
// included).
#ifndef ARB_TESTS_ENGINE_CHAIN_SYNC_CUH
#define ARB_TESTS_ENGINE_CHAIN_SYNC_CUH

#include <cstdint>
#include <cuda_runtime.h>

namespace {

constexpr unsigned long long kTimeoutNs = 2000000000ull;
// The error word: a launch-mode kernel's wait k (k < 4096), a persistent stage's wait on the
// previous stage kErrStage + k, a p-stream slot's wait for stage k's weights kErrSlot + k.
constexpr int kErrStage = 10000, kErrSlot = 20000;

__device__ __forceinline__ unsigned ld_acquire(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned ld_relaxed(const unsigned *p)
{
    unsigned v;
    asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ unsigned long long globaltimer()
{
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
}

// Spins until ready() (tried first, so a wait already over reads no timer); false once the
// deadline passed (the error word then holds `code`, if it held nothing) or, with OTHERS, once
// another wait already gave up (a persistent launch: no block may spin on a stage that will
// never complete). sleep_ns: a back-off between tries.
template <bool OTHERS, class Ready>
__device__ __forceinline__ bool wait_until(Ready ready, int *err, int code, int sleep_ns)
{
    unsigned long long t0 = 0;
    for (unsigned it = 0; !ready(); it++) {
        const unsigned long long now = globaltimer();
        if (it == 0)
            t0 = now;
        else if (now - t0 > kTimeoutNs || (OTHERS && *reinterpret_cast<volatile int *>(err))) {
            atomicCAS(err, 0, code);
            return false;
        }
        if (sleep_ns)
            __nanosleep(sleep_ns);
    }
    return true;
}

// Polls `word` (ld.acquire; relaxed: ld.relaxed, which orders nothing after it: engine_chain_bench's
// --poll relaxed, a measurement, not a synchronization) until it holds at least `want`.
template <bool OTHERS> __device__ __forceinline__ bool poll_at_least(const unsigned *word, unsigned want, int *err,
                                                                     int code, int sleep_ns, bool relaxed = false)
{
    return wait_until<OTHERS>([&] { return (relaxed ? ld_relaxed(word) : ld_acquire(word)) >= want; }, err, code,
                              sleep_ns);
}

// p-stream's ring: an mbarrier a slot, completed by the bulk copy's bytes (the TMA's async proxy).
__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(unsigned long long *bar)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)) : "memory");
}

// Slot `bar`'s next phase: this thread's arrival, expecting `bytes` from the copy (none: W = 0,
// the phase completes at once), then the copy of stage weights src into dst.
__device__ __forceinline__ void stream_issue(void *dst, const void *src, unsigned bytes, unsigned long long *bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
    if (bytes)
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                         smem_addr(dst)),
                     "l"(src), "r"(bytes), "r"(smem_addr(bar))
                     : "memory");
}

// Waits for the phase of parity `parity` of slot `bar` to complete.
template <bool OTHERS>
__device__ __forceinline__ bool mbar_wait(unsigned long long *bar, unsigned parity, int *err, int code)
{
    return wait_until<OTHERS>(
        [&] {
            unsigned done;
            asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                         : "=r"(done)
                         : "r"(smem_addr(bar)), "r"(parity)
                         : "memory");
            return done != 0;
        },
        err, code, 0);
}

} // namespace

#endif
