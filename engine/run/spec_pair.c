/* SPDX-License-Identifier: MIT */
/* Target + draft models as a speculative cycle model; see spec_pair.h. */
#include "run/spec_pair.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

arb_status_t arb_spec_pair_init(arb_spec_pair_t *p, arb_model_step_fn step, void *target, void *draft, size_t capacity,
                                unsigned max_draft_T, const uint32_t *prompt, size_t len, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    if (len > capacity || max_draft_T == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative pair: %zu prompt tokens for %zu positions, draft T %u", len, capacity, max_draft_T);
    p->history = calloc(capacity ? capacity : 1, sizeof *p->history);
    if (!p->history)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "speculative pair: out of memory for %zu positions", capacity);
    memcpy(p->history, prompt, len * sizeof *prompt);
    p->step = step, p->target = target, p->draft = draft;
    p->capacity = capacity, p->draft_len = len, p->max_draft_T = max_draft_T;
    return ARB_OK;
}

void arb_spec_pair_free(arb_spec_pair_t *p)
{
    free(p->history);
    memset(p, 0, sizeof *p);
}

static arb_status_t room(const arb_spec_pair_t *p, size_t end, char *why, size_t why_len)
{
    if (end > p->capacity)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative cycle: position %zu past the cache capacity %zu (raise --context headroom or lower --steps)", end - 1, p->capacity);
    return ARB_OK;
}

static arb_status_t pair_draft(void *ctx, const arb_spec_state_t *st, unsigned k, int32_t *draft, double *us, char *why,
                               size_t why_len)
{
    arb_spec_pair_t *p = ctx;
    ARB_TRY(room(p, st->cache_len + k, why, why_len));
    double total = 0, t;
    uint32_t g[ARB_SPEC_MAX_K + 1];
    /* catch up on the positions the draft has not seen, up to cache_len (next is fed below) */
    while (p->draft_len < st->cache_len) {
        size_t n = st->cache_len - p->draft_len;
        unsigned T = n < p->max_draft_T ? (unsigned)n : p->max_draft_T;
        uint32_t out[64];
        if (T > 64)
            T = 64;
        ARB_TRY(p->step(p->draft, p->history + p->draft_len, T, (unsigned)p->draft_len, &t, out, why, why_len));
        total += t;
        p->draft_len += T;
    }
    uint32_t tok = (uint32_t)st->next;
    for (unsigned i = 0; i < k; i++) {
        ARB_TRY(p->step(p->draft, &tok, 1, (unsigned)(st->cache_len + i), &t, &g[i], why, why_len));
        total += t;
        draft[i] = (int32_t)g[i];
        tok = g[i];
    }
    /* it has now seen next, d_1 .. d_{k-1} at cache_len .. cache_len + k - 1 */
    p->draft_len = st->cache_len + k;
    *us = total;
    return ARB_OK;
}

static arb_status_t pair_verify(void *ctx, const arb_spec_state_t *st, const int32_t *tokens, unsigned n,
                                int32_t *argmax, double *us, char *why, size_t why_len)
{
    arb_spec_pair_t *p = ctx;
    if (n == 0 || n > ARB_SPEC_MAX_K + 1)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative verify of %u tokens; expected 1 to %d", n, ARB_SPEC_MAX_K + 1);
    ARB_TRY(room(p, st->cache_len + n, why, why_len));
    uint32_t in[ARB_SPEC_MAX_K + 1] = {0}, out[ARB_SPEC_MAX_K + 1];
    for (unsigned i = 0; i < n; i++) {
        in[i] = (uint32_t)tokens[i];
        p->history[st->cache_len + i] = in[i];
    }
    ARB_TRY(p->step(p->target, in, n, (unsigned)st->cache_len, us, out, why, why_len));
    for (unsigned i = 0; i < n; i++)
        argmax[i] = (int32_t)out[i];
    return ARB_OK;
}

static arb_status_t pair_rollback(void *ctx, size_t len, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    arb_spec_pair_t *p = ctx;
    if (p->draft_len > len)
        p->draft_len = len;
    /* history[0 .. len) is what the caches hold: next and the accepted drafts were written
     * by the verify; the rest is overwritten by later steps */
    return ARB_OK;
}

arb_spec_model_t arb_spec_pair_model(arb_spec_pair_t *p)
{
    return (arb_spec_model_t){.draft = pair_draft, .verify = pair_verify, .rollback = pair_rollback, .ctx = p};
}

void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft)
{
    *draft = *target;
    draft->num_hidden_layers = 1;
    draft->first_k_dense_replace = 1; /* a dense decoder layer */
    size_t n = strlen(draft->overrides);
    snprintf(draft->overrides + n, sizeof draft->overrides - n, "%sdraft=1 dense layer", n ? "," : "");
}
