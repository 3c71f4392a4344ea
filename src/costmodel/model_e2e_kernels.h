/* SPDX-License-Identifier: MIT */
/*
 * Compute on the target GPU by kernel family, from the engine's per-kernel table
 * (`<results>-kernels-<run_id>.csv`, schema engine-kernels-1, docs/engine.md "Per-kernel floors") of a
 * compute-only run (impl noop) on the H200 (docs/model.md, "End to end").
 *
 * Per family f of a step (times per layer x the family's layers):
 *   stream_f = min(graph_f, floor_f)   the part the H200's streaming read accounts for
 *                                      (floor_f when the family was not measured)
 *   rest     = step graph time - sum_f stream_f   launches, latencies, waits, overlap: kept
 *   target   = rest + sum_f stream_f x read_gbs_H200 / read_gbs_target
 * Band: rest x (1 -+ launch_band) (the target's launch and latency cost is not measured),
 * the streaming part at the target's spec rate (fast end) .. at the H200's measured fraction
 * of its own spec (slow end: x h200_peak / read_gbs_H200). Arithmetic-bound kernels are not
 * modeled apart: their time sits in rest, unscaled.
 */
#ifndef ARB_MODEL_E2E_KERNELS_H
#define ARB_MODEL_E2E_KERNELS_H

#include <stddef.h>

#include "arbench/status.h"
#include "costmodel/model_band.h"

typedef struct arb_e2e_kernel_compute {
    unsigned tokens;
    double h200_step_us;   /* the step row's graph time */
    double stream_h200_us; /* sum of stream_f */
    double rest_us;
    arb_e2e_band_t target_us;
} arb_e2e_kernel_compute_t;

/* The step of `tokens` tokens in the table at `path`; target_read_gbs and h200_peak_gbs as in
 * arb_e2e_opts_t, launch_band the relative band of rest. Refuses a table of another schema, a
 * run that was not compute-only, a missing step row, naming the file and what was expected. */
arb_status_t arb_e2e_kernel_compute(const char *path, unsigned tokens, double target_read_gbs, double h200_peak_gbs,
                                    double launch_band, arb_e2e_kernel_compute_t *out, char *err, size_t err_len);

#endif
