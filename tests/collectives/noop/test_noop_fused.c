/* SPDX-License-Identifier: MIT */
/*
 * GPU test of arb-noop.so's fused op through the real loading path (dlopen of the built
 * module): noop moves no data, and its fused op computes what its composed path computes (the
 * residual plus noop's untouched, zero-filled scratch), so residual += 0 and out =
 * rmsnorm(residual) are checked against the float64 reference with a zero sum (the stored
 * residual bit for bit, out within one bf16 rounding), with pdl=0 and pdl=1, eager and
 * captured in a CUDA graph; x and the all-reduce's recv must stay untouched; a call larger
 * than init's max_tokens is declined. Exit 0: passed; 1: a case failed; 77: no CUDA device
 * visible (meson: skipped).
 * usage: test_noop_fused ARB_NOOP_SO
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "arbench/plugin.h"
#include "base/common.h"
#include "rmsnorm/rmsnorm.h"
#include "runtime/loader.h"

#include "one_rank_ops.h"

#define CUDA_OR(call, what, label)                                                                                     \
    do {                                                                                                               \
        cudaError_t e_ = (call);                                                                                       \
        if (e_ != cudaSuccess) {                                                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, what, cudaGetErrorString(e_));                      \
            goto label;                                                                                                \
        }                                                                                                              \
    } while (0)

/* One rank on device 0, opened for fused calls of up to `tokens` x `hidden`. */
static arb_comm_info_t one_rank_info(unsigned tokens, unsigned hidden)
{
    return (arb_comm_info_t){.nranks = 1,
                             .local_nranks = 1,
                             .nnodes = 1,
                             .cuda_device = 0,
                             .max_bytes = (size_t)tokens * hidden * 2,
                             .max_tokens = tokens,
                             .hidden = hidden};
}

/* One case: 1 when it passed. */
static int run_case(const arb_plugin_t *p, const char *params, unsigned tokens, int graph, uint64_t seed)
{
    const unsigned hidden = 7168;
    const size_t n = (size_t)tokens * hidden;
    const float eps = 1e-6f;
    int passed = 0;
    void *st = NULL;
    char why[512] = "";
    uint16_t *x = malloc(n * 2), *res_in = malloc(n * 2), *w = malloc(hidden * 2), *res_got = malloc(n * 2),
             *out_got = malloc(n * 2), *recv_got = malloc(n * 2), *x_got = malloc(n * 2), *zeros = calloc(n, 2);
    double *res_ref = malloc(n * sizeof(double)), *out_ref = malloc(n * sizeof(double));
    void *d_x = NULL, *d_res = NULL, *d_w = NULL, *d_out = NULL, *d_recv = NULL;
    cudaStream_t stream = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    if (!x || !res_in || !w || !res_got || !out_got || !recv_got || !x_got || !zeros || !res_ref || !out_ref) {
        fprintf(stderr, "out of host memory\n");
        goto out;
    }
    arb_fill_bf16_random(x, n, seed * 8 + 1, 4.0f);
    arb_fill_bf16_random(res_in, n, seed * 8 + 2, 4.0f);
    arb_fill_bf16_random(w, hidden, seed * 8 + 3, 1.0f);
    const uint16_t *ranks[1] = {zeros};
    arb_rmsnorm_reference(ranks, 1, res_in, w, tokens, hidden, eps, res_ref, out_ref);

    const arb_comm_info_t info = one_rank_info(tokens, hidden);
    if (p->init(&info, &one_rank_ops, params, &st, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "init '%s': %s\n", params, why);
        goto out;
    }
    CUDA_OR(cudaStreamCreate(&stream), "stream", out);
    CUDA_OR(cudaMalloc(&d_x, n * 2), "cudaMalloc x", out);
    CUDA_OR(cudaMalloc(&d_res, n * 2), "cudaMalloc residual", out);
    CUDA_OR(cudaMalloc(&d_w, hidden * 2), "cudaMalloc weight", out);
    CUDA_OR(cudaMalloc(&d_out, n * 2), "cudaMalloc out", out);
    CUDA_OR(cudaMalloc(&d_recv, n * 2), "cudaMalloc recv", out);
    CUDA_OR(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice), "upload x", out);
    CUDA_OR(cudaMemcpy(d_res, res_in, n * 2, cudaMemcpyHostToDevice), "upload residual", out);
    CUDA_OR(cudaMemcpy(d_w, w, hidden * 2, cudaMemcpyHostToDevice), "upload weight", out);
    CUDA_OR(cudaMemsetAsync(d_out, 0xFF, n * 2, stream), "poison out", out); /* 0xFFFF: a bf16 NaN */
    CUDA_OR(cudaMemsetAsync(d_recv, 0x5A, n * 2, stream), "mark recv", out);
    CUDA_OR(cudaStreamSynchronize(stream), "poison and mark", out); /* before any capture begins */
    const arb_rmsnorm_args_t a = {
        .x = d_x, .residual = d_res, .weight = d_w, .out = d_out, .tokens = tokens, .hidden = hidden, .eps = eps};
    arb_status_t s = ARB_OK;
    if (graph)
        CUDA_OR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal), "begin capture", out);
    s = p->allreduce(st, d_x, d_recv, n, ARB_DTYPE_BF16, stream, why, sizeof why);
    if (s == ARB_OK)
        s = p->allreduce_rmsnorm(st, &a, stream, why, sizeof why);
    if (graph) {
        CUDA_OR(cudaStreamEndCapture(stream, &g), "end capture", out);
        if (s == ARB_OK) {
            CUDA_OR(cudaGraphInstantiate(&ge, g, 0), "instantiate", out);
            CUDA_OR(cudaGraphLaunch(ge, stream), "replay", out);
        }
    }
    if (s != ARB_OK) {
        fprintf(stderr, "%s call returned %s: %s\n", params, arb_status_str(s), why);
        goto out;
    }
    CUDA_OR(cudaStreamSynchronize(stream), "kernels", out);
    CUDA_OR(cudaMemcpy(res_got, d_res, n * 2, cudaMemcpyDeviceToHost), "download residual", out);
    CUDA_OR(cudaMemcpy(out_got, d_out, n * 2, cudaMemcpyDeviceToHost), "download out", out);
    CUDA_OR(cudaMemcpy(recv_got, d_recv, n * 2, cudaMemcpyDeviceToHost), "download recv", out);
    CUDA_OR(cudaMemcpy(x_got, d_x, n * 2, cudaMemcpyDeviceToHost), "download x", out);
    size_t res_bad = 0, touched = 0; /* recv or x elements changed */
    double max_err = 0.0;
    for (size_t i = 0; i < n; i++) {
        res_bad += res_got[i] != arb_f64_to_bf16(res_ref[i]);
        touched += recv_got[i] != 0x5A5A || x_got[i] != x[i];
        const double e = fabs((double)arb_bf16_to_f32(out_got[i]) - out_ref[i]) / fmax(fabs(out_ref[i]), 1.0 / 64.0);
        max_err = isnan(e) ? INFINITY : fmax(max_err, e);
    }
    const size_t wrong = arb_rmsnorm_count_wrong(out_got, out_ref, n, ARB_RMSNORM_RTOL);
    const double tight = ldexp(1.0, -8) + 1e-5;
    passed = res_bad == 0 && wrong == 0 && max_err <= tight && touched == 0;
    printf("%s noop:%s tokens=%u%s: residual mismatches %zu, out wrong %zu, max err %.6f (bound %.6f), recv or x "
           "elements touched %zu\n",
           passed ? "ok  " : "FAIL", params, tokens, graph ? " graph" : "", res_bad, wrong, max_err, tight, touched);
