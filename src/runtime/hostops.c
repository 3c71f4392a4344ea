/* SPDX-License-Identifier: MIT */
#include "runtime/hostops.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

/* Every rank's `bytes` into recv (nranks blocks), over MPI or the caller's allgather. */
static int gather(arb_mpi_t *m, const void *send, void *recv, size_t bytes)
{
    if (m->allgather)
        return m->allgather(m->allgather_ctx, send, recv, bytes);
    if (bytes > INT_MAX)
        return -1;
    return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, m->world) == MPI_SUCCESS ? 0 : -1;
}

#define HOSTNAME_LEN 256

arb_status_t arb_mpi_bootstrap_allgather(arb_mpi_t *m, int rank, int nranks, arb_allgather_fn allgather, void *ctx,
                                         char *why, size_t why_len)
{
    memset(m, 0, sizeof *m);
    m->world = m->local = MPI_COMM_NULL;
    if (!allgather || nranks < 1 || rank < 0 || rank >= nranks)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                  "bootstrap: rank %d of %d with %s allgather: expected 0 <= rank < size and an allgather function",
                  rank, nranks, allgather ? "an" : "no");
    m->rank = rank, m->nranks = nranks, m->allgather = allgather, m->allgather_ctx = ctx;
    char mine[HOSTNAME_LEN] = {0};
    if (gethostname(mine, sizeof mine - 1) != 0)
        snprintf(mine, sizeof mine, "unknown");
    char *all = calloc((size_t)nranks, HOSTNAME_LEN);
    if (!all)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "bootstrap: out of host memory for %d host names", nranks);
    if (gather(m, mine, all, HOSTNAME_LEN) != 0) {
        free(all);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "bootstrap: the caller's allgather of %d bytes failed", HOSTNAME_LEN);
    }
    /* A node is the set of ranks with one host name; nodes numbered by their first rank. */
    int node_of_rank = -1;
    for (int r = 0; r < nranks; r++) {
        const char *name = all + (size_t)r * HOSTNAME_LEN;
        int first = r;
        for (int q = 0; q < r; q++)
            if (strncmp(all + (size_t)q * HOSTNAME_LEN, name, HOSTNAME_LEN) == 0) {
                first = q;
                break;
            }
        if (first == r)
            m->nnodes++;
        if (strncmp(name, mine, HOSTNAME_LEN) == 0) {
            if (node_of_rank < 0)
                node_of_rank = m->nnodes - 1;
            if (r < rank)
                m->local_rank++;
            m->local_nranks++;
        }
    }
    m->node = node_of_rank;
    free(all);
    return ARB_OK;
}

void arb_mpi_free(arb_mpi_t *m)
{
    if (m->allgather)
        return;
    if (m->local != MPI_COMM_NULL && m->local)
        MPI_Comm_free(&m->local);
    if (m->world != MPI_COMM_NULL && m->world)
        MPI_Comm_free(&m->world);
}

static int op_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    arb_hostops_ctx_t *c = ctx;
    return gather(c->mpi, send, recv, bytes);
}

/* Without MPI: every rank's block gathered, root's kept (bootstrap-sized payloads). */
static int bcast_by_gather(arb_mpi_t *m, void *buf, size_t bytes, int root)
{
    if (root < 0 || root >= m->nranks || (bytes && (size_t)m->nranks > SIZE_MAX / bytes))
        return -1;
    unsigned char *all = malloc(bytes * (size_t)m->nranks + 1);
    if (!all)
        return -1;
    int rc = gather(m, buf, all, bytes);
    if (rc == 0)
        memcpy(buf, all + (size_t)root * bytes, bytes);
    free(all);
    return rc;
}

static int op_bcast(void *ctx, void *buf, size_t bytes, int root)
{
    arb_hostops_ctx_t *c = ctx;
    if (c->mpi->allgather)
        return bcast_by_gather(c->mpi, buf, bytes, root);
    if (bytes > INT_MAX)
        return -1;
    return MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, c->mpi->world) == MPI_SUCCESS ? 0 : -1;
}

static int op_barrier(void *ctx)
{
    arb_hostops_ctx_t *c = ctx;
    if (c->mpi->allgather) {
        unsigned char one = 1;
        return bcast_by_gather(c->mpi, &one, 1, 0);
    }
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

/* Without MPI: every rank's value gathered, combined in rank order. A failed gather
 * leaves `fail` on every rank that saw it (a caller's allgather fails everywhere or
 * the job is lost anyway). */
static long long reduce_by_gather(arb_mpi_t *m, long long v, int max, long long fail)
{
    long long *all = malloc(sizeof *all * (size_t)m->nranks);
    if (!all || gather(m, &v, all, sizeof v) != 0) {
        free(all);
        return fail;
    }
    long long r = all[0];
    for (int i = 1; i < m->nranks; i++)
        r = max ? (all[i] > r ? all[i] : r) : r + all[i];
    free(all);
    return r;
}

int arb_allmax_int(arb_mpi_t *m, int v)
{
    if (m->allgather)
        return (int)reduce_by_gather(m, v, 1, ARB_ERR_SYSTEM > v ? ARB_ERR_SYSTEM : v);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, m->world);
    return v;
}

long long arb_allsum_ll(arb_mpi_t *m, long long v)
{
    if (m->allgather)
        return reduce_by_gather(m, v, 0, LLONG_MAX);
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, m->world);
    return v;
}

int arb_agree_failure(arb_mpi_t *m, int failed, char *msg, size_t len)
{
    int who = failed ? m->rank : INT_MAX;
    if (m->allgather)
        who = (int)-reduce_by_gather(m, -(long long)who, 1, -(long long)m->rank); /* the min */
    else
        MPI_Allreduce(MPI_IN_PLACE, &who, 1, MPI_INT, MPI_MIN, m->world);
    if (who == INT_MAX)
        return -1;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", m->rank == who ? msg : "");
    if (m->allgather) {
        if (bcast_by_gather(m, buf, sizeof buf, who) != 0)
            snprintf(buf, sizeof buf, "rank %d failed (its reason was lost: the caller's allgather failed)", who);
    } else {
        MPI_Bcast(buf, sizeof buf, MPI_CHAR, who, m->world);
    }
    if (len)
        snprintf(msg, len, "%s", buf);
    return who;
}
