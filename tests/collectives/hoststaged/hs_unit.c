/* SPDX-License-Identifier: MIT */
/*
 * Unit test of arb-hoststaged.so through the real loader (dlopen of the built module):
 * identity, capabilities, parameter validation (before any CUDA call), declining a
 * multi-node or host-only run, and what init says with or without a GPU. TAP output.
 *
 *   hs_unit PATH/arb-hoststaged.so
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "arbench/plugin.h"
#include "base/common.h"
#include "runtime/loader.h"
#include "one_rank_ops.h"
#include "tap.h"

static char sentinel_byte; /* init must leave *state at this when it fails */

/* One TAP line: what, and the detail after ": " when there is one. */
static void tap(int ok, const char *what, const char *detail)
{
    tap_ok(ok, "%s%s%s", what, detail && *detail ? ": " : "", detail ? detail : "");
}

/* init must refuse `params` with `want` and a message containing `key`, leaving *state alone. */
static void expect_init(const arb_plugin_t *p, const arb_comm_info_t *info, const char *params,
                        arb_status_t want, const char *key)
{
    void *const sentinel = &sentinel_byte;
    void *state = sentinel;
    char why[512] = "";
    arb_status_t s = p->init(info, &one_rank_ops, params, &state, why, sizeof why);
    char what[256];
    snprintf(what, sizeof what, "init(\"%s\", nranks %d, nnodes %d) -> %s naming '%s'", params, info->nranks, info->nnodes,
             arb_status_str(want), key);
    tap(s == want && strstr(why, key) && state == sentinel && !strchr(why, '\n'), what, why);
    if (s == ARB_OK && state != sentinel)
        p->finalize(state);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: hs_unit PATH/arb-hoststaged.so\n");
        return 2;
    }
    arb_loaded_plugin_t lp;
    char err[4096];
    if (arb_plugin_load(argv[1], &lp, err, sizeof err)) {
        tap_ok(0, "load %s: %s", argv[1], err);
        return tap_done();
    }
    const arb_plugin_t *p = lp.plugin;
    tap(1, "loaded through arb_plugin_load", lp.path);
    tap(!strcmp(p->name, "hoststaged"), "name is hoststaged", p->name);
    const uint32_t caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 | ARB_CAP_FP32;
    char detail[64];
    snprintf(detail, sizeof detail, "caps 0x%x, expected 0x%x", p->caps, caps);
    tap(p->caps == caps, "caps: device memory, graph-safe, single node, bf16, fp32 (no P2P, no own allocator)", detail);
    tap(p->query_error && p->describe && !p->mem_alloc && !p->allreduce_rmsnorm, "query_error and describe present; no allocator, no fused path", NULL);
    tap(p->description && *p->description, "has a description", p->description);

    arb_comm_info_t info = {.rank = 0, .nranks = 2, .local_rank = 0, .local_nranks = 2, .node = 0, .nnodes = 1,
                            .cuda_device = 0, .max_bytes = 1u << 20};
    /* Rejected before any CUDA call, so these hold with or without a GPU. */
    expect_init(p, &info, "blocks=0", ARB_ERR_INVALID, "blocks");
    expect_init(p, &info, "blocks=257", ARB_ERR_INVALID, "blocks");
    expect_init(p, &info, "blocks=8x", ARB_ERR_INVALID, "blocks");
    expect_init(p, &info, "blocks=", ARB_ERR_INVALID, "blocks");
    expect_init(p, &info, "threads=48", ARB_ERR_INVALID, "threads");
    expect_init(p, &info, "threads=2048", ARB_ERR_INVALID, "threads");
    expect_init(p, &info, "blocks=4,threads=-32", ARB_ERR_INVALID, "threads");
    expect_init(p, &info, "test_hang_rank=2", ARB_ERR_INVALID, "test_hang_rank");
    expect_init(p, &info, "test_hang_rank=-1", ARB_ERR_INVALID, "test_hang_rank");
    expect_init(p, &info, "chunk=4", ARB_ERR_INVALID, "chunk");
    expect_init(p, &info, "blocks", ARB_ERR_INVALID, "blocks");
    info.nnodes = 2;
    expect_init(p, &info, "blocks=4", ARB_DECLINE, "nodes");
    expect_init(p, &info, "bogus=1", ARB_ERR_INVALID, "bogus"); /* params are checked first */
    info.nnodes = 1;
    info.cuda_device = -1;
    expect_init(p, &info, "", ARB_DECLINE, "CUDA device");

    /* Valid parameters on one rank: without a GPU init names the missing device;
     * with one it succeeds and describe() records the resolved parameters. */
    info = (arb_comm_info_t){.rank = 0, .nranks = 1, .local_rank = 0, .local_nranks = 1, .nnodes = 1,
                             .cuda_device = 0, .max_bytes = 43008};
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        expect_init(p, &info, "blocks=8,threads=256", ARB_ERR_SYSTEM, "no CUDA device visible");
    } else {
        void *state = NULL;
        char why[512] = "";
        cudaSetDevice(0);
        arb_status_t s = p->init(&info, &one_rank_ops, "blocks=8,threads=256", &state, why, sizeof why);
        tap(s == ARB_OK, "init(\"blocks=8,threads=256\") on one GPU", why);
        if (s == ARB_OK) {
            const char *d = p->describe(state);
            tap(!strcmp(d, "algo=oneshot,blocks=8,threads=256"), "describe() records the resolved parameters", d);
            why[0] = '\0';
            tap(p->query_error(state, why, sizeof why) == ARB_OK, "query_error: nothing to report", why);
            p->finalize(state);
        }
        expect_init(p, &info, "blocks=256,threads=1024", ARB_ERR_INVALID, "resident");
    }
    arb_plugin_unload(&lp);
    return tap_done();
}
