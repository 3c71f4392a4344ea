// SPDX-License-Identifier: MIT
// The CUDA runner: device buffers, exact checks on the GPU, and the three timing
// modes (eager events, graph replay, in-context graph with compute subtracted).
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "rmsnorm.h"
#include "runner.h"

#define ROT 4u /* buffer slots the calls rotate through */

#define CU(call, label)                                                                  \
    do {                                                                                 \
        cudaError_t e_ = (call);                                                         \
        if (e_ != cudaSuccess) {                                                         \
            arb_snprintf(why, why_len, "%s failed: %s (%s:%d)", #call, cudaGetErrorString(e_), \
                         __FILE__, __LINE__);                                            \
            st = ARB_ERR_SYSTEM;                                                         \
            goto label;                                                                  \
        }                                                                                \
    } while (0)

struct arb_runner {
    arb_instance_t inst;
    int sm_count;
    cudaStream_t stream;
    int fused_capable;
    size_t stride;           /* bytes between slots of send/recv (and x/res/out/tmp) */
    unsigned char *send, *recv;
    unsigned char *x, *res, *out, *tmp, *weight; /* fused op; NULL for allreduce */
    unsigned long long *d_wrong;
    cudaEvent_t *ev;
    size_t nev;
    double *samples;
    size_t cap_samples;
    uint16_t *h_buf;         /* host scratch for the fused check */
    size_t h_cap;
    char call_why[512];      /* the reason the last plugin call gave for not returning ARB_OK */
};

/* ------------------------------------------------------------------ kernels */

__device__ __forceinline__ int pattern_dev(size_t i, int rank, unsigned salt)
{
    return (int)((i * 7u + (size_t)rank * 13u + (size_t)salt * 5u) % 9u) - 4;
}

__global__ void k_fill(void *buf, size_t count, int fp32, int rank, unsigned salt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float v = (float)pattern_dev(i, rank, salt);
        if (fp32)
            ((float *)buf)[i] = v;
        else
            ((__nv_bfloat16 *)buf)[i] = __float2bfloat16(v);
    }
}

__global__ void k_poison(void *buf, size_t count, int fp32)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        if (fp32)
            ((uint32_t *)buf)[i] = 0x7fc00000u; /* quiet NaN */
        else
            ((uint16_t *)buf)[i] = 0x7fc0u;
    }
}

__global__ void k_verify(const void *buf, size_t count, int fp32, int nranks, unsigned salt,
                         unsigned long long *wrong)
{
    unsigned long long bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        int expect = 0;
        for (int r = 0; r < nranks; r++)
            expect += pattern_dev(i, r, salt);
        float got = fp32 ? ((const float *)buf)[i] : __bfloat162float(((const __nv_bfloat16 *)buf)[i]);
        if (!(got == (float)expect)) /* NaN never passes */
            bad++;
    }
    if (bad)
        atomicAdd(wrong, bad);
}

/* The stand-in for a model's compute in context mode: every SM busy for `ns`. */
__global__ void k_spin(long long ns)
{
    long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    long long now = start;
    while (now - start < ns)
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
}

/* ------------------------------------------------------------------ helpers */

static unsigned grid_for(size_t count) { return (unsigned)(count / 256 + 1 < 1024 ? count / 256 + 1 : 1024); }

static size_t slot_off(const arb_runner_t *r, unsigned k) { return (size_t)k * r->stride + 16u * (k % 4u); }

static double sync_timeout_s(void)
{
    const char *e = getenv("ARBENCH_SYNC_TIMEOUT_S");
    double t = e ? atof(e) : 0;
    return t > 0 ? t : 60.0;
}

/* Waits for the stream without hanging forever: a collective that never finishes is
 * reported (the GPU context is then unusable and the caller aborts the job). */
