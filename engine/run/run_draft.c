/* SPDX-License-Identifier: MIT */
/* The speculative cycles' draft model in the run driver; see run_draft.h. */
#include "run/run_draft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft)
{
    *draft = *target;
    draft->num_hidden_layers = 1;
    draft->first_k_dense_replace = 1; /* a dense decoder layer */
    size_t n = strlen(draft->overrides);
    snprintf(draft->overrides + n, sizeof draft->overrides - n, "%sdraft=1 dense layer", n ? "," : "");
}

arb_status_t arb_run_draft_open(arb_engine_run_t *r, arb_runcfg_t *c, arb_mode_t mode, arb_run_draft_t *d, char *why,
                                size_t len)
{
    memset(d, 0, sizeof *d);
    static arb_model_config_t dcfg; /* the setup points at it while the draft lives (one run per process) */
    arb_draft_config(&r->cfg, &dcfg);
    arb_engine_setup_t ds = r->s;
    ds.cfg = &dcfg;
    ARB_TRY(arb_shard_make_range(&dcfg, ds.tp_shape, ds.shard_first, ds.shard_count, r->o->weights, &ds.shard, why, len));
    d->cap = r->s.positions;
    d->hist = calloc(d->cap, sizeof *d->hist);
    if (!d->hist)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    for (unsigned p = 0; p < r->o->context && p < d->cap; p++)
        d->hist[p] = arb_prompt_token(r, p);
    void *model = NULL;
    arb_status_t st = r->be->create(&ds, c->sites, c->sites_t1, &model, why, len);
    d->step = (arb_stepper_t){.r = r, .be = r->be, .c = c, .model = model, .mode = mode}; /* no scratch */
    ARB_TRY(arb_run_agree(r, st, why, len));
    uint32_t g0;
    ARB_TRY(arb_step_prefill(&d->step, &g0, why, len));
    d->len = r->o->context;
    return ARB_OK;
}

arb_status_t arb_run_draft_cycle(arb_run_draft_t *d, const uint32_t *in, unsigned k, unsigned pos, double *us,
                                 char *why, size_t len)
{
    const unsigned max_T = d->step.r->s.max_tokens;
    double total = 0;
    arb_step_t out;
    if (pos + k > d->cap)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "draft: position %u past the cache capacity %u", pos + k - 1, d->cap);
    while (d->len < pos) { /* catch up on what the target accepted */
        unsigned T = pos - d->len < max_T ? pos - d->len : max_T;
        ARB_TRY(arb_step_once(&d->step, d->hist + d->len, T, d->len, ARB_STEP_GREEDY, &out, why, len));
        total += out.us;
        d->len += T;
    }
    for (unsigned j = 0; j < k; j++) { /* k draft steps: what an EAGLE draft costs per cycle */
        ARB_TRY(arb_step_once(&d->step, &in[j], 1, pos + j, ARB_STEP_GREEDY, &out, why, len));
        total += out.us;
        d->hist[pos + j] = in[j];
    }
    d->len = pos + k;
    *us = total;
    return ARB_OK;
}

void arb_run_draft_accept(arb_run_draft_t *d, const uint32_t *tokens, unsigned n, unsigned pos)
{
    for (unsigned j = 0; j < n && pos + j < d->cap; j++)
        d->hist[pos + j] = tokens[j];
    if (d->len > pos + n)
        d->len = pos + n;
}

void arb_run_draft_close(arb_run_draft_t *d)
{
    if (d->step.model)
        d->step.be->destroy(d->step.model);
    arb_stepper_free(&d->step);
    free(d->hist);
    memset(d, 0, sizeof *d);
}
