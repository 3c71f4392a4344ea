/* SPDX-License-Identifier: MIT */
/* The speculative phase of the run driver; see run_spec.h. */
#include "run/run_spec.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "run/run_draft.h"

/* The driver's side of arb_spec_model_t: the target's verify, the draft's steps. */
typedef struct spec_ctx {
    arb_stepper_t *target;
    arb_run_draft_t draft;
    double bsum, esum; /* the verifies' bytes and experts */
    char what[64];
} spec_ctx_t;

static arb_status_t spec_propose(void *ctx, const arb_spec_state_t *st, uint32_t first, unsigned k,
                                 const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t len)
{
    spec_ctx_t *x = ctx;
    return arb_run_draft_propose(&x->draft, first, k, (unsigned)st->cache_len, plant, drafts, us, why, len);
}

static arb_status_t spec_verify(void *ctx, const arb_spec_state_t *st, const uint32_t *tokens, unsigned n,
                                uint32_t *argmax, double *us, char *why, size_t len)
{
    spec_ctx_t *x = ctx;
    arb_step_t out;
    ARB_TRY(
        arb_step_once(x->target, tokens, n, (unsigned)st->cache_len, ARB_STEP_GREEDY | ARB_STEP_BYTES, &out, why, len));
    memcpy(argmax, out.greedy, n * sizeof *argmax);
    *us = out.us;
    x->bsum += out.bytes, x->esum += out.experts;
    return ARB_OK;
}

static arb_status_t spec_rollback(void *ctx, size_t keep, const uint32_t *kept, unsigned n, char *why, size_t len)
{
    (void)why, (void)len;
    spec_ctx_t *x = ctx;
    const arb_engine_run_t *r = x->target->r;
    /* the target's rejected positions are overwritten by the next verify before anything reads them */
    arb_run_draft_accept(&x->draft, kept, n, (unsigned)(keep - n));
    unsigned done = (unsigned)(keep - r->o->context);
    arb_run_progress(r, x->what, done < r->o->steps ? done : r->o->steps, r->o->steps);
    return ARB_OK;
}

static arb_status_t result(arb_spec_trace_t *t, unsigned T, double plain_us, arb_phase_result_t *pr, char *why,
                           size_t len)
{
    pr->T = T, pr->nsteps = (unsigned)t->cycles;
    pr->us = malloc(t->cycles * sizeof *pr->us);
    pr->tokens = malloc((t->ntokens ? t->ntokens : 1) * sizeof *pr->tokens);
    if (!pr->us || !pr->tokens)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    memcpy(pr->us, t->cycle_us, t->cycles * sizeof *pr->us);
    memcpy(pr->tokens, t->tokens, t->ntokens * sizeof *pr->tokens);
    pr->produced = pr->compared = (unsigned)t->ntokens;
    pr->agree = (unsigned)t->agree;
    if (arb_stats_compute(pr->us, pr->nsteps, &pr->st) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cycle times are not finite");
    ARB_TRY(arb_spec_summarize(t, plain_us, &pr->spec, why, len));
    pr->ran = 1;
    return ARB_OK;
}

arb_status_t arb_run_spec_phase(arb_stepper_t *target, const uint32_t *g, double p, double plain_us,
                                arb_phase_result_t *pr, char *why, size_t len)
{
    arb_engine_run_t *r = target->r;
    const unsigned S = r->o->steps, k = r->o->spec_k;
    spec_ctx_t x = {.target = target};
    const int measured = r->o->draft_dir[0] != 0;
    if (measured)
        snprintf(x.what, sizeof x.what, "%s %s: spec (draft head)", arb_cfg_role_names[target->c->role],
                 arb_mode_names[target->mode]);
    else
        snprintf(x.what, sizeof x.what, "%s %s: spec p=%.2f", arb_cfg_role_names[target->c->role],
                 arb_mode_names[target->mode], p);
    pr->accept_rate = p;
    arb_status_t st = arb_run_draft_open(target, &x.draft, why, len);
    arb_spec_trace_t t = {0};
    if (st == ARB_OK) {
        arb_spec_model_t m = {.propose = spec_propose, .verify = spec_verify, .rollback = spec_rollback, .ctx = &x};
        arb_spec_opts_t o = {.k = k,
                             .measured = measured,
                             .accept_rate = p,
                             .seed = r->o->seed,
                             .vocab = r->cfg.vocab_size,
                             .chain = g,
                             .chain_len = (size_t)S + k + 1,
                             .start = r->o->context,
                             .tokens = S,
                             .cycles = S};
        arb_spec_state_t ss;
        st = arb_spec_run(&m, &o, &ss, &t, why, len);
    }
    if (st == ARB_OK) {
        pr->bytes = x.bsum / t.cycles, pr->experts = x.esum / t.cycles;
        st = result(&t, k + 1, plain_us, pr, why, len);
    }
    if (st == ARB_OK && measured) /* the p whose E[n] is the measured mean (sum_{i=0..k} p^i = 1 + n) */
        st = arb_spec_implied_acceptance(k, (1 + pr->spec.mean_accepted) * 1e6, 1, &pr->accept_rate, why, len);
    arb_spec_trace_free(&t);
    arb_run_draft_close(&x.draft);
    return st;
}