static arb_status_t sync_stream(arb_runner_t *r, char *why, size_t why_len)
{
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double limit = sync_timeout_s();
    for (;;) {
        cudaError_t e = cudaStreamQuery(r->stream);
        if (e == cudaSuccess)
            break;
        if (e != cudaErrorNotReady) {
            arb_snprintf(why, why_len, "stream failed: %s", cudaGetErrorString(e));
            return ARB_ERR_SYSTEM;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 > limit) {
            arb_snprintf(why, why_len, "the GPU stream did not finish within %.0f s: a collective is hung (ARBENCH_SYNC_TIMEOUT_S sets the limit)", limit);
            return ARB_ERR_TIMEOUT;
        }
        usleep(20);
    }
    if (r->inst.plugin->query_error) {
        arb_status_t s = r->inst.plugin->query_error(r->inst.state, why, why_len);
        if (s != ARB_OK)
            return s;
    }
    return ARB_OK;
}

static void *dev_alloc(arb_runner_t *r, size_t bytes)
{
    if (r->inst.plugin->mem_alloc)
        return r->inst.plugin->mem_alloc(r->inst.state, bytes);
    void *p = NULL;
    return cudaMalloc(&p, bytes) == cudaSuccess ? p : NULL;
}

static void dev_free(arb_runner_t *r, void *p)
{
    if (!p)
        return;
    if (r->inst.plugin->mem_alloc)
        r->inst.plugin->mem_free(r->inst.state, p);
    else
        cudaFree(p);
}

/* One collective call on slot k, enqueued on the runner's stream. */
static arb_status_t do_call(arb_runner_t *r, const arb_point_t *pt, unsigned k)
{
    const arb_plugin_t *p = r->inst.plugin;
    size_t off = slot_off(r, k);
    char *cw = r->call_why;
    const size_t cwl = sizeof r->call_why;
    cw[0] = '\0';
    if (pt->op == ARB_OP_ALLREDUCE)
        return p->allreduce(r->inst.state, r->send + off, r->recv + off, pt->count, pt->dtype, r->stream, cw, cwl);
    arb_rmsnorm_args_t a = {r->x + off, r->res + off, r->weight, r->out + off, pt->tokens, pt->hidden, pt->eps};
    if (pt->fused)
        return p->allreduce_rmsnorm(r->inst.state, &a, r->stream, cw, cwl);
    arb_status_t s = p->allreduce(r->inst.state, a.x, r->tmp + off, (size_t)pt->tokens * pt->hidden, ARB_DTYPE_BF16,
                                  r->stream, cw, cwl);
    if (s != ARB_OK)
        return s;
    return arb_rmsnorm_residual_launch(a.residual, r->tmp + off, a.weight, a.out, pt->tokens, pt->hidden, pt->eps, r->stream);
}

/* ------------------------------------------------------------------ create / destroy */

