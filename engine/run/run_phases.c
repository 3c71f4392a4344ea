/* SPDX-License-Identifier: MIT */
/* One run configuration's phases; see run_phases.h. */
#include "run/run_phases.h"
#include "run/run_floors.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "base/outfile.h"
#include "run/run_check.h"
#include "run/run_spec.h"
#include "run/run_weights.h"
#include "run/step.h"

static int lowest_mode(unsigned modes)
{
    for (int m = 0; m < ARB_MODE_COUNT; m++)
        if (modes & (1u << m))
            return m;
    return 0;
}

/* A phase's arrays: pr->us [nsteps] and pr->tokens [ntokens]. */
static arb_status_t phase_alloc(arb_phase_result_t *pr, unsigned T, unsigned nsteps, size_t ntokens, char *why,
                                size_t len)
{
    pr->T = T, pr->nsteps = nsteps;
    pr->us = calloc(nsteps, sizeof *pr->us);
    pr->tokens = calloc(ntokens, sizeof *pr->tokens);
    if (!pr->us || !pr->tokens)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    return ARB_OK;
}

static arb_status_t finish_times(arb_phase_result_t *pr, char *why, size_t len)
{
    if (arb_stats_compute(pr->us, pr->nsteps, &pr->st) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "step times are not finite");
    pr->ran = 1;
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

/* S timed decode steps (T = 1) on the greedy chain from g0, and k untimed ones: the
 * drafts of the verify steps and of the speculative cycles. */
static arb_status_t decode_phase(arb_stepper_t *s, uint32_t g0, arb_phase_result_t *pr, char *why, size_t len)
{
    arb_engine_run_t *r = s->r;
    const unsigned S = r->o->steps, k = r->o->spec_k, P0 = r->o->context;
    double bsum = 0, esum = 0;
    ARB_TRY(phase_alloc(pr, 1, S, S + k + 1, why, len));
    pr->tokens[0] = g0;
    char what[64];
    snprintf(what, sizeof what, "%s %s: decode", arb_cfg_role_names[s->c->role], arb_mode_names[s->mode]);
    arb_status_t st = ARB_OK;
    /* the first mode's decode of the implementation may dump its logits and tokens (tests) */
    arb_outfile_t dlf = {0}, dtf = {0}; /* temporary names, renamed in place when complete */
    char owhy[512] = "";
    FILE *df = NULL;
    int dump = s->c->role == ARB_CFG_IMPL && (int)s->mode == lowest_mode(r->modes);
    if (dump && r->o->dump_logits[0] && r->m->rank == 0 && !(df = arb_outfile_open(&dlf, "--dump-logits", r->o->dump_logits, owhy, sizeof owhy)))
        fprintf(stderr, "# %s\n", owhy);
    for (unsigned i = 0; i < S + k && st == ARB_OK; i++) {
        arb_step_t out;
        st = arb_step_once(s, &pr->tokens[i], 1, P0 + i, ARB_STEP_GREEDY | (i < S ? ARB_STEP_BYTES : 0), &out, why,
                           len);
        if (st == ARB_OK)
            pr->tokens[i + 1] = out.greedy[0];
        if (st == ARB_OK && dump && r->o->dump_logits[0])
            st = dump_logits(r, s->model, df, why, len);
        if (st == ARB_OK && i < S)
            pr->us[i] = out.us, bsum += out.bytes, esum += out.experts;
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
    if (st == ARB_OK && dump)
        arb_run_write_out_ids(r, pr->tokens, S + k + 1); /* --out-ids (engine/run/run_weights.h) */
    if (st == ARB_OK) {
        pr->bytes = bsum / S, pr->experts = esum / S;
        st = finish_times(pr, why, len);
    }
    return st;
}

/* S verify steps (T = k + 1): step i verifies the chain's g_i .. g_{i+k} at P0 + i (the
 * accepted token and k drafts, one accepted per step); outputs agree with g_{i+1} ... */
static arb_status_t verify_phase(arb_stepper_t *s, const uint32_t *g, arb_phase_result_t *pr, char *why, size_t len)
{
    arb_engine_run_t *r = s->r;
    const unsigned S = r->o->steps, T = r->o->spec_k + 1, P0 = r->o->context;
    double bsum = 0, esum = 0;
    ARB_TRY(phase_alloc(pr, T, S, (size_t)S * T, why, len));
    char what[64];
    snprintf(what, sizeof what, "%s %s: verify", arb_cfg_role_names[s->c->role], arb_mode_names[s->mode]);
    arb_status_t st = ARB_OK;
    for (unsigned i = 0; i < S && st == ARB_OK; i++) {
        arb_step_t out;
        st = arb_step_once(s, &g[i], T, P0 + i, ARB_STEP_GREEDY | ARB_STEP_BYTES, &out, why, len);
        if (st == ARB_OK) {
            pr->us[i] = out.us, bsum += out.bytes, esum += out.experts;
            for (unsigned j = 0; j < T; j++, pr->compared++) {
                pr->tokens[(size_t)i * T + j] = out.greedy[j];
                pr->agree += out.greedy[j] == g[i + j + 1];
            }
        }
        arb_run_progress(r, what, i + 1, S);
    }
    if (st == ARB_OK) {
        pr->bytes = bsum / S, pr->experts = esum / S;
        st = finish_times(pr, why, len);
    }
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
    } else if (why[0] && r->m->rank == 0) {
        printf("# moe bench at T=%u: %s\n", pr->T, why);
    }
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

/* The row of (c, mode, phase[, rate]) to the sink: the implementation's only. */
static void emit(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, int phase, unsigned rate,
                 const arb_phase_result_t *res)
{
    if (c->role != ARB_CFG_IMPL)
        return;
    arb_run_row_t row = {.c = c, .mode = mode, .phase = phase, .rate = rate, .res = res};
    arb_run_emit(r, &row);
}

/* One mode on the prefilled model: decode, verify, one speculative phase per --accept-rate. */
static arb_status_t run_mode(arb_stepper_t *s, uint32_t g0, char *why, size_t len)
{
    arb_engine_run_t *r = s->r;
    arb_runcfg_t *c = s->c;
    const int mode = (int)s->mode, impl = c->role == ARB_CFG_IMPL;
    arb_phase_result_t *d = &c->res[mode][ARB_PHASE_DECODE], *v = &c->res[mode][ARB_PHASE_VERIFY];
    ARB_TRY(decode_phase(s, g0, d, why, len));
    if (impl) {
        moe_bench(r, s->model, d);
        update_fusion(r, c, s->model);
    }
    emit(r, c, mode, ARB_PHASE_DECODE, 0, d);
    ARB_TRY(verify_phase(s, d->tokens, v, why, len));
    if (impl)
        moe_bench(r, s->model, v);
    emit(r, c, mode, ARB_PHASE_VERIFY, 0, v);
    for (unsigned i = 0; i < arb_run_nspec(r); i++) {
        double p = r->o->draft_dir[0] ? -1 : r->o->accept_rates[i];
        ARB_TRY(arb_run_spec_phase(s, d->tokens, p, d->st.median, &c->specs[mode][i], why, len));
        emit(r, c, mode, ARB_PHASE_SPEC, i, &c->specs[mode][i]);
    }
    return ARB_OK;
}

arb_status_t arb_run_config(arb_engine_run_t *r, arb_runcfg_t *c, char *why, size_t len)
{
    void *model = NULL;
    arb_status_t st = arb_run_agree(r, r->be->create(&r->s, c->sites, c->sites_t1, &model, why, len), why, len);
    if (st == ARB_OK)
        arb_run_report_load(r, arb_cfg_role_names[c->role]); /* --weights-dir: time and GB/s */
    arb_stepper_t s = {0};
    if (st == ARB_OK)
        st = arb_stepper_init(&s, r, r->be, c, model, ARB_MODE_EAGER, ARB_STEP_BYTES, why, len);
    uint32_t g0 = 0;
    if (st == ARB_OK)
        st = arb_step_prefill(&s, &g0, why, len);
    if (st == ARB_OK && c->role == ARB_CFG_IMPL && r->o->check_steps)
        st = arb_run_check(&s, g0, why, len);
    if (st == ARB_OK && c->role == ARB_CFG_IMPL && r->be->read_bandwidth) {
        double bw = -1;
        st = arb_run_agree(r, r->be->read_bandwidth(model, &bw, why, len), why, len);
        MPI_Allreduce(MPI_IN_PLACE, &bw, 1, MPI_DOUBLE, MPI_MIN, r->m->world);
        r->bandwidth = bw;
    }
    for (int mode = 0; mode < ARB_MODE_COUNT && st == ARB_OK; mode++) {
        if (!(r->modes & (1u << mode)))
            continue;
        s.mode = (arb_mode_t)mode;
        st = run_mode(&s, g0, why, len);
    }
    if (st == ARB_OK && c->role == ARB_CFG_IMPL) /* last: its steps leave the model's cache as they like */
        arb_run_floors(&s);
    arb_stepper_free(&s);
    if (model)
        r->be->destroy(model);
    return st;
}
