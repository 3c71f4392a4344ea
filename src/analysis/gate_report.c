/* SPDX-License-Identifier: MIT */
/* Gate reports: one writer for plain text (stdout) and markdown (--report-md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/gate.h"
#include "base/outfile.h"

enum { NCELLS = 13 };
static const char *const heads[NCELLS] = {"verdict", "impl", "params", "op", "dtype", "mode", "bytes",
                                          "base_us", "cand_us", "ratio", "bar", "noise", "interval"};
static const int widths[NCELLS] = {12, 10, 34, 17, 5, 7, 10, 9, 9, 6, 6, 22, 26};

static void emit(FILE *f, int md, const char *const *cells)
{
    for (int i = 0; i < NCELLS; i++) {
        if (md)
            fprintf(f, "| %s ", cells[i]);
        else
            fprintf(f, "%-*s ", widths[i], cells[i]);
    }
    fputs(md ? "|\n" : "\n", f);
}

static void fmt_us(char *b, size_t n, double v)
{
    if (isnan(v))
        snprintf(b, n, "-");
    else
        snprintf(b, n, "%.2f", v);
}

static void emit_point(FILE *f, int md, const arb_gate_point_t *g)
{
    const arb_point_t *p = g->cand ? g->cand : g->base;
    char bytes[32], bm[32], cm[32], ratio[32], iv[64], op[64], bar[32], noise[64];
    snprintf(bytes, sizeof bytes, "%zu", p->bytes);
    fmt_us(bm, sizeof bm, g->base_us);
    fmt_us(cm, sizeof cm, g->cand ? g->cand->median_us : NAN);
    snprintf(op, sizeof op, "%s%s%s", p->op, *p->fusion ? "/" : "", p->fusion);
    if (isnan(g->ratio))
        snprintf(ratio, sizeof ratio, "-");
    else
        snprintf(ratio, sizeof ratio, "%.3f", g->ratio);
    if (isnan(g->ratio)) /* not compared: no bar applied */
        snprintf(bar, sizeof bar, "-");
    else
        snprintf(bar, sizeof bar, "%.3f", g->bar);
    /* Where the allowance came from: this point's runs (their max/min), its mode's
     * pooled sd (one run here), or the mode default (no run-to-run estimate at all). */
    if (isnan(g->ratio))
        snprintf(noise, sizeof noise, "-");
    else if (g->noise_src == ARB_GATE_NOISE_RUNS)
        snprintf(noise, sizeof noise, "%zu runs, spread %.3f", g->nruns, g->spread);
    else if (g->noise_src == ARB_GATE_NOISE_POOLED)
        snprintf(noise, sizeof noise, "pooled sd %.4f", g->noise_sd);
    else if (g->noise_src == ARB_GATE_NOISE_DEFAULT && !isnan(g->ratio))
        snprintf(noise, sizeof noise, "default %.3f", g->allow);
    else
        snprintf(noise, sizeof noise, "-");
    if (!isnan(g->lo))
        snprintf(iv, sizeof iv, "[%.3f, %.3f] %s", g->lo, g->hi, g->method);
    else if (*g->method)
        snprintf(iv, sizeof iv, "%s", g->method);
    else if (g->verdict == ARB_GATE_FAILED)
        snprintf(iv, sizeof iv, "candidate check=fail");
    else
        snprintf(iv, sizeof iv, "check: base=%s cand=%s", g->base->check, g->cand->check);
    const char *cells[NCELLS] = {arb_gate_verdict_str(g->verdict), p->impl, *p->params ? p->params : "-",
                                 op, p->dtype, p->mode, bytes, bm, cm, ratio, bar, noise, iv};
    emit(f, md, cells);
}

