// SPDX-License-Identifier: MIT
// The CUDA runner: device buffers from the instance, the call on one slot, the bounded
// stream wait, and the dispatch to the timing modes (gpu_timing.cu).
#include "sweep/runner_gpu.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "arbench/status.h"
#include "base/common.h"

arb_status_t arb_gpu_call(arb_runner_t *r, const arb_point_t *pt, unsigned k)
{
    size_t off = gpu_slot(r, k);
    char *cw = r->call_why;
    const size_t cwl = sizeof r->call_why;
    cw[0] = '\0';
    if (pt->op == ARB_OP_ALLREDUCE)
        return arb_inst_allreduce(r->inst, r->b.send + off, r->b.recv + off, pt->count, pt->dtype, r->stream, cw, cwl);
    arb_rmsnorm_args_t a = {r->b.x + off, r->b.res + off, r->b.weight, r->b.out + off, pt->tokens, pt->hidden, pt->eps};
    return arb_inst_allreduce_rmsnorm(r->inst, &a, pt->fusion, r->stream, NULL, cw, cwl);
}

void arb_gpu_call_failed(arb_runner_t *r, arb_status_t st, char *why, size_t why_len)
{
    if (why[0])
        return;
    if (st == ARB_DECLINE)
        snprintf(why, why_len, "%s", r->call_why[0] ? r->call_why : "the plugin declined this call without a reason");
    else
        snprintf(why, why_len, "the collective call failed: %s: %s", arb_status_str(st), r->call_why);
}

static double sync_timeout_s(void)
{
    const char *e = getenv("ARBENCH_SYNC_TIMEOUT_S");
    double t = e ? atof(e) : 0;
    return t > 0 ? t : 60.0;
}

// A collective that never finishes is reported (the GPU context is then unusable and
// the caller aborts the job) instead of hanging the sweep.
arb_status_t arb_gpu_sync(arb_runner_t *r, char *why, size_t why_len)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double limit = sync_timeout_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(r->stream);
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "stream failed: %s", cudaGetErrorString(e));
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > limit)
            ARB_RAISE(ARB_ERR_TIMEOUT, why, why_len, "the GPU stream did not finish within %.0f s: a collective is hung (ARBENCH_SYNC_TIMEOUT_S sets the limit)", limit);
        usleep(20);
    }
    return arb_inst_query_error(r->inst, why, why_len);
}

/* ------------------------------------------------------------------ create / destroy */

static void gpu_destroy(arb_runner_t *r)
{
    if (!r)
        return;
    if (r->stream)
        cudaStreamSynchronize(r->stream);
    arb_runner_bufs_free(r->inst, &r->b); /* collective: mem_free may be */
    cudaFree(r->d_wrong);
    for (size_t i = 0; i < r->nev; i++)
        cudaEventDestroy(r->ev[i]);
    free(r->ev);
    free(r->samples);
    free(r->h_buf);
    if (r->stream)
        cudaStreamDestroy(r->stream);
    free(r);
}

static arb_status_t gpu_create(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_t **out,
                               char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    arb_runner_t *r = (arb_runner_t *)calloc(1, sizeof *r);
    if (!r)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the GPU runner");
    r->inst = inst;
    r->info = arb_inst_info(inst);
    int dev = 0;
    ARB_CUDA_GOTO(st, cudaGetDevice(&dev), err_destroy, why, why_len);
    ARB_CUDA_GOTO(st, cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, dev), err_destroy, why, why_len);
    ARB_CUDA_GOTO(st, cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), err_destroy, why, why_len);
    ARB_CUDA_GOTO(st, cudaMalloc(&r->d_wrong, sizeof *r->d_wrong), err_destroy, why, why_len);
    ARB_TRY_GOTO(st, arb_runner_bufs_alloc(inst, plan, max_bytes, &r->b, why, why_len), err_destroy);
    *out = r;
    return ARB_OK;

err_destroy:
    gpu_destroy(r);
    return st;
}

/* ------------------------------------------------------------------ run */

static arb_status_t gpu_run(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o)
{
    char *why = o->why;
    size_t why_len = sizeof o->why;
    why[0] = '\0';
    /* Floors (noop, ping) move no payload: timed, never checked. */
    arb_point_t q = *pt;
    q.check = pt->check && !(arb_inst_caps(r->inst) & ARB_CAP_REFERENCE);
    o->status = pt->mode == ARB_MODE_EAGER ? arb_gpu_run_eager(r, &q, o, why, why_len)
                                           : arb_gpu_run_graph(r, &q, o, why, why_len);
    if (o->status == ARB_OK) {
        for (size_t i = 0; i < o->nsamples; i++)
            if (!isfinite(o->samples[i])) {
                snprintf(why, why_len, "a CUDA event time could not be read");
                o->status = ARB_ERR_SYSTEM;
            }
    }
    if (o->status != ARB_OK) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess && !why[0])
            snprintf(why, why_len, "CUDA error: %s", cudaGetErrorString(e));
        /* A stream that never finished, or a sticky error, leaves the context unusable. */
        if (cudaStreamQuery(r->stream) == cudaErrorNotReady || cudaDeviceSynchronize() != cudaSuccess)
            o->fatal = 1;
    }
    return o->status;
}

const arb_runner_ops_t arb_runner_gpu = {
    "cuda",
    gpu_create,
    gpu_run,
    gpu_destroy,
};
