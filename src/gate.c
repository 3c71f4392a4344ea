/* SPDX-License-Identifier: MIT */
/* Matching baseline and candidate points and judging each pair. */
#include "gate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "resample.h"

static const char *const default_volatile[] = {"nccl", NULL};

void arb_gate_opts_default(arb_gate_opts_t *o)
{
    *o = (arb_gate_opts_t){
        .threshold = 0.05,
        .alpha = 0.01,
        .reps = 2000,
        .seed = 1,
        .min_samples = 10,
        .volatile_params = default_volatile,
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

typedef struct keyed {
    char *key;
    const arb_point_t *p;
    size_t order; /* row order in its file: the later of two equal keys wins */
} keyed_t;

static int cmp_keyed(const void *pa, const void *pb)
{
    const keyed_t *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
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

/* Sorted keys of ps with duplicates removed (the last row of a key kept). */
static keyed_t *keyed_points(const arb_pointset_t *ps, const arb_gate_opts_t *o, size_t *n, size_t *ndup)
{
    keyed_t *k = calloc(ps->n + 1, sizeof *k);
    if (!k)
        return NULL;
    for (size_t i = 0; i < ps->n; i++) {
        k[i] = (keyed_t){.key = make_key(&ps->p[i], o), .p = &ps->p[i], .order = i};
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
        if (i + 1 < ps->n && strcmp(k[i].key, k[i + 1].key) == 0) {
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

static void judge(arb_gate_point_t *g, const char *key, const arb_gate_opts_t *o, arb_gate_result_t *r)
{
    const arb_point_t *b = g->base, *c = g->cand;
    g->ratio = g->lo = g->hi = NAN;
    g->method = "";
    if (strcmp(c->check, "fail") == 0) {
        g->verdict = ARB_GATE_FAILED;
    } else if (!c->pass || !b->pass) {
        g->verdict = ARB_GATE_NOT_COMPARED;
    } else {
        double up = 1.0 + o->threshold, down = 1.0 / up;
        g->ratio = c->median_us / b->median_us;
        int slower, faster;
        if (c->nsamples >= o->min_samples && b->nsamples >= o->min_samples &&
            arb_bootstrap_ratio_ci(c->samples_us, c->nsamples, b->samples_us, b->nsamples, o->alpha,
                                   o->reps, arb_hash_str(ARB_HASH_INIT ^ o->seed, key), &g->lo,
                                   &g->hi) == 0) {
            g->method = "bootstrap";
            slower = g->lo > up;   /* the whole interval lies above 1 + threshold */
            faster = g->hi < down;
        } else {
            g->method = "p10/p90";
            r->nfallback++;
            slower = c->p10_us > b->p90_us; /* the spreads do not overlap */
            faster = c->p90_us < b->p10_us;
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
    size_t nb = 0, nc = 0;
    keyed_t *kb = keyed_points(base, o, &nb, &r->ndup_base);
    keyed_t *kc = keyed_points(cand, o, &nc, &r->ndup_cand);
    r->pts = calloc((nb < nc ? nb : nc) + 1, sizeof *r->pts);
    r->only_base = calloc(nb + 1, sizeof *r->only_base);
    r->only_cand = calloc(nc + 1, sizeof *r->only_cand);
    if (!kb || !kc || !r->pts || !r->only_base || !r->only_cand) {
        snprintf(err, err_len, "out of memory while matching points");
        goto err_free_result;
    }
    size_t i = 0, j = 0;
    while (i < nb || j < nc) {
        int c = i == nb ? 1 : j == nc ? -1 : strcmp(kb[i].key, kc[j].key);
        if (c < 0) {
            r->only_base[r->nonly_base++] = kb[i++].p;
        } else if (c > 0) {
            r->only_cand[r->nonly_cand++] = kc[j++].p;
        } else {
            arb_gate_point_t *g = &r->pts[r->n++];
            *g = (arb_gate_point_t){.base = kb[i].p, .cand = kc[j].p};
            judge(g, kb[i].key, o, r);
            i++, j++;
        }
    }
    if (r->n == 0) {
        snprintf(err, err_len, "baseline and candidate have no point in common (matched by fabric, ranks, nodes, impl, params without volatile keys, op, fusion, dtype, mode, bytes): %zu baseline points, %zu candidate points", nb, nc);
        goto err_free_result;
    }
    free_keyed(kb, nb);
    free_keyed(kc, nc);
    return 0;
err_free_result:
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
    return r->count[ARB_GATE_REGRESSION] || r->count[ARB_GATE_FAILED] ? 1 : 0;
}
