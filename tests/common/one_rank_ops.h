/* SPDX-License-Identifier: MIT */
/* The collective host ops of a single rank (arb_host_ops_t), for tests that call a plugin's
 * callbacks without MPI: allgather copies, bcast and barrier have nothing to do, log prints
 * the line as a TAP comment on stdout. */
#ifndef ARB_TEST_ONE_RANK_OPS_H
#define ARB_TEST_ONE_RANK_OPS_H

#include <stdio.h>
#include <string.h>

#include "arbench/plugin.h"

static int one_rank_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    (void)ctx;
    memcpy(recv, send, bytes);
    return 0;
}

static int one_rank_bcast(void *ctx, void *buf, size_t bytes, int root)
{
    (void)ctx, (void)buf, (void)bytes, (void)root;
    return 0;
}

static int one_rank_barrier(void *ctx)
{
    (void)ctx;
    return 0;
}

static void one_rank_log(void *ctx, const char *msg)
{
    (void)ctx;
    printf("# plugin log: %s\n", msg);
}

static const arb_host_ops_t one_rank_ops = {
    .ctx = NULL,
    .allgather = one_rank_allgather,
    .bcast = one_rank_bcast,
    .barrier = one_rank_barrier,
    .log = one_rank_log,
};

#endif
