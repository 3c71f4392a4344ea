/* SPDX-License-Identifier: MIT */
/* The job's bootstrap (MPI, or a caller's allgather) and the collective host operations
 * handed to plugins. */
#ifndef ARB_HOSTOPS_H
#define ARB_HOSTOPS_H

#include <mpi.h>

#include "arbench/plugin.h"

/* A caller's allgather: recv holds nranks * bytes, rank r's block at r * bytes; 0 on
 * success. Every collective below is built from it when the job has no MPI. */
typedef int (*arb_allgather_fn)(void *ctx, const void *send, void *recv, size_t bytes);

typedef struct arb_mpi {
    MPI_Comm world;  /* a duplicate of MPI_COMM_WORLD; MPI_COMM_NULL with `allgather` */
    MPI_Comm local;  /* ranks sharing this node; MPI_COMM_NULL with `allgather` */
    int rank, nranks, local_rank, local_nranks, node, nnodes;
    arb_allgather_fn allgather; /* set: bootstrapped without MPI, MPI is never called */
    void *allgather_ctx;
} arb_mpi_t;

/* Duplicates the world communicator, splits it by node, numbers the nodes. */
arb_status_t arb_mpi_bootstrap(arb_mpi_t *m);
/* Collective over `allgather`: a job of nranks ranks without MPI. Nodes are told apart by
 * host name (gethostname), numbered in order of their first rank. */
arb_status_t arb_mpi_bootstrap_allgather(arb_mpi_t *m, int rank, int nranks, arb_allgather_fn allgather, void *ctx,
                                         char *why, size_t why_len);
void arb_mpi_free(arb_mpi_t *m);

/* Host operations over m->world; log lines carry the plugin name from `tag`. */
typedef struct arb_hostops_ctx {
    arb_mpi_t *mpi;
    char tag[64];
} arb_hostops_ctx_t;

void arb_hostops_init(arb_host_ops_t *ops, arb_hostops_ctx_t *ctx, arb_mpi_t *m, const char *tag);

/* Agreement helpers: every rank passes its value, every rank gets the max / sum. */
int arb_allmax_int(arb_mpi_t *m, int v);
long long arb_allsum_ll(arb_mpi_t *m, long long v);
/* The first rank (lowest) with failed != 0 broadcasts its message into msg; returns
 * that rank or -1 when nobody failed. */
int arb_agree_failure(arb_mpi_t *m, int failed, char *msg, size_t len);

#endif
