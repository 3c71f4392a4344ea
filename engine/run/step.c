/* SPDX-License-Identifier: MIT */
/* One step of the run driver; see step.h. */
#include "run/step.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "base/heartbeat.h"
#include "model/memplan.h"
#include "model/wgen.h"

uint32_t arb_prompt_token(const arb_engine_run_t *r, unsigned pos)
{
    if (r->prompt) /* --prompt-ids: context = nprompt, so pos < nprompt */
        return r->prompt[pos < r->nprompt ? pos : r->nprompt - 1];
    return arb_wgen_below(r->o->seed, ARB_W_PROMPT, 0, pos, r->cfg.vocab_size);
}

arb_status_t arb_run_agree(arb_engine_run_t *r, arb_status_t st, char *why, size_t len)
{
    int worst = arb_allmax_int(r->m, (int)st);
    if (worst != ARB_OK)
        arb_agree_failure(r->m, st != ARB_OK, why, len);
    return (arb_status_t)worst;
}

void arb_run_progress(const arb_engine_run_t *r, const char *what, unsigned done, unsigned total)
{
    if (r->progress && (done == total || done % 16 == 0))
        fprintf(stderr, "\r# %-40s %6u/%-6u%s", what, done, total, done == total ? "\n" : "");
    else if (!r->progress && r->m->rank == 0 && !r->o->quiet) /* not a terminal: a line in the log now and then */
        arb_heartbeat(stderr, what, done, total);
}

arb_status_t arb_stepper_init(arb_stepper_t *s, arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c,
                              void *model, arb_mode_t mode, unsigned wants, char *why, size_t len)
{
    *s = (arb_stepper_t){.r = r, .be = be, .c = c, .model = model, .mode = mode};
    if (wants & ARB_STEP_BYTES)
        s->experts = calloc((size_t)r->cfg.num_hidden_layers * r->s.max_tokens * r->cfg.num_experts_per_tok,
                            sizeof *s->experts);
    if (wants & ARB_STEP_TOP2) /* at least T x this rank's vocabulary */
        s->logits = malloc((size_t)r->s.max_tokens * r->cfg.vocab_size * sizeof *s->logits);
    if (((wants & ARB_STEP_BYTES) && !s->experts) || ((wants & ARB_STEP_TOP2) && !s->logits)) {
        arb_stepper_free(s);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    }
    return ARB_OK;
}

void arb_stepper_free(arb_stepper_t *s)
{
    free(s->experts);
    free(s->logits);
    s->experts = NULL, s->logits = NULL;
}

/* Greedy tokens of the last step: local (max, index), then MAXLOC over ranks. */
static arb_status_t greedy(arb_stepper_t *s, unsigned T, uint32_t *out, char *why, size_t len)
{
    float best[ARB_STEP_MAX_T];
    uint32_t idx[ARB_STEP_MAX_T];
    struct { float v; int i; } in[ARB_STEP_MAX_T], res[ARB_STEP_MAX_T];
    ARB_TRY(arb_run_agree(s->r, s->be->argmax(s->model, T, best, idx, why, len), why, len));
    for (unsigned t = 0; t < T; t++)
        in[t].v = isnan(best[t]) ? -INFINITY : best[t], in[t].i = (int)idx[t];
    MPI_Allreduce(in, res, (int)T, MPI_FLOAT_INT, MPI_MAXLOC, s->r->m->world);
    for (unsigned t = 0; t < T; t++)
        out[t] = (uint32_t)res[t].i;
    return ARB_OK;
}

