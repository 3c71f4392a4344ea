/* SPDX-License-Identifier: MIT */
/* The engine's results rows and the summary table; see run_rows.h. */
#include "run/run_rows.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"
#include "run/run_weights.h"

/* The sweep's metadata columns (docs/results.md), then the engine's. */
#define ARB_ENGINE_COLUMNS(X)                                                                    \
    X(schema) X(run_id) X(time) X(git_rev) X(arbench_version) X(host) X(argv) X(gpu) X(sm)       \
    X(driver) X(cuda) X(nccl) X(nccl_header) X(mpi) X(fabric) X(binding) X(ranks) X(nodes)       \
    X(impl) X(params) X(backend) X(env) X(source)                                                \
    X(config) X(model_type) X(layers) X(experts) X(topk) X(overrides) X(weights) X(tp)           \
    X(tp_shape) X(shards_per_rank) X(context) X(phase) X(tokens) X(mode) X(steps) X(sites)       \
    X(fusion) X(median_us) X(p10_us) X(p90_us) X(mean_us) X(min_us) X(max_us) X(tok_s)           \
    X(compute_only_us) X(compute_only_experts) X(allreduce_us) X(allreduce_share) X(step_bytes) X(read_gbs)              \
    X(hbm_floor_us) X(floor_ratio) X(experts_per_layer) X(moe_us) X(moe_gbs) X(moe_cublas_us)    \
    X(moe_cublas_gbs) X(moe_speedup) X(accept_rate) X(accepted_per_cycle) X(agree) X(check_agree) X(check_logit_diff) X(logit_tol)    \
    X(greedy) X(note) X(samples_us)                                                              \
    X(draft_us) X(verify_us) X(spec_ratio) X(break_even)                                         \
    X(ab_role) X(ab_baseline) X(ab_speedup) X(ab_ci_lo) X(ab_ci_hi) X(ab_agree)                  \
    X(weights_source) X(load_s) X(load_gbs) X(step_form)

enum {
#define ARB_EC(name) EC_##name,
    ARB_ENGINE_COLUMNS(ARB_EC)
#undef ARB_EC
    EC_COUNT
};

const char *const arb_engine_columns[] = {
#define ARB_ECN(name) #name,
    ARB_ENGINE_COLUMNS(ARB_ECN)
#undef ARB_ECN
};
const unsigned arb_engine_ncolumns = EC_COUNT;

#define ARB_ENGINE_SCHEMA "engine-1"

int arb_run_open_rows(arb_engine_run_t *r, char *err, size_t len)
{
    r->rows = arb_csv_open(r->out, arb_engine_columns, EC_COUNT, err, len);
    return r->rows ? 0 : -1;
}

void arb_run_close_rows(arb_engine_run_t *r)
{
    if (r->rows)
        arb_results_close(r->rows);
    r->rows = NULL;
    printf("# results: %s\n", r->out);
}

static const arb_runcfg_t *compute_only(const arb_engine_run_t *r)
{
    return arb_run_find_const(r, ARB_CFG_COMPUTE_ONLY);
}

typedef struct rowtext {
    char b[EC_COUNT][224]; /* step_form with every option named: ~180 characters */
    char *samples, *greedy;
} rowtext_t;

static void setd(rowtext_t *t, int col, double v, const char *fmt)
{
    if (isfinite(v))
        snprintf(t->b[col], sizeof t->b[col], fmt, v);
}

