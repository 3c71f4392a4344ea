/* SPDX-License-Identifier: MIT */
/* Building a tuning profile from results: per size, the winner; then size ranges. */
#include "analysis/profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/resample.h"

void arb_profile_opts_default(arb_profile_opts_t *o)
{
    *o = (arb_profile_opts_t){
        .min_speedup = 1.05,
        .alpha = 0.05,
        .reps = 2000,
        .seed = 1,
        .min_samples = 10,
    };
}

/* How much a per-size decision can be trusted; a merged range keeps the weakest. */
enum strength { NO_BASELINE, TIE, P10P90, CI, BASELINE };

typedef struct decision {
    size_t bytes;
    const arb_point_t *win, *base; /* base NULL when no NCCL row at this size */
    double speedup;                /* base / win medians; NAN without base */
    enum strength strength;
} decision_t;

static int same_group(const arb_point_t *a, const arb_point_t *b)
{
    return arb_point_key_cmp(arb_point_key(a), arb_point_key(b)) == 0;
}

static int cmp_point(const void *pa, const void *pb)
{
    const arb_point_t *a = *(const arb_point_t *const *)pa, *b = *(const arb_point_t *const *)pb;
    int c = arb_point_key_cmp(arb_point_key(a), arb_point_key(b));
    if (c)
        return c;
    if (a->bytes != b->bytes)
        return a->bytes < b->bytes ? -1 : 1;
    if (a->median_us != b->median_us)
        return a->median_us < b->median_us ? -1 : 1;
    /* Equal medians: a fixed order (impl, params, file, line) keeps output deterministic. */
    if ((c = strcmp(a->impl, b->impl)) || (c = strcmp(a->params, b->params)) ||
        (c = strcmp(a->fusion, b->fusion)) || (c = strcmp(a->source, b->source)))
        return c;
    return (a->line > b->line) - (a->line < b->line);
}

static int excluded(const arb_profile_opts_t *o, const char *impl)
{
    for (size_t i = 0; o->exclude && o->exclude[i]; i++)
        if (strcmp(o->exclude[i], impl) == 0)
            return 1;
    return 0;
}

static uint64_t point_seed(const arb_profile_opts_t *o, const arb_point_t *p)
{
    uint64_t h = arb_hash_str(ARB_HASH_INIT ^ o->seed, p->fabric);
    h = arb_hash_str(h, p->dtype);
    h = arb_hash_str(h, p->op);
    h = arb_hash_str(h, p->mode);
    return h ^ ((uint64_t)p->bytes * 0x9e3779b97f4a7c15ull) ^ (uint64_t)p->ranks;
}

/* Sorted points of one size [s, e): the first is the fastest. Picks the winner. */
static void decide(const arb_profile_opts_t *o, const arb_point_t *const *s,
                   const arb_point_t *const *e, decision_t *d)
{
    const arb_point_t *best = *s, *base = NULL;
    for (const arb_point_t *const *q = s; q < e && !base; q++)
        if ((*q)->role == ARB_ROLE_BASELINE)
            base = *q; /* sorted by median: the fastest baseline variant */
    *d = (decision_t){.bytes = best->bytes, .win = best, .base = base, .speedup = NAN};
    if (!base) {
        d->strength = NO_BASELINE;
        return;
    }
    d->speedup = 1.0;
    if (base == best) {
        d->strength = BASELINE;
        return;
    }
    double ratio = base->median_us / best->median_us;
    int real;
    enum strength how;
    double lo, hi;
    if (best->nsamples >= o->min_samples && base->nsamples >= o->min_samples &&
        arb_bootstrap_ratio_ci(base->samples_us, base->nsamples, best->samples_us, best->nsamples,
                               o->alpha, o->reps, point_seed(o, best), &lo, &hi) == 0) {
        real = lo > 1.0; /* the interval of baseline/winner excludes 1 */
        how = CI;
    } else {
        real = best->p90_us < base->p10_us; /* spreads do not overlap */
        how = P10P90;
    }
    if (real && ratio >= o->min_speedup) {
        d->speedup = ratio;
        d->strength = how;
    } else {
        d->win = base; /* the lead is noise or too small: the simpler choice keeps the size */
        d->strength = TIE;
    }
}

