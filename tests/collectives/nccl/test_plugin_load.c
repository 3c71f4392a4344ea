/* SPDX-License-Identifier: MIT */
/*
 * Unit test of arb-nccl.so and arb-noop.so through the real loading path
 * (src/runtime/loader.h: dlopen, symbol lookup, ABI validation).
 *   test_plugin_load [--nccl PATH] [--noop PATH]
 * Without a GPU it checks everything that must work before CUDA is touched (the
 * struct, parameter validation, declines) and that init then says "no CUDA device
 * visible". With a GPU it also runs a one-rank init / allreduce / finalize.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "arbench/plugin.h"
#include "runtime/loader.h"
#include "tap.h"

static int fake_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    (void)ctx;
    memcpy(recv, send, bytes); /* one rank: its own block is the whole result */
    return 0;
}
static int fake_bcast(void *ctx, void *buf, size_t bytes, int root)
{
    (void)ctx, (void)buf, (void)bytes, (void)root;
    return 0;
}
static int fake_barrier(void *ctx)
{
    (void)ctx;
    return 0;
}
static void fake_log(void *ctx, const char *msg)
{
    (void)ctx;
    printf("# plugin log: %s\n", msg);
}

static const arb_host_ops_t one_rank_ops = {
    .ctx = NULL, .allgather = fake_allgather, .bcast = fake_bcast,
    .barrier = fake_barrier, .log = fake_log,
};

static arb_comm_info_t info_for(int nranks)
{
    return (arb_comm_info_t){
        .rank = 0, .nranks = nranks, .local_rank = 0, .local_nranks = nranks,
        .node = 0, .nnodes = 1, .cuda_device = 0, .max_bytes = 1 << 20,
        .max_tokens = 0, .hidden = 0, .mpi_comm = NULL,
    };
}