/* The columns every row has: metadata, model, sharding, configuration and mode. */
static void fill_common(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, rowtext_t *t, const char **f)
{
    const arb_engine_opts_t *o = r->o;
    const arb_meta_t *mt = &r->meta;
    for (int i = 0; i < EC_COUNT; i++)
        f[i] = t->b[i];
    char now[32];
    arb_utc_now(now, sizeof now);
    snprintf(t->b[EC_schema], 96, ARB_ENGINE_SCHEMA);
    f[EC_run_id] = mt->run_id, f[EC_git_rev] = mt->git_rev, f[EC_arbench_version] = mt->version;
    f[EC_host] = mt->host, f[EC_argv] = mt->argv, f[EC_gpu] = mt->gpu, f[EC_sm] = mt->sm;
    f[EC_driver] = mt->driver, f[EC_cuda] = mt->cuda, f[EC_nccl] = mt->nccl, f[EC_nccl_header] = mt->nccl_header;
    f[EC_mpi] = mt->mpi, f[EC_fabric] = mt->fabric, f[EC_binding] = mt->binding, f[EC_env] = mt->env;
    snprintf(t->b[EC_time], 96, "%s", now);
    snprintf(t->b[EC_ranks], 96, "%d", r->m->nranks);
    snprintf(t->b[EC_nodes], 96, "%d", r->m->nnodes);
    f[EC_impl] = c->spec.name, f[EC_params] = c->describe;
    f[EC_backend] = r->be->name;
    snprintf(t->b[EC_source], 96, "measured");
    f[EC_config] = r->cfg.name, f[EC_model_type] = r->cfg.model_type_str, f[EC_overrides] = r->cfg.overrides;
    snprintf(t->b[EC_layers], 96, "%u", r->cfg.num_hidden_layers);
    snprintf(t->b[EC_experts], 96, "%u", r->cfg.n_routed_experts);
    snprintf(t->b[EC_topk], 96, "%u", r->cfg.num_experts_per_tok);
    snprintf(t->b[EC_weights], 96, "%s", o->weights == ARB_WEIGHTS_INT4 ? "int4" : "bf16");
    snprintf(t->b[EC_tp], 96, "%d", r->m->nranks);
    snprintf(t->b[EC_tp_shape], 96, "%u", r->s.tp_shape);
    snprintf(t->b[EC_shards_per_rank], 96, "%u", r->s.shard_count);
    snprintf(t->b[EC_context], 96, "%u", o->context);
    snprintf(t->b[EC_mode], 96, "%s", arb_mode_names[mode]);
    snprintf(t->b[EC_sites], 96, "all %u=%.40s%s%.40s", 2 * r->cfg.num_hidden_layers, c->spec.name,
             c->spec.params[0] ? ":" : "", c->spec.params);
    f[EC_fusion] = c->fusion;
    snprintf(t->b[EC_note], 96, "%s", c->note); /* a fallback serving these sites, if any */
    if (o->backend == ARB_ENGINE_GPU) { /* how the step's kernels were launched */
        char ahead[32], wave[32], from[16] = "", tail[160] = ""; /* the options named only when given or applied */
        if (o->wave_fit && o->wave_from != 1) /* the fold's first T, where it is not 1 */
            snprintf(from, sizeof from, "@T>=%u", o->wave_from);
        if (o->fuse) { /* what ran (run.c resolved it), only where a kernel was fused: rows without it ran the split launches */
            char b[24];
            snprintf(tail, sizeof tail, ",fuse=%s", arb_engine_opts_bits_str(ARB_BITS_FUSE, o->fuse, b, sizeof b));
        }
        if (o->moe_stage)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",moe_stage=smem");
        if (o->moe_order)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",moe_order=%s",
                     arb_engine_opts_moe_order_name(o->moe_order));
        if (o->moe_early)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",moe_early=%s",
                     arb_engine_opts_moe_early_name(o->moe_early));
        if (o->attn_min_rows)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",attn_min_rows=%u", o->attn_min_rows);
        if (o->attn_fill)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",attn_fill=%u", o->attn_fill);
        if (o->attn_wide_from)
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",attn_wide_from=%u", o->attn_wide_from);
        if (o->l2_side) {
            char b[40];
            snprintf(tail + strlen(tail), sizeof tail - strlen(tail), ",l2_side=%s",
                     arb_engine_opts_bits_str(ARB_BITS_L2_SIDE, o->l2_side, b, sizeof b));
            if (o->side_upto < 8) /* --l2-side-upto */
                snprintf(tail + strlen(tail), sizeof tail - strlen(tail), "@T<=%u", o->side_upto);
        }
        snprintf(t->b[EC_step_form], sizeof t->b[EC_step_form], "%s,pdl=%s,l2_ahead=%s,wave_fit=%s%s%s",
                 o->step_form == ARB_STEP_PERSISTENT        ? "persistent"
                 : o->step_form == ARB_STEP_PERSISTENT_ATTN ? "persistent-attn"
                                                            : "launches",
                 o->pdl ? "on" : "off", arb_engine_opts_bits_str(ARB_BITS_L2_AHEAD, o->l2_ahead, ahead, sizeof ahead),
                 arb_engine_opts_bits_str(ARB_BITS_WAVE_FIT, o->wave_fit, wave, sizeof wave), from, tail);
    }
    if (r->wload) { /* --weights-dir: the checkpoint and the last load of it (engine/run/run_weights.h) */
        f[EC_weights_source] = r->wload->dir;
        snprintf(t->b[EC_load_s], 96, "%.6f", r->load_stats.seconds);
        snprintf(t->b[EC_load_gbs], 96, "%.3f", arb_run_load_gbs(r));
    } else {
        snprintf(t->b[EC_weights_source], 96, "seed");
    }
}

