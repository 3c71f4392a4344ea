// SPDX-License-Identifier: MIT
// The CUDA runner's timing modes: eager (events around each call, back to back), graph
// (K calls per graph, replayed) and context (each call after a compute kernel, the
// compute-only graph's time subtracted). Each checks first when the point asks.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "arbench/status.h"
#include "base/common.h"
#include "sweep/runner_gpu.h"

/* The stand-in for a model's compute in context mode: every SM busy for `ns`. */
__global__ void k_spin(long long ns)
{
    long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    long long now = start;
    while (now - start < ns)
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

/* Captures `ncalls` calls (slot k % ARB_ROT), each preceded by the spin kernel when
 * spin_ns > 0; with with_calls == 0 only the spin kernels (context mode's baseline). */
static arb_status_t capture(arb_runner_t *r, const arb_point_t *pt, unsigned ncalls, int with_calls, long long spin_ns,
                            cudaGraphExec_t *exec, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK, cs = ARB_OK;
    cudaGraph_t g = NULL;
    ARB_CUDA_GOTO(st, cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeThreadLocal), out, why, why_len);
    for (unsigned k = 0; k < ncalls && cs == ARB_OK; k++) {
        if (spin_ns > 0)
            k_spin<<<r->sm_count, 128, 0, r->stream>>>(spin_ns);
        if (with_calls)
            cs = arb_gpu_call(r, pt, k % ARB_ROT);
    }
    {
        cudaError_t e = cudaStreamEndCapture(r->stream, &g);
        if (cs == ARB_DECLINE)
            ARB_RAISE_GOTO(st, cs, out, why, why_len, "%s", r->call_why[0] ? r->call_why : "the plugin declined this call without a reason");
        if (cs != ARB_OK)
            ARB_RAISE_GOTO(st, cs, out, why, why_len, "the collective failed while being captured into a CUDA graph: %s: %s", arb_status_str(cs), r->call_why);
        if (e != cudaSuccess)
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, why_len, "CUDA graph capture failed: %s", cudaGetErrorString(e));
    }
    ARB_CUDA_GOTO(st, cudaGraphInstantiate(exec, g, 0), out, why, why_len);
out:
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError(); /* a failed capture leaves a non-sticky error behind */
    return st;
}

static arb_status_t ensure_events(arb_runner_t *r, size_t n, char *why, size_t why_len)
{
    if (r->nev >= n)
        return ARB_OK;
    cudaEvent_t *ev = (cudaEvent_t *)realloc(r->ev, n * sizeof *ev);
    if (!ev)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for %zu CUDA events", n);
    r->ev = ev;
    while (r->nev < n) {
        ARB_CUDA_TRY(cudaEventCreate(&r->ev[r->nev]), why, why_len);
        r->nev++;
    }
    return ARB_OK;
}

static arb_status_t ensure_samples(arb_runner_t *r, size_t n, char *why, size_t why_len)
{
    if (r->cap_samples >= n)
        return ARB_OK;
    free(r->samples);
    r->samples = (double *)malloc(n * sizeof(double));
    r->cap_samples = r->samples ? n : 0;
    if (!r->samples)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for %zu samples", n);
    return ARB_OK;
}

static float elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = NAN;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
        return NAN;
    return ms;
}

arb_status_t arb_gpu_run_eager(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    if (pt->check) {
        ARB_TRY_GOTO(st, arb_gpu_check_prep(r, pt, 2, why, why_len), out);
        for (unsigned k = 0; k < 2; k++)
            ARB_TRY_GOTO(st, arb_gpu_call(r, pt, k), call_failed);
        ARB_TRY_GOTO(st, arb_gpu_sync(r, why, why_len), out);
        ARB_TRY_GOTO(st, arb_gpu_check_verify(r, pt, 2, o, why, why_len), out);
    }
    ARB_TRY_GOTO(st, ensure_events(r, 2 * (size_t)pt->iters, why, why_len), out);
    ARB_TRY_GOTO(st, ensure_samples(r, pt->iters, why, why_len), out);
    for (unsigned i = 0; i < pt->warmup; i++)
        ARB_TRY_GOTO(st, arb_gpu_call(r, pt, i % ARB_ROT), call_failed);
    for (unsigned i = 0; i < pt->iters; i++) {
        ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[2 * i], r->stream), out, why, why_len);
        ARB_TRY_GOTO(st, arb_gpu_call(r, pt, i % ARB_ROT), call_failed);
        ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[2 * i + 1], r->stream), out, why, why_len);
    }
    ARB_TRY_GOTO(st, arb_gpu_sync(r, why, why_len), out);
    for (unsigned i = 0; i < pt->iters; i++)
        r->samples[i] = 1e3 * (double)elapsed_ms(r->ev[2 * i], r->ev[2 * i + 1]);
    o->samples = r->samples;
    o->nsamples = pt->iters;
    snprintf(o->timing, sizeof o->timing, "events_per_call");
    return ARB_OK;
