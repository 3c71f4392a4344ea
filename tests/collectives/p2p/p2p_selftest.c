/* SPDX-License-Identifier: MIT */
/*
 * GPU self-test of arb-p2p.so and arb-ping.so without MPI or the harness: forks one
 * process per rank (rank r on GPU r), host collectives through shared memory, loads
 * the modules through the loader (src/runtime/loader.h) like the harness does.
 *
 *   p2p_selftest NRANKS MODE P2P_SO PING_SO
 *     check   every default variant, bf16 and fp32, odd sizes (2 B .. 9 MiB + 6 B, past
 *             the chunk size), unaligned tails, eager and CUDA-graph (4 rotating
 *             buffer pairs), every element compared, the byte after the end untouched
 *     stress  as check at 43,008 B and 1,000,002 B, thousands of graph replays
 *     hang    test_hang_rank=1 on every variant and the ping: every rank must report
 *             ARB_ERR_TIMEOUT ("spin-wait timed out waiting for rank ...") and return
 *     bench   median us per call at 43,008 B bf16, eager and graph, every variant + ping
 *
 * TAP on rank 0. Exit 0 all passed, 1 a failure, 77 fewer GPUs than ranks.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "arbench/plugin.h"
#include "runtime/loader.h"
#include "tap.h"

#define SHM_SLOT 65536 /* bytes per rank for host collectives */

typedef struct shm {
    pthread_barrier_t barrier;
    int nranks;
    unsigned char data[]; /* nranks * SHM_SLOT */
} shm_t;

typedef struct rank_ctx {
    shm_t *shm;
    int rank, nranks;
    int failures;
} rank_ctx_t;

static int shm_barrier(void *ctx)
{
    rank_ctx_t *c = ctx;
    int r = pthread_barrier_wait(&c->shm->barrier);
    return r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD ? 0 : -1;
}

static int shm_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    rank_ctx_t *c = ctx;
    if (bytes > SHM_SLOT)
        return -1;
    memcpy(c->shm->data + (size_t)c->rank * SHM_SLOT, send, bytes);
    shm_barrier(c);
    for (int r = 0; r < c->nranks; r++)
        memcpy((char *)recv + (size_t)r * bytes, c->shm->data + (size_t)r * SHM_SLOT, bytes);
    return shm_barrier(c);
}

static int shm_bcast(void *ctx, void *buf, size_t bytes, int root)
{
    rank_ctx_t *c = ctx;
    if (bytes > SHM_SLOT)
        return -1;
    if (c->rank == root)
        memcpy(c->shm->data, buf, bytes);
    shm_barrier(c);
    if (c->rank != root)
        memcpy(buf, c->shm->data, bytes);
    return shm_barrier(c);
}

static void shm_log(void *ctx, const char *msg)
{
    fprintf(stderr, "p2p_selftest[%d]: %s\n", ((rank_ctx_t *)ctx)->rank, msg);
}

/* Sum of an int over ranks. */
static int sum_ranks(rank_ctx_t *c, const arb_host_ops_t *ops, long v, long *sum)
{
    long all[64];
    if (ops->allgather(ops->ctx, &v, all, sizeof v))
        return -1;
    *sum = 0;
    for (int r = 0; r < c->nranks; r++)
        *sum += all[r];
    return 0;
}

/* One check on this rank (tests/common/tap.h; rank 0 prints the TAP lines). */
__attribute__((format(printf, 3, 4))) static void tap(rank_ctx_t *c, int ok, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!ok)
        c->failures++;
    tap_ok(ok, "%s", what);
}

/* Small integers, so that the bf16 sum over <= 16 ranks is exact. */
static int pattern(size_t i, int rank, int seed) { return (int)((i * 131u + (size_t)rank * 7u + (size_t)seed * 13u) % 33u) - 16; }

static uint16_t f2bf(float f) { uint32_t u; memcpy(&u, &f, 4); return (uint16_t)(u >> 16); } /* exact for small ints */
static float bf2f(uint16_t h) { uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }

static void fill_host(void *h, size_t count, int bf16, int rank, int seed)
{
    for (size_t i = 0; i < count; i++) {
        float v = (float)pattern(i, rank, seed);
        if (bf16)
            ((uint16_t *)h)[i] = f2bf(v);
        else
            ((float *)h)[i] = v;
    }
}

