/* SPDX-License-Identifier: MIT */
/* Matching baseline and candidate points and judging each pair. */
#include "analysis/gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/resample.h"

static const char *const default_volatile[] = {"nccl", NULL};
const char *const arb_gate_mode_names[ARB_GATE_NMODES] = {"eager", "graph", "context"};

void arb_gate_opts_default(arb_gate_opts_t *o)
{
    *o = (arb_gate_opts_t){
        .threshold = 0.05,
        .alpha = 0.01,
        .reps = 2000,
        .seed = 1,
        .min_samples = 10,
        .volatile_params = default_volatile,
        /* 4 sd: a one-sided normal tail of 3e-5 per point, < 0.5% for a 100-point gate. */
        .noise_k = 4.0,
        /* One baseline run: results/h200x2-repeat-{a,b}.csv moved eager medians by up to
         * 1.201x and graph medians by up to 1.024x between two identical sweeps
         * (docs/gate.md, "Run-to-run noise"). Context runs inside a graph: graph's. */
        .default_noise = {[ARB_GATE_MODE_EAGER] = 1.25, [ARB_GATE_MODE_GRAPH] = 1.05,
                          [ARB_GATE_MODE_CONTEXT] = 1.05},
    };
}

const char *arb_gate_verdict_str(arb_gate_verdict_t v)
{
    switch (v) {
    case ARB_GATE_OK: return "ok";
    case ARB_GATE_IMPROVED: return "improved";
    case ARB_GATE_REGRESSION: return "REGRESSION";
    case ARB_GATE_FAILED: return "FAILED-CHECK";
    case ARB_GATE_NOT_COMPARED: return "not-compared";
    }
    return "?";
}

const char *arb_gate_noise_src_str(arb_gate_noise_src_t v)
{
    switch (v) {
    case ARB_GATE_NOISE_NONE: return "";
    case ARB_GATE_NOISE_RUNS: return "runs";
    case ARB_GATE_NOISE_POOLED: return "pooled";
    case ARB_GATE_NOISE_DEFAULT: return "default";
    }
    return "?";
}

typedef struct keyed {
    char *key;
    const char *run; /* run_id, or the file for rows without one */
    const arb_point_t *p;
    size_t order; /* row order: the later of two rows with one key and run wins */
} keyed_t;

static const char *run_of(const arb_point_t *p) { return *p->run_id ? p->run_id : p->source; }

static int cmp_keyed(const void *pa, const void *pb)
{
    const keyed_t *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    if (!c && a->run && b->run)
        c = strcmp(a->run, b->run);
    return c ? c : (a->order > b->order) - (a->order < b->order);
}

/* The matching key: every field that names the point, params without volatile items.
 * \x1f (unit separator) cannot come out of our CSV writer unescaped in these fields. */
static char *make_key(const arb_point_t *p, const arb_gate_opts_t *o)
{
    size_t plen = strlen(p->params) + 1;
    char *params = malloc(plen);
    if (!params)
        return NULL;
    arb_params_strip(p->params, o->volatile_params, params, plen);
    size_t len = strlen(p->fabric) + strlen(p->impl) + strlen(params) + strlen(p->op) +
                 strlen(p->fusion) + strlen(p->dtype) + strlen(p->mode) + 96;
    char *k = malloc(len);
    if (k)
        snprintf(k, len, "%s\x1f%d\x1f%d\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%020zu", p->fabric,
                 p->ranks, p->nodes, p->impl, params, p->op, p->fusion, p->dtype, p->mode, p->bytes);
    free(params);
    return k;
}

/* Sorted keys of ps, one per (key, run) when by_run (else one per key): the last row
 * of each kept, the others counted in *ndup. */
static keyed_t *keyed_points(const arb_pointset_t *ps, const arb_gate_opts_t *o, int by_run, size_t *n,
                             size_t *ndup)
{
    keyed_t *k = calloc(ps->n + 1, sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < ps->n; i++) {
        k[i] = (keyed_t){.key = make_key(&ps->p[i], o), .run = by_run ? run_of(&ps->p[i]) : NULL,
                         .p = &ps->p[i], .order = i};
        if (!k[i].key) {
            for (size_t j = 0; j < i; j++)
                free(k[j].key);
            free(k);
            return NULL;
        }
    }
    qsort(k, ps->n, sizeof *k, cmp_keyed);
    size_t out = 0;
    *ndup = 0;
    for (size_t i = 0; i < ps->n; i++) {
        if (i + 1 < ps->n && strcmp(k[i].key, k[i + 1].key) == 0 &&
            (!by_run || strcmp(k[i].run, k[i + 1].run) == 0)) {
            free(k[i].key);
            (*ndup)++;
            continue;
        }
        k[out++] = k[i];
    }
    *n = out;
    return k;
}