/* Step bytes of the last step (experts read back), max over ranks. */
static arb_status_t step_bytes(arb_stepper_t *s, unsigned T, unsigned pos0, arb_step_t *out, char *why, size_t len)
{
    arb_engine_run_t *r = s->r;
    ARB_TRY(arb_run_agree(r, s->be->experts(s->model, T, s->experts, why, len), why, len));
    arb_step_bytes_t sb;
    arb_step_bytes(&r->cfg, &r->s.shard, r->o->weights, T, pos0, s->experts, &sb);
    double v[2] = {sb.total, sb.distinct_experts}, mx[2];
    MPI_Allreduce(v, mx, 2, MPI_DOUBLE, MPI_MAX, r->m->world);
    out->bytes = mx[0], out->experts = mx[1];
    return ARB_OK;
}

/* The distributed two largest logits after each token. */
static arb_status_t top2(arb_stepper_t *s, unsigned T, arb_step_t *out, char *why, size_t len)
{
    unsigned vr = 0, vb = 0;
    arb_status_t st = s->be->logits ? s->be->logits(s->model, T, s->logits, &vr, &vb, why, len) : ARB_DECLINE;
    ARB_TRY(arb_run_agree(s->r, st, why, len));
    arb_top2_t mine[ARB_STEP_MAX_T];
    for (unsigned t = 0; t < T; t++)
        mine[t] = arb_top2_local(s->logits + (size_t)t * vr, vr, (int32_t)vb);
    if (arb_top2_allreduce(s->r->m, mine, out->top2, T) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "top-2 logits: MPI gather failed");
    return ARB_OK;
}

arb_status_t arb_step_once(arb_stepper_t *s, const uint32_t *tokens, unsigned T, unsigned pos0, unsigned want,
                           arb_step_t *out, char *why, size_t len)
{
    if (T == 0 || T > ARB_STEP_MAX_T)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "a step of %u tokens; expected 1 to %d", T, ARB_STEP_MAX_T);
    double mine = 0;
    arb_status_t st = s->be->step(s->model, tokens, T, pos0, s->mode, &mine, why, len);
    for (unsigned i = 0; s->c && st == ARB_OK && i < s->c->ninst; i++)
        st = arb_inst_query_error(s->c->inst[i], why, len);
    ARB_TRY(arb_run_agree(s->r, st, why, len));
    MPI_Allreduce(&mine, &out->us, 1, MPI_DOUBLE, MPI_MAX, s->r->m->world);
    if (want & ARB_STEP_GREEDY)
        ARB_TRY(greedy(s, T, out->greedy, why, len));
    if (want & ARB_STEP_BYTES)
        ARB_TRY(step_bytes(s, T, pos0, out, why, len));
    if (want & ARB_STEP_TOP2)
        ARB_TRY(top2(s, T, out, why, len));
    return ARB_OK;
}

arb_status_t arb_step_prefill(arb_stepper_t *s, uint32_t *g0, char *why, size_t len)
{
    arb_engine_run_t *r = s->r;
    const unsigned ctx = r->o->context, chunk = r->o->prefill_chunk;
    arb_stepper_t eager = *s;
    eager.mode = ARB_MODE_EAGER;
    uint32_t toks[ARB_STEP_MAX_T];
    arb_step_t out;
    char what[64];
    snprintf(what, sizeof what, "%s: prefill", s->c ? arb_cfg_role_names[s->c->role] : "cpu reference");
    if (ctx == 0) {
        *g0 = arb_prompt_token(r, 0);
        return ARB_OK;
    }
    if (chunk > ARB_STEP_MAX_T) /* every rank has the same options: all return here */
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--prefill-chunk %u: expected at most %d tokens per step", chunk,
                  ARB_STEP_MAX_T);
    for (unsigned p = 0; p < ctx; p += chunk) {
        unsigned T = ctx - p < chunk ? ctx - p : chunk;
        for (unsigned t = 0; t < T; t++)
            toks[t] = arb_prompt_token(r, p + t);
        ARB_TRY(arb_step_once(&eager, toks, T, p, p + T == ctx ? ARB_STEP_GREEDY : 0, &out, why, len));
        arb_run_progress(r, what, p + T, ctx);
        if (p + T == ctx)
            *g0 = out.greedy[T - 1];
    }
    return ARB_OK;
}