/* Wrong elements of recv (count elements) plus a changed element right after it. */
static long count_wrong(const void *h, size_t count, int bf16, int nranks, int seed)
{
    long wrong = 0;
    for (size_t i = 0; i < count; i++) {
        float want = 0;
        for (int r = 0; r < nranks; r++)
            want += (float)pattern(i, r, seed);
        float got = bf16 ? bf2f(((const uint16_t *)h)[i]) : ((const float *)h)[i];
        if (got != want) /* NaN never equals */
            wrong++;
    }
    const unsigned char *guard = (const unsigned char *)h + count * (bf16 ? 2 : 4);
    for (int i = 0; i < (bf16 ? 2 : 4); i++)
        if (guard[i] != 0xFF)
            wrong++;
    return wrong;
}

#define NSLOT 4
#define SLOT_PAD 64 /* bytes between slots; slot k starts 16*k bytes into its block */

typedef struct bufs {
    char *send, *recv; /* device, NSLOT blocks of block_bytes */
    size_t block_bytes;
    void *host;
} bufs_t;

static char *slot_ptr(char *base, const bufs_t *b, int k) { return base + (size_t)k * b->block_bytes + 16u * (unsigned)k; }

/* One point: eager (1 call, slot 0) or graph (NSLOT calls on rotating slots captured
 * once, replayed `replays` times). Returns wrong elements summed over ranks, or -1. */
static long run_point(rank_ctx_t *c, const arb_host_ops_t *ops, const arb_plugin_t *pl, void *st, bufs_t *b,
                      size_t count, int bf16, int graph, int replays, char *why, size_t why_len)
{
    const size_t bytes = count * (bf16 ? 2 : 4);
    cudaStream_t s;
    long wrong = 0, total;
    int nslot = graph ? NSLOT : 1, err = 0;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    for (int k = 0; k < nslot; k++) {
        fill_host(b->host, count, bf16, c->rank, k);
        cudaMemcpy(slot_ptr(b->send, b, k), b->host, bytes, cudaMemcpyHostToDevice);
        cudaMemset(slot_ptr(b->recv, b, k), 0xFF, bytes + 16);
    }
    cudaDeviceSynchronize(); /* cudaMemset is asynchronous, and s does not wait for the legacy stream */
    arb_dtype_t dt = bf16 ? ARB_DTYPE_BF16 : ARB_DTYPE_FP32;
    if (!graph) {
        if (pl->allreduce(st, slot_ptr(b->send, b, 0), slot_ptr(b->recv, b, 0), count, dt, s, why, sizeof why) != ARB_OK)
            err = 1;
    } else {
        cudaGraph_t g;
        cudaGraphExec_t ge;
        cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
        for (int k = 0; k < NSLOT; k++)
            if (pl->allreduce(st, slot_ptr(b->send, b, k), slot_ptr(b->recv, b, k), count, dt, s, why, sizeof why) != ARB_OK)
                err = 1;
        if (cudaStreamEndCapture(s, &g) != cudaSuccess || cudaGraphInstantiate(&ge, g, 0) != cudaSuccess) {
            snprintf(why, why_len, "graph capture failed: %s", cudaGetErrorString(cudaGetLastError()));
            err = 1;
        } else {
            for (int i = 0; i < replays; i++)
                cudaGraphLaunch(ge, s);
            cudaStreamSynchronize(s);
            cudaGraphExecDestroy(ge);
            cudaGraphDestroy(g);
        }
    }
    cudaError_t ce = cudaStreamSynchronize(s);
    if (ce != cudaSuccess) {
        snprintf(why, why_len, "stream: %s", cudaGetErrorString(ce));
        err = 1;
    }
    if (pl->query_error && pl->query_error(st, why, why_len) != ARB_OK)
        err = 1;
    const int verify = !(pl->caps & ARB_CAP_REFERENCE); /* the ping moves no data */
    for (int k = 0; k < nslot && !err && verify; k++) {
        cudaMemcpy(b->host, slot_ptr(b->recv, b, k), bytes + 16, cudaMemcpyDeviceToHost);
        wrong += count_wrong(b->host, count, bf16, c->nranks, k);
    }
    cudaStreamDestroy(s);
    if (err)
        wrong = -1000000;
    if (sum_ranks(c, ops, wrong, &total))
        return -1;
    return total < 0 ? -1 : total;
}

