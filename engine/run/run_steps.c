/* SPDX-License-Identifier: MIT */
/*
 * One run configuration: model, prefill to --context, then per mode S decode steps
 * (T = 1) and S verify steps (T = k + 1) whose tokens are the decode run's greedy
 * continuation, so each verify output has a decode token to agree with. Every step's
 * time is the maximum over ranks; the distributed argmax picks the largest logit over
 * the ranks' vocabulary shards (ties: the lower global index, MPI_MAXLOC's rule).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "base/heartbeat.h"
#include "base/outfile.h"
#include "cpu/cpu_ref.h"
#include "model/memplan.h"
#include "run/run.h"
#include "model/wgen.h"

const char *const arb_phase_names[ARB_PHASES] = {"decode", "verify", "spec"};

uint32_t arb_prompt_token(const arb_engine_run_t *r, unsigned pos)
{
    return arb_wgen_below(r->o->seed, ARB_W_PROMPT, 0, pos, r->cfg.vocab_size);
}

/* Every rank gets the same status: the worst, with the first failing rank's reason. */
arb_status_t arb_run_agree(arb_engine_run_t *r, arb_status_t st, char *why, size_t len)
{
    int worst = arb_allmax_int(r->m, (int)st);
    if (worst != ARB_OK)
        arb_agree_failure(r->m, st != ARB_OK, why, len);
    return (arb_status_t)worst;
}

/* Greedy tokens of the last step: local (max, index), then MAXLOC over ranks. */
arb_status_t arb_run_greedy(arb_engine_run_t *r, const arb_backend_ops_t *be, void *model, unsigned T,
                           uint32_t *out, char *why, size_t len)
{
    float best[64];
    uint32_t idx[64];
    struct { float v; int i; } in[64], res[64];
    arb_status_t st = be->argmax(model, T, best, idx, why, len);
    st = arb_run_agree(r, st, why, len);
    if (st != ARB_OK)
        return st;
    for (unsigned t = 0; t < T; t++)
        in[t].v = isnan(best[t]) ? -INFINITY : best[t], in[t].i = (int)idx[t];
    MPI_Allreduce(in, res, (int)T, MPI_FLOAT_INT, MPI_MAXLOC, r->m->world);
    for (unsigned t = 0; t < T; t++)
        out[t] = (uint32_t)res[t].i;
    return ARB_OK;
}

/* A step on every rank, then each instance's device-side errors; agreed status. */
arb_status_t arb_run_step(arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c, void *model,
                         const uint32_t *tokens, unsigned T, unsigned pos0, arb_mode_t mode, double *us, char *why,
                         size_t len)
{
    arb_status_t st = be->step(model, tokens, T, pos0, mode, us, why, len);
    for (unsigned i = 0; c && st == ARB_OK && i < c->ninst; i++)
        st = arb_inst_query_error(c->inst[i], why, len);
    return arb_run_agree(r, st, why, len);
}

void arb_run_progress(const arb_engine_run_t *r, const char *what, unsigned done, unsigned total)
{
    if (r->progress && (done == total || done % 16 == 0))
        fprintf(stderr, "\r# %-40s %6u/%-6u%s", what, done, total, done == total ? "\n" : "");
    else if (!r->progress && r->m->rank == 0 && !r->o->quiet) /* not a terminal: a line in the log now and then */
        arb_heartbeat(stderr, what, done, total);
}

/* Prefill positions 0 .. context-1 in chunks (eager); *g0 = the first decode input. */
arb_status_t arb_run_prefill(arb_engine_run_t *r, const arb_backend_ops_t *be, arb_runcfg_t *c, void *model,
                            uint32_t *g0, char *why, size_t len)
{
    const unsigned ctx = r->o->context, chunk = r->o->prefill_chunk;
    uint32_t toks[64];
    double us;
    char what[64];
    snprintf(what, sizeof what, "%s: prefill", c ? c->label : "cpu reference");
    if (ctx == 0) {
        *g0 = arb_prompt_token(r, 0);
        return ARB_OK;
    }
    for (unsigned p = 0; p < ctx; p += chunk) {
        unsigned T = ctx - p < chunk ? ctx - p : chunk;
        for (unsigned t = 0; t < T; t++)
            toks[t] = arb_prompt_token(r, p + t);
        ARB_TRY(arb_run_step(r, be, c, model, toks, T, p, ARB_MODE_EAGER, &us, why, len));
        arb_run_progress(r, what, p + T, ctx);
        if (p + T == ctx) {
            uint32_t out[64];
            ARB_TRY(arb_run_greedy(r, be, model, T, out, why, len));
            *g0 = out[T - 1];
        }
    }
    return ARB_OK;
}