static void describe_file(FILE *f, int md, const char *role, const arb_pointset_t *ps, size_t nruns)
{
    const char *run = "", *rev = "", *gpu = "";
    if (ps->n)
        run = ps->p[0].run_id, rev = ps->p[0].git_rev, gpu = ps->p[0].gpu;
    fprintf(f, "%s%s: %s", md ? "- " : "", role, ps->nfiles ? ps->paths[0] : "?");
    for (size_t i = 1; i < ps->nfiles; i++)
        fprintf(f, ", %s", ps->paths[i]);
    fprintf(f, " (%zu rows; %s%s, git %s, gpu %s)\n", ps->n, nruns > 1 ? "runs: several, the first " : "run ",
            *run ? run : "?", *rev ? rev : "?", *gpu ? gpu : "?");
}

/* How run-to-run noise was handled: measured from several baseline runs, or not
 * measurable (one run) and replaced by the per-mode defaults. */
static void describe_noise(FILE *f, int md, const arb_gate_result_t *r, const arb_gate_opts_t *o)
{
    const char *li = md ? "- " : "";
    if (r->nruns_base < 2) {
        fprintf(f, "%srun-to-run noise: the baseline holds one run, so run-to-run noise cannot be estimated; using the conservative per-mode allowances eager %.3f, graph %.3f, context %.3f (docs/gate.md); pass 2+ baseline runs (repeat --baseline) to measure it\n",
                li, o->default_noise[ARB_GATE_MODE_EAGER], o->default_noise[ARB_GATE_MODE_GRAPH], o->default_noise[ARB_GATE_MODE_CONTEXT]);
        return;
    }
    fprintf(f, "%srun-to-run noise: %zu baseline runs; allowance per point = max(exp(%g * sd * sqrt(1 + 1/runs)), slowest run / centre), sd = max(the point's sd of log run medians, its mode's pooled sd); %zu points from their runs, %zu from the pooled sd (one run), %zu from the mode default\n",
            li, r->nruns_base, o->noise_k, r->nnoise[ARB_GATE_NOISE_RUNS], r->nnoise[ARB_GATE_NOISE_POOLED], r->nnoise[ARB_GATE_NOISE_DEFAULT]);
    for (size_t i = 0; i < r->nmodes; i++) {
        const arb_gate_mode_noise_t *m = &r->modes[i];
        if (m->dof)
            fprintf(f, "%spooled between-run sd of log medians, %s: %.4f (%zu points with 2+ runs, %zu dof; allowance from it alone: x%.3f with 2 runs, x%.3f for a point with 1 run)\n",
                    md ? "  - " : "  ", m->mode, m->sd, m->points, m->dof, exp(o->noise_k * m->sd * sqrt(1.5)), exp(o->noise_k * m->sd * sqrt(2.0)));
    }
}

static void list_only(FILE *f, int md, const char *title, const arb_point_t *const *v, size_t n)
{
    if (!n)
        return;
    fprintf(f, "\n%s%s (%zu, not compared):\n%s", md ? "### " : "", title, n, md ? "\n" : "");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "%s%s %s %s%s%s %s %s bytes=%zu ranks=%d check=%s\n", md ? "- " : "  ", v[i]->impl,
                *v[i]->params ? v[i]->params : "-", v[i]->op, *v[i]->fusion ? "/" : "", v[i]->fusion,
                v[i]->dtype, v[i]->mode, v[i]->bytes, v[i]->ranks, v[i]->check);
}