/* Eager and graph checks of one parameter string over sizes (bytes) and dtypes. */
static void check_variant(rank_ctx_t *c, const arb_host_ops_t *ops, const arb_plugin_t *pl, const char *params,
                          const size_t *sizes, int nsizes, int replays, bufs_t *b, size_t max_bytes)
{
    arb_comm_info_t info = {.rank = c->rank, .nranks = c->nranks, .local_rank = c->rank,
                            .local_nranks = c->nranks, .node = 0, .nnodes = 1, .cuda_device = c->rank,
                            .max_bytes = max_bytes};
    void *st = NULL;
    char why[512] = "";
    arb_status_t s = pl->init(&info, ops, params, &st, why, sizeof why);
    tap(c, s == ARB_OK, "%s init '%s' %s", pl->name, params, s == ARB_OK ? "" : why);
    if (s != ARB_OK)
        return;
    const char *desc = pl->describe ? pl->describe(st) : params;
    for (int bf16 = 1; bf16 >= 0; bf16--)
        for (int i = 0; i < nsizes; i++) {
            size_t count = sizes[i] / (bf16 ? 2 : 4);
            if (count == 0)
                continue;
            for (int graph = 0; graph <= 1; graph++) {
                why[0] = '\0';
                long w = run_point(c, ops, pl, st, b, count, bf16, graph, graph ? replays : 1, why, sizeof why);
                char label[600];
                snprintf(label, sizeof label, "%s %s %s wrong=%ld %s", bf16 ? "bf16" : "fp32",
                         graph ? "graph" : "eager", desc, w, why);
                tap(c, w == 0, "%s %zu B %s", pl->name, sizes[i], label);
            }
        }
    pl->finalize(st);
}

/* test_hang_rank=1 with a short timeout: every rank must report the timeout. */
static void check_hang(rank_ctx_t *c, const arb_host_ops_t *ops, const arb_plugin_t *pl, const char *variant,
                       bufs_t *b)
{
    char params[256];
    snprintf(params, sizeof params, "%s%stimeout_ms=300,test_hang_rank=1", variant, *variant ? "," : "");
    arb_comm_info_t info = {.rank = c->rank, .nranks = c->nranks, .local_rank = c->rank,
                            .local_nranks = c->nranks, .nnodes = 1, .cuda_device = c->rank, .max_bytes = 43008};
    void *st = NULL;
    char why[512] = "";
    if (pl->init(&info, ops, params, &st, why, sizeof why) != ARB_OK) {
        tap(c, 0, "%s hang init '%s' %s", pl->name, params, why);
        return;
    }
    cudaStream_t s;
    cudaStreamCreate(&s);
    for (int i = 0; i < 3; i++)
        pl->allreduce(st, b->send, b->recv, 43008 / 2, ARB_DTYPE_BF16, s, why, sizeof why);
    cudaError_t ce = cudaStreamSynchronize(s);
    why[0] = '\0';
    arb_status_t qs = pl->query_error(st, why, sizeof why);
    long ok = ce == cudaSuccess && qs == ARB_ERR_TIMEOUT && strstr(why, "spin-wait timed out waiting for rank"), all = 0;
    if (ok)
        fprintf(stderr, "p2p_selftest[%d]: %s '%s': %s\n", c->rank, pl->name, params, why);
    else
        fprintf(stderr, "p2p_selftest[%d]: %s '%s': expected a timeout, got status %d '%s' (stream: %s)\n", c->rank,
                pl->name, params, (int)qs, why, cudaGetErrorString(ce));
    sum_ranks(c, ops, ok, &all);
    tap(c, all == c->nranks, "%s timeout path '%s': every rank reported the timeout", pl->name, params);
    cudaStreamDestroy(s);
    pl->finalize(st);
}

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* Median us per call at 43,008 B bf16: eager (events around each call) and graph
 * (20 calls per graph, 50 replays timed one by one). */