static int lowest_mode(unsigned modes)
{
    for (int m = 0; m < ARB_MODE_COUNT; m++)
        if (modes & (1u << m))
            return m;
    return 0;
}

static unsigned decode_pos0(const arb_engine_run_t *r)
{
    return r->o->context;
}

/* Step bytes of the last step (experts read back), max over ranks. */
arb_status_t arb_run_step_bytes(arb_engine_run_t *r, void *model, unsigned T, unsigned pos0, double *bytes,
                                    double *experts, int32_t *ebuf, char *why, size_t len)
{
    arb_status_t st = r->be->experts(model, T, ebuf, why, len);
    ARB_TRY(arb_run_agree(r, st, why, len));
    arb_step_bytes_t sb;
    arb_step_bytes(&r->cfg, &r->s.shard, r->o->weights, T, pos0, ebuf, &sb);
    double v[2] = {sb.total, sb.distinct_experts}, mx[2];
    MPI_Allreduce(v, mx, 2, MPI_DOUBLE, MPI_MAX, r->m->world);
    *bytes = mx[0], *experts = mx[1];
    return ARB_OK;
}

arb_status_t arb_run_finish_times(arb_engine_run_t *r, arb_phase_result_t *pr, double *mine, char *why, size_t len)
{
    MPI_Allreduce(mine, pr->us, (int)pr->nsteps, MPI_DOUBLE, MPI_MAX, r->m->world);
    if (arb_stats_compute(pr->us, pr->nsteps, &pr->st) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "step times are not finite");
    pr->ran = 1;
    return ARB_OK;
}

/* A phase's arrays: pr->us [nsteps], pr->tokens [ntokens] and this rank's times *mine. */
arb_status_t arb_run_phase_alloc(arb_phase_result_t *pr, unsigned T, unsigned nsteps, size_t ntokens, double **mine,
                                 char *why, size_t len)
{
    pr->T = T, pr->nsteps = nsteps;
    *mine = calloc(nsteps, sizeof **mine);
    pr->us = calloc(nsteps, sizeof *pr->us);
    pr->tokens = calloc(ntokens, sizeof *pr->tokens);
    if (!*mine || !pr->us || !pr->tokens) {
        free(*mine);
        *mine = NULL;
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    }
    return ARB_OK;
}

/* --dump-logits: every rank's shard of the last step's logits (T = 1), gathered on
 * rank 0 into one line of the full vocabulary (positions no rank holds stay 0). */
static arb_status_t dump_logits(arb_engine_run_t *r, void *model, FILE *f, char *why, size_t len)
{
    const unsigned V = r->cfg.vocab_size;
    unsigned vr = 0, vb = 0;
    float *mine = calloc(r->s.shard.vocab, sizeof *mine), *all = calloc(V, sizeof *all);
    arb_status_t st = mine && all ? r->be->logits(model, 1, mine, &vr, &vb, why, len) : ARB_ERR_SYSTEM;
    st = arb_run_agree(r, st, why, len);
    if (st == ARB_OK) {
        int n = r->m->nranks, cnt = (int)vr, base = (int)vb;
        int *counts = calloc((size_t)n, sizeof *counts), *displs = calloc((size_t)n, sizeof *displs);
        MPI_Gather(&cnt, 1, MPI_INT, counts, 1, MPI_INT, 0, r->m->world);
        MPI_Gather(&base, 1, MPI_INT, displs, 1, MPI_INT, 0, r->m->world);
        float *tmp = calloc(V, sizeof *tmp);
        int bad = 0;
        if (r->m->rank == 0) /* shards are disjoint, but a debug run may repeat one: keep them apart */
            for (int i = 0; i < n; i++) {
                bad |= displs[i] + counts[i] > (int)V;
                for (int j = 0; j < i; j++) /* overlapping receive regions are not allowed */
                    bad |= displs[i] < displs[j] + counts[j] && displs[j] < displs[i] + counts[i];
            }
        MPI_Bcast(&bad, 1, MPI_INT, 0, r->m->world);
        if (!bad)
            MPI_Gatherv(mine, cnt, MPI_FLOAT, tmp, counts, displs, MPI_FLOAT, 0, r->m->world);
        if (r->m->rank == 0 && f) {
            for (unsigned v = 0; v < V; v++)
                fprintf(f, "%s%.6g", v ? " " : "", tmp[v]);
            fputc('\n', f);
        }
        free(counts), free(displs), free(tmp);
    }
    free(mine), free(all);
    return st;
}

