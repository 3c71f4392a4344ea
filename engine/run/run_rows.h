/* SPDX-License-Identifier: MIT */
/*
 * The row sink of the run driver (rank 0): the results CSV (docs/engine.md), one row per
 * measurement the phases hand over (arb_run_row_t: decode, verify, each --accept-rate's
 * speculative cycles, each side of an A/B phase) as soon as it finished, and the summary
 * table at the end. Writing only: every figure it prints was measured or derived by the
 * phases (engine/stats for the speculative summary and the A/B comparison), except the
 * ratios against the compute-only replay and the bandwidth floor.
 */
#ifndef ARB_ENGINE_RUN_ROWS_H
#define ARB_ENGINE_RUN_ROWS_H

#include <stddef.h>

#include "run/run_state.h"

int arb_run_open_rows(arb_engine_run_t *r, char *err, size_t len);
/* An arb_row_sink_fn: appends the row. */
void arb_run_rows_sink(arb_engine_run_t *r, const arb_run_row_t *row);
void arb_run_close_rows(arb_engine_run_t *r);
void arb_run_print_table(const arb_engine_run_t *r);
/* The table's all-reduce share of a phase: (run - compute-only) / run by their medians, as
 * "12.3%", or in parentheses, "(-1.5%)", where the two phases' p10..p90 ranges overlap: their
 * difference is inside each one's own spread, so neither its size nor its sign is shown. Returns
 * 1 when the ranges are apart, 0 when they overlap, -1 (buf "-") for a median that is not finite
 * and positive. */
int arb_run_share_text(const arb_stats_t *run, const arb_stats_t *noop, char *buf, size_t len);
extern const char *const arb_engine_columns[];
extern const unsigned arb_engine_ncolumns;

#endif