out:
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
    cudaFree(d_recv), cudaFree(d_out), cudaFree(d_w), cudaFree(d_res), cudaFree(d_x);
    if (stream)
        cudaStreamDestroy(stream);
    if (st)
        p->finalize(st);
    free(zeros), free(x_got), free(out_ref), free(res_ref), free(recv_got), free(out_got), free(res_got), free(w);
    free(res_in), free(x);
    return passed;
}

/* A fused call larger than init's max_tokens x hidden is declined, with the sizes named, and
 * enqueues nothing (the pointers are never dereferenced). */
static int declines_too_large(const arb_plugin_t *p)
{
    const arb_comm_info_t info = one_rank_info(1, 7168);
    void *st = NULL, *q = (void *)0x1000;
    char why[512] = "";
    if (p->init(&info, &one_rank_ops, "pdl=1", &st, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "init: %s\n", why);
        return 0;
    }
    const arb_rmsnorm_args_t a = {
        .x = q, .residual = q, .weight = q, .out = q, .tokens = 3, .hidden = 7168, .eps = 1e-6f};
    const arb_status_t s = p->allreduce_rmsnorm(st, &a, NULL, why, sizeof why);
    const int ok = s == ARB_DECLINE && strstr(why, "3 x 7168 exceeds the zero sum") != NULL;
    printf("%s a fused call of 3 tokens on an instance opened for 1 is declined: %s\n", ok ? "ok  " : "FAIL", why);
    p->finalize(st);
    return ok;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_noop_fused ARB_NOOP_SO\n");
        return 2;
    }
    arb_loaded_plugin_t lp;
    char err[8192];
    if (arb_plugin_load(argv[1], &lp, err, sizeof err) != ARB_OK) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1) {
        printf("SKIP: no CUDA device visible\n");
        arb_plugin_unload(&lp);
        return 77;
    }
    const arb_plugin_t *p = lp.plugin;
    int ok = p->allreduce_rmsnorm != NULL;
    printf("%s noop has a fused allreduce_rmsnorm\n", ok ? "ok  " : "FAIL");
    if (ok) {
        static const char *const params[] = {"pdl=0", "pdl=1"};
        static const unsigned tokens[] = {1, 3, 8};
        for (int i = 0; i < 2; i++)
            for (int t = 0; t < 3; t++)
                for (int graph = 0; graph < 2; graph++)
                    ok &= run_case(p, params[i], tokens[t], graph, (uint64_t)(i * 16 + t * 2 + graph + 1));
        ok &= declines_too_large(p);
    }
    arb_plugin_unload(&lp);
    return ok ? 0 : 1;
}