static void bench_variant(rank_ctx_t *c, const arb_host_ops_t *ops, const arb_plugin_t *pl, const char *params,
                          bufs_t *b)
{
    enum { ITERS = 200, PER_GRAPH = 20, REPLAYS = 50 };
    arb_comm_info_t info = {.rank = c->rank, .nranks = c->nranks, .local_rank = c->rank,
                            .local_nranks = c->nranks, .nnodes = 1, .cuda_device = c->rank, .max_bytes = 43008};
    void *st = NULL;
    char why[512] = "";
    if (pl->init(&info, ops, params, &st, why, sizeof why) != ARB_OK) {
        tap(c, 0, "%s bench init '%s' %s", pl->name, params, why);
        return;
    }
    const size_t count = 43008 / 2;
    cudaStream_t s;
    cudaEvent_t e0, e1;
    cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    float eager[ITERS], graph[REPLAYS];
    for (int i = 0; i < 20; i++)
        pl->allreduce(st, b->send, b->recv, count, ARB_DTYPE_BF16, s, why, sizeof why);
    cudaStreamSynchronize(s);
    ops->barrier(ops->ctx);
    for (int i = 0; i < ITERS; i++) {
        cudaEventRecord(e0, s);
        pl->allreduce(st, b->send, b->recv, count, ARB_DTYPE_BF16, s, why, sizeof why);
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&eager[i], e0, e1);
    }
    cudaGraph_t g;
    cudaGraphExec_t ge;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal);
    for (int i = 0; i < PER_GRAPH; i++)
        pl->allreduce(st, slot_ptr(b->send, b, i % NSLOT), slot_ptr(b->recv, b, i % NSLOT), count, ARB_DTYPE_BF16, s, why, sizeof why);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&ge, g, 0);
    cudaGraphLaunch(ge, s);
    cudaStreamSynchronize(s);
    ops->barrier(ops->ctx);
    for (int i = 0; i < REPLAYS; i++) {
        cudaEventRecord(e0, s);
        cudaGraphLaunch(ge, s);
        cudaEventRecord(e1, s);
        cudaEventSynchronize(e1);
        cudaEventElapsedTime(&graph[i], e0, e1);
        graph[i] /= PER_GRAPH;
    }
    arb_status_t qs = pl->query_error(st, why, sizeof why);
    qsort(eager, ITERS, sizeof eager[0], cmp_float);
    qsort(graph, REPLAYS, sizeof graph[0], cmp_float);
    if (c->rank == 0)
        printf("# bench %-5s %-48s eager median %7.2f us   graph median %7.2f us/call%s%s\n", pl->name,
               pl->describe ? pl->describe(st) : params, 1000 * eager[ITERS / 2], 1000 * graph[REPLAYS / 2],
               qs == ARB_OK ? "" : "  ERROR: ", qs == ARB_OK ? "" : why);
    tap(c, qs == ARB_OK, "%s bench '%s'", pl->name, params);
    cudaGraphExecDestroy(ge);
    cudaGraphDestroy(g);
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
    cudaStreamDestroy(s);
    pl->finalize(st);
}

