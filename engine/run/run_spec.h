/* SPDX-License-Identifier: MIT */
/*
 * The speculative phase of the run driver (--accept-rate p, or --draft-dir): engine/stats/spec.h's
 * cycles (arb_spec_run: the draft's proposals, planted at p or measured, the greedy
 * acceptance, the rollback) on the decode chain of the same run, with the target's verify
 * and the draft's steps (engine/run/run_draft.h) as its model; a cycle's time is the
 * draft's plus the verify's.
 */
#ifndef ARB_ENGINE_RUN_SPEC_H
#define ARB_ENGINE_RUN_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "run/step.h"

/* Collective: at most --steps cycles at acceptance p (with --draft-dir: measured, p
 * unused; pr->accept_rate then the p whose E[n] is the measured mean) on the decode chain g
 * (--steps + --spec-k + 1 tokens), until --steps tokens are produced; plain_us: this mode's
 * decode median (the summary's ratio and break-even). */
arb_status_t arb_run_spec_phase(arb_stepper_t *target, const uint32_t *g, double p, double plain_us,
                                arb_phase_result_t *pr, char *why, size_t len);

#endif