/* The row of result p (phase `phase`); q: the compute-only configuration's result of the
 * same (mode, phase[, rate]) or NULL. */
static void write_row(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, int phase, const arb_phase_result_t *p,
                      const arb_phase_result_t *q)
{
    const arb_engine_opts_t *o = r->o;
    rowtext_t t;
    memset(&t, 0, sizeof t);
    const char *f[EC_COUNT] = {0};
    fill_common(r, c, mode, &t, f);
    if (c->sites_t1) { /* per-shape choices: the decode row's steps ran on the one-token choice */
        if (phase == ARB_PHASE_DECODE)
            f[EC_impl] = c->spec_t1.name, f[EC_params] = c->describe_t1;
        snprintf(t.b[EC_sites], 96, "T=1 %.20s%s%.21s; T>1 %.20s%s%.21s", c->spec_t1.name, c->spec_t1.params[0] ? ":" : "",
                 c->spec_t1.params, c->spec.name, c->spec.params[0] ? ":" : "", c->spec.params);
    }
    snprintf(t.b[EC_phase], 96, "%s", arb_phase_names[phase]);
    snprintf(t.b[EC_tokens], 96, "%u", p->T);
    snprintf(t.b[EC_steps], 96, "%u", p->nsteps);
    setd(&t, EC_median_us, p->st.median, "%.3f");
    setd(&t, EC_p10_us, p->st.p10, "%.3f");
    setd(&t, EC_p90_us, p->st.p90, "%.3f");
    setd(&t, EC_mean_us, p->st.mean, "%.3f");
    setd(&t, EC_min_us, p->st.min, "%.3f");
    setd(&t, EC_max_us, p->st.max, "%.3f");
    if (phase == ARB_PHASE_DECODE)
        setd(&t, EC_tok_s, 1e6 / p->st.median, "%.2f");
    if (phase == ARB_PHASE_SPEC) { /* the cycles' summary (engine/stats/spec.h) against this mode's decode */
        const arb_spec_summary_t *sm = &p->spec;
        setd(&t, EC_tok_s, sm->spec_tok_s, "%.2f");
        setd(&t, EC_accept_rate, p->accept_rate, "%.3f");
        setd(&t, EC_accepted_per_cycle, sm->mean_accepted, "%.3f");
        setd(&t, EC_draft_us, sm->draft_us, "%.3f");
        setd(&t, EC_verify_us, sm->verify_us, "%.3f");
        setd(&t, EC_spec_ratio, sm->ratio, "%.4f");
        if (isinf(sm->break_even))
            snprintf(t.b[EC_break_even], 96, "inf");
        else
            setd(&t, EC_break_even, sm->break_even, "%.4f");
    }
    if (q) {
        setd(&t, EC_compute_only_us, q->st.median, "%.3f");
        setd(&t, EC_compute_only_experts, q->experts, "%.2f");
        setd(&t, EC_allreduce_us, p->st.median - q->st.median, "%.3f");
        setd(&t, EC_allreduce_share, (p->st.median - q->st.median) / p->st.median, "%.4f");
    }
    setd(&t, EC_step_bytes, p->bytes, "%.0f");
    if (r->bandwidth > 0) {
        double floor_us = p->bytes / r->bandwidth * 1e6;
        setd(&t, EC_read_gbs, r->bandwidth / 1e9, "%.1f");
        setd(&t, EC_hbm_floor_us, floor_us, "%.3f");
        setd(&t, EC_floor_ratio, p->st.median / floor_us, "%.3f");
    }
    setd(&t, EC_experts_per_layer, p->experts, "%.2f");
    if (p->moe_ours_us > 0 && p->moe_cublas_us > 0) {
        setd(&t, EC_moe_us, p->moe_ours_us, "%.3f");
        setd(&t, EC_moe_gbs, p->moe_ours_bytes / p->moe_ours_us / 1e3, "%.1f");
        setd(&t, EC_moe_cublas_us, p->moe_cublas_us, "%.3f");
        setd(&t, EC_moe_cublas_gbs, p->moe_cublas_bytes / p->moe_cublas_us / 1e3, "%.1f");
        setd(&t, EC_moe_speedup, p->moe_cublas_us / p->moe_ours_us, "%.3f");
    }
    if (phase != ARB_PHASE_DECODE && p->compared)
        snprintf(t.b[EC_agree], 96, "%u/%u", p->agree, p->compared);
    if (r->check_max_logit_diff >= 0) {
        snprintf(t.b[EC_check_agree], 96, "%u/%u", r->check_agree, r->check_compared);
        setd(&t, EC_check_logit_diff, r->check_max_logit_diff, "%.5f");
    }
    setd(&t, EC_logit_tol, ARB_ENGINE_LOGIT_TOL, "%.3f");
    /* the greedy tokens (decode: the chain; verify: every output), for cross-run agreement */
    size_t n = phase == ARB_PHASE_DECODE ? p->nsteps + 1 : phase == ARB_PHASE_SPEC ? p->produced : (size_t)p->nsteps * p->T;
    t.greedy = calloc(n * 8 + 1, 1);
    t.samples = calloc((size_t)p->nsteps * 16 + 1, 1);
    if (t.greedy && t.samples) {
        size_t u = 0;
        for (size_t i = 0; i < n; i++)
            u += (size_t)snprintf(t.greedy + u, 8, "%s%u", i ? " " : "", p->tokens[i] % 10000000u);
        u = 0;
        for (unsigned i = 0; i < p->nsteps; i++)
            u += (size_t)snprintf(t.samples + u, 16, "%s%.3f", i ? " " : "", p->us[i]);
    }
    f[EC_greedy] = t.greedy, f[EC_samples_us] = t.samples;
    if (strcmp(c->spec.name, "noop") == 0) {
        setd(&t, EC_compute_only_us, p->st.median, "%.3f"); /* noop at every site: this run is compute-only */
        snprintf(t.b[EC_note], 96, "noop at every site: the run is the compute-only replay");
    } else if (!q && !o->no_compute_only) {
        snprintf(t.b[EC_note], 96, "compute-only replay did not run in this mode");
    }
    if (arb_csv_append(r->rows, f, EC_COUNT) != 0)
        fprintf(stderr, "arbench engine: cannot append to %s\n", r->out);
    free(t.greedy);
    free(t.samples);
}

