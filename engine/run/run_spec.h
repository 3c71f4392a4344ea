/* SPDX-License-Identifier: MIT */
/*
 * Speculative cycles (--accept-rate p) on the decode chain g_0, g_1, ... of the same run:
 * a cycle at position P (relative i) verifies [a, d_1 .. d_k] with T = k + 1, where a is
 * the token accepted last and draft d_j is the right token g_{i+j} with probability p
 * (draw j of cycle c: arb_wgen ARB_W_ACCEPT, index c * 64 + j) or a wrong one. Accepted
 * is the longest prefix of drafts equal to the target's greedy outputs; the cycle
 * produces accepted + 1 tokens (the target's output after the last accepted draft is
 * the bonus token) and the next cycle starts after them: the rejected drafts' cache
 * rows are rolled back by being overwritten. Greedy speculative decoding must produce
 * exactly the decode chain: `agree` counts the produced tokens equal to it.
 * The draft model (engine/run/run_draft.h: one dense layer on the same call sites) runs its
 * k steps before each verify; a cycle's time is the draft's plus the verify's, and their
 * medians go to the row (draft_us, verify_us).
 */
#ifndef ARB_ENGINE_RUN_SPEC_H
#define ARB_ENGINE_RUN_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "run/step.h"

/* Collective: at most --steps cycles at acceptance p on the decode chain g (--steps +
 * --spec-k + 1 tokens), until --steps tokens are produced. */
arb_status_t arb_run_spec_phase(arb_stepper_t *target, const uint32_t *g, double p, arb_phase_result_t *pr, char *why,
                                size_t len);

#endif