static void gpu_destroy(arb_runner_t *r)
{
    if (!r)
        return;
    cudaStreamSynchronize(r->stream);
    dev_free(r, r->send);
    dev_free(r, r->recv);
    dev_free(r, r->x);
    dev_free(r, r->res);
    dev_free(r, r->out);
    dev_free(r, r->tmp);
    dev_free(r, r->weight);
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

static arb_status_t gpu_create(const arb_instance_t *inst, const arb_plan_t *plan, size_t max_bytes,
                               arb_runner_t **out, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    if (!(inst->plugin->caps & ARB_CAP_DEVICE_MEMORY)) {
        arb_snprintf(why, why_len, "%s works on host memory; use the host runner", inst->plugin->name);
        return ARB_DECLINE;
    }
    arb_runner_t *r = (arb_runner_t *)calloc(1, sizeof *r);
    if (!r)
        return ARB_ERR_SYSTEM;
    r->inst = *inst;
    int dev = 0;
    CU(cudaGetDevice(&dev), err_free);
    CU(cudaDeviceGetAttribute(&r->sm_count, cudaDevAttrMultiProcessorCount, dev), err_free);
    CU(cudaStreamCreateWithFlags(&r->stream, cudaStreamNonBlocking), err_free);
    CU(cudaMalloc(&r->d_wrong, sizeof *r->d_wrong), err_free);
    r->stride = (max_bytes + 64 + 255) & ~(size_t)255;
    /* Every rank allocates the same sizes in the same order: mem_alloc may be collective. */
    if (plan->op == ARB_OP_ALLREDUCE) {
        r->send = (unsigned char *)dev_alloc(r, r->stride * ROT);
        r->recv = (unsigned char *)dev_alloc(r, r->stride * ROT);
        if (!r->send || !r->recv)
            goto err_alloc;
    } else {
        r->x = (unsigned char *)dev_alloc(r, r->stride * ROT);
        r->res = (unsigned char *)dev_alloc(r, r->stride * ROT);
        r->out = (unsigned char *)dev_alloc(r, r->stride * ROT);
        r->tmp = (unsigned char *)dev_alloc(r, r->stride * ROT);
        r->weight = (unsigned char *)dev_alloc(r, (size_t)plan->hidden * 2 + 256);
        if (!r->x || !r->res || !r->out || !r->tmp || !r->weight)
            goto err_alloc;
    }
    *out = r;
    return ARB_OK;

err_alloc:
    arb_snprintf(why, why_len, "cannot allocate %u x %zu bytes of device buffers%s", ROT, r->stride,
                 inst->plugin->mem_alloc ? " through the plugin's mem_alloc" : "");
    st = ARB_ERR_SYSTEM;
err_free:
    gpu_destroy(r);
    return st;
}

/* ------------------------------------------------------------------ checks */

/* allreduce: fill slots [0, nslots) with salts salt+k, poison recv. */
static arb_status_t prep_allreduce(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    int fp32 = pt->dtype == ARB_DTYPE_FP32;
    for (unsigned k = 0; k < nslots; k++) {
        k_fill<<<grid_for(pt->count), 256, 0, r->stream>>>(r->send + slot_off(r, k), pt->count, fp32, r->inst.info->rank, pt->salt + k);
        k_poison<<<grid_for(pt->count), 256, 0, r->stream>>>(r->recv + slot_off(r, k), pt->count, fp32);
    }
    CU(cudaGetLastError(), out);
    CU(cudaStreamSynchronize(r->stream), out);
out:
    return st;
}

static arb_status_t verify_allreduce(arb_runner_t *r, const arb_point_t *pt, unsigned nslots,
                                     unsigned long long *wrong, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    unsigned long long h = 0;
    CU(cudaMemsetAsync(r->d_wrong, 0, sizeof *r->d_wrong, r->stream), out);
    for (unsigned k = 0; k < nslots; k++)
        k_verify<<<grid_for(pt->count), 256, 0, r->stream>>>(r->recv + slot_off(r, k), pt->count,
                                                            pt->dtype == ARB_DTYPE_FP32, r->inst.info->nranks,
                                                            pt->salt + k, r->d_wrong);
    CU(cudaGetLastError(), out);
    CU(cudaMemcpyAsync(&h, r->d_wrong, sizeof h, cudaMemcpyDeviceToHost, r->stream), out);
    CU(cudaStreamSynchronize(r->stream), out);
    *wrong += h;
out:
    return st;
}

/* fused: per slot, x from seed (salt, k, rank), residual and weight from (salt, k). */
static uint64_t seed_of(unsigned salt, unsigned k, int who) { return ((uint64_t)salt << 32) ^ ((uint64_t)k << 16) ^ (uint64_t)(who + 7); }

static arb_status_t host_scratch(arb_runner_t *r, size_t elems)
{
    if (r->h_cap >= elems)
        return ARB_OK;
    free(r->h_buf);
    r->h_buf = (uint16_t *)malloc(elems * sizeof(uint16_t));
    r->h_cap = r->h_buf ? elems : 0;
    return r->h_buf ? ARB_OK : ARB_ERR_SYSTEM;
}

static arb_status_t prep_fused(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    size_t n = (size_t)pt->tokens * pt->hidden;
    if (host_scratch(r, n + pt->hidden) != ARB_OK)
        return ARB_ERR_SYSTEM;
    uint16_t *h = r->h_buf;
    arb_fill_bf16_random(h, pt->hidden, seed_of(pt->salt, 99, -3), 1.0f);
    CU(cudaMemcpy(r->weight, h, pt->hidden * 2, cudaMemcpyHostToDevice), out);
    for (unsigned k = 0; k < nslots; k++) {
        size_t off = slot_off(r, k);
        /* partial sums whose sum over ranks is exact in bf16 in any order (rmsnorm.h) */
        arb_fill_bf16_exact_partials(h, n, seed_of(pt->salt, k, r->inst.info->rank));
        CU(cudaMemcpy(r->x + off, h, n * 2, cudaMemcpyHostToDevice), out);
        arb_fill_bf16_random(h, n, seed_of(pt->salt, k, -1), 1.0f);
        CU(cudaMemcpy(r->res + off, h, n * 2, cudaMemcpyHostToDevice), out);
        k_poison<<<grid_for(n), 256, 0, r->stream>>>(r->out + off, n, 0);
    }
    CU(cudaGetLastError(), out);
    CU(cudaStreamSynchronize(r->stream), out);
out:
    return st;
}

static unsigned long long fnv(const void *p, size_t n, unsigned long long h)
{
    const unsigned char *c = (const unsigned char *)p;
    for (size_t i = 0; i < n; i++) {
        h ^= c[i];
        h *= 1099511628211ull;
    }
    return h;
}

static arb_status_t verify_fused(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, arb_point_out_t *o,
                                 char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    int nranks = r->inst.info->nranks;
    size_t n = (size_t)pt->tokens * pt->hidden;
    uint16_t **xs = (uint16_t **)calloc((size_t)nranks, sizeof *xs);
    uint16_t *res_in = (uint16_t *)malloc(n * 2), *w = (uint16_t *)malloc(pt->hidden * 2);
    uint16_t *got_res = (uint16_t *)malloc(n * 2), *got_out = (uint16_t *)malloc(n * 2);
    double *ref_res = (double *)malloc(n * sizeof(double)), *ref_out = (double *)malloc(n * sizeof(double));
    if (!xs || !res_in || !w || !got_res || !got_out || !ref_res || !ref_out) {
        st = ARB_ERR_SYSTEM;
        arb_snprintf(why, why_len, "out of host memory for the fused check");
        goto out;
    }
    for (int q = 0; q < nranks; q++)
        if (!(xs[q] = (uint16_t *)malloc(n * 2))) {
            st = ARB_ERR_SYSTEM;
            goto out;
        }
    arb_fill_bf16_random(w, pt->hidden, seed_of(pt->salt, 99, -3), 1.0f);
    for (unsigned k = 0; k < nslots; k++) {
        size_t off = slot_off(r, k);
        for (int q = 0; q < nranks; q++)
            arb_fill_bf16_exact_partials(xs[q], n, seed_of(pt->salt, k, q));
        arb_fill_bf16_random(res_in, n, seed_of(pt->salt, k, -1), 1.0f);
        CU(cudaMemcpy(got_res, r->res + off, n * 2, cudaMemcpyDeviceToHost), out);
        CU(cudaMemcpy(got_out, r->out + off, n * 2, cudaMemcpyDeviceToHost), out);
        arb_rmsnorm_reference((const uint16_t *const *)xs, nranks, res_in, w, pt->tokens, pt->hidden, pt->eps,
                              ref_res, ref_out);
        o->wrong += arb_rmsnorm_count_wrong(got_res, ref_res, n, ARB_RMSNORM_RTOL);
        o->wrong += arb_rmsnorm_count_wrong(got_out, ref_out, n, ARB_RMSNORM_RTOL);
        o->out_hash = fnv(got_res, n * 2, o->out_hash ? o->out_hash : 1469598103934665603ull);
        o->out_hash = fnv(got_out, n * 2, o->out_hash);
    }
    o->tolerance = ARB_RMSNORM_RTOL;
out:
    if (xs)
        for (int q = 0; q < nranks; q++)
            free(xs[q]);
    free(xs);
    free(res_in);
    free(w);
    free(got_res);
    free(got_out);
    free(ref_res);
    free(ref_out);
    return st;
}

static arb_status_t prep(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    return pt->op == ARB_OP_ALLREDUCE ? prep_allreduce(r, pt, nslots, why, why_len)
                                      : prep_fused(r, pt, nslots, why, why_len);
}

static arb_status_t verify(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, arb_point_out_t *o,
                           char *why, size_t why_len)
{
    o->checked = 1;
    return pt->op == ARB_OP_ALLREDUCE ? verify_allreduce(r, pt, nslots, &o->wrong, why, why_len)
                                      : verify_fused(r, pt, nslots, o, why, why_len);
}

/* ------------------------------------------------------------------ graphs */

/* Captures `ncalls` calls (slot k % ROT), each preceded by the spin kernel when
 * spin_ns > 0; with calls == 0 only the spin kernels (context mode's baseline). */
static arb_status_t capture(arb_runner_t *r, const arb_point_t *pt, unsigned ncalls, int with_calls, long long spin_ns,
                            cudaGraphExec_t *exec, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK, cs = ARB_OK;
    cudaGraph_t g = NULL;
    CU(cudaStreamBeginCapture(r->stream, cudaStreamCaptureModeThreadLocal), out);
    for (unsigned k = 0; k < ncalls && cs == ARB_OK; k++) {
        if (spin_ns > 0)
            k_spin<<<r->sm_count, 128, 0, r->stream>>>(spin_ns);
        if (with_calls)
            cs = do_call(r, pt, k % ROT);
    }
    {
        cudaError_t e = cudaStreamEndCapture(r->stream, &g);
        if (cs != ARB_OK) {
            if (cs == ARB_DECLINE)
                arb_snprintf(why, why_len, "%s", r->call_why[0] ? r->call_why : "the plugin declined this call without a reason");
            else
                arb_snprintf(why, why_len, "the collective failed while being captured into a CUDA graph: %s: %s",
                             arb_status_str(cs), r->call_why);
            st = cs;
            goto out;
        }
        if (e != cudaSuccess) {
            arb_snprintf(why, why_len, "CUDA graph capture failed: %s", cudaGetErrorString(e));
            st = ARB_ERR_SYSTEM;
            goto out;
        }
    }
    CU(cudaGraphInstantiate(exec, g, 0), out);
out:
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError(); /* a failed capture leaves a non-sticky error behind */
    return st;
}

static arb_status_t ensure_events(arb_runner_t *r, size_t n, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    if (r->nev >= n)
        return ARB_OK;
    cudaEvent_t *ev = (cudaEvent_t *)realloc(r->ev, n * sizeof *ev);
    if (!ev)
        return ARB_ERR_SYSTEM;
    r->ev = ev;
    while (r->nev < n) {
        CU(cudaEventCreate(&r->ev[r->nev]), out);
        r->nev++;
    }
out:
    return st;
}

static arb_status_t ensure_samples(arb_runner_t *r, size_t n)
{
    if (r->cap_samples >= n)
        return ARB_OK;
    free(r->samples);
    r->samples = (double *)malloc(n * sizeof(double));
    r->cap_samples = r->samples ? n : 0;
    return r->samples ? ARB_OK : ARB_ERR_SYSTEM;
}

static float elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = NAN;
    if (cudaEventElapsedTime(&ms, a, b) != cudaSuccess)
        return NAN;
    return ms;
}