/* An A/B row (docs/engine-e2e.md): one side's interleaved steps, phase ab-decode or
 * ab-verify, with the comparison (speedup = median(baseline) / median(candidate)). */
static void write_ab_row(arb_engine_run_t *r, const arb_runcfg_t *c, int mode, int phase, const arb_run_ab_row_t *ab)
{
    rowtext_t t;
    memset(&t, 0, sizeof t);
    const char *f[EC_COUNT] = {0};
    fill_common(r, c, mode, &t, f);
    snprintf(t.b[EC_phase], 96, "ab-%s", arb_phase_names[phase]);
    snprintf(t.b[EC_tokens], 96, "%u", ab->T);
    snprintf(t.b[EC_steps], 96, "%zu", ab->n);
    const arb_stats_t *st = ab->side == ARB_AB_A ? &ab->cmp->a : &ab->cmp->b;
    setd(&t, EC_median_us, st->median, "%.3f");
    setd(&t, EC_p10_us, st->p10, "%.3f");
    setd(&t, EC_p90_us, st->p90, "%.3f");
    setd(&t, EC_mean_us, st->mean, "%.3f");
    setd(&t, EC_min_us, st->min, "%.3f");
    setd(&t, EC_max_us, st->max, "%.3f");
    if (phase == ARB_PHASE_DECODE)
        setd(&t, EC_tok_s, 1e6 / st->median, "%.2f");
    const arb_runcfg_t *co = compute_only(r);
    if (co && co->res[mode][phase].ran) {
        double q = co->res[mode][phase].st.median;
        setd(&t, EC_compute_only_us, q, "%.3f");
        setd(&t, EC_allreduce_us, st->median - q, "%.3f");
        setd(&t, EC_allreduce_share, (st->median - q) / st->median, "%.4f");
    }
    const arb_impl_spec_t *b = &ab->baseline->spec;
    snprintf(t.b[EC_ab_role], 96, "%s", ab->side == ARB_AB_B ? "candidate" : "baseline");
    snprintf(t.b[EC_ab_baseline], 96, "%.40s%s%.50s", b->name, *b->params ? ":" : "", b->params);
    setd(&t, EC_ab_speedup, ab->cmp->speedup, "%.4f");
    setd(&t, EC_ab_ci_lo, ab->cmp->lo, "%.4f");
    setd(&t, EC_ab_ci_hi, ab->cmp->hi, "%.4f");
    char agree[200];
    arb_agreement_text(ab->agree, agree, sizeof agree);
    f[EC_ab_agree] = agree;
    t.samples = calloc(ab->n * 16 + 1, 1);
    for (size_t i = 0, u = 0; t.samples && i < ab->n; i++)
        u += (size_t)snprintf(t.samples + u, 16, "%s%.3f", i ? " " : "", ab->us[i]);
    f[EC_samples_us] = t.samples;
    if (arb_csv_append(r->rows, f, EC_COUNT) != 0)
        fprintf(stderr, "arbench engine: cannot append to %s\n", r->out);
    free(t.samples);
}

