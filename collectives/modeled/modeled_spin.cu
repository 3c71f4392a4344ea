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

/* out[0]: smallest nonzero step of %globaltimer over 512 steps (ns);
 * out[1], out[2]: clock64 cycles and globaltimer ns over >= 200 us. */
__global__ void modeled_probe_kernel(unsigned long long *out)
{
    unsigned long long prev = globaltimer(), best = ~0ull;
    for (int steps = 0; steps < 512;) {
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
    while (globaltimer() - g0 < 200000ull) {
    }
    out[0] = best;
    out[1] = (unsigned long long)(clock64() - c0);
    out[2] = globaltimer() - g0;
}

__global__ void modeled_spin_kernel(unsigned long long ns, int use_clock, double cycles_per_ns)
{
    unsigned long long g0 = globaltimer();
    if (use_clock) {
        long long c0 = clock64(), cycles = (long long)(ns * cycles_per_ns);
        while (clock64() - c0 < cycles)
            if (globaltimer() - g0 > ns + 1000000ull) /* the clock slowed down: stop 1 ms late at most */
                break;
        return;
    }
    while (globaltimer() - g0 < ns) {
    }
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
    t->resolution_ns = (double)h[0];
    t->cycles_per_ns = h[2] ? (double)h[1] / (double)h[2] : 0;
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
