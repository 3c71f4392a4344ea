/* SPDX-License-Identifier: MIT */
#include "runtime/hostops.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "arbench/status.h"
#include "base/common.h"

arb_status_t arb_mpi_bootstrap(arb_mpi_t *m)
{
    memset(m, 0, sizeof *m);
    if (MPI_Comm_dup(MPI_COMM_WORLD, &m->world) != MPI_SUCCESS)
        return ARB_ERR_SYSTEM;
    MPI_Comm_rank(m->world, &m->rank);
    MPI_Comm_size(m->world, &m->nranks);
    if (MPI_Comm_split_type(m->world, MPI_COMM_TYPE_SHARED, m->rank, MPI_INFO_NULL, &m->local) != MPI_SUCCESS)
        return ARB_ERR_SYSTEM;
    MPI_Comm_rank(m->local, &m->local_rank);
    MPI_Comm_size(m->local, &m->local_nranks);
    /* Node index: the rank of this node's leader among leaders. */
    int leader = m->local_rank == 0;
    MPI_Comm leaders;
    MPI_Comm_split(m->world, leader ? 0 : MPI_UNDEFINED, m->rank, &leaders);
    int node = 0;
    if (leader) {
        MPI_Comm_rank(leaders, &node);
        MPI_Comm_size(leaders, &m->nnodes);
        MPI_Comm_free(&leaders);
    }
    MPI_Bcast(&node, 1, MPI_INT, 0, m->local);
    m->node = node;
    MPI_Allreduce(MPI_IN_PLACE, &m->nnodes, 1, MPI_INT, MPI_MAX, m->world);
    return ARB_OK;
}

void arb_mpi_free(arb_mpi_t *m)
{
    if (m->local != MPI_COMM_NULL && m->local)
        MPI_Comm_free(&m->local);
    if (m->world != MPI_COMM_NULL && m->world)
        MPI_Comm_free(&m->world);
}

static int op_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    arb_hostops_ctx_t *c = ctx;
    if (bytes > INT_MAX)
        return -1;
    return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, c->mpi->world) == MPI_SUCCESS ? 0 : -1;
}

static int op_bcast(void *ctx, void *buf, size_t bytes, int root)
{
    arb_hostops_ctx_t *c = ctx;
    if (bytes > INT_MAX)
        return -1;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, c->mpi->world) == MPI_SUCCESS ? 0 : -1;
}

static int op_barrier(void *ctx)
{
    arb_hostops_ctx_t *c = ctx;
    return MPI_Barrier(c->mpi->world) == MPI_SUCCESS ? 0 : -1;
}

static void op_log(void *ctx, const char *msg)
{
    arb_hostops_ctx_t *c = ctx;
    arb_info("%s: %s", c->tag, msg);
}

void arb_hostops_init(arb_host_ops_t *ops, arb_hostops_ctx_t *ctx, arb_mpi_t *m, const char *tag)
{
    ctx->mpi = m;
    snprintf(ctx->tag, sizeof ctx->tag, "%s", tag);
    ops->ctx = ctx;
    ops->allgather = op_allgather;
    ops->bcast = op_bcast;
    ops->barrier = op_barrier;
    ops->log = op_log;
}

int arb_allmax_int(arb_mpi_t *m, int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, m->world);
    return v;
}

long long arb_allsum_ll(arb_mpi_t *m, long long v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, m->world);
    return v;
}

int arb_agree_failure(arb_mpi_t *m, int failed, char *msg, size_t len)
{
    int who = failed ? m->rank : INT_MAX;
    MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, m->world);
    if (who == INT_MAX)
        return -1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", m->rank == who ? msg : "");
    MPI_Bcast(buf, sizeof buf, MPI_CHAR, who, m->world);
    if (len)
        snprintf(msg, len, "%s", buf);
    return who;
}