static char *dup_str(const char *s)
{
    return strdup(s ? s : "");
}

static int same_choice(const arb_point_t *a, const arb_point_t *b)
{
    return strcmp(a->impl, b->impl) == 0 && strcmp(a->params, b->params) == 0 &&
           strcmp(a->fusion, b->fusion) == 0;
}

/* Appends "file@run_id" to *buf (";"-separated) unless already there. */
static int add_source(char **buf, size_t *len, const arb_point_t *p)
{
    size_t n = strlen(p->source) + strlen(p->run_id) + 2;
    char *item = malloc(n);
    if (!item)
        return -1;
    snprintf(item, n, "%s@%s", p->source, p->run_id);
    for (const char *q = *buf; q && *q;) {
        size_t l = strcspn(q, ";");
        if (l == n - 1 && strncmp(q, item, l) == 0) {
            free(item);
            return 0;
        }
        q += l + (q[l] == ';');
    }
    char *nb = realloc(*buf, *len + n + 1);
    if (!nb) {
        free(item);
        return -1;
    }
    *buf = nb;
    snprintf(*buf + *len, n + 1, "%s%s", *len ? ";" : "", item);
    *len += strlen(*buf + *len);
    free(item);
    return 0;
}

static const char *strength_label(enum strength s, double alpha, char *buf, size_t len)
{
    switch (s) {
    case NO_BASELINE: return "no-baseline";
    case TIE: return "tie";
    case P10P90: return "p10p90";
    case CI: snprintf(buf, len, "ci%g", (1 - alpha) * 100); return buf;
    case BASELINE: return "baseline";
    }
    return "?";
}

static size_t midpoint(size_t a, size_t b) { return a + (b - a) / 2; }

/* Merges decisions d[0..n) of one group into entries appended to out. */
static int merge_group(const arb_profile_opts_t *o, const decision_t *d, size_t n, arb_profile_t *out)
{
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && same_choice(d[j].win, d[i].win))
            j++;
        const decision_t *rep = &d[i];
        enum strength weakest = d[i].strength;
        char *sources = NULL;
        size_t slen = 0;
        for (size_t k = i; k < j; k++) {
            if (d[k].strength < weakest)
                weakest = d[k].strength;
            /* The representative is the size with the smallest gain: rows never overstate. */
            if (d[k].speedup < rep->speedup)
                rep = &d[k];
            if (add_source(&sources, &slen, d[k].win) || (d[k].base && add_source(&sources, &slen, d[k].base))) {
                free(sources);
                return -1;
            }
        }
        arb_profile_entry_t *e = &out->e[out->n++];
        const arb_point_t *w = rep->win, *b = rep->base;
        char label[32];
        *e = (arb_profile_entry_t){
            .fabric = dup_str(w->fabric), .dtype = dup_str(w->dtype), .op = dup_str(w->op),
            .mode = dup_str(w->mode), .ranks = w->ranks, .nodes = w->nodes,
            /* Boundaries halfway between measured sizes; the outer ranges open-ended. */
            .min_bytes = i == 0 ? 0 : midpoint(d[i - 1].bytes, d[i].bytes) + 1,
            .max_bytes = j == n ? SIZE_MAX : midpoint(d[j - 1].bytes, d[j].bytes),
            .impl = dup_str(w->impl), .params = dup_str(w->params), .fusion = dup_str(w->fusion), .role = w->role,
            .median_us = w->median_us, .rep_bytes = rep->bytes, .points = j - i,
            .baseline_impl = dup_str(b ? b->impl : ""), .baseline_params = dup_str(b ? b->params : ""),
            .baseline_median_us = b ? b->median_us : NAN, .speedup = rep->speedup,
            .confidence = dup_str(strength_label(weakest, o->alpha, label, sizeof label)),
            .sources = sources ? sources : dup_str(""),
        };
        if (!e->fabric || !e->dtype || !e->op || !e->mode || !e->impl || !e->params || !e->fusion ||
            !e->baseline_impl || !e->baseline_params || !e->confidence || !e->sources)
            return -1;
        i = j;
    }
    return 0;
}