/* ------------------------------------------------------------------ modes */

static arb_status_t run_eager(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    if (pt->check) {
        ARB_CHECK_GOTO(prep(r, pt, 2, why, why_len), st, out);
        for (unsigned k = 0; k < 2; k++)
            ARB_CHECK_GOTO(do_call(r, pt, k), st, call_failed);
        ARB_CHECK_GOTO(sync_stream(r, why, why_len), st, out);
        ARB_CHECK_GOTO(verify(r, pt, 2, o, why, why_len), st, out);
    }
    ARB_CHECK_GOTO(ensure_events(r, 2 * (size_t)pt->iters, why, why_len), st, out);
    if (ensure_samples(r, pt->iters) != ARB_OK)
        return ARB_ERR_SYSTEM;
    for (unsigned i = 0; i < pt->warmup; i++)
        ARB_CHECK_GOTO(do_call(r, pt, i % ROT), st, call_failed);
    for (unsigned i = 0; i < pt->iters; i++) {
        CU(cudaEventRecord(r->ev[2 * i], r->stream), out);
        ARB_CHECK_GOTO(do_call(r, pt, i % ROT), st, call_failed);
        CU(cudaEventRecord(r->ev[2 * i + 1], r->stream), out);
    }
    ARB_CHECK_GOTO(sync_stream(r, why, why_len), st, out);
    for (unsigned i = 0; i < pt->iters; i++)
        r->samples[i] = 1e3 * (double)elapsed_ms(r->ev[2 * i], r->ev[2 * i + 1]);
    o->samples = r->samples;
    o->nsamples = pt->iters;
    arb_snprintf(o->timing, sizeof o->timing, "events_per_call");
    return ARB_OK;
call_failed:
    if (!why[0]) {
        if (st == ARB_DECLINE)
            arb_snprintf(why, why_len, "%s", r->call_why[0] ? r->call_why : "the plugin declined this call without a reason");
        else
            arb_snprintf(why, why_len, "the collective call failed: %s: %s", arb_status_str(st), r->call_why);
    }
out:
    return st;
}