static void free_keyed(keyed_t *k, size_t n)
{
    for (size_t i = 0; k && i < n; i++)
        free(k[i].key);
    free(k);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static size_t count_runs(const arb_pointset_t *ps)
{
    const char **runs = malloc((ps->n + 1) * sizeof *runs);
    if (!runs)
        return 0;
    for (size_t i = 0; i < ps->n; i++)
        runs[i] = run_of(&ps->p[i]);
    qsort(runs, ps->n, sizeof *runs, cmp_str);
    size_t n = 0;
    for (size_t i = 0; i < ps->n; i++)
        n += i == 0 || strcmp(runs[i], runs[i - 1]) != 0;
    free(runs);
    return n;
}

/* One baseline point: its rows, one per run, in k[0..n) (equal keys). */
typedef struct group {
    const keyed_t *k;
    size_t n;
} group_t;

/* Did any run of this baseline point measure something (a pass, or a timed floor)? */
static int measured(const group_t *g)
{
    for (size_t i = 0; i < g->n; i++)
        if (g->k[i].p->pass || (g->k[i].p->role == ARB_ROLE_REFERENCE && g->k[i].p->timed))
            return 1;
    return 0;
}

/* Mean and sum of squared deviations of the log medians of the passing runs. */
static size_t log_medians(const group_t *g, double *mean, double *ss)
{
    size_t n = 0;
    double sum = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->k[i].p->pass)
            sum += log(g->k[i].p->median_us), n++;
    *mean = n ? sum / (double)n : NAN;
    *ss = 0;
    for (size_t i = 0; i < g->n; i++)
        if (g->k[i].p->pass)
            *ss += (log(g->k[i].p->median_us) - *mean) * (log(g->k[i].p->median_us) - *mean);
    return n;
}

static arb_gate_mode_noise_t *mode_noise(arb_gate_result_t *r, const char *mode, int add)
{
    for (size_t i = 0; i < r->nmodes; i++)
        if (strcmp(r->modes[i].mode, mode) == 0)
            return &r->modes[i];
    if (!add || r->nmodes == sizeof r->modes / sizeof r->modes[0])
        return NULL;
    arb_gate_mode_noise_t *m = &r->modes[r->nmodes++];
    snprintf(m->mode, sizeof m->mode, "%s", mode);
    return m;
}

/* Pools the between-run variance of log medians per mode over every baseline point
 * with 2+ passing runs (a one-way random-effects estimate: each point has its own mean,
 * the runs share one variance per mode). Uses the baseline only, so the estimate does
 * not depend on the candidate. */
static void pool_modes(arb_gate_result_t *r, const group_t *groups, size_t ngroups)
{
    double ss[sizeof r->modes / sizeof r->modes[0]] = {0};
    for (size_t i = 0; i < ngroups; i++) {
        double mean, s;
        size_t n = log_medians(&groups[i], &mean, &s);
        arb_gate_mode_noise_t *m = mode_noise(r, groups[i].k[0].p->mode, n >= 2);
        if (!m || n < 2)
            continue;
        ss[m - r->modes] += s;
        m->dof += n - 1;
        m->points++;
    }
    for (size_t i = 0; i < r->nmodes; i++)
        r->modes[i].sd = r->modes[i].dof ? sqrt(ss[i] / (double)r->modes[i].dof) : NAN;
}

static double default_noise(const arb_gate_opts_t *o, const char *mode)
{
    for (int m = 0; m < ARB_GATE_NMODES; m++)
        if (strcmp(mode, arb_gate_mode_names[m]) == 0)
            return o->default_noise[m];
    return o->default_noise[ARB_GATE_MODE_EAGER]; /* unknown mode: the noisiest known */
}

