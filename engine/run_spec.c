/* SPDX-License-Identifier: MIT */
/* Speculative cycles in the run driver: draft model, pair, summary per acceptance value. */
#include "run_spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "run.h"
#include "spec_pair.h"

typedef struct step_ctx {
    arb_engine_run_t *r;
    arb_runcfg_t *c;
    void *model;
    arb_mode_t mode;
} step_ctx_t;

/* One step on every rank, its time the maximum over ranks, the distributed argmax. */
static arb_status_t driver_step(void *ctx, const uint32_t *tokens, unsigned T, unsigned pos0, double *us,
                                uint32_t *greedy, char *why, size_t len)
{
    step_ctx_t *s = ctx;
    double mine = 0;
    ARB_TRY(arb_run_step(s->r, s->r->be, s->c, s->model, tokens, T, pos0, s->mode, &mine, why, len));
    ARB_TRY(arb_run_greedy(s->r, s->r->be, s->model, T, greedy, why, len));
    MPI_Allreduce(&mine, us, 1, MPI_DOUBLE, MPI_MAX, s->r->m->world);
    return ARB_OK;
}

void arb_spec_result_free(arb_spec_result_t *s)
{
    free(s->cycle_us);
    free(s->tokens);
    memset(s, 0, sizeof *s);
}

static arb_status_t one_rate(arb_engine_run_t *r, arb_spec_pair_t *pair, double p, double plain_us, uint32_t g0,
                             arb_spec_result_t *out, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    arb_spec_model_t m = arb_spec_pair_model(pair);
    /* every value starts from the end of the context: later positions are rewritten */
    arb_spec_state_t st = {.cache_len = o->context, .next = (int32_t)g0};
    pair->draft_len = pair->draft_len > o->context ? o->context : pair->draft_len;
    arb_spec_opts_t so = {.k = o->spec_k, .accept_rate = p, .seed = o->seed, .cycles = o->steps};
    arb_spec_trace_t tr;
    ARB_TRY(arb_spec_run(&m, &so, &st, &tr, why, len));
    arb_status_t s = arb_spec_summarize(&tr, plain_us, &out->sum, why, len);
    if (s == ARB_OK) {
        out->ran = 1, out->accept_rate = p;
        out->cycle_us = tr.cycle_us, tr.cycle_us = NULL;
        out->tokens = malloc(tr.ntokens * sizeof *out->tokens);
        for (size_t i = 0; out->tokens && i < tr.ntokens; i++)
            out->tokens[i] = (uint32_t)tr.tokens[i];
        out->ntokens = out->tokens ? tr.ntokens : 0;
    }
    arb_spec_trace_free(&tr);
    return s;
}

arb_status_t arb_run_spec(arb_engine_run_t *r, arb_runcfg_t *c, void *model, arb_mode_t mode,
                          const arb_phase_result_t *decode, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    if (!o->naccept)
        return ARB_OK;
    if (!decode->ran || !(decode->st.median > 0))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "speculative cycles need the plain decode phase of the same mode");
    /* the draft: the target's configuration with one dense layer, sharded the same way */
    arb_model_config_t dcfg;
    arb_draft_config(&r->cfg, &dcfg);
    arb_engine_setup_t ds = r->s;
    ds.cfg = &dcfg;
    ARB_TRY(arb_shard_make_range(&dcfg, ds.tp_shape, ds.shard_first, ds.shard_count, o->weights, &ds.shard, why, len));
    void *draft = NULL;
    ARB_TRY(arb_run_agree(r, r->be->create(&ds, c->sites, &draft, why, len), why, len));
    uint32_t dg0 = 0;
    arb_status_t st = arb_run_prefill(r, r->be, c, draft, &dg0, why, len);
    uint32_t *prompt = calloc(o->context + 1, sizeof *prompt);
    if (st == ARB_OK && !prompt)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, len, "out of host memory");
    for (unsigned p = 0; st == ARB_OK && p < o->context; p++)
        prompt[p] = arb_prompt_token(r, p);
    step_ctx_t tctx = {r, c, model, mode}, dctx = {r, c, draft, mode};
    arb_spec_pair_t pair;
    memset(&pair, 0, sizeof pair);
    if (st == ARB_OK)
        st = arb_spec_pair_init(&pair, driver_step, &tctx, &dctx, r->s.positions, r->s.max_tokens, prompt, o->context,
                                why, len);
    for (unsigned i = 0; st == ARB_OK && i < o->naccept; i++) {
        arb_spec_result_free(&c->specdec[mode][i]);
        st = one_rate(r, &pair, o->accept_rates[i], decode->st.median, decode->tokens[0], &c->specdec[mode][i], why, len);
    }
    arb_spec_pair_free(&pair);
out:
    free(prompt);
    r->be->destroy(draft);
    return st;
}
