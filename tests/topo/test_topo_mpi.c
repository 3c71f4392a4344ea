/* SPDX-License-Identifier: MIT */
/*
 * arb_topo_setup under mpirun: a host-only run gets "host" and a recorded binding on
 * every rank; a GPU run gets one label on every rank where GPUs are visible, and one
 * error ("no CUDA device visible") on every rank where none are. TAP from rank 0.
 */
#include "topo/topo.h"

#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

static int my_rank;

/* A check passes when it passes on every rank; rank 0 prints it. */
static void ok_everywhere(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok_everywhere(int cond, const char *fmt, ...)
{
    int all;
    MPI_Allreduce(&cond, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    tap_ok(all, "%s", what);
}

/* 1 when `s` (up to len bytes) is the same string on every rank. */
static int same_everywhere(const char *s, size_t len)
{
    int nranks;
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    char *all = calloc((size_t)nranks, len), *mine = calloc(1, len);
    if (!all || !mine)
        return 0;
    snprintf(mine, len, "%s", s);
    MPI_Allgather(mine, (int)len, MPI_CHAR, all, (int)len, MPI_CHAR, MPI_COMM_WORLD);
    int same = 1;
    for (int r = 1; r < nranks; r++)
        same = same && memcmp(all, all + (size_t)r * len, len) == 0;
    free(mine);
    free(all);
    return same;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD, local;
    int nranks, local_rank;
    MPI_Comm_rank(comm, &my_rank);
    tap_set_agree(NULL, my_rank != 0); /* rank 0 prints the TAP lines */
    MPI_Comm_size(comm, &nranks);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, my_rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);

    arb_topo_result_t res;
    char err[512] = "";
    int r = arb_topo_setup(&comm, -1, 1, &res, err, sizeof err);
    ok_everywhere(r == 0, "host-only setup returns 0 on %d ranks (%s)", nranks, err);
    ok_everywhere(strcmp(res.fabric, "host") == 0, "host-only label is host (got '%s')", res.fabric);
    ok_everywhere(strncmp(res.binding, "unbound: host-only run", 22) == 0 && strstr(res.binding, "cpus="),
       "host-only binding recorded with the current cpus (rank %d: '%s')", my_rank, res.binding);
    ok_everywhere(res.nnodes >= 1 && same_everywhere(res.fabric, sizeof res.fabric), "same label on every rank, %d node(s)",
       res.nnodes);
    r = arb_topo_setup(&comm, -1, 0, &res, err, sizeof err);
    ok_everywhere(r == 0 && strcmp(res.binding, "off") == 0, "bind 0: binding 'off' (got '%s')", res.binding);
    ok_everywhere(arb_topo_setup(NULL, -1, 0, &res, err, sizeof err) == ARB_ERR_INVALID && strstr(err, "mpi_comm is NULL"),
       "NULL communicator refused: %s", err);

    char why[256] = "";
    int ngpus = arb_topo_cuda_count(why, sizeof why);
    int min_gpus;
    MPI_Allreduce(&ngpus, &min_gpus, 1, MPI_INT, MPI_MIN, comm);
    err[0] = '\0';
    r = arb_topo_setup(&comm, min_gpus > 0 ? local_rank % min_gpus : 0, 1, &res, err, sizeof err);
    if (min_gpus == 0) {
        ok_everywhere(r == -1 && strstr(err, "no CUDA device visible"), "no GPU: every rank fails with one message (%s)", err);
        ok_everywhere(same_everywhere(err, sizeof err), "the message is the same on every rank");
    } else {
        ok_everywhere(r == 0, "GPU setup returns 0 (%s)", err);
        ok_everywhere(res.fabric[0] && strcmp(res.fabric, "unknown") != 0 && strcmp(res.fabric, "host") != 0,
           "GPU label '%s' is a fabric", res.fabric);
        ok_everywhere(same_everywhere(res.fabric, sizeof res.fabric), "same label on every rank");
        ok_everywhere(strncmp(res.binding, "numa", 4) == 0, "rank %d bound near GPU %s: '%s'", my_rank, res.busid, res.binding);
        if (my_rank == 0)
            printf("# fabric %s, %d GPU(s) on node 0, reasons: %s\n# warnings: %s\n", res.fabric, res.node_gpus,
                   res.reasons, res.warnings[0] ? res.warnings : "none");
    }
    int rc = tap_done();
    MPI_Finalize();
    return rc;
}