/* The run-to-run allowance of point g (docs/gate.md): with 2+ baseline runs, the
 * candidate's median is one more draw of a run median, so log(ratio) has sd
 * s * sqrt(1 + 1/runs) about 0, s = max(this point's sd, its mode's pooled sd). */
static void set_noise(arb_gate_point_t *g, const group_t *grp, const arb_gate_opts_t *o,
                      const arb_gate_result_t *r)
{
    double mean, ss, lo = INFINITY, hi = 0;
    g->nruns = log_medians(grp, &mean, &ss);
    for (size_t i = 0; i < grp->n; i++)
        if (grp->k[i].p->pass) {
            lo = fmin(lo, grp->k[i].p->median_us);
            hi = fmax(hi, grp->k[i].p->median_us);
        }
    g->base_us = exp(mean);
    if (g->nruns == 1)
        g->base_us = hi; /* exactly the run's median, not exp(log(m)) */
    g->spread = g->nruns >= 2 ? hi / lo : NAN;
    const arb_gate_mode_noise_t *m = mode_noise((arb_gate_result_t *)r, g->base->mode, 0);
    double pooled = m && m->dof ? m->sd : NAN;
    if (g->nruns >= 2) {
        g->noise_src = ARB_GATE_NOISE_RUNS;
        double own = sqrt(ss / (double)(g->nruns - 1));
        g->noise_sd = isnan(pooled) ? own : fmax(own, pooled);
        g->allow = exp(o->noise_k * g->noise_sd * sqrt(1.0 + 1.0 / (double)g->nruns));
        /* Never below what the slowest baseline run itself shows against the centre. */
        g->allow = fmax(g->allow, hi / g->base_us);
    } else if (!isnan(pooled)) {
        g->noise_src = ARB_GATE_NOISE_POOLED;
        g->noise_sd = pooled;
        g->allow = exp(o->noise_k * pooled * sqrt(2.0));
    } else {
        g->noise_src = ARB_GATE_NOISE_DEFAULT;
        g->noise_sd = NAN;
        g->allow = default_noise(o, g->base->mode);
    }
    g->bar = fmax(1.0 + o->threshold, g->allow);
}

static void judge(arb_gate_point_t *g, const group_t *grp, const char *key, const arb_gate_opts_t *o,
                  arb_gate_result_t *r)
{
    const arb_point_t *c = g->cand;
    g->ratio = g->lo = g->hi = g->spread = g->noise_sd = g->allow = g->bar = g->base_us = NAN;
    g->method = "";
    g->noise_src = ARB_GATE_NOISE_NONE;
    /* The passing runs' samples, for the bootstrap; base = the last passing run. */
    const double *den[64];
    size_t nden[64], nsets = 0, ns_min = SIZE_MAX;
    double base_p10 = INFINITY, base_p90 = 0; /* the widest spread over the runs */
    for (size_t i = 0; i < grp->n; i++) {
        const arb_point_t *b = grp->k[i].p;
        if (!b->pass)
            continue;
        g->base = b;
        base_p10 = fmin(base_p10, b->p10_us);
        base_p90 = fmax(base_p90, b->p90_us);
        ns_min = b->nsamples < ns_min ? b->nsamples : ns_min;
        if (nsets < sizeof den / sizeof den[0])
            den[nsets] = b->samples_us, nden[nsets++] = b->nsamples;
    }
    if (g->base->pass)
        set_noise(g, grp, o, r); /* also for a failed candidate: the report shows base_us */
    if (strcmp(c->check, "fail") == 0) {
        g->verdict = ARB_GATE_FAILED;
    } else if (!c->pass || !g->base->pass) {
        g->verdict = ARB_GATE_NOT_COMPARED;
        r->nskipped += g->base->pass && !c->pass; /* e.g. an implementation that now declines */
    } else {
        r->nnoise[g->noise_src]++;
        double up = g->bar, down = 1.0 / up;
        g->ratio = c->median_us / g->base_us;
        int slower, faster;
        if (c->nsamples >= o->min_samples && ns_min >= o->min_samples && nsets == g->nruns &&
            arb_bootstrap_ratio_ci_runs(c->samples_us, c->nsamples, den, nden, nsets, o->alpha, o->reps,
                                        arb_hash_str(ARB_HASH_INIT ^ o->seed, key), &g->lo, &g->hi) == 0) {
            g->method = "bootstrap";
            slower = g->lo > up; /* the whole interval lies above the bar */
            faster = g->hi < down;
        } else {
            g->method = "p10/p90";
            r->nfallback++;
            slower = c->p10_us > base_p90; /* the spreads do not overlap */
            faster = c->p90_us < base_p10;
        }
        if (g->ratio > up && slower)
            g->verdict = ARB_GATE_REGRESSION;
        else if (g->ratio < down && faster)
            g->verdict = ARB_GATE_IMPROVED;
        else
            g->verdict = ARB_GATE_OK;
    }
    r->count[g->verdict]++;
}

