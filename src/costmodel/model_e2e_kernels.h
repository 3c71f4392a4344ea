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
 *   excess   = sum_f max(0, graph_f - floor_f)   each family's time beyond its streaming:
 *                                      launch, latency or arithmetic/issue; part of rest
 * Band: the gaps (rest - excess) x (1 -+ launch_band) (the target's launch and latency cost is
 * not measured); the excess x [min(1 - launch_band, issue_lo), max(1 + launch_band, issue_hi)]
 * (issue_*: the H200's instruction rate over the target's, SMs x clock, model/gpus/, at
 * the ends of the clocks' ranges; 1, 1 without GPU specs); the streaming part at the target's
 * spec rate (fast end) .. at the H200's measured fraction of its own spec (slow end: x
 * h200_peak / read_gbs_H200). Central: the rest kept (the excess is not known to be issue-
 * bound). Every end at least the step's bytes over the target's bandwidth (the step row's
 * floor x read_gbs_H200 / read_gbs_target).
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
    double excess_us;       /* sum of the families' time beyond their floors (within rest) */
    double floor_target_us; /* the step's bytes over the target's bandwidth (0: not in the table) */
    arb_e2e_band_t target_us;
} arb_e2e_kernel_compute_t;

/* The step of `tokens` tokens in the table at `path`; target_read_gbs and h200_peak_gbs as in
 * arb_e2e_opts_t, launch_band the relative band of the launch/latency part, issue_lo <=
 * issue_hi the range of the H200's over the target's instruction rate. Refuses a table of another schema, a
 * run that was not compute-only, a missing step row, naming the file and what was expected. */
arb_status_t arb_e2e_kernel_compute(const char *path, unsigned tokens, double target_read_gbs, double h200_peak_gbs,
                                    double launch_band, double issue_lo, double issue_hi, arb_e2e_kernel_compute_t *out,
                                    char *err, size_t err_len);

/* Whether two per-kernel tables are of the same step: the first rows' config, weights,
 * tp_shape and context equal; else ARB_ERR_INVALID naming the field and both files. */
arb_status_t arb_e2e_kernel_same_step(const char *ref, const char *target, char *err, size_t err_len);

/* The measured step of `tokens` tokens in a compute-only per-kernel table (the same file
 * kind as arb_e2e_kernel_compute's): its step row's graph time (*step_us; the whole step
 * replayed) and read_gbs. ARB_DECLINE (no message) when the table has no step row of that T
 * with a graph time, ARB_ERR_INVALID for a table arb_e2e_kernel_compute would refuse. */
arb_status_t arb_e2e_kernel_step(const char *path, unsigned tokens, double *step_us, double *read_gbs, char *err,
                                 size_t err_len);

#endif
