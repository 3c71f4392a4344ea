/* SPDX-License-Identifier: MIT */
/* The modeled plugin's kernels: a %globaltimer (or calibrated clock64) spin, and the probe
 * that measures the timer's resolution on this GPU. */
#include <cuda_runtime.h>

#include "modeled_spin.h"

#define SPIN_CAP_NS 10000000000ull /* 10 s: a latency table never asks for more */

static __device__ __forceinline__ unsigned long long globaltimer(void)
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* out[0]: smallest nonzero step of %globaltimer over 512 steps (ns; ~0 if it never moved);
 * out[1], out[2]: clock64 cycles and globaltimer ns over >= 200 us. Both loops also stop
 * after 2^32 cycles (~2 s), so a timer that does not advance cannot hang the GPU. */
#define PROBE_CYCLE_LIMIT (1ll << 32)
__global__ void modeled_probe_kernel(unsigned long long *out)
{
    unsigned long long prev = globaltimer(), best = ~0ull;
    long long start = clock64();
    for (int steps = 0; steps < 512 && clock64() - start < PROBE_CYCLE_LIMIT;) {
        unsigned long long now = globaltimer();
        if (now != prev) {
            if (now - prev < best)
                best = now - prev;
            prev = now;
            steps++;
        }
    }
    unsigned long long g0 = globaltimer();
    long long c0 = clock64();
    while (globaltimer() - g0 < 200000ull && clock64() - c0 < PROBE_CYCLE_LIMIT) {
    }
    out[0] = best;
    out[1] = (unsigned long long)(clock64() - c0);
    out[2] = globaltimer() - g0;
}

/* Holds the stream for ns nanoseconds. Each loop has the other clock as its guard: the
 * clock64 spin stops 1 ms of %globaltimer late at most, the %globaltimer spin after 4x the
 * expected cycles plus 2^20 (a stalled timer cannot hang the GPU). */
__global__ void modeled_spin_kernel(unsigned long long ns, int use_clock, double cycles_per_ns)
{
    unsigned long long g0 = globaltimer();
    long long c0 = clock64(), cycles = (long long)(ns * cycles_per_ns);
    if (use_clock) {
        while (clock64() - c0 < cycles)
            if (globaltimer() - g0 > ns + 1000000ull)
                break;
        return;
    }
    while (globaltimer() - g0 < ns)
        if (clock64() - c0 > 4 * cycles + (1ll << 20))
            break;
}

extern "C" int modeled_timer_probe(modeled_timer_t *t)
{
    unsigned long long *d = NULL, h[3] = {0, 0, 0};
    cudaError_t e = cudaMalloc(&d, sizeof h);
    if (e != cudaSuccess)
        return (int)e;
    modeled_probe_kernel<<<1, 1>>>(d);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
    cudaFree(d);
    if (e != cudaSuccess)
        return (int)e;
    if (h[0] == ~0ull || h[2] == 0)
        return (int)cudaErrorNotSupported; /* %globaltimer did not advance */
    t->resolution_ns = (double)h[0];
    t->cycles_per_ns = (double)h[1] / (double)h[2];
    /* A step above 100 ns could cost more than half the 0.2 us target: count cycles instead. */
    t->use_clock = t->resolution_ns > 100.0 && t->cycles_per_ns > 0;
    return 0;
}

extern "C" int modeled_spin_launch(unsigned long long ns, const modeled_timer_t *t, void *stream)
{
    if (ns > SPIN_CAP_NS)
        ns = SPIN_CAP_NS;
    modeled_spin_kernel<<<1, 1, 0, (cudaStream_t)stream>>>(ns, t->use_clock, t->cycles_per_ns);
    return (int)cudaGetLastError();
}

extern "C" const char *modeled_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}
