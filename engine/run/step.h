/* SPDX-License-Identifier: MIT */
/*
 * One step of the run driver, as llama2.c's generate() loop body: T tokens at positions
 * pos0 .. pos0 + T - 1 through the backend on every rank, then what the caller asks for:
 * the greedy pick (the distributed argmax: the largest logit over the ranks' vocabulary
 * shards, ties to the lower global index, MPI_MAXLOC's rule), the bytes the step had to
 * read and the distinct routed experts (max over ranks), the two largest logits (A/B
 * agreement margins). Every phase (prefill, decode, verify, the speculative cycles and
 * their draft, A/B, --check-steps) steps through arb_step_once.
 */
#ifndef ARB_ENGINE_STEP_H
#define ARB_ENGINE_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "run/run_state.h"
#include "run/top2.h"

#define ARB_STEP_MAX_T 64 /* tokens per step: prefill chunks and verify blocks */

enum { ARB_STEP_GREEDY = 1u, ARB_STEP_BYTES = 2u, ARB_STEP_TOP2 = 4u };

/* A model on a backend and what its steps need. */
typedef struct arb_stepper {
    arb_engine_run_t *r;
    const arb_backend_ops_t *be;
    arb_runcfg_t *c;   /* its instances' device-side errors are checked after each step; NULL: none */
    void *model;
    arb_mode_t mode;
    int32_t *experts;  /* ARB_STEP_BYTES: [layers x max_tokens x topk] routed experts */
    float *logits;     /* ARB_STEP_TOP2: [max_tokens x vocabulary] this rank's logits */
} arb_stepper_t;

/* What one step gave. */
typedef struct arb_step {
    double us;                        /* the step's time, max over ranks */
    uint32_t greedy[ARB_STEP_MAX_T];  /* ARB_STEP_GREEDY: the argmax after each token */
    double bytes, experts;            /* ARB_STEP_BYTES: bytes to read, distinct experts per MoE layer */
    arb_top2_t top2[ARB_STEP_MAX_T];  /* ARB_STEP_TOP2 */
} arb_step_t;

/* The scratch that `wants` (ARB_STEP_* bits) needs; free with arb_stepper_free. */
arb_status_t arb_stepper_init(arb_stepper_t *s, arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c,
                              void *model, arb_mode_t mode, unsigned wants, char *why, size_t len);
void arb_stepper_free(arb_stepper_t *s);

/* Collective: one step and what `want` asks for; every rank gets the same status. */
arb_status_t arb_step_once(arb_stepper_t *s, const uint32_t *tokens, unsigned T, unsigned pos0, unsigned want,
                           arb_step_t *out, char *why, size_t len);

/* Collective: prefill positions 0 .. context - 1 in chunks (eager); *g0 = the greedy
 * token after the last one (the first decode input). */
arb_status_t arb_step_prefill(arb_stepper_t *s, uint32_t *g0, char *why, size_t len);

/* Every rank gets the same status: the worst, with the first failing rank's reason. */
arb_status_t arb_run_agree(arb_engine_run_t *r, arb_status_t st, char *why, size_t len);
/* The prompt's token at position pos (--seed). */
uint32_t arb_prompt_token(const arb_engine_run_t *r, unsigned pos);
/* A progress line on rank 0's terminal. */
void arb_run_progress(const arb_engine_run_t *r, const char *what, unsigned done, unsigned total);

#endif