static int run_rank(rank_ctx_t *c, const char *mode, const char *p2p_so, const char *ping_so)
{
    tap_set_agree(NULL, c->rank != 0);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < c->nranks)
        return 77; /* the same answer on every rank: nobody enters a collective */
    cudaSetDevice(c->rank);
    arb_host_ops_t ops = {.ctx = c, .allgather = shm_allgather, .bcast = shm_bcast, .barrier = shm_barrier,
                          .log = shm_log};
    arb_loaded_plugin_t lp2p, lping;
    char err[4096];
    if (arb_plugin_load(p2p_so, &lp2p, err, sizeof err) || arb_plugin_load(ping_so, &lping, err, sizeof err)) {
        fprintf(stderr, "p2p_selftest: %s\n", err);
        return 1;
    }
    const arb_plugin_t *p2p = lp2p.plugin, *ping = lping.plugin;
    static const size_t check_sizes[] = {2, 6, 14, 1000, 1000002, 43008, (9u << 20) + 6};
    static const size_t stress_sizes[] = {43008, 1000002};
    size_t max_bytes = (9u << 20) + 6;
    /* Blocks 256-byte aligned: slot k then starts 16*k bytes in, aligned as the ABI says. */
    bufs_t b = {.block_bytes = (max_bytes + 16 * NSLOT + SLOT_PAD + 255) / 256 * 256};
    if (cudaMalloc((void **)&b.send, NSLOT * b.block_bytes) || cudaMalloc((void **)&b.recv, NSLOT * b.block_bytes) ||
        !(b.host = malloc(b.block_bytes))) {
        fprintf(stderr, "p2p_selftest: cannot allocate test buffers\n");
        return 1;
    }
    cudaMemset(b.send, 0, NSLOT * b.block_bytes);
    if (c->rank == 0)
        printf("# p2p_selftest %s, %d ranks\n", mode, c->nranks);
    if (strcmp(mode, "check") == 0) {
        for (const char *const *v = p2p->variants; *v; v++)
            check_variant(c, &ops, p2p, *v, check_sizes, 7, 3, &b, max_bytes);
        check_variant(c, &ops, ping, "", check_sizes, 1, 3, &b, max_bytes); /* no result check: REFERENCE */
    } else if (strcmp(mode, "stress") == 0) {
        for (const char *const *v = p2p->variants; *v; v++)
            check_variant(c, &ops, p2p, *v, stress_sizes, 2, 2500, &b, max_bytes);
    } else if (strcmp(mode, "hang") == 0) {
        if (c->nranks < 2) {
            if (c->rank == 0)
                printf("1..0 # SKIP the timeout path needs 2 ranks\n");
            return 77;
        }
        for (const char *const *v = p2p->variants; *v; v++)
            check_hang(c, &ops, p2p, *v, &b);
        check_hang(c, &ops, ping, "", &b);
    } else if (strcmp(mode, "bench") == 0) {
        bench_variant(c, &ops, ping, "", &b);
        bench_variant(c, &ops, p2p, "variant=oneshot-push,blocks=1,threads=32", &b);
        bench_variant(c, &ops, p2p, "variant=oneshot-flagfree,blocks=1,threads=32", &b);
        for (const char *const *v = p2p->variants; *v; v++)
            bench_variant(c, &ops, p2p, *v, &b);
        bench_variant(c, &ops, ping, "", &b);
    } else {
        fprintf(stderr, "p2p_selftest: mode '%s': expected check, stress, hang or bench\n", mode);
        return 2;
    }
    tap_done(); /* the plan line on rank 0 */
    cudaFree(b.send);
    cudaFree(b.recv);
    free(b.host);
    arb_plugin_unload(&lp2p);
    arb_plugin_unload(&lping);
    return c->failures ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: p2p_selftest NRANKS check|stress|hang|bench PATH/arb-p2p.so PATH/arb-ping.so\n");
        return 2;
    }
    int nranks = atoi(argv[1]);
    if (nranks < 1 || nranks > 16) {
        fprintf(stderr, "p2p_selftest: NRANKS '%s': expected 1..16\n", argv[1]);
        return 2;
    }
    /* Shared memory and a process-shared barrier before fork; no CUDA in the parent. */
    shm_t *shm = mmap(NULL, sizeof *shm + (size_t)nranks * SHM_SLOT, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        perror("p2p_selftest: mmap");
        return 1;
    }
    pthread_barrierattr_t ba;
    pthread_barrierattr_init(&ba);
    pthread_barrierattr_setpshared(&ba, PTHREAD_PROCESS_SHARED);
    pthread_barrier_init(&shm->barrier, &ba, (unsigned)nranks);
    shm->nranks = nranks;
    fflush(stdout);
    pid_t pids[16];
    for (int r = 0; r < nranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            rank_ctx_t c = {.shm = shm, .rank = r, .nranks = nranks};
            int rc = run_rank(&c, argv[2], argv[3], argv[4]);
            fflush(stdout);
            _exit(rc);
        }
    }
    int worst = 0, skipped = 0;
    for (int r = 0; r < nranks; r++) {
        int status;
        waitpid(pids[r], &status, 0);
        int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
        if (rc == 77)
            skipped++;
        else if (rc)
            worst = 1;
    }
    if (skipped == nranks) {
        printf("1..0 # SKIP no CUDA device visible, or fewer than %d\n", nranks);
        return 77;
    }
    return worst;
}