static arb_status_t run_graph(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    int context = pt->mode == ARB_MODE_CONTEXT;
    long long spin_ns = context ? (long long)(pt->context_us * 1e3) : 0;
    cudaGraphExec_t check_g = NULL, timed_g = NULL, base_g = NULL;
    unsigned K = pt->graph_ops, R = pt->graph_replays;

    if (pt->check) { /* one call per slot, replayed twice: graph safety and epoch advance */
        ARB_CHECK_GOTO(capture(r, pt, ROT, 1, spin_ns, &check_g, why, why_len), st, out);
        for (int rep = 0; rep < 2; rep++) {
            ARB_CHECK_GOTO(prep(r, pt, ROT, why, why_len), st, out);
            CU(cudaGraphLaunch(check_g, r->stream), out);
            ARB_CHECK_GOTO(sync_stream(r, why, why_len), st, out);
            ARB_CHECK_GOTO(verify(r, pt, ROT, o, why, why_len), st, out);
        }
    }
    ARB_CHECK_GOTO(capture(r, pt, K, 1, spin_ns, &timed_g, why, why_len), st, out);
    if (context)
        ARB_CHECK_GOTO(capture(r, pt, K, 0, spin_ns, &base_g, why, why_len), st, out);
    ARB_CHECK_GOTO(ensure_events(r, 4 * (size_t)R, why, why_len), st, out);
    if (ensure_samples(r, R) != ARB_OK) {
        st = ARB_ERR_SYSTEM;
        goto out;
    }
    {
        unsigned warm = (pt->warmup + K - 1) / K;
        if (warm < 2)
            warm = 2;
        for (unsigned i = 0; i < warm; i++) {
            CU(cudaGraphLaunch(timed_g, r->stream), out);
            if (base_g)
                CU(cudaGraphLaunch(base_g, r->stream), out);
        }
    }
    for (unsigned i = 0; i < R; i++) { /* alternate so drift hits both graphs alike */
        CU(cudaEventRecord(r->ev[4 * i], r->stream), out);
        CU(cudaGraphLaunch(timed_g, r->stream), out);
        CU(cudaEventRecord(r->ev[4 * i + 1], r->stream), out);
        if (base_g) {
            CU(cudaEventRecord(r->ev[4 * i + 2], r->stream), out);
            CU(cudaGraphLaunch(base_g, r->stream), out);
            CU(cudaEventRecord(r->ev[4 * i + 3], r->stream), out);
        }
    }
    ARB_CHECK_GOTO(sync_stream(r, why, why_len), st, out);
    for (unsigned i = 0; i < R; i++) {
        double t = 1e3 * (double)elapsed_ms(r->ev[4 * i], r->ev[4 * i + 1]);
        if (base_g)
            t -= 1e3 * (double)elapsed_ms(r->ev[4 * i + 2], r->ev[4 * i + 3]);
        r->samples[i] = t / K;
    }
    o->samples = r->samples;
    o->nsamples = R;
    if (context)
        arb_snprintf(o->timing, sizeof o->timing, "ops_per_graph=%u,replays=%u,compute_us=%g,compute_subtracted", K, R, pt->context_us);
    else
        arb_snprintf(o->timing, sizeof o->timing, "ops_per_graph=%u,replays=%u", K, R);
out:
    if (check_g)
        cudaGraphExecDestroy(check_g);
    if (timed_g)
        cudaGraphExecDestroy(timed_g);
    if (base_g)
        cudaGraphExecDestroy(base_g);
    return st;
}

