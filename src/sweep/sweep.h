/* SPDX-License-Identifier: MIT */
/* `arbench sweep`: runs a plan on every rank and writes the results CSV. */
#ifndef ARB_SWEEP_H
#define ARB_SWEEP_H

#include "runtime/hostops.h"
#include "sweep/plan.h"

typedef struct arb_sweep_result {
    size_t npass, nfail, nskip; /* points, the same on every rank */
    int interrupted;            /* SIGINT or SIGTERM: stopped after a point; finished rows are kept */
} arb_sweep_result_t;

/* Collective. ARB_OK when the plan ran (to the end, or until interrupted: see res);
 * ARB_ERR_INVALID for bad input or a setup failure (reported on stderr by rank 0);
 * ARB_ERR_SYSTEM when the GPU became unusable and the sweep stopped. The same on every
 * rank. The caller turns it into an exit status. */
arb_status_t arb_sweep(arb_plan_t *plan, arb_mpi_t *m, int argc, char **argv, arb_sweep_result_t *res);

#endif
