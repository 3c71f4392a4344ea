/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine --baseline IMPL[:params]` in the run driver (docs/engine-e2e.md): after
 * the configurations ran, the baseline (A) and the implementation (B: --impl or the
 * profile's choice) are built side by side, prefilled, and their decode and verify steps
 * interleaved A, B, A, B (engine/run/ab_run.h), per mode. Rows `ab-decode` / `ab-verify` per
 * side: its step statistics, the speedup median(A) / median(B) with its bootstrap
 * interval, and the token agreement. Both models are in memory at once.
 */
#ifndef ARB_ENGINE_RUN_AB_H
#define ARB_ENGINE_RUN_AB_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "run/run_state.h"

/* Collective. Opens the baseline's configuration (role ARB_CFG_BASELINE, rows of its own
 * only through the A/B) into r->cfgs; call before the runs. */
arb_status_t arb_run_open_baseline(arb_engine_run_t *r, char *why, size_t len);
/* Collective. The interleaved A/B of the baseline and the implementation, rows on rank 0. */
arb_status_t arb_run_ab(arb_engine_run_t *r, char *why, size_t len);
void arb_run_close_baseline(arb_engine_run_t *r);

#endif
