/* SPDX-License-Identifier: MIT */
/* Gate reports: one writer for plain text (stdout) and markdown (--report-md). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gate.h"

enum { NCELLS = 11 };
static const char *const heads[NCELLS] = {"verdict", "impl", "params", "op", "dtype", "mode", "bytes",
                                          "base_us", "cand_us", "ratio", "interval"};
static const int widths[NCELLS] = {12, 10, 34, 17, 5, 7, 10, 9, 9, 6, 26};

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
    char bytes[32], bm[32], cm[32], ratio[32], iv[64], op[64];
    snprintf(bytes, sizeof bytes, "%zu", p->bytes);
    fmt_us(bm, sizeof bm, g->base ? g->base->median_us : NAN);
    fmt_us(cm, sizeof cm, g->cand ? g->cand->median_us : NAN);
    snprintf(op, sizeof op, "%s%s%s", p->op, *p->fusion ? "/" : "", p->fusion);
    if (isnan(g->ratio))
        snprintf(ratio, sizeof ratio, "-");
    else
        snprintf(ratio, sizeof ratio, "%.3f", g->ratio);
    if (!isnan(g->lo))
        snprintf(iv, sizeof iv, "[%.3f, %.3f] %s", g->lo, g->hi, g->method);
    else if (*g->method)
        snprintf(iv, sizeof iv, "%s", g->method);
    else if (g->verdict == ARB_GATE_FAILED)
        snprintf(iv, sizeof iv, "candidate check=fail");
    else
        snprintf(iv, sizeof iv, "check: base=%s cand=%s", g->base->check, g->cand->check);
    const char *cells[NCELLS] = {arb_gate_verdict_str(g->verdict), p->impl, *p->params ? p->params : "-",
                                 op, p->dtype, p->mode, bytes, bm, cm, ratio, iv};
    emit(f, md, cells);
}

static void describe_file(FILE *f, int md, const char *role, const arb_pointset_t *ps)
{
    const char *run = "", *rev = "", *gpu = "";
    if (ps->n)
        run = ps->p[0].run_id, rev = ps->p[0].git_rev, gpu = ps->p[0].gpu;
    fprintf(f, "%s%s: %s (%zu rows; run %s, git %s, gpu %s)\n", md ? "- " : "", role,
            ps->nfiles ? ps->paths[0] : "?", ps->n, *run ? run : "?", *rev ? rev : "?", *gpu ? gpu : "?");
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
    describe_file(f, md, "baseline", base);
    describe_file(f, md, "candidate", cand);
    fprintf(f, "%srule: regression when candidate/baseline median > %.4g and the %g%% bootstrap interval of that ratio (%u resamples, seed %llu) lies above %.4g; without %zu+ samples_us on both sides, when additionally candidate p10 > baseline p90\n",
            md ? "- " : "", 1 + o->threshold, (1 - o->alpha) * 100, o->reps, (unsigned long long)o->seed, 1 + o->threshold, o->min_samples);
    fprintf(f, "%smatched %zu points: %zu regressions, %zu failed checks, %zu improved, %zu ok, %zu not compared; %zu compared with the p10/p90 fallback (samples_us missing or too few)\n",
            md ? "- " : "", r->n, r->count[ARB_GATE_REGRESSION], r->count[ARB_GATE_FAILED], r->count[ARB_GATE_IMPROVED],
            r->count[ARB_GATE_OK], r->count[ARB_GATE_NOT_COMPARED], r->nfallback);
    if (r->ndup_base || r->ndup_cand)
        fprintf(f, "%srepeated points: %zu in the baseline, %zu in the candidate (the last row of each was used)\n", md ? "- " : "", r->ndup_base, r->ndup_cand);
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
    fprintf(f, "\n%sresult: %s (%zu regressions, %zu failed checks)\n", md ? "**" : "", failed ? "FAIL" : "PASS",
            r->count[ARB_GATE_REGRESSION], r->count[ARB_GATE_FAILED]);
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
    size_t tlen = strlen(path) + 32;
    char *tmp = malloc(tlen);
    if (!tmp) {
        snprintf(err, err_len, "out of memory");
        return -1;
    }
    snprintf(tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) {
        snprintf(err, err_len, "--report-md '%s': cannot create (%s)", path, strerror(errno));
        free(tmp);
        return -1;
    }
    report(f, 1, r, o, base, cand);
    int bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        snprintf(err, err_len, "--report-md '%s': cannot write (%s)", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        return -1;
    }
    free(tmp);
    return 0;
}