static arb_status_t decode_phase(arb_engine_run_t *r, arb_runcfg_t *c, void *model, arb_mode_t mode, uint32_t g0,
                                 arb_phase_result_t *pr, int32_t *ebuf, char *why, size_t len)
{
    const unsigned S = r->o->steps, k = r->o->spec_k, P0 = decode_pos0(r);
    double *mine = NULL, bsum = 0, esum = 0;
    ARB_TRY(arb_run_phase_alloc(pr, 1, S, S + k + 1, &mine, why, len));
    pr->tokens[0] = g0;
    char what[64];
    snprintf(what, sizeof what, "%s %s: decode", c->label, arb_mode_names[mode]);
    arb_status_t st = ARB_OK;
    /* the first mode's decode of the implementation may dump its logits and tokens (tests) */
    arb_outfile_t dlf = {0}, dtf = {0}; /* temporary names, renamed in place when complete */
    char owhy[512] = "";
    FILE *df = NULL;
    int dump = arb_run_is_impl(c) && (int)mode == lowest_mode(r->modes);
    if (dump && r->o->dump_logits[0] && r->m->rank == 0 && !(df = arb_outfile_open(&dlf, "--dump-logits", r->o->dump_logits, owhy, sizeof owhy)))
        fprintf(stderr, "# %s\n", owhy);
    for (unsigned i = 0; i < S + k && st == ARB_OK; i++) { /* k more untimed: the verify run's drafts */
        double us = 0, b = 0, e = 0;
        st = arb_run_step(r, r->be, c, model, &pr->tokens[i], 1, P0 + i, mode, &us, why, len);
        if (st == ARB_OK)
            st = arb_run_greedy(r, r->be, model, 1, &pr->tokens[i + 1], why, len);
        if (st == ARB_OK && dump && r->o->dump_logits[0])
            st = dump_logits(r, model, df, why, len);
        if (st == ARB_OK && i < S) {
            mine[i] = us;
            st = arb_run_step_bytes(r, model, 1, P0 + i, &b, &e, ebuf, why, len);
            bsum += b, esum += e;
        }
        arb_run_progress(r, what, i + 1, S + k);
    }
    if (df && (st != ARB_OK || arb_outfile_commit(&dlf, owhy, sizeof owhy)))
        arb_outfile_discard(&dlf);
    if (st == ARB_OK && dump && r->o->dump_tokens[0] && r->m->rank == 0) {
        FILE *tf = arb_outfile_open(&dtf, "--dump-tokens", r->o->dump_tokens, owhy, sizeof owhy);
        for (unsigned i = 0; tf && i <= S + k; i++)
            fprintf(tf, "%u%c", pr->tokens[i], i == S + k ? '\n' : ' ');
        if (!tf || arb_outfile_commit(&dtf, owhy, sizeof owhy))
            fprintf(stderr, "# --dump-tokens %s: cannot write the file (%s)\n", r->o->dump_tokens, owhy);
    }
    if (st == ARB_OK) {
        pr->bytes = bsum / S, pr->experts = esum / S;
        st = arb_run_finish_times(r, pr, mine, why, len);
    }
    free(mine);
    return st;
}

static arb_status_t verify_phase(arb_engine_run_t *r, arb_runcfg_t *c, void *model, arb_mode_t mode,
                                 const uint32_t *g, arb_phase_result_t *pr, int32_t *ebuf, char *why, size_t len)
{
    const unsigned S = r->o->steps, T = r->o->spec_k + 1, P0 = decode_pos0(r);
    double *mine = NULL, bsum = 0, esum = 0;
    ARB_TRY(arb_run_phase_alloc(pr, T, S, (size_t)S * T, &mine, why, len));
    char what[64];
    snprintf(what, sizeof what, "%s %s: verify", c->label, arb_mode_names[mode]);
    arb_status_t st = ARB_OK;
    for (unsigned i = 0; i < S && st == ARB_OK; i++) {
        /* the accepted token g_i and k drafts g_{i+1..i+k} at positions P0+i ..; one accepted per step */
        double us = 0, b = 0, e = 0;
        st = arb_run_step(r, r->be, c, model, &g[i], T, P0 + i, mode, &us, why, len);
        if (st == ARB_OK)
            st = arb_run_greedy(r, r->be, model, T, &pr->tokens[(size_t)i * T], why, len);
        if (st == ARB_OK) {
            mine[i] = us;
            for (unsigned j = 0; j < T; j++, pr->compared++)
                pr->agree += pr->tokens[(size_t)i * T + j] == g[i + j + 1];
            st = arb_run_step_bytes(r, model, T, P0 + i, &b, &e, ebuf, why, len);
            bsum += b, esum += e;
        }
        arb_run_progress(r, what, i + 1, S);
    }
    if (st == ARB_OK) {
        pr->bytes = bsum / S, pr->experts = esum / S;
        st = arb_run_finish_times(r, pr, mine, why, len);
    }
    free(mine);
    return st;
}