static arb_status_t gpu_run(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o)
{
    char *why = o->why;
    size_t why_len = sizeof o->why;
    why[0] = '\0';
    const arb_plugin_t *p = r->inst.plugin;
    if (pt->mode != ARB_MODE_EAGER && !(p->caps & ARB_CAP_GRAPH_SAFE)) {
        arb_snprintf(why, why_len, "%s is not CUDA-graph safe (caps)", p->name);
        return o->status = ARB_DECLINE;
    }
    if (pt->op == ARB_OP_ALLREDUCE_RMSNORM && pt->fused && !p->allreduce_rmsnorm) {
        arb_snprintf(why, why_len, "%s has no fused allreduce_rmsnorm", p->name);
        return o->status = ARB_DECLINE;
    }
    int check = pt->check && !(p->caps & ARB_CAP_REFERENCE);
    arb_point_t q = *pt;
    q.check = check;
    o->status = pt->mode == ARB_MODE_EAGER ? run_eager(r, &q, o, why, why_len) : run_graph(r, &q, o, why, why_len);
    if (o->status == ARB_OK) {
        for (size_t i = 0; i < o->nsamples; i++)
            if (!isfinite(o->samples[i])) {
                arb_snprintf(why, why_len, "a CUDA event time could not be read");
                o->status = ARB_ERR_SYSTEM;
            }
    }
    if (o->status != ARB_OK) {
        cudaError_t e = cudaGetLastError();
        if (e != cudaSuccess && !why[0])
            arb_snprintf(why, why_len, "CUDA error: %s", cudaGetErrorString(e));
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

/* ------------------------------------------------------------------ discovery */

extern "C" int arb_gpu_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        arb_snprintf(why, why_len, "no CUDA device visible: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    if (n == 0)
        arb_snprintf(why, why_len, "no CUDA device visible (cudaGetDeviceCount returned 0)");
    return n;
}

static void read_driver_version(char *buf, size_t len)
{
    /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..." */
    buf[0] = '\0';
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        char *m = strstr(line, "Module");
        if (m) {
            m += strlen("Module");
            while (*m == ' ')
                m++;
            size_t n = strcspn(m, " \t\n");
            if (n >= len)
                n = len - 1;
            memcpy(buf, m, n);
            buf[n] = '\0';
        }
    }
    fclose(f);
}

extern "C" arb_status_t arb_gpu_select(int device, arb_gpu_info_t *info, char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    cudaDeviceProp prop;
    int drv = 0, rt = 0;
    char kmod[64];
    memset(info, 0, sizeof *info);
    CU(cudaSetDevice(device), out);
    CU(cudaGetDeviceProperties(&prop, device), out);
    CU(cudaDriverGetVersion(&drv), out);
    CU(cudaRuntimeGetVersion(&rt), out);
    arb_snprintf(info->name, sizeof info->name, "%s", prop.name);
    arb_snprintf(info->sm, sizeof info->sm, "%d.%d", prop.major, prop.minor);
    read_driver_version(kmod, sizeof kmod);
    arb_snprintf(info->driver, sizeof info->driver, "%s%s(CUDA %d.%d)", kmod, kmod[0] ? " " : "", drv / 1000, (drv % 1000) / 10);
    arb_snprintf(info->cuda, sizeof info->cuda, "%d.%d", rt / 1000, (rt % 1000) / 10);
    arb_snprintf(info->bus_id, sizeof info->bus_id, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    info->sm_count = prop.multiProcessorCount;
out:
    return st;
}
