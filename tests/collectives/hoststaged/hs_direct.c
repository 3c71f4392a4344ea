/* SPDX-License-Identifier: MIT */
/*
 * GPU test of arb-hoststaged.so without the harness: under mpirun, every rank loads the
 * module through the real loader, runs all-reduces (eager calls and a CUDA graph whose
 * calls rotate among 4 send/recv slot pairs at 16-byte offsets) and checks every
 * element against the exact sum; --hang checks the timeout path instead; --time prints
 * the per-call time of a 43,008 B bf16 graph replay. TAP output on rank 0.
 * Exit 77 (skipped) where no CUDA device is visible or there are fewer than the local ranks.
 *
 *   mpirun -np N hs_direct PLUGIN.so [--hang | --time]
 */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "arbench/plugin.h"
#include "base/common.h"
#include "runtime/loader.h"
#include "tap.h"

#define NSLOTS 4
#define MAX_BYTES (1u << 20)
#define SLOT_PITCH (MAX_BYTES + 256u) /* bytes between slots: room for 16-byte offsets */

typedef struct ctx {
    MPI_Comm comm;
    int rank, nranks;
    const arb_plugin_t *p;
    void *state;
    char *send, *recv; /* device, NSLOTS x SLOT_PITCH each */
    void *host;        /* staging, SLOT_PITCH bytes */
    cudaStream_t stream;
} ctx_t;

static int hop_allgather(void *c, const void *s, void *r, size_t n)
{
    return MPI_Allgather(s, (int)n, MPI_BYTE, r, (int)n, MPI_BYTE, *(MPI_Comm *)c) != MPI_SUCCESS;
}
static int hop_bcast(void *c, void *b, size_t n, int root)
{
    return MPI_Bcast(b, (int)n, MPI_BYTE, root, *(MPI_Comm *)c) != MPI_SUCCESS;
}
static int hop_barrier(void *c) { return MPI_Barrier(*(MPI_Comm *)c) != MPI_SUCCESS; }
static void hop_log(void *c, const char *m)
{
    (void)c;
    fprintf(stderr, "hs_direct: %s\n", m);
}

/* Every rank agrees on ok; rank 0 prints one TAP line (tests/common/tap.h). */
static void tap(ctx_t *c, int ok, const char *fmt, const char *what)
{
    int all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, c->comm);
    char line[512];
    snprintf(line, sizeof line, fmt, what);
    tap_ok(all, "%s", line);
}

/* Small integers, so every partial sum is exact in bf16 and fp32. Units: elements. */
static float pattern(size_t i, int rank, int seed) { return (float)((int)((i * 7 + (size_t)rank * 3 + (size_t)seed * 5) % 17) - 8); }

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact: small integers have no low mantissa bits */
}

static int fill(ctx_t *c, int slot, size_t off, size_t count, arb_dtype_t dt, int seed)
{
    for (size_t i = 0; i < count; i++) {
        float v = pattern(i, c->rank, seed);
        if (dt == ARB_DTYPE_BF16)
            ((uint16_t *)c->host)[i] = to_bf16(v);
        else
            ((float *)c->host)[i] = v;
    }
    size_t es = dt == ARB_DTYPE_BF16 ? 2 : 4;
    char *s = c->send + (size_t)slot * SLOT_PITCH + off;
    char *r = c->recv + (size_t)slot * SLOT_PITCH + off;
    if (cudaMemcpy(s, c->host, count * es, cudaMemcpyHostToDevice) != cudaSuccess)
        return -1;
    return cudaMemset(r, 0xff, count * es + 16) != cudaSuccess ? -1 : 0; /* NaN, and past the end */
}

/* Returns the number of wrong elements on this rank (recv vs the exact sum; the 16
 * bytes past the end must still hold the 0xff poison), or -1 on a CUDA error. */
