/* SPDX-License-Identifier: MIT */
/*
 * Unit test (no GPU, no MPI): loads arb-p2p.so and arb-ping.so through the loader and
 * checks name, caps, variants, parameter validation before any CUDA call (bad
 * params give ARB_ERR_INVALID naming the key, on a machine without a GPU too) and
 * the single-node decline. TAP output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/plugin.h"
#include "runtime/loader.h"
#include "one_rank_ops.h"
#include "tap.h"

/* One TAP line: what, and the detail after ": " when there is one. */
static void ok(int cond, const char *what, const char *detail)
{
    tap_ok(cond, "%s%s%s", what, detail && *detail ? ": " : "", detail ? detail : "");
}

/* init must fail with `want` and a message containing `needle`, touching nothing. */
static void expect_init(const arb_plugin_t *p, const arb_comm_info_t *info, const char *params, arb_status_t want,
                        const char *needle)
{
    void *st = (void *)&one_rank_ops; /* sentinel: must stay untouched */
    char why[512] = "", what[700];
    arb_status_t s = p->init(info, &one_rank_ops, params, &st, why, sizeof why);
    snprintf(what, sizeof what, "%s init '%s' -> %d (want %d), message names '%s'", p->name, params, (int)s,
             (int)want, needle);
    ok(s == want && strstr(why, needle) && st == (void *)&one_rank_ops, what, why);
    if (s == ARB_OK)
        p->finalize(st);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_p2p_plugin PATH/arb-p2p.so PATH/arb-ping.so\n");
        return 2;
    }
    arb_loaded_plugin_t lp, lq;
    char err[4096];
    int loaded = arb_plugin_load(argv[1], &lp, err, sizeof err) == 0;
    ok(loaded, "load arb-p2p.so through the loader", loaded ? "" : err);
    int loaded2 = arb_plugin_load(argv[2], &lq, err, sizeof err) == 0;
    ok(loaded2, "load arb-ping.so through the loader", loaded2 ? "" : err);
    if (!loaded || !loaded2)
        return tap_done();
    const arb_plugin_t *p = lp.plugin, *q = lq.plugin;
    const uint32_t want = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_P2P | ARB_CAP_SINGLE_NODE |
                          ARB_CAP_BF16 | ARB_CAP_FP32;
    ok(strcmp(p->name, "p2p") == 0 && p->caps == want, "p2p: name and caps (device, graph-safe, P2P, single node, bf16, fp32)", "");
    ok(strcmp(q->name, "ping") == 0 && q->caps == (want | ARB_CAP_REFERENCE), "ping: name and caps include REFERENCE", "");
    ok(!(p->caps & ARB_CAP_NEEDS_ALLOC) && p->query_error && p->describe && q->query_error,
       "p2p uses the harness's buffers and reports device errors", "");
    ok(p->allreduce_rmsnorm != NULL && q->allreduce_rmsnorm == NULL, "p2p has the fused allreduce_rmsnorm, ping has none", "");

    /* Every default variant names each of the four algorithms and parses: with ranks
     * on two nodes, init gets past the parameters and declines single-node. */
    arb_comm_info_t two_nodes = {.rank = 0, .nranks = 2, .local_rank = 0, .local_nranks = 1, .node = 0,
                                 .nnodes = 2, .cuda_device = 0, .max_bytes = 43008};
    const char *algos[] = {"variant=oneshot-pull", "variant=oneshot-push", "variant=twoshot",
                           "variant=oneshot-flagfree"};
    int nvar = 0, seen[4] = {0};
    for (const char *const *v = p->variants; v && *v; v++, nvar++) {
        for (int a = 0; a < 4; a++)
            if (strncmp(*v, algos[a], strlen(algos[a])) == 0 && (*v)[strlen(algos[a])] == ',')
                seen[a] = 1;
        expect_init(p, &two_nodes, *v, ARB_DECLINE, "p2p is single-node");
    }
    ok(nvar >= 4 && seen[0] && seen[1] && seen[2] && seen[3], "variants cover oneshot-pull, oneshot-push, twoshot, oneshot-flagfree", "");
    expect_init(q, &two_nodes, "", ARB_DECLINE, "p2p is single-node");

    /* Bad parameters: ARB_ERR_INVALID naming the key, before any CUDA call (on a
     * machine without a GPU a CUDA call would decline instead). */
    arb_comm_info_t local = {.rank = 0, .nranks = 2, .local_rank = 0, .local_nranks = 2, .node = 0, .nnodes = 1,
                             .cuda_device = 0, .max_bytes = 43008};
    expect_init(p, &local, "variant=threeshot", ARB_ERR_INVALID, "variant='threeshot'");
    expect_init(p, &local, "variant=oneshot-push,blocks=0", ARB_ERR_INVALID, "blocks='0'");
    expect_init(p, &local, "blocks=129", ARB_ERR_INVALID, "blocks='129'");
    expect_init(p, &local, "blocks=8x", ARB_ERR_INVALID, "blocks='8x'");
    expect_init(p, &local, "threads=100", ARB_ERR_INVALID, "threads='100'");
    expect_init(p, &local, "threads=2048", ARB_ERR_INVALID, "threads='2048'");
    expect_init(p, &local, "timeout_ms=-5", ARB_ERR_INVALID, "timeout_ms='-5'");
    expect_init(p, &local, "test_hang_rank=2", ARB_ERR_INVALID, "test_hang_rank='2'");
    expect_init(p, &local, "colour=blue", ARB_ERR_INVALID, "unknown parameter 'colour'");
    expect_init(p, &local, "row_blocks=3", ARB_ERR_INVALID, "row_blocks='3'");
    expect_init(p, &local, "row_blocks=16", ARB_ERR_INVALID, "row_blocks='16'");
    expect_init(q, &local, "row_blocks=2", ARB_ERR_INVALID, "unknown parameter 'row_blocks'");
    /* A valid row_blocks gets past the parameters (and declines single-node). */
    arb_comm_info_t fused_two_nodes = two_nodes;
    fused_two_nodes.max_tokens = 64;
    fused_two_nodes.hidden = 7168;
    expect_init(p, &fused_two_nodes, "variant=oneshot-flagfree,row_blocks=8", ARB_DECLINE, "p2p is single-node");
    expect_init(p, &local, "pdl=2", ARB_ERR_INVALID, "pdl='2'");
    expect_init(p, &two_nodes, "variant=twoshot,pdl=1", ARB_DECLINE, "p2p is single-node");
    expect_init(q, &local, "pdl=1", ARB_ERR_INVALID, "unknown parameter 'pdl'");
    expect_init(p, &fused_two_nodes, "variant=oneshot-flagfree,row_blocks=1,pdl=1", ARB_DECLINE, "p2p is single-node");
    expect_init(p, &fused_two_nodes, "variant=oneshot-push,pdl=0", ARB_DECLINE, "p2p is single-node");
    expect_init(p, &local, "blocks", ARB_ERR_INVALID, "'blocks' is not key=value");
    expect_init(p, &local, "blocks=4,blocks=8", ARB_ERR_INVALID, "blocks given twice");
    expect_init(q, &local, "variant=oneshot-push", ARB_ERR_INVALID, "unknown parameter 'variant'");
    expect_init(q, &local, "timeout_ms=abc", ARB_ERR_INVALID, "timeout_ms='abc'");

    /* Host-only runs (no device made current) decline. */
    arb_comm_info_t host_only = local;
    host_only.cuda_device = -1;
    expect_init(p, &host_only, "", ARB_DECLINE, "needs a CUDA device");

    arb_plugin_unload(&lp);
    arb_plugin_unload(&lq);
    return tap_done();
}
