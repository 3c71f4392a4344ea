/* SPDX-License-Identifier: MIT */
/* `arbench sweep`: runs a plan on every rank and writes the results CSV. */
#ifndef ARB_SWEEP_H
#define ARB_SWEEP_H

#include "hostops.h"
#include "plan.h"

/* Collective. Returns the exit status: 0 all points passed or were skipped, 1 a point
 * failed, 2 bad input or setup failure, 130 interrupted (finished rows are kept). */
int arb_sweep(arb_plan_t *plan, arb_mpi_t *m, int argc, char **argv);

#endif