int arb_gate_compare(const arb_pointset_t *base, const arb_pointset_t *cand,
                     const arb_gate_opts_t *o, arb_gate_result_t *r, char *err, size_t err_len)
{
    memset(r, 0, sizeof *r);
    size_t nb = 0, nc = 0, ng = 0;
    keyed_t *kb = keyed_points(base, o, 1, &nb, &r->ndup_base);
    keyed_t *kc = keyed_points(cand, o, 0, &nc, &r->ndup_cand);
    group_t *groups = calloc(nb + 1, sizeof *groups);
    r->pts = calloc((nb < nc ? nb : nc) + 1, sizeof *r->pts);
    r->only_base = calloc(nb + 1, sizeof *r->only_base);
    r->only_cand = calloc(nc + 1, sizeof *r->only_cand);
    if (!kb || !kc || !groups || !r->pts || !r->only_base || !r->only_cand) {
        snprintf(err, err_len, "out of memory while matching points");
        goto err_free_result;
    }
    r->nruns_base = count_runs(base);
    r->nruns_cand = count_runs(cand);
    for (size_t i = 0; i < base->n && !r->cand_run_in_base && cand->n; i++)
        r->cand_run_in_base = strcmp(run_of(&base->p[i]), run_of(&cand->p[0])) == 0;
    for (size_t i = 0; i < nb; i++) {
        if (ng && strcmp(groups[ng - 1].k[0].key, kb[i].key) == 0)
            groups[ng - 1].n++;
        else
            groups[ng++] = (group_t){.k = &kb[i], .n = 1};
    }
    pool_modes(r, groups, ng);
    size_t i = 0, j = 0;
    while (i < ng || j < nc) {
        int c = i == ng ? 1 : j == nc ? -1 : strcmp(groups[i].k[0].key, kc[j].key);
        if (c < 0) {
            r->only_base[r->nonly_base++] = groups[i].k[groups[i].n - 1].p;
            r->nmissing += measured(&groups[i]);
            i++;
        } else if (c > 0) {
            r->only_cand[r->nonly_cand++] = kc[j++].p;
        } else {
            arb_gate_point_t *g = &r->pts[r->n++];
            *g = (arb_gate_point_t){.base = groups[i].k[groups[i].n - 1].p, .cand = kc[j].p};
            judge(g, &groups[i], kc[j].key, o, r);
            i++, j++;
        }
    }
    r->ncompared = r->count[ARB_GATE_OK] + r->count[ARB_GATE_IMPROVED] + r->count[ARB_GATE_REGRESSION];
    r->allow_missing = o->allow_missing;
    if (r->n == 0) {
        snprintf(err, err_len, "baseline and candidate have no point in common (matched by fabric, ranks, nodes, impl, params without volatile keys, op, fusion, dtype, mode, bytes): %zu baseline points, %zu candidate points", ng, nc);
        goto err_free_result;
    }
    free(groups);
    free_keyed(kb, nb);
    free_keyed(kc, nc);
    return 0;
err_free_result:
    free(groups);
    free_keyed(kb, nb);
    free_keyed(kc, nc);
    arb_gate_free(r);
    return -1;
}

void arb_gate_free(arb_gate_result_t *r)
{
    free(r->pts);
    free(r->only_base);
    free(r->only_cand);
    memset(r, 0, sizeof *r);
}

int arb_gate_exit_status(const arb_gate_result_t *r)
{
    if (r->count[ARB_GATE_REGRESSION] || r->count[ARB_GATE_FAILED])
        return 1;
    return !r->allow_missing && (r->nmissing || r->nskipped || !r->ncompared) ? 1 : 0;
}
