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

struct arb_engine_run;

/* Collective. Opens the baseline's configuration (label "baseline", rows of its own only
 * through the A/B) into r->cfgs; call before the runs. */
arb_status_t arb_run_open_baseline(struct arb_engine_run *r, char *why, size_t len);
/* Collective. The interleaved A/B of the baseline and the implementation, rows on rank 0. */
arb_status_t arb_run_ab(struct arb_engine_run *r, char *why, size_t len);
void arb_run_close_baseline(struct arb_engine_run *r);

#endif
