/* SPDX-License-Identifier: MIT */
/*
 * The draft model of the speculative cycles (docs/engine-e2e.md): the target's
 * configuration with one dense decoder layer at the same hidden size (arb_draft_config),
 * sharded like the target and built on the same call-site instances, so each draft step
 * makes 2 all-reduce calls. Unlike EAGLE's draft it reads only the token, not the
 * target's hidden states (one fewer [H x 3H] projection per draft step). Prefilled with
 * the prompt; per cycle it first catches up on the positions it has not seen (the tokens
 * the target accepted), then runs k steps at T = 1 on the cycle's inputs
 * [a, d_1 .. d_{k-1}] with its own greedy argmax. The cycle's tokens stay the accept
 * scheme's (engine/stats/spec.h): the draft contributes its time.
 */
#ifndef ARB_ENGINE_RUN_DRAFT_H
#define ARB_ENGINE_RUN_DRAFT_H

#include <stddef.h>
#include <stdint.h>

#include "run/step.h"

typedef struct arb_run_draft {
    arb_stepper_t step; /* the draft model on the target's backend and sites */
    uint32_t *hist;     /* [positions]: the token at each position after the context's start */
    unsigned len;       /* positions (from 0) the draft's cache holds */
    unsigned cap;
} arb_run_draft_t;

/* The draft's configuration: the target's with one (dense) decoder layer. */
void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft);

/* Collective: builds and prefills the draft (to --context); its steps run in `mode`. */
arb_status_t arb_run_draft_open(arb_engine_run_t *r, arb_runcfg_t *c, arb_mode_t mode, arb_run_draft_t *d, char *why,
                                size_t len);
/* Collective: catch-up to position pos, then k steps on in[0..k) at pos ..; *us their
 * time (each step's the maximum over ranks). */
arb_status_t arb_run_draft_cycle(arb_run_draft_t *d, const uint32_t *in, unsigned k, unsigned pos, double *us,
                                 char *why, size_t len);
/* After the verify: positions pos .. pos + n - 1 hold tokens[0..n) (next and the accepted
 * drafts); the draft's cache is valid up to pos + n at most. */
void arb_run_draft_accept(arb_run_draft_t *d, const uint32_t *tokens, unsigned n, unsigned pos);
void arb_run_draft_close(arb_run_draft_t *d);

#endif
