/* SPDX-License-Identifier: MIT */
/* `arbench engine`: option parsing; the work is in engine/run/run.c. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "base/common.h"
#include "model/engine_agree.h"
#include "model/engine_opts.h"
#include "model/engine_outputs.h"
#include "runtime/hostops.h"
#include "run/run.h"
#include "run/run_rows.h"

int cmd_engine(int argc, char **argv)
{
    arb_engine_opts_t *o = calloc(1, sizeof *o);
    char err[1024] = "";
    if (!o)
        return 2;
    int pr = arb_engine_opts_parse(argc, argv, o, err, sizeof err);
    if (pr == 1) {
        arb_engine_opts_usage(stdout);
        free(o);
        return 0;
    }
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS) {
        fprintf(stderr, "arbench engine: MPI_Init failed\n");
        free(o);
        return 2;
    }
    arb_mpi_t m;
    int rc = 2;
    if (arb_mpi_bootstrap(&m)) {
        fprintf(stderr, "arbench engine: MPI bootstrap failed\n");
        goto out_finalize;
    }
    arb_set_log_rank(m.nranks > 1 ? m.rank : -1);
    arb_set_quiet(o->quiet);
    /* Everyone learns whether anyone's arguments were bad, so no rank waits alone. */
    if (arb_agree_failure(&m, pr != 0, err, sizeof err) >= 0) {
        if (m.rank == 0)
            fprintf(stderr, "arbench engine: %s\n", err);
        goto out_free;
    }
    if (arb_engine_agree(o, &m, argc, argv, err, sizeof err) != 0 ||
        arb_engine_check_outputs(o, &m, arb_engine_columns, arb_engine_ncolumns, err, sizeof err) != 0) {
        if (m.rank == 0)
            fprintf(stderr, "arbench engine: %s\n", err);
        goto out_free;
    }
    rc = arb_engine_main(o, &m, argc, argv);
out_free:
    arb_mpi_free(&m);
out_finalize:
    MPI_Finalize();
    free(o);
    return rc;
}