call_failed:
    arb_gpu_call_failed(r, st, why, why_len);
out:
    return st;
}

arb_status_t arb_gpu_run_graph(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    int context = pt->mode == ARB_MODE_CONTEXT;
    long long spin_ns = context ? (long long)(pt->context_us * 1e3) : 0;
    cudaGraphExec_t check_g = NULL, timed_g = NULL, base_g = NULL;
    unsigned K = pt->graph_ops, R = pt->graph_replays;

    if (pt->check) { /* one call per slot, replayed twice: graph safety and epoch advance */
        ARB_TRY_GOTO(st, capture(r, pt, ARB_ROT, 1, spin_ns, &check_g, why, why_len), out);
        for (int rep = 0; rep < 2; rep++) {
            ARB_TRY_GOTO(st, arb_gpu_check_prep(r, pt, ARB_ROT, why, why_len), out);
            ARB_CUDA_GOTO(st, cudaGraphLaunch(check_g, r->stream), out, why, why_len);
            ARB_TRY_GOTO(st, arb_gpu_sync(r, why, why_len), out);
            ARB_TRY_GOTO(st, arb_gpu_check_verify(r, pt, ARB_ROT, o, why, why_len), out);
        }
    }
    ARB_TRY_GOTO(st, capture(r, pt, K, 1, spin_ns, &timed_g, why, why_len), out);
    if (context)
        ARB_TRY_GOTO(st, capture(r, pt, K, 0, spin_ns, &base_g, why, why_len), out);
    ARB_TRY_GOTO(st, ensure_events(r, 4 * (size_t)R, why, why_len), out);
    ARB_TRY_GOTO(st, ensure_samples(r, R, why, why_len), out);
    {
        unsigned warm = (pt->warmup + K - 1) / K;
        if (warm < 2)
            warm = 2;
        for (unsigned i = 0; i < warm; i++) {
            ARB_CUDA_GOTO(st, cudaGraphLaunch(timed_g, r->stream), out, why, why_len);
            if (base_g)
                ARB_CUDA_GOTO(st, cudaGraphLaunch(base_g, r->stream), out, why, why_len);
        }
    }
    for (unsigned i = 0; i < R; i++) { /* alternate so drift hits both graphs alike */
        ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[4 * i], r->stream), out, why, why_len);
        ARB_CUDA_GOTO(st, cudaGraphLaunch(timed_g, r->stream), out, why, why_len);
        ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[4 * i + 1], r->stream), out, why, why_len);
        if (base_g) {
            ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[4 * i + 2], r->stream), out, why, why_len);
            ARB_CUDA_GOTO(st, cudaGraphLaunch(base_g, r->stream), out, why, why_len);
            ARB_CUDA_GOTO(st, cudaEventRecord(r->ev[4 * i + 3], r->stream), out, why, why_len);
        }
    }
    ARB_TRY_GOTO(st, arb_gpu_sync(r, why, why_len), out);
    for (unsigned i = 0; i < R; i++) {
        double t = 1e3 * (double)elapsed_ms(r->ev[4 * i], r->ev[4 * i + 1]);
        if (base_g)
            t -= 1e3 * (double)elapsed_ms(r->ev[4 * i + 2], r->ev[4 * i + 3]);
        r->samples[i] = t / K;
    }
    o->samples = r->samples;
    o->nsamples = R;
    if (context)
        snprintf(o->timing, sizeof o->timing, "ops_per_graph=%u,replays=%u,compute_us=%g,compute_subtracted", K, R, pt->context_us);
    else
        snprintf(o->timing, sizeof o->timing, "ops_per_graph=%u,replays=%u", K, R);
out:
    if (check_g)
        cudaGraphExecDestroy(check_g);
    if (timed_g)
        cudaGraphExecDestroy(timed_g);
    if (base_g)
        cudaGraphExecDestroy(base_g);
    return st;
}
