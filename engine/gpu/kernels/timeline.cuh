// SPDX-License-Identifier: MIT
// The step's timeline (a build with `-Dengine_timeline=true`, which defines ARB_TIMELINE=1;
// in any other build every macro below is empty and the kernels are unchanged): each CTA of
// an instrumented kernel records, from its thread 0, its start, the return of its PDL wait
// and its end, each on the device's global timer (%globaltimer, ns, one clock for all SMs)
// and on its SM's cycle counter (clock64: finer, one per SM; ci/timeline.py maps it onto the
// global timer per SM), with the kernel's tag, its ordinal among that tag's CTAs (a counter per
// tag; the host turns it into the launch's number: arb_tl_number_launches), its grid's size,
// its block index and SM.
//   ARB_TL(tag)     first statement of a kernel: the start now, the end when thread 0 leaves
//   pdl_wait()      (common.cuh) the wait's return (its last, where a kernel waits more than
//                   once: the persistent form), where a scope set the CTA's slot
//   ARB_TL_MARK(k)  a place inside a kernel (k = 1, 2, ..): where the recording's mark is k
//                   (ARB_TL_MARK=k in the environment: gpu_timeline.cu), it stamps the CTA's
//                   `wait` instead, so end minus `wait` times what follows it (a diagnostic)
//   ARB_TL_TU(name) once at the end of each .cu with instrumented kernels: the host's
//                   setter of that file's buffer (a __constant__ is per file without -rdc);
//                   timeline.cu's tl_attach calls every file's (ARB_TL_FILES)
// The host side: gpu_model.h's arb_gpu_timeline_begin / _end. A new kernel that may wait needs
// its ARB_TL, its file's ARB_TL_TU and a place in ARB_TL_FILES: `timeline kernels` (tests/ci)
// fails without them.
#ifndef ARB_ENGINE_KERNELS_TIMELINE_CUH
#define ARB_ENGINE_KERNELS_TIMELINE_CUH

#include <cstdint>

#include <cuda_runtime.h>

#include "gpu/kernels/timeline.h"

#ifndef ARB_TIMELINE
#define ARB_TIMELINE 0
#endif

namespace arbk {

// The device's global timer (ns, one clock for all SMs): the timeline's stamps, the persistent
// form's wait deadline (persist.cu), the tests' delays. In every build.
__device__ __forceinline__ uint64_t global_ns()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

#if ARB_TIMELINE

namespace {
__constant__ tl_buf c_tl; // this file's; zero (no buffer: nothing recorded) until tl_attach
}

__device__ __forceinline__ uint32_t tl_smid()
{
    uint32_t s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// The CTA's record index (thread 0's), ~0u where none: a block-scope variable of whichever
// kernel calls it.
__device__ __forceinline__ unsigned &tl_slot()
{
    __shared__ unsigned slot;
    return slot;
}

__device__ __forceinline__ void tl_stamp(uint64_t &g, uint64_t &c)
{
    c = (uint64_t)clock64();
    g = global_ns();
}

struct tl_scope {
    unsigned slot = ~0u;
    __device__ __forceinline__ explicit tl_scope(unsigned tag)
    {
        if (threadIdx.x + threadIdx.y + threadIdx.z != 0)
            return;
        if (c_tl.rec) {
            uint64_t g, c;
            tl_stamp(g, c);
            const unsigned s = atomicAdd(c_tl.count, 1u);
            if (s < c_tl.cap) {
                const unsigned nb = gridDim.x * gridDim.y * gridDim.z;
                tl_rec &r = c_tl.rec[s];
                r.tag = tag;
                r.launch = atomicAdd(c_tl.per_tag + tag, 1u); // the ordinal: numbered on the host
                r.grid = nb;
                r.block = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
                r.sm = tl_smid();
                r.g0 = g, r.c0 = c, r.gw = 0, r.cw = 0;
                slot = s;
            }
        }
        tl_slot() = slot;
    }
    __device__ __forceinline__ ~tl_scope()
    {
        if (slot == ~0u)
            return;
        uint64_t g, c;
        tl_stamp(g, c);
        c_tl.rec[slot].g1 = g, c_tl.rec[slot].c1 = c;
    }
};

// After the PDL wait: its return, by thread 0 of a CTA whose scope holds a slot.
__device__ __forceinline__ void tl_waited()
{
    if (threadIdx.x + threadIdx.y + threadIdx.z != 0)
        return;
    const unsigned s = tl_slot();
    if (s == ~0u || !c_tl.rec)
        return;
    uint64_t g, c;
    tl_stamp(g, c);
    c_tl.rec[s].gw = g, c_tl.rec[s].cw = c;
}

#define ARB_TL(tag) const ::arbk::tl_scope arb_tl_scope_((unsigned)(tag))
#define ARB_TL_MARK(k)                                                                                                 \
    do {                                                                                                               \
        if (c_tl.mark == (unsigned)(k))                                                                                \
            ::arbk::tl_waited();                                                                                       \
    } while (0)
#define ARB_TL_TU(name)                                                                                                \
    cudaError_t tl_attach_##name(const tl_buf &b) { return cudaMemcpyToSymbol(c_tl, &b, sizeof b); }

#else

__device__ __forceinline__ void tl_waited() {}
#define ARB_TL(tag) ((void)0)
#define ARB_TL_MARK(k) ((void)0)
#define ARB_TL_TU(name)

#endif

} // namespace arbk

#endif
