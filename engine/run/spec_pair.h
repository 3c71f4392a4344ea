/* SPDX-License-Identifier: MIT */
/*
 * A target and a draft model as the speculative cycle's arb_spec_model_t (engine/stats/spec.h).
 * Both are driven through one step function each (T tokens at pos0 -> time and greedy
 * argmax per token: the driver's backend step + distributed argmax, or the CPU reference
 * directly). The pair keeps every token at every position (history), so:
 *   - draft: the draft first catches up on positions it has not seen (after a cycle that
 *     accepted all k drafts, d_k was never fed to it), in one step, then runs k steps of
 *     T = 1 from `next`; all of it counts as draft time;
 *   - verify: the target runs [next, d_1 .. d_k] at cache_len .. cache_len + k;
 *   - rollback(len): both caches keep their first len positions; positions past len are
 *     overwritten by the next steps before anything reads them (attention is causal).
 * The draft of issue 15 is one decoder layer at the target's hidden size (dense MLP,
 * tensor-parallel like the target: 2 all-reduce call sites per draft step); arb_draft_config
 * makes that configuration from the target's. Unlike EAGLE's draft it reads only the
 * token, not the target's hidden states (one fewer [H x 3H] projection per draft step).
 */
#ifndef ARB_ENGINE_SPEC_PAIR_H
#define ARB_ENGINE_SPEC_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "stats/spec.h"

typedef arb_status_t (*arb_model_step_fn)(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, double *us,
                                          uint32_t *greedy, char *why, size_t why_len);

typedef struct arb_spec_pair {
    arb_model_step_fn step;
    void *target, *draft;
    size_t capacity;       /* positions both caches hold */
    uint32_t *history;     /* [capacity]: the token at each position */
    size_t draft_len;      /* positions the draft's cache holds validly */
    unsigned max_draft_T;  /* largest catch-up step the draft model accepts */
} arb_spec_pair_t;

/* After both models were prefilled with history[0 .. len) (the prompt): the pair owns
 * a copy of it. ARB_ERR_INVALID when len > capacity. */
arb_status_t arb_spec_pair_init(arb_spec_pair_t *p, arb_model_step_fn step, void *target, void *draft, size_t capacity,
                                unsigned max_draft_T, const uint32_t *prompt, size_t len, char *why, size_t why_len);
void arb_spec_pair_free(arb_spec_pair_t *p);
/* The arb_spec_model_t whose ctx is p. */
arb_spec_model_t arb_spec_pair_model(arb_spec_pair_t *p);

/* The draft's configuration: the target's with one (dense) decoder layer. */
void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft);

#endif