/* The run_ids of file f, space-separated, each once. */
static char *file_runs(const arb_pointset_t *ps, const char *file)
{
    char *buf = dup_str("");
    size_t len = 0;
    for (size_t i = 0; buf && i < ps->n; i++) {
        const arb_point_t *p = &ps->p[i];
        if (p->source != file || !*p->run_id)
            continue;
        int seen = 0;
        for (size_t k = 0; k < i && !seen; k++)
            seen = ps->p[k].source == file && strcmp(ps->p[k].run_id, p->run_id) == 0;
        if (seen)
            continue;
        size_t add = strlen(p->run_id) + 1;
        char *nb = realloc(buf, len + add + 1);
        if (!nb) {
            free(buf);
            return NULL;
        }
        buf = nb;
        snprintf(buf + len, add + 1, "%s%s", len ? " " : "", p->run_id);
        len += strlen(buf + len);
    }
    return buf;
}

int arb_profile_build(const arb_pointset_t *ps, const arb_profile_opts_t *o, arb_profile_t *out,
                      char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    const arb_point_t **idx = malloc((ps->n + 1) * sizeof *idx);
    decision_t *d = malloc((ps->n + 1) * sizeof *d);
    out->e = calloc(ps->n + 1, sizeof *out->e);
    out->source_files = calloc(ps->nfiles + 1, sizeof(char *));
    out->source_runs = calloc(ps->nfiles + 1, sizeof(char *));
    if (!idx || !d || !out->e || !out->source_files || !out->source_runs)
        goto err_out_of_memory;
    size_t n = 0;
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].pass && ps->p[i].role != ARB_ROLE_REFERENCE && !excluded(o, ps->p[i].impl))
            idx[n++] = &ps->p[i];
    if (!n) {
        snprintf(err, err_len, "no passing measurements (check=pass) in the results files, reference floors left out: nothing to build a profile from");
        goto err_free_profile;
    }
    qsort(idx, n, sizeof *idx, cmp_point);
    for (size_t g = 0; g < n;) {
        size_t ge = g, nd = 0;
        while (ge < n && same_group(idx[g], idx[ge]))
            ge++;
        for (size_t s = g; s < ge;) {
            size_t se = s;
            while (se < ge && idx[se]->bytes == idx[s]->bytes)
                se++;
            decide(o, idx + s, idx + se, &d[nd++]);
            s = se;
        }
        if (merge_group(o, d, nd, out))
            goto err_out_of_memory;
        g = ge;
    }
    for (size_t f = 0; f < ps->nfiles; f++) {
        out->source_files[f] = dup_str(ps->paths[f]);
        out->source_runs[f] = file_runs(ps, ps->paths[f]);
        out->nsources = f + 1;
        if (!out->source_files[f] || !out->source_runs[f])
            goto err_out_of_memory;
    }
    free(d);
    free(idx);
    return 0;
err_out_of_memory:
    snprintf(err, err_len, "out of memory while building the profile");
err_free_profile:
    arb_profile_free(out);
    free(d);
    free(idx);
    return -1;
}

static void free_entry(arb_profile_entry_t *e)
{
    char **s[] = {&e->fabric, &e->dtype, &e->op, &e->mode, &e->impl, &e->params, &e->fusion,
                  &e->baseline_impl, &e->baseline_params, &e->confidence, &e->sources};
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        free(*s[i]);
}

void arb_profile_free(arb_profile_t *p)
{
    for (size_t i = 0; i < p->n; i++)
        free_entry(&p->e[i]);
    free(p->e);
    for (size_t i = 0; i < p->nsources; i++) {
        free(p->source_files[i]);
        free(p->source_runs[i]);
    }
    free(p->source_files);
    free(p->source_runs);
    memset(p, 0, sizeof *p);
}

const arb_profile_entry_t *arb_profile_lookup(const arb_profile_t *p, const char *fabric, int ranks,
                                              int nodes, const char *dtype, const char *op,
                                              const char *mode, size_t bytes)
{
    for (size_t i = 0; i < p->n; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        if (e->ranks == ranks && (nodes == 0 || e->nodes == 0 || e->nodes == nodes) &&
            strcmp(e->fabric, fabric) == 0 && strcmp(e->dtype, dtype) == 0 &&
            strcmp(e->op, op) == 0 && strcmp(e->mode, mode) == 0 && e->min_bytes <= bytes &&
            bytes <= e->max_bytes)
            return e;
    }
    return NULL;
}
