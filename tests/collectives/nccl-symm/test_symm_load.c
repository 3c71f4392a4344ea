/* SPDX-License-Identifier: MIT */
/*
 * Unit test (no GPU, no MPI launcher): loads arb-nccl-symm.so and arb-lsa.so through
 * the real loader (arb_plugin_load by name) and checks names, caps, variants and
 * that bad parameters are refused with a message naming them, before any CUDA call
 * (on a machine without a GPU a CUDA call would answer "no CUDA device visible");
 * lsa's fused allreduce_rmsnorm is present and refuses bad arguments (and a missing
 * instance) with one line naming the input.
 *
 *   test_symm_load                 normal run
 *   ARB_SYMM_EXPECT_MISMATCH=CODE  run under LD_PRELOAD of a fake ncclGetVersion
 *                                  that reports CODE: lsa must decline with the
 *                                  header/library mismatch message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "arbench/plugin.h"
#include "base/common.h"
#include "runtime/loader.h"
#include "one_rank_ops.h"
#include "tap.h"

static const arb_comm_info_t info = {
    .rank = 0, .nranks = 1, .local_rank = 0, .local_nranks = 1, .node = 0, .nnodes = 1,
    .cuda_device = 0, .max_bytes = 43008, .max_tokens = 3, .hidden = 7168, .mpi_comm = NULL,
};

static int sentinel;

/* init(params) must return `want` with a message containing `needle` and leave
 * *state untouched. */
static void expect_init(const arb_plugin_t *p, const char *params, arb_status_t want, const char *needle)
{
    void *state = &sentinel;
    char why[1024] = "";
    arb_status_t st = p->init(&info, &one_rank_ops, params, &state, why, sizeof why);
    tap_ok(st == want && strstr(why, needle) && state == &sentinel,
           "%s init('%s') -> %s (want %s), why names '%s': %s", p->name, params, arb_status_str(st),
           arb_status_str(want), needle, why);
    if (st == ARB_OK && state != &sentinel)
        p->finalize(state);
}

/* Calls lsa's allreduce_rmsnorm with a NULL state (no GPU needed) and args; it must
 * return `want` with one line in why (ABI v2's per-call reason) containing `needle`. */
static void expect_rmsnorm(const arb_plugin_t *p, const arb_rmsnorm_args_t *args, arb_status_t want, const char *needle,
                           const char *what)
{
    char msg[1024] = "";
    arb_status_t st = p->allreduce_rmsnorm(NULL, args, NULL, msg, sizeof msg);
    int one_line = msg[0] != '\0' && !strchr(msg, '\n');
    tap_ok(st == want && strstr(msg, needle) && one_line, "lsa allreduce_rmsnorm(%s) -> %s (want %s), one line naming '%s': %s",
           what, arb_status_str(st), arb_status_str(want), needle, msg);
}

/* Bad arguments are refused before the instance is touched, each with a message
 * naming the input; valid arguments with no instance are refused too. */
static void check_lsa_rmsnorm(const arb_plugin_t *p)
{
    tap_ok(p->allreduce_rmsnorm != NULL, "lsa: allreduce_rmsnorm (the fused op) is provided");
    if (!p->allreduce_rmsnorm)
        return;
    static uint16_t buf[64]; /* host memory: never dereferenced, only checked */
    const arb_rmsnorm_args_t good = {.x = buf, .residual = buf + 8, .weight = buf + 16, .out = buf + 24,
                                     .tokens = 3, .hidden = 7, .eps = 1e-6f};
    arb_rmsnorm_args_t a;
    expect_rmsnorm(p, NULL, ARB_ERR_INVALID, "args is NULL", "args NULL");
    a = good, a.x = NULL;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "x is NULL, expected a device pointer", "x NULL");
    a = good, a.weight = NULL;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "weight is NULL", "weight NULL");
    a = good, a.out = (char *)buf + 1;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "expected 2-byte aligned bf16 pointers", "odd out");
    a = good, a.hidden = 0;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "hidden=0, expected at least 1", "hidden 0");
    a = good, a.eps = -1.0f;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "eps=-1, expected a finite value >= 0", "eps -1");
    a = good, a.eps = 1.0f / 0.0f;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "eps=inf", "eps inf");
    a = good, a.eps = 0.0f / 0.0f;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "expected a finite value >= 0", "eps nan");
    a = good, a.tokens = 4000000000u, a.hidden = 4000000000u;
    expect_rmsnorm(p, &a, ARB_ERR_INVALID, "expected at most 2^40 elements", "tokens x hidden too large");
    expect_rmsnorm(p, &good, ARB_ERR_INVALID, "state is NULL, expected the instance from init", "valid args, no instance");
}