static long verify(ctx_t *c, int slot, size_t off, size_t count, arb_dtype_t dt, int seed)
{
    size_t es = dt == ARB_DTYPE_BF16 ? 2 : 4;
    char *r = c->recv + (size_t)slot * SLOT_PITCH + off;
    if (cudaMemcpy(c->host, r, count * es + 16, cudaMemcpyDeviceToHost) != cudaSuccess)
        return -1;
    long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int q = 0; q < c->nranks; q++)
            want += pattern(i, q, seed);
        float got;
        if (dt == ARB_DTYPE_BF16) {
            uint32_t u = (uint32_t)((uint16_t *)c->host)[i] << 16;
            memcpy(&got, &u, 4);
        } else {
            got = ((float *)c->host)[i];
        }
        wrong += !(got == want); /* NaN never passes */
    }
    for (size_t i = 0; i < 16; i++)
        wrong += ((unsigned char *)c->host)[count * es + i] != 0xff;
    return wrong;
}

static int call(ctx_t *c, int slot, size_t off, size_t count, arb_dtype_t dt)
{
    char why[512] = "";
    if (c->p->allreduce(c->state, c->send + (size_t)slot * SLOT_PITCH + off, c->recv + (size_t)slot * SLOT_PITCH + off,
                        count, dt, c->stream, why, sizeof why) == ARB_OK)
        return 0;
    fprintf(stderr, "hoststaged allreduce(%zu elements): %s\n", count, why);
    return -1;
}

static long sum_wrong(ctx_t *c, long w)
{
    long total = 0;
    if (w < 0)
        w = 1L << 40;
    MPI_Allreduce(&w, &total, 1, MPI_LONG, MPI_SUM, c->comm);
    return total;
}

static int query_ok(ctx_t *c)
{
    char why[512] = "";
    arb_status_t s = c->p->query_error ? c->p->query_error(c->state, why, sizeof why) : ARB_OK;
    if (s != ARB_OK)
        fprintf(stderr, "hs_direct[%d]: query_error: %s\n", c->rank, why);
    return s == ARB_OK;
}

/* Eager: one call per (size, offset), checked. Graph: NSLOTS calls captured with
 * rotating slots and offsets, replayed 3 times (epochs advance inside the graph). */