void arb_run_rows_sink(arb_engine_run_t *r, const arb_run_row_t *row)
{
    if (row->ab) {
        write_ab_row(r, row->c, row->mode, row->phase, row->ab);
        return;
    }
    /* the compute-only replay's result of the same (mode, phase[, rate]), when it ran */
    const arb_runcfg_t *co = compute_only(r);
    const arb_phase_result_t *q = !co ? NULL
                                  : row->phase == ARB_PHASE_SPEC ? &co->specs[row->mode][row->rate]
                                                                 : &co->res[row->mode][row->phase];
    write_row(r, row->c, row->mode, row->phase, row->res, q && q->ran ? q : NULL);
}

/* Per acceptance rate: the cycles' medians, the accepted length measured and expected
 * (E[n] = p + ... + p^k), tok/s measured, the ratio to plain decode measured and at E[n]
 * (the draft and verify medians, not the draws' luck), and the break-even p. */
static void print_spec_table(const arb_engine_run_t *r, const arb_runcfg_t *c)
{
    const unsigned k = r->o->spec_k;
    int head = 0;
    for (int mode = 0; mode < ARB_MODE_COUNT; mode++)
        for (unsigned i = 0; i < arb_run_nspec(r); i++) {
            const arb_phase_result_t *p = &c->specs[mode][i];
            const arb_spec_summary_t *sm = &p->spec;
            if (!p->ran)
                continue;
            if (!head++)
                printf("# %-6s %2s %5s %6s %7s %6s %10s %10s %8s %8s %9s %10s\n", "mode", "k", "p", "cycles", "acc/cyc",
                       "E[n]", "draft_us", "verify_us", "tok/s", "x_plain", "x_plain@E", "break_even");
            double en = arb_spec_expected_accepted(p->accept_rate, k);
            char bes[16];
            snprintf(bes, sizeof bes, isinf(sm->break_even) ? "inf" : "%.3f", sm->break_even);
            printf("# %-6s %2u %5.2f %6u %7.3f %6.3f %10.1f %10.1f %8.1f %8.3f %9.3f %10s\n", arb_mode_names[mode], k,
                   p->accept_rate, p->nsteps, sm->mean_accepted, en, sm->draft_us, sm->verify_us, sm->spec_tok_s,
                   sm->ratio, (1 + en) / (sm->draft_us + sm->verify_us) * 1e6 / sm->plain_tok_s, bes);
        }
    if (head && r->o->draft_dir[0])
        printf("# draft head %s: acceptance measured; p is the rate whose E[n] equals acc/cyc\n", r->o->draft_dir);
}

int arb_run_share_text(const arb_stats_t *run, const arb_stats_t *noop, char *buf, size_t len)
{
    if (!(isfinite(run->median) && run->median > 0 && isfinite(noop->median) && noop->median > 0)) {
        snprintf(buf, len, "-");
        return -1;
    }
    const double share = 100 * (run->median - noop->median) / run->median;
    const int apart = arb_spreads_apart(run->p10, run->p90, noop->p10, noop->p90);
    snprintf(buf, len, apart ? "%.1f%%" : "(%.1f%%)", share);
    return apart;
}