static int gpu_visible(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

/* init must fail the way `want` says, with every fragment in `mentions` in why,
 * without touching *state. */
static void expect_init(const arb_plugin_t *p, int nranks, const char *params, arb_status_t want,
                        const char *const *mentions)
{
    void *sentinel = (void *)&one_rank_ops, *state = sentinel;
    char why[1024] = "";
    arb_comm_info_t info = info_for(nranks);
    arb_status_t st = p->init(&info, &one_rank_ops, params, &state, why, sizeof why);
    int named = why[0] != '\0' && !strchr(why, '\n');
    for (const char *const *m = mentions; *m; m++)
        named &= strstr(why, *m) != NULL;
    tap_ok(st == want && named && state == sentinel, "%s init('%s', nranks=%d) -> %d (want %d): %s", p->name, params, nranks, (int)st, (int)want, why);
    if (st == ARB_OK && state != sentinel)
        p->finalize(state);
}

static uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

/* One rank: recv must equal send, bitwise, in both dtypes. */
static void run_one_rank(const arb_plugin_t *p, const char *params, int check_data)
{
    void *state = NULL;
    char why[1024] = "";
    arb_comm_info_t info = info_for(1);
    arb_status_t st = p->init(&info, &one_rank_ops, params, &state, why, sizeof why);
    tap_ok(st == ARB_OK, "%s init('%s') on one GPU: %s", p->name, params, st == ARB_OK ? "ok" : why);
    if (st != ARB_OK)
        return;
    if (p->describe)
        printf("# %s describe: %s\n", p->name, p->describe(state));
    enum { N = 4096 };
    static float f32[N], f32_back[N];
    static uint16_t b16[N], b16_back[N];
    for (int i = 0; i < N; i++) {
        f32[i] = (float)(i % 61 - 30);
        b16[i] = bf16_of((float)(i % 37 - 18));
    }
    void *send = NULL, *recv = NULL;
    cudaStream_t stream = NULL;
    int ok = cudaMalloc(&send, sizeof f32) == cudaSuccess && cudaMalloc(&recv, sizeof f32) == cudaSuccess &&
             cudaStreamCreate(&stream) == cudaSuccess;
    ok = ok && cudaMemcpy(send, f32, sizeof f32, cudaMemcpyHostToDevice) == cudaSuccess;
    ok = ok && p->allreduce(state, send, recv, N, ARB_DTYPE_FP32, stream, why, sizeof why) == ARB_OK;
    ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
    ok = ok && cudaMemcpy(f32_back, recv, sizeof f32, cudaMemcpyDeviceToHost) == cudaSuccess;
    ok = ok && cudaMemcpy(send, b16, sizeof b16, cudaMemcpyHostToDevice) == cudaSuccess;
    /* A 16-byte offset into the buffers, as the harness may pass. */
    ok = ok && p->allreduce(state, (char *)send + 16, (char *)recv + 16, N - 8, ARB_DTYPE_BF16, stream, why, sizeof why) == ARB_OK;
    ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
    ok = ok && cudaMemcpy(b16_back, recv, sizeof b16, cudaMemcpyDeviceToHost) == cudaSuccess;
    tap_ok(ok, "%s allreduce fp32 and bf16 enqueued and completed", p->name);
    if (ok && check_data)
        tap_ok(memcmp(f32, f32_back, sizeof f32) == 0 && memcmp(b16 + 8, b16_back + 8, (N - 8) * sizeof *b16) == 0,
               "%s one-rank sum equals the input, bitwise, fp32 and bf16", p->name);
    if (p->query_error) {
        char qwhy[256] = "";
        tap_ok(p->query_error(state, qwhy, sizeof qwhy) == ARB_OK, "%s query_error reports nothing %s", p->name, qwhy);
    }
    p->finalize(state);
    cudaFree(send);
    cudaFree(recv);
    if (stream)
        cudaStreamDestroy(stream);
}

static void test_nccl(const char *path, int gpu)
{
    arb_loaded_plugin_t lp;
    char err[8192] = "";
    int rc = arb_plugin_load(path, &lp, err, sizeof err);
    tap_ok(rc == 0, "load %s: %s", path, rc == 0 ? "ok" : err);
    if (rc != 0)
        return;
    const arb_plugin_t *p = lp.plugin;
    tap_ok(strcmp(p->name, "nccl") == 0 && p->abi_version == ARB_PLUGIN_ABI_VERSION, "name 'nccl', ABI %u", p->abi_version);
    uint32_t want =
        ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_BASELINE | ARB_CAP_IN_PLACE;
    tap_ok(p->caps == want, "caps 0x%x == DEVICE_MEMORY|GRAPH_SAFE|BF16|FP32|BASELINE|IN_PLACE (0x%x)", p->caps, want);
    static const char *const variants[] = {
        "", "algo=Ring,proto=LL", "algo=Ring,proto=LL128", "algo=Ring,proto=Simple",
        "algo=Tree,proto=LL", "algo=Tree,proto=LL128", "algo=Tree,proto=Simple", NULL,
    };
    int same = p->variants != NULL;
    for (int i = 0; same && variants[i]; i++)
        same = p->variants[i] && strcmp(p->variants[i], variants[i]) == 0;
    same = same && p->variants[6] && !p->variants[7];
    tap_ok(same, "variants: auto, then Ring and Tree x LL, LL128, Simple");
    tap_ok(p->describe && p->query_error && !p->mem_alloc && !p->allreduce_rmsnorm, "describe and query_error set; no allocator, no fused op");

    /* Parameter validation happens before any CUDA or NCCL call: on a machine without a
     * GPU these return ARB_ERR_INVALID, not "no CUDA device". */
    expect_init(p, 2, "algo=Bogus", ARB_ERR_INVALID, (const char *const[]){"'Bogus'", "auto, Ring, Tree", NULL});
    expect_init(p, 2, "proto=LL256", ARB_ERR_INVALID, (const char *const[]){"'LL256'", "LL128", NULL});
    expect_init(p, 2, "algo=Ring,speed=max", ARB_ERR_INVALID, (const char *const[]){"'speed'", "algo, proto, channels", NULL});
    expect_init(p, 2, "channels=100", ARB_ERR_INVALID, (const char *const[]){"channels '100'", NULL});
    /* One rank: NCCL runs a local copy whatever is forced, so forced variants decline. */
    expect_init(p, 1, "algo=Tree,proto=LL", ARB_DECLINE, (const char *const[]){"one rank", NULL});
    expect_init(p, 1, "channels=2", ARB_DECLINE, (const char *const[]){"one rank", NULL});
    if (!gpu) {
        expect_init(p, 2, "algo=Ring,proto=LL", ARB_ERR_SYSTEM, (const char *const[]){"no CUDA device visible", NULL});
        expect_init(p, 1, "", ARB_ERR_SYSTEM, (const char *const[]){"no CUDA device visible", NULL});
    } else {
        run_one_rank(p, "", 1);
        run_one_rank(p, "algo=auto,proto=auto", 1);
    }

    /* The bare name resolves too (build tree, install tree or $ARBENCH_PLUGIN_PATH). */
    arb_loaded_plugin_t byname;
    rc = arb_plugin_load("nccl", &byname, err, sizeof err);
    tap_ok(rc == 0 && strcmp(byname.plugin->name, "nccl") == 0, "load by name 'nccl': %s", rc == 0 ? byname.path : err);
    if (rc == 0)
        arb_plugin_unload(&byname);
    arb_plugin_unload(&lp);
}

static void test_noop(const char *path, int gpu)
{
    arb_loaded_plugin_t lp;
    char err[8192] = "";
    int rc = arb_plugin_load(path, &lp, err, sizeof err);
    tap_ok(rc == 0, "load %s: %s", path, rc == 0 ? "ok" : err);
    if (rc != 0)
        return;
    const arb_plugin_t *p = lp.plugin;
    tap_ok(strcmp(p->name, "noop") == 0 && p->abi_version == ARB_PLUGIN_ABI_VERSION, "name 'noop', ABI %u", p->abi_version);
    uint32_t want = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_REFERENCE;
    tap_ok(p->caps == want, "caps 0x%x == DEVICE_MEMORY|GRAPH_SAFE|BF16|FP32|REFERENCE (0x%x)", p->caps, want);
    tap_ok(p->variants == NULL, "no variants: one run with \"\"");
    expect_init(p, 2, "blocks=4", ARB_ERR_INVALID, (const char *const[]){"'blocks'", "pdl", NULL});
    expect_init(p, 2, "pdl=2", ARB_ERR_INVALID, (const char *const[]){"pdl=2", "0 or 1", NULL});
    expect_init(p, 2, "pdl=1,pdl=0", ARB_ERR_INVALID, (const char *const[]){"pdl given twice", NULL});
    if (!gpu) {
        expect_init(p, 3, "", ARB_ERR_SYSTEM, (const char *const[]){"no CUDA device visible", NULL});
        expect_init(p, 3, "pdl=1", ARB_ERR_SYSTEM, (const char *const[]){"no CUDA device visible", NULL});
    } else {
        run_one_rank(p, "", 0);
        run_one_rank(p, "pdl=1", 0);
    }
    arb_plugin_unload(&lp);
}

int main(int argc, char **argv)
{
    const char *nccl = NULL, *noop = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--nccl") == 0)
            nccl = argv[i + 1];
        else if (strcmp(argv[i], "--noop") == 0)
            noop = argv[i + 1];
    }
    if (argc % 2 == 0 || (!nccl && !noop)) {
        fprintf(stderr, "usage: %s [--nccl PATH/arb-nccl.so] [--noop PATH/arb-noop.so]\n", argv[0]);
        return 2;
    }
    int gpu = gpu_visible();
    printf("# %s\n", gpu ? "a CUDA device is visible: running one-rank init/allreduce/finalize" : "no CUDA device visible: checking the no-GPU paths");
    /* The harness makes info->cuda_device current before init; so does this test. */
    if (gpu && cudaSetDevice(0) != cudaSuccess) {
        printf("Bail out! cudaSetDevice(0) failed on a machine that reports a GPU\n");
        return 1;
    }
    if (nccl)
        test_nccl(nccl, gpu);
    if (noop)
        test_noop(noop, gpu);
    return tap_done();
}
