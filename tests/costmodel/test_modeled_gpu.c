/* SPDX-License-Identifier: MIT */
/* GPU test of the modeled plugin's spin: CUDA-graph replays of K calls at 2, 8, 50 and 200 us
 * against the same at 1 us, timed with CUDA events; the difference must match the table
 * within 0.2 us + 0.5%. Loads the module through the real loader. Exit 77 without a GPU. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "runtime/loader.h"
#include "results/results.h"

#define K 20
#define REPLAYS 20

static void log_line(void *ctx, const char *msg) { (void)ctx; fprintf(stderr, "# %s\n", msg); }

static double per_call_us(const arb_plugin_t *pl, void *st, size_t count, cudaStream_t s)
{
    cudaGraph_t g;
    cudaGraphExec_t ge;
    char why[256];
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < K; i++)
        if (pl->allreduce(st, NULL, NULL, count, ARB_DTYPE_BF16, s, why, sizeof why) != ARB_OK)
            printf("# allreduce: %s\n", why);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaEvent_t a, b;
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    cudaGraphLaunch(ge, s); /* warm-up */
    cudaEventRecord(a, s);
    for (int r = 0; r < REPLAYS; r++)
        cudaGraphLaunch(ge, s);
    cudaEventRecord(b, s);
    cudaEventSynchronize(b);
    float ms = 0;
    cudaEventElapsedTime(&ms, a, b);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    return ms * 1e3 / (K * REPLAYS);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("1..0 # SKIP no CUDA device\n");
        return 77;
    }
    if (argc < 2) {
        fprintf(stderr, "usage: test_modeled_gpu PATH/arb-modeled.so\n");
        return 2;
    }
    char table[] = "/tmp/arbench-spin-table-XXXXXX", err[4096];
    int fd = mkstemp(table);
    close(fd);
    unlink(table);
    arb_results_writer_t *w = arb_results_open(table, err, sizeof err);
    const double lat[] = {1, 2, 8, 50, 200};
    char bytes[5][16], med[5][16];
    for (int i = 0; i < 5 && w; i++) {
        arb_row_t r = {0};
        snprintf(bytes[i], sizeof bytes[i], "%d", 1024 << i);
        snprintf(med[i], sizeof med[i], "%g", lat[i]);
        r.f[ARB_COL_schema] = "1", r.f[ARB_COL_impl] = "x", r.f[ARB_COL_params] = "", r.f[ARB_COL_mode] = "graph";
        r.f[ARB_COL_ranks] = "1", r.f[ARB_COL_op] = "allreduce", r.f[ARB_COL_bytes] = bytes[i];
        r.f[ARB_COL_median_us] = med[i], r.f[ARB_COL_check] = "pass";
        arb_results_append(w, &r);
    }
    if (!w || arb_results_close(w)) {
        printf("Bail out! cannot write %s: %s\n", table, err);
        return 1;
    }
    arb_loaded_plugin_t lp;
    if (arb_plugin_load(argv[1], &lp, err, sizeof err)) {
        printf("Bail out! %s\n", err);
        return 1;
    }
    arb_comm_info_t info = {.rank = 0, .nranks = 1, .local_nranks = 1, .nnodes = 1, .cuda_device = 0};
    arb_host_ops_t ops = {.log = log_line};
    char params[128], why[512];
    snprintf(params, sizeof params, "table=%s", table);
    void *st = NULL;
    cudaSetDevice(0);
    if (lp.plugin->init(&info, &ops, params, &st, why, sizeof why) != ARB_OK) {
        printf("Bail out! init: %s\n", why);
        return 1;
    }
    printf("1..4\n# %s\n", lp.plugin->describe(st));
    cudaStream_t s;
    cudaStreamCreate(&s);
    double base = per_call_us(lp.plugin, st, 512, s); /* 1024 bytes of bf16: 1 us */
    int bad = 0;
    for (int i = 1; i < 5; i++) {
        double t = per_call_us(lp.plugin, st, (size_t)(512 << i), s), got = t - base, want = lat[i] - lat[0];
        int ok = fabs(got - want) <= 0.2 + 0.005 * lat[i];
        bad |= !ok;
        printf("%s %d - spin %g us: %.3f us per call, %.3f above the 1 us call (want %.3f)\n", ok ? "ok" : "not ok", i,
               lat[i], t, got, want);
    }
    lp.plugin->finalize(st);
    arb_plugin_unload(&lp);
    unlink(table);
    return bad;
}