void arb_run_print_table(const arb_engine_run_t *r)
{
    int overlap = 0; /* some share printed in parentheses: the legend below the table */
    const arb_runcfg_t *c = NULL, *co = compute_only(r);
    for (unsigned i = 0; i < r->ncfgs; i++)
        if (r->cfgs[i].role == ARB_CFG_IMPL)
            c = &r->cfgs[i];
    if (!c)
        return;
    printf("# engine: %s, %u layers, %u experts (%s), tp %d, tp-shape %u, context %u, %s at %u sites (%s)\n",
           r->cfg.name, r->cfg.num_hidden_layers, r->cfg.n_routed_experts,
           r->o->weights == ARB_WEIGHTS_INT4 ? "int4" : "bf16", r->m->nranks, r->s.tp_shape, r->o->context,
           c->spec.name, 2 * r->cfg.num_hidden_layers, c->fusion);
    printf("# %-6s %-6s %3s %11s %11s %11s %10s %9s %11s %10s %9s\n", "mode", "phase", "T", "median_us", "p10_us",
           "p90_us", "tok/s", "ar_share", "floor_us", "x_floor", "agree");
    for (int mode = 0; mode < ARB_MODE_COUNT; mode++)
        for (unsigned e = 0; e < ARB_PHASE_SPEC + ARB_ENGINE_MAX_RATES; e++) { /* decode, verify, spec per rate */
            const int ph = e < ARB_PHASE_SPEC ? (int)e : ARB_PHASE_SPEC;
            const unsigned si = e - (unsigned)ARB_PHASE_SPEC;
            const arb_phase_result_t *p = ph < ARB_PHASE_SPEC ? &c->res[mode][ph] : &c->specs[mode][si];
            if (!p->ran)
                continue;
            const arb_phase_result_t *qq = !co ? NULL : ph < ARB_PHASE_SPEC ? &co->res[mode][ph] : &co->specs[mode][si];
            const arb_phase_result_t *q = qq && qq->ran ? qq : NULL;
            double floor_us = r->bandwidth > 0 ? p->bytes / r->bandwidth * 1e6 : NAN;
            char share[16] = "-", fl[16] = "-", xf[16] = "-", ag[24] = "-", tk[16] = "-";
            if (q)
                overlap |= arb_run_share_text(&p->st, &q->st, share, sizeof share) == 0;
            if (isfinite(floor_us))
                snprintf(fl, sizeof fl, "%.1f", floor_us), snprintf(xf, sizeof xf, "%.2f", p->st.median / floor_us);
            if (p->compared)
                snprintf(ag, sizeof ag, "%u/%u", p->agree, p->compared);
            if (ph == ARB_PHASE_DECODE)
                snprintf(tk, sizeof tk, "%.1f", 1e6 / p->st.median);
            else if (ph == ARB_PHASE_SPEC)
                snprintf(tk, sizeof tk, "%.1f", p->spec.spec_tok_s);
            printf("# %-6s %-6s %3u %11.1f %11.1f %11.1f %10s %9s %11s %10s %9s\n", arb_mode_names[mode],
                   arb_phase_names[ph], p->T, p->st.median, p->st.p10, p->st.p90, tk, share, fl, xf, ag);
        }
    if (overlap)
        printf("# ar_share in parentheses: the run's p10..p90 range overlaps the compute-only replay's (the "
               "difference is inside their spread: not shown)\n");
    if (c->note[0])
        printf("# %s\n", c->note);
    print_spec_table(r, c);
    if (r->check_max_logit_diff >= 0) {
        char fl[48] = "";
        if (r->check_first_layer >= 0)
            snprintf(fl, sizeof fl, ", the first in layer %d", r->check_first_layer);
        printf("# check vs the CPU reference: %u/%u greedy tokens equal, max |logit diff| %.5f (tolerance %.3f)\n"
               "#   %.4f x the reference's logit RMS at worst; %zu of %zu selected experts differ%s\n",
               r->check_agree, r->check_compared, r->check_max_logit_diff, ARB_ENGINE_LOGIT_TOL, r->check_rel_diff,
               r->check_experts_differ, r->check_experts_total, fl);
    }
}
