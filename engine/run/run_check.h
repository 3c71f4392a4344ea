/* SPDX-License-Identifier: MIT */
/*
 * --check-steps N (gpu backend): the CPU reference of the same shard on the same rank,
 * with mpi-host at its call sites when there are several ranks, runs the same prefill
 * and the first N decode steps on the GPU's token chain; greedy tokens are compared
 * and the largest |logit difference| recorded against ARB_ENGINE_LOGIT_TOL; so are the
 * selected experts of every layer (as sets), reported, not judged: at 384 experts a
 * near-tie of the router may flip one where fp32 and float64 round differently.
 */
#ifndef ARB_ENGINE_RUN_CHECK_H
#define ARB_ENGINE_RUN_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "run/step.h"

/* Collective: gpu is the prefilled model (gpu_g0 its first decode input); fills
 * r->check_agree, check_compared, check_max_logit_diff. */
arb_status_t arb_run_check(arb_stepper_t *gpu, uint32_t gpu_g0, char *why, size_t len);

/* After arb_run_check: 1 (with the reason in why) when a greedy token differed or a logit
 * differed by more than ARB_ENGINE_LOGIT_TOL; 0 when they agreed or nothing was checked. */
int arb_run_check_failed(const arb_engine_run_t *r, char *why, size_t len);

#endif