static void moe_bench(arb_engine_run_t *r, void *model, arb_phase_result_t *pr)
{
    pr->moe_ours_us = pr->moe_cublas_us = -1;
    if (!r->be->moe_bench)
        return;
    char why[512] = "";
    arb_status_t st = r->be->moe_bench(model, pr->T, &pr->moe_ours_us, &pr->moe_ours_bytes, &pr->moe_cublas_us,
                                       &pr->moe_cublas_bytes, why, sizeof why);
    if (arb_run_agree(r, st, why, sizeof why) != ARB_OK) {
        pr->moe_ours_us = pr->moe_cublas_us = -1;
        if (r->m->rank == 0)
            fprintf(stderr, "# moe bench at T=%u: %s\n", pr->T, why);
    }
}

int arb_run_is_impl(const arb_runcfg_t *c)
{
    return strcmp(c->label, "impl") == 0;
}

/* The fused op's path as the backend saw it at every site (the CPU records it per call). */
static void update_fusion(arb_engine_run_t *r, arb_runcfg_t *c, void *model)
{
    for (unsigned s = 0; r->be->site_path && s < 2 * r->cfg.num_hidden_layers; s++) {
        arb_fusion_t p = r->be->site_path(model, s);
        const char *name = p == ARB_FUSION_PLUGIN ? "plugin" : p == ARB_FUSION_COMPOSED ? "composed" : "local";
        if (s == 0)
            snprintf(c->fusion, sizeof c->fusion, "%s", name);
        else if (strcmp(c->fusion, name) != 0)
            snprintf(c->fusion, sizeof c->fusion, "mixed");
    }
}

arb_status_t arb_run_config(arb_engine_run_t *r, arb_runcfg_t *c, char *why, size_t len)
{
    void *model = NULL;
    int32_t *ebuf = calloc((size_t)r->cfg.num_hidden_layers * r->s.max_tokens * r->cfg.num_experts_per_tok,
                           sizeof *ebuf);
    if (!ebuf)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    arb_status_t st = arb_run_agree(r, r->be->create(&r->s, c->sites, c->sites_t1, &model, why, len), why, len);
    uint32_t g0 = 0;
    if (st == ARB_OK)
        st = arb_run_prefill(r, r->be, c, model, &g0, why, len);
    if (st == ARB_OK && arb_run_is_impl(c) && r->o->check_steps)
        st = arb_run_check(r, model, g0, why, len);
    if (st == ARB_OK && arb_run_is_impl(c) && r->be->read_bandwidth) {
        double bw = -1;
        st = arb_run_agree(r, r->be->read_bandwidth(model, &bw, why, len), why, len);
        MPI_Allreduce(MPI_IN_PLACE, &bw, 1, MPI_DOUBLE, MPI_MIN, r->m->world);
        r->bandwidth = bw;
    }
    for (int mode = 0; mode < ARB_MODE_COUNT && st == ARB_OK; mode++) {
        if (!(r->modes & (1u << mode)))
            continue;
        arb_phase_result_t *d = &c->res[mode][ARB_PHASE_DECODE], *v = &c->res[mode][ARB_PHASE_VERIFY];
        st = decode_phase(r, c, model, (arb_mode_t)mode, g0, d, ebuf, why, len);
        if (st == ARB_OK && arb_run_is_impl(c)) {
            moe_bench(r, model, d);
            update_fusion(r, c, model);
            if (r->m->rank == 0)
                arb_run_row(r, c, mode, ARB_PHASE_DECODE);
        }
        if (st == ARB_OK)
            st = verify_phase(r, c, model, (arb_mode_t)mode, d->tokens, v, ebuf, why, len);
        if (st == ARB_OK && arb_run_is_impl(c)) {
            moe_bench(r, model, v);
            if (r->m->rank == 0)
                arb_run_row(r, c, mode, ARB_PHASE_VERIFY);
        }
        for (unsigned i = 0; i < r->o->naccept && st == ARB_OK; i++) { /* one spec row per acceptance rate */
            st = arb_run_spec_phase(r, c, model, (arb_mode_t)mode, d->tokens, r->o->accept_rates[i], &c->specs[mode][i],
                                    ebuf, why, len);
            if (st == ARB_OK && arb_run_is_impl(c) && r->m->rank == 0)
                arb_run_spec_row(r, c, mode, i);
        }
    }
    if (model)
        r->be->destroy(model);
    free(ebuf);
    return st;
}