static void check_size(ctx_t *c, size_t bytes, arb_dtype_t dt)
{
    size_t es = dt == ARB_DTYPE_BF16 ? 2 : 4, count = bytes / es;
    const char *dn = dt == ARB_DTYPE_BF16 ? "bf16" : "fp32";
    char what[96];
    long w = 0;
    for (int k = 0; k < NSLOTS && w == 0; k++) {
        size_t off = (size_t)k * 16;
        if (fill(c, k, off, count, dt, k) || call(c, k, off, count, dt) || cudaStreamSynchronize(c->stream))
            w = -1;
        else
            w = verify(c, k, off, count, dt, k);
    }
    int ok = query_ok(c);
    snprintf(what, sizeof what, "%zu B %s", bytes, dn);
    tap(c, sum_wrong(c, w) == 0 && ok, "eager %s: every element equals the exact sum", what);

    w = 0;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    for (int k = 0; k < NSLOTS && !w; k++)
        w = fill(c, k, (size_t)(3 - k) * 16, count, dt, 10 + k) ? -1 : 0;
    if (!w && cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess) {
        for (int k = 0; k < NSLOTS; k++)
            if (call(c, k, (size_t)(3 - k) * 16, count, dt))
                w = -1;
        if (cudaStreamEndCapture(c->stream, &g) != cudaSuccess ||
            cudaGraphInstantiate(&ge, g, 0) != cudaSuccess)
            w = -1;
    } else {
        w = -1;
    }
    for (int rep = 0; rep < 3 && !w; rep++)
        if (cudaGraphLaunch(ge, c->stream) != cudaSuccess || cudaStreamSynchronize(c->stream) != cudaSuccess)
            w = -1;
    for (int k = 0; k < NSLOTS && !w; k++)
        w = verify(c, k, (size_t)(3 - k) * 16, count, dt, 10 + k);
    ok = query_ok(c);
    tap(c, sum_wrong(c, w) == 0 && ok, "graph %s: 4 captured calls, 3 replays, every element exact", what);
    if (ge)
        cudaGraphExecDestroy(ge);
    if (g)
        cudaGraphDestroy(g);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* Per-call time of a 43,008 B bf16 all-reduce: a graph of 20 calls replayed 50 times,
 * the median replay time (max over ranks) divided by 20. Units: us. */
static void time_graph(ctx_t *c)
{
    enum { K = 20, REPLAYS = 50 };
    const size_t count = 43008 / 2;
    float ms[REPLAYS];
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t e0, e1;
    int err = fill(c, 0, 0, count, ARB_DTYPE_BF16, 0) != 0;
    err |= cudaEventCreate(&e0) != cudaSuccess || cudaEventCreate(&e1) != cudaSuccess;
    err |= cudaStreamBeginCapture(c->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess;
    for (int k = 0; k < K && !err; k++)
        err |= call(c, 0, 0, count, ARB_DTYPE_BF16);
    err |= cudaStreamEndCapture(c->stream, &g) != cudaSuccess;
    err |= cudaGraphInstantiate(&ge, g, 0) != cudaSuccess;
    for (int it = -5; it < REPLAYS && !err; it++) {
        MPI_Barrier(c->comm);
        err |= cudaEventRecord(e0, c->stream) != cudaSuccess;
        err |= cudaGraphLaunch(ge, c->stream) != cudaSuccess;
        err |= cudaEventRecord(e1, c->stream) != cudaSuccess;
        err |= cudaEventSynchronize(e1) != cudaSuccess;
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (it >= 0)
            MPI_Allreduce(&t, &ms[it], 1, MPI_FLOAT, MPI_MAX, c->comm);
    }
    long w = err ? -1 : verify(c, 0, 0, count, ARB_DTYPE_BF16, 0);
    int ok = query_ok(c);
    if (!err) {
        qsort(ms, REPLAYS, sizeof ms[0], cmp_float);
        if (c->rank == 0)
            printf("# hoststaged %s, %d ranks: 43008 B bf16 graph: %.2f us per call (median of %d replays of %d calls, max over ranks; p10 %.2f, p90 %.2f)\n",
                   c->p->describe ? c->p->describe(c->state) : "", c->nranks, ms[REPLAYS / 2] * 1000.0 / K,
                   REPLAYS, K, ms[REPLAYS / 10] * 1000.0 / K, ms[REPLAYS * 9 / 10] * 1000.0 / K);
    }
    tap(c, sum_wrong(c, w) == 0 && ok, "%s43008 B bf16 graph timing run, result exact", "");
}

/* test_hang_rank=1: rank 1 never publishes. Rank 0 must give up after ~2 s and report
 * the timeout; the next call must not hang either (rank 1 then times out on rank 0). */
static void check_hang(ctx_t *c)
{
    const size_t count = 43008 / 2;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int err = fill(c, 0, 0, count, ARB_DTYPE_BF16, 0) || call(c, 0, 0, count, ARB_DTYPE_BF16) ||
              cudaStreamSynchronize(c->stream) != cudaSuccess;
    char why[512] = "";
    arb_status_t s = c->p->query_error(c->state, why, sizeof why);
    int ok = !err && (c->rank == 0 ? s == ARB_ERR_TIMEOUT && strstr(why, "hoststaged: spin-wait timed out waiting for rank 1 (epoch 1)") : s == ARB_OK);
    if (c->rank == 0)
        printf("# rank 0 query_error: %s\n", why);
    tap(c, ok, "%stimeout: rank 0 reports 'spin-wait timed out waiting for rank 1 (epoch 1)', rank 1 completes", "");

    MPI_Barrier(c->comm);
    err = call(c, 0, 0, count, ARB_DTYPE_BF16) || cudaStreamSynchronize(c->stream) != cudaSuccess;
    why[0] = '\0';
    s = c->p->query_error(c->state, why, sizeof why);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    fprintf(stderr, "hs_direct[%d]: second call: %s (%.1f s since the first)\n", c->rank, why, secs);
    tap(c, !err && s == ARB_ERR_TIMEOUT && secs < 10.0, "%safter a timeout: the next call returns on every rank within 10 s and reports a timeout", "");
}

int main(int argc, char **argv)
{
    ctx_t c = {.comm = MPI_COMM_WORLD};
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(c.comm, &c.rank);
    tap_set_agree(NULL, c.rank != 0); /* checks agree in tap(); rank 0 prints */
    MPI_Comm_size(c.comm, &c.nranks);
    const char *mode = argc > 2 ? argv[2] : "";
    if (argc < 2 || (argc > 2 && strcmp(mode, "--hang") && strcmp(mode, "--time"))) {
        if (c.rank == 0)
            fprintf(stderr, "usage: mpirun -np N hs_direct PLUGIN.so [--hang | --time]\n");
        MPI_Finalize();
        return 2;
    }
    MPI_Comm local;
    int lrank, lsize, ndev = 0;
    MPI_Comm_split_type(c.comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &lrank);
    MPI_Comm_size(local, &lsize);
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    int have = ce == cudaSuccess && ndev >= lsize, all_have = 0;
    MPI_Allreduce(&have, &all_have, 1, MPI_INT, MPI_LAND, c.comm);
    int need2 = !strcmp(mode, "--hang") && c.nranks < 2;
    if (!all_have || need2) {
        if (c.rank == 0)
            printf("1..0 # SKIP %s\n", need2 ? "--hang needs 2 ranks" : ce != cudaSuccess ? "no CUDA device visible" : "fewer CUDA devices than local ranks");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(lrank);

    arb_loaded_plugin_t lp;
    char err[4096];
    if (arb_plugin_load(argv[1], &lp, err, sizeof err)) {
        fprintf(stderr, "hs_direct: %s\n", err);
        MPI_Abort(c.comm, 1);
    }
    c.p = lp.plugin;
    int nodes_local = lrank == 0, nnodes = 0;
    MPI_Allreduce(&nodes_local, &nnodes, 1, MPI_INT, MPI_SUM, c.comm);
    arb_comm_info_t info = {.rank = c.rank, .nranks = c.nranks, .local_rank = lrank, .local_nranks = lsize,
                            .node = 0, .nnodes = nnodes, .cuda_device = lrank, .max_bytes = MAX_BYTES,
                            .mpi_comm = &c.comm};
    arb_host_ops_t ops = {.ctx = &c.comm, .allgather = hop_allgather, .bcast = hop_bcast,
                          .barrier = hop_barrier, .log = hop_log};
    char why[512] = "";
    arb_status_t s = c.p->init(&info, &ops, !strcmp(mode, "--hang") ? "test_hang_rank=1" : "", &c.state, why, sizeof why);
    if (s != ARB_OK) {
        fprintf(stderr, "hs_direct[%d]: init: %s (%s)\n", c.rank, why, arb_status_str(s));
        MPI_Abort(c.comm, 1);
    }
    if (cudaMalloc((void **)&c.send, NSLOTS * (size_t)SLOT_PITCH) || cudaMalloc((void **)&c.recv, NSLOTS * (size_t)SLOT_PITCH) ||
        cudaMallocHost(&c.host, SLOT_PITCH) || cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking)) {
        fprintf(stderr, "hs_direct[%d]: CUDA allocation failed\n", c.rank);
        MPI_Abort(c.comm, 1);
    }
    if (c.rank == 0)
        printf("# %s, %d ranks, %s\n", lp.path, c.nranks, c.p->describe(c.state));

    if (!strcmp(mode, "--hang")) {
        check_hang(&c);
    } else if (!strcmp(mode, "--time")) {
        time_graph(&c);
    } else {
        static const size_t sizes[] = {2, 6, 16, 1000, 43008, 43008 + 12, 1u << 20};
        for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
            check_size(&c, sizes[i], ARB_DTYPE_BF16);
            if (sizes[i] % 4 == 0)
                check_size(&c, sizes[i], ARB_DTYPE_FP32);
        }
    }
    int rc = tap_done(); /* rank 0 prints the plan line */
    c.p->finalize(c.state);
    cudaStreamDestroy(c.stream);
    cudaFreeHost(c.host);
    cudaFree(c.recv);
    cudaFree(c.send);
    arb_plugin_unload(&lp);
    MPI_Comm_free(&local);
    MPI_Finalize();
    return rc;
}
