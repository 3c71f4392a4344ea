/* SPDX-License-Identifier: MIT */
/*
 * One run configuration: model, prefill to --context, then per mode S decode steps
 * (T = 1), S verify steps (T = k + 1) whose tokens are the decode run's greedy
 * continuation (so each verify output has a decode token to agree with), and the
 * speculative cycles at each --accept-rate on the same chain (engine/run/run_spec.h).
 * Each phase's measurement goes to the row sink as it finishes (the implementation's).
 */
#ifndef ARB_ENGINE_RUN_PHASES_H
#define ARB_ENGINE_RUN_PHASES_H

#include <stddef.h>

#include "run/run_state.h"

/* Collective. */
arb_status_t arb_run_config(arb_engine_run_t *r, arb_runcfg_t *c, char *why, size_t len);

#endif