static int has_gpu(void)
{
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

static void check_nccl_symm(const arb_plugin_t *p)
{
    const uint32_t caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_ALLOC | ARB_CAP_SINGLE_NODE |
                          ARB_CAP_BF16 | ARB_CAP_FP32;
    tap_ok(strcmp(p->name, "nccl-symm") == 0, "nccl-symm: name is '%s'", p->name);
    tap_ok(p->caps == caps, "nccl-symm: caps 0x%x (want 0x%x)", p->caps, caps);
    tap_ok(p->variants == NULL, "nccl-symm: one default variant");
    tap_ok(p->mem_alloc && p->mem_free && p->describe && p->query_error, "nccl-symm: mem_alloc, mem_free, describe, query_error");
    expect_init(p, "algo=Ring", ARB_ERR_INVALID, "algo=Ring");
    expect_init(p, "proto", ARB_ERR_INVALID, "'proto' is not key=value");
}

static void check_lsa(const arb_plugin_t *p)
{
    const uint32_t need = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_ALLOC | ARB_CAP_SINGLE_NODE |
                          ARB_CAP_BF16 | ARB_CAP_FP32;
    tap_ok(strcmp(p->name, "lsa") == 0, "lsa: name is '%s'", p->name);
    tap_ok((p->caps & need) == need && !(p->caps & (ARB_CAP_HOST_MEMORY | ARB_CAP_REFERENCE)), "lsa: caps 0x%x", p->caps);
    int nvar = 0;
    while (p->variants && p->variants[nvar])
        nvar++;
    tap_ok(nvar == 5 && !strcmp(p->variants[0], "variant=oneshot-pull") && !strcmp(p->variants[1], "variant=oneshot-push") &&
               !strcmp(p->variants[2], "variant=oneshot-flagfree,blocks=24,threads=256") &&
               !strcmp(p->variants[3], "variant=oneshot-flagfree,blocks=12,threads=512") &&
               !strcmp(p->variants[4], "variant=oneshot-flagfree,blocks=24,threads=256,pdl=1"),
           "lsa: variants are oneshot-pull, oneshot-push, oneshot-flagfree (24x256, 12x512, 24x256 with pdl) (%d listed)", nvar);
    tap_ok(p->mem_alloc && p->mem_free && p->describe && p->query_error, "lsa: mem_alloc, mem_free, describe, query_error");
    expect_init(p, "", ARB_ERR_INVALID, "lack variant=");
    expect_init(p, "variant=twoshot", ARB_ERR_INVALID, "variant='twoshot'");
    expect_init(p, "variant=oneshot-pull,barrier=spin", ARB_ERR_INVALID, "barrier='spin'");
    expect_init(p, "variant=oneshot-pull,blocks=0", ARB_ERR_INVALID, "blocks='0'");
    expect_init(p, "blocks=65,variant=oneshot-push", ARB_ERR_INVALID, "blocks='65'");
    expect_init(p, "variant=oneshot-push,timeout_ms=5s", ARB_ERR_INVALID, "timeout_ms='5s'");
    expect_init(p, "variant=oneshot-push,colour=red", ARB_ERR_INVALID, "unknown parameter 'colour'");
    expect_init(p, "variant=", ARB_ERR_INVALID, "'variant=' is not key=value");
    expect_init(p, "variant=oneshot-push,threads=256", ARB_ERR_INVALID, "threads applies to variant=oneshot-flagfree only");
    expect_init(p, "variant=oneshot-pull,test_hang_rank=0", ARB_ERR_INVALID, "test_hang_rank applies to variant=oneshot-flagfree only");
    expect_init(p, "variant=oneshot-flagfree,threads=100", ARB_ERR_INVALID, "threads='100'");
    expect_init(p, "variant=oneshot-flagfree,threads=2048", ARB_ERR_INVALID, "threads='2048'");
    expect_init(p, "variant=oneshot-flagfree,threads=32", ARB_ERR_INVALID, "threads='32'");
    expect_init(p, "variant=oneshot-flagfree,barrier=nccl", ARB_ERR_INVALID, "barrier applies to oneshot-pull and oneshot-push only");
    expect_init(p, "variant=oneshot-flagfree,test_hang_rank=x", ARB_ERR_INVALID, "test_hang_rank='x'");
    expect_init(p, "variant=oneshot-flagfree,row_blocks=3", ARB_ERR_INVALID, "row_blocks='3', expected auto, 1, 2, 4 or 8");
    expect_init(p, "variant=oneshot-flagfree,row_blocks=16", ARB_ERR_INVALID, "row_blocks='16'");
    expect_init(p, "variant=oneshot-flagfree,pdl=2", ARB_ERR_INVALID, "pdl='2', expected 0 or 1");
    expect_init(p, "variant=oneshot-push,row_blocks=2", ARB_ERR_INVALID, "row_blocks and pdl apply to variant=oneshot-flagfree only");
    expect_init(p, "variant=oneshot-pull,pdl=1", ARB_ERR_INVALID, "row_blocks and pdl apply to variant=oneshot-flagfree only");
    /* info.nranks is 1: rank 1 does not exist. */
    expect_init(p, "variant=oneshot-flagfree,test_hang_rank=1", ARB_ERR_INVALID, "test_hang_rank=1, expected a rank from 0 to 0");
}

int main(void)
{
    const char *mismatch = getenv("ARB_SYMM_EXPECT_MISMATCH");
    arb_loaded_plugin_t symm, lsa;
    char err[4096];
    int ok_symm = arb_plugin_load("nccl-symm", &symm, err, sizeof err) == 0;
    tap_ok(ok_symm, "arb_plugin_load(nccl-symm)%s%s", ok_symm ? "" : ": ", ok_symm ? "" : err);
    int ok_lsa = arb_plugin_load("lsa", &lsa, err, sizeof err) == 0;
    tap_ok(ok_lsa, "arb_plugin_load(lsa)%s%s", ok_lsa ? "" : ": ", ok_lsa ? "" : err);

    if (mismatch) {
        /* The check comes before any CUDA call, so even without a GPU the answer is
         * the mismatch, not "no CUDA device visible". */
        if (ok_lsa) {
            char needle[64];
            snprintf(needle, sizeof needle, "but NCCL %d.%d.%d is loaded", atoi(mismatch) / 10000,
                     atoi(mismatch) / 100 % 100, atoi(mismatch) % 100);
            expect_init(lsa.plugin, "variant=oneshot-pull", ARB_DECLINE, needle);
            expect_init(lsa.plugin, "variant=oneshot-push", ARB_DECLINE, "NCCL header/library mismatch");
            expect_init(lsa.plugin, "variant=oneshot-flagfree", ARB_DECLINE, "NCCL header/library mismatch");
        }
    } else {
        if (ok_symm)
            check_nccl_symm(symm.plugin);
        if (ok_lsa)
            check_lsa(lsa.plugin);
        if (ok_lsa)
            check_lsa_rmsnorm(lsa.plugin);
        if (has_gpu()) {
            tap_skip("a GPU is visible: covered by the gpu suite (symm-sweep-*)", "init with valid parameters");
        } else {
            if (ok_symm)
                expect_init(symm.plugin, "", ARB_ERR_SYSTEM, "no CUDA device visible");
            if (ok_lsa)
                expect_init(lsa.plugin, "variant=oneshot-push,barrier=nccl,blocks=8,timeout_ms=100", ARB_ERR_SYSTEM,
                            "no CUDA device visible");
            if (ok_lsa)
                expect_init(lsa.plugin, "variant=oneshot-flagfree,blocks=12,threads=512,timeout_ms=100", ARB_ERR_SYSTEM,
                            "no CUDA device visible");
            if (ok_lsa)
                expect_init(lsa.plugin, "variant=oneshot-flagfree,row_blocks=auto,pdl=1", ARB_ERR_SYSTEM,
                            "no CUDA device visible");
            if (ok_lsa)
                expect_init(lsa.plugin, "variant=oneshot-flagfree,row_blocks=8,pdl=0", ARB_ERR_SYSTEM,
                            "no CUDA device visible");
        }
    }
    if (ok_symm)
        arb_plugin_unload(&symm);
    if (ok_lsa)
        arb_plugin_unload(&lsa);
    return tap_done();
}
