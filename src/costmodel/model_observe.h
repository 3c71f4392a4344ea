/* SPDX-License-Identifier: MIT */
/*
 * `arbench model check --observations DIR`: the model against every recorded observation
 * (model/observations/README.md, docs/model.md "Observations"). Each file DIR/NAME.csv
 * (schema observation-1) holds one row per figure, with where it came from: a committed
 * run (file and revision), a figure the seed deployment reported, one derived from those
 * by stated arithmetic, or a published one (its address). Quantities:
 *   allreduce   per-call latency x `calls` on `ranks` GPUs of `fabric_spec` (unit us or ms)
 *   e2e_tok_s   tok/s of a committed `arbench model e2e` table (`model_input`), row
 *               choice = impl[:params], mode, phase
 * Anything else is listed as not tested, with its note. An observation passes when the
 * central prediction is within the tolerance of the measured value.
 */
#ifndef ARB_MODEL_OBSERVE_H
#define ARB_MODEL_OBSERVE_H

#include <stddef.h>
#include <stdio.h>

#include "arbench/status.h"
#include "costmodel/model_cost.h"
#include "costmodel/model_fabric.h"

typedef struct arb_observe_tally {
    int pass, fail, untested;
} arb_observe_tally_t;

/* Checks every observation of every DIR/NAME.csv (in name order) and prints one line each and
 * a summary. Refuses (ARB_ERR_INVALID) a file of another schema, a missing column, a bad
 * number, an unreadable fabric spec or e2e table, naming the file and line. */
arb_status_t arb_model_check_observations(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const char *dir,
                                          double tol, FILE *out, arb_observe_tally_t *tally, char *err,
                                          size_t err_len);

#endif