static void report(FILE *f, int md, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                   const arb_pointset_t *base, const arb_pointset_t *cand)
{
    int failed = arb_gate_exit_status(r);
    if (md)
        fprintf(f, "## arbench gate: %s\n\n", failed ? "FAIL" : "PASS");
    describe_file(f, md, "baseline", base, r->nruns_base);
    describe_file(f, md, "candidate", cand, r->nruns_cand);
    fprintf(f, "%srule: bar = max(%.4g, run-to-run noise allowance); regression when candidate median / baseline median (geometric mean over baseline runs) > bar and the %g%% bootstrap interval of that ratio (%u resamples, seed %llu) lies above bar; without %zu+ samples_us on both sides, when additionally candidate p10 > the largest baseline p90\n",
            md ? "- " : "", 1 + o->threshold, (1 - o->alpha) * 100, o->reps, (unsigned long long)o->seed, o->min_samples);
    describe_noise(f, md, r, o);
    fprintf(f, "%smatched %zu points: %zu regressions, %zu failed checks, %zu improved, %zu ok, %zu not compared; %zu compared with the p10/p90 fallback (samples_us missing or too few)\n",
            md ? "- " : "", r->n, r->count[ARB_GATE_REGRESSION], r->count[ARB_GATE_FAILED], r->count[ARB_GATE_IMPROVED],
            r->count[ARB_GATE_OK], r->count[ARB_GATE_NOT_COMPARED], r->nfallback);
    if (r->nmissing || r->nskipped || !r->ncompared)
        fprintf(f, "%scoverage lost: %zu measured baseline points are missing from the candidate, %zu were skipped by it, %zu were compared; %s\n",
                md ? "- " : "", r->nmissing, r->nskipped, r->ncompared,
                r->allow_missing ? "--allow-missing: not a failure" : "the gate fails (a sweep that died, a cut file or an implementation that now declines; --allow-missing accepts it)");
    if (r->ndup_base || r->ndup_cand)
        fprintf(f, "%srepeated points: %zu in the baseline (same run), %zu in the candidate (the last row of each was used)\n", md ? "- " : "", r->ndup_base, r->ndup_cand);
    if (r->nruns_cand > 1)
        fprintf(f, "%swarning: the candidate holds %zu runs; only the last row of each point was used\n", md ? "- " : "", r->nruns_cand);
    if (r->cand_run_in_base)
        fprintf(f, "%swarning: the candidate's run %s is also one of the baseline runs\n", md ? "- " : "", *cand->p[0].run_id ? cand->p[0].run_id : cand->p[0].source);
    if (base->n && cand->n && strcmp(base->p[0].gpu, cand->p[0].gpu) != 0)
        fprintf(f, "%swarning: the files were measured on different GPUs (%s vs %s)\n", md ? "- " : "", base->p[0].gpu, cand->p[0].gpu);
    fputs(md ? "\n" : "\n", f);
    emit(f, md, heads);
    if (md) {
        const char *rule[NCELLS];
        for (int i = 0; i < NCELLS; i++)
            rule[i] = "---";
        emit(f, md, rule);
    }
    /* Failures first, so the reason for a red build is at the top. */
    static const arb_gate_verdict_t order[] = {ARB_GATE_FAILED, ARB_GATE_REGRESSION, ARB_GATE_IMPROVED,
                                               ARB_GATE_OK, ARB_GATE_NOT_COMPARED};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++)
        for (size_t i = 0; i < r->n; i++)
            if (r->pts[i].verdict == order[k])
                emit_point(f, md, &r->pts[i]);
    list_only(f, md, "only in the baseline", r->only_base, r->nonly_base);
    list_only(f, md, "only in the candidate", r->only_cand, r->nonly_cand);
    fprintf(f, "\n%sresult: %s (%zu regressions, %zu failed checks, %zu compared, %zu missing, %zu skipped)\n", md ? "**" : "",
            failed ? "FAIL" : "PASS", r->count[ARB_GATE_REGRESSION], r->count[ARB_GATE_FAILED], r->ncompared, r->nmissing,
            r->nskipped);
}

void arb_gate_report_text(FILE *f, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                          const arb_pointset_t *base, const arb_pointset_t *cand)
{
    report(f, 0, r, o, base, cand);
}

int arb_gate_report_md(const char *path, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                       const arb_pointset_t *base, const arb_pointset_t *cand, char *err,
                       size_t err_len)
{
    arb_outfile_t of;
    FILE *f = arb_outfile_open(&of, "--report-md", path, err, err_len);
    if (!f)
        return -1;
    report(f, 1, r, o, base, cand);
    return arb_outfile_commit(&of, err, err_len);
}
