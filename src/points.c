/* SPDX-License-Identifier: MIT */
#include "points.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const arb_points_required[] = {
    "schema", "run_id", "fabric", "ranks", "nodes", "impl", "params", "op", "fusion", "dtype",
    "bytes", "mode", "median_us", "p10_us", "p90_us", "check", "samples_us", NULL,
};

/* A samples_us list longer than this is not something the harness writes. */
#define MAX_SAMPLES 1000000u

int arb_parse_u64_field(const char *s, unsigned long long max, unsigned long long *out)
{
    if (!s || *s < '0' || *s > '9')
        return -1;
    unsigned long long v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        unsigned d = (unsigned)(*s - '0');
        if (v > (max - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int arb_parse_double_field(const char *s, double *out)
{
    if (!s || !*s || *s == ' ' || *s == '\t')
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno == ERANGE || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

void arb_params_strip(const char *params, const char *const *drop, char *out, size_t len)
{
    if (!len)
        return;
    size_t o = 0;
    out[0] = '\0';
    const char *p = params ? params : "";
    while (*p) {
        size_t item = strcspn(p, ",");
        size_t key = strcspn(p, "=,");
        int dropped = 0;
        for (size_t i = 0; drop && drop[i]; i++)
            if (strlen(drop[i]) == key && strncmp(p, drop[i], key) == 0)
                dropped = 1;
        if (!dropped && item) {
            if (o && o + 1 < len)
                out[o++] = ',';
            for (size_t i = 0; i < item && o + 1 < len; i++)
                out[o++] = p[i];
            out[o] = '\0';
        }
        p += item;
        if (*p == ',')
            p++;
    }
}

/* Parses "1.5 2.25 ..." (spaces as separators) into a new array. */
static int parse_samples(const char *s, double **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    size_t cap = 0;
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || (*end && *end != ' ') || errno == ERANGE || !isfinite(v) || v < 0)
            goto err_free_samples;
        if (*n == cap) {
            if (cap >= MAX_SAMPLES)
                goto err_free_samples;
            size_t nc = cap ? cap * 2 : 64;
            double *p = realloc(*out, nc * sizeof *p);
            if (!p)
                goto err_free_samples;
            *out = p;
            cap = nc;
        }
        (*out)[(*n)++] = v;
        s = end;
    }
    return 0;
err_free_samples:
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

static void free_points(arb_point_t *p, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        free(p[i].samples_us);
}

/* Indices into arb_points_required, in its order. */
enum { COL_SCHEMA, COL_RUN_ID, COL_FABRIC, COL_RANKS, COL_NODES, COL_IMPL, COL_PARAMS, COL_OP,
       COL_FUSION, COL_DTYPE, COL_BYTES, COL_MODE, COL_MEDIAN, COL_P10, COL_P90, COL_CHECK,
       COL_SAMPLES, COL_NREQ };

/* Parses the key fields of row f into p. Returns NULL, or the column at fault (and
 * *want, the accepted form). */
static const char *parse_keys(arb_point_t *p, char **f, const int *c, int *col, const char **want)
{
    unsigned long long v;
    static const int names[] = {COL_IMPL, COL_OP, COL_DTYPE, COL_MODE};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!*f[c[names[i]]]) {
            *col = names[i];
            *want = "a non-empty name";
            return arb_points_required[names[i]];
        }
    *want = "a positive integer";
    if (*col = COL_RANKS, arb_parse_u64_field(f[c[COL_RANKS]], 1u << 20, &v) || v == 0)
        return "ranks";
    p->ranks = (int)v;
    *want = "a non-negative integer or empty";
    v = 0;
    if (*col = COL_NODES, *f[c[COL_NODES]] && arb_parse_u64_field(f[c[COL_NODES]], 1u << 20, &v))
        return "nodes";
    p->nodes = (int)v;
    *want = "a non-negative integer (bytes per rank)";
    if (*col = COL_BYTES, arb_parse_u64_field(f[c[COL_BYTES]], (unsigned long long)SIZE_MAX, &v))
        return "bytes";
    p->bytes = (size_t)v;
    return NULL;
}

/* Parses the timing fields of a passing row f into p; NULL or the column at fault. */
static const char *parse_times(arb_point_t *p, char **f, const int *c, int *col, const char **want)
{
    double m, lo, hi;
    *want = "a finite positive number of microseconds";
    if (*col = COL_MEDIAN, arb_parse_double_field(f[c[COL_MEDIAN]], &m) || !(m > 0))
        return "median_us";
    *want = "a finite non-negative number of microseconds";
    if (*col = COL_P10, arb_parse_double_field(f[c[COL_P10]], &lo) || lo < 0)
        return "p10_us";
    if (*col = COL_P90, arb_parse_double_field(f[c[COL_P90]], &hi) || hi < 0)
        return "p90_us";
    *want = "p10_us <= median_us <= p90_us";
    if (lo > m * (1 + 1e-9) || m > hi * (1 + 1e-9))
        return "p10_us";
    p->median_us = m, p->p10_us = lo, p->p90_us = hi;
    *want = "space-separated finite non-negative numbers (at most 1000000)";
    if (*col = COL_SAMPLES, parse_samples(f[c[COL_SAMPLES]], &p->samples_us, &p->nsamples))
        return "samples_us";
    return NULL;
}

/* Validates and converts the rows of t into points appended to ps. */
static int convert_rows(arb_pointset_t *ps, const arb_table_t *t, const char *name, char *err,
                        size_t err_len)
{
    int c[COL_NREQ];
    for (int k = 0; k < COL_NREQ; k++)
        c[k] = arb_table_col(t, arb_points_required[k]);
    int gpu = arb_table_col(t, "gpu"), rev = arb_table_col(t, "git_rev");
    size_t first = ps->n;
    arb_point_t *np = realloc(ps->p, (ps->n + t->nrows + 1) * sizeof *np);
    if (!np) {
        snprintf(err, err_len, "%s: out of memory", name);
        return -1;
    }
    ps->p = np;
    for (size_t r = 0; r < t->nrows; r++) {
        char **f = t->rows[r];
        size_t line = r + 2; /* the header is line 1; rows hold no newlines in arbench files */
        arb_point_t *p = &ps->p[ps->n++];
        memset(p, 0, sizeof *p);
        if (strcmp(f[c[COL_SCHEMA]], "1") != 0) {
            snprintf(err, err_len, "%s: line %zu: schema '%.40s', expected %d (a results file from another arbench version?)", name, line, f[c[COL_SCHEMA]], ARB_RESULTS_SCHEMA);
            goto err_free_points;
        }
        p->source = name;
        p->line = line;
        p->fabric = f[c[COL_FABRIC]];
        p->impl = f[c[COL_IMPL]];
        p->params = f[c[COL_PARAMS]];
        p->op = f[c[COL_OP]];
        p->fusion = f[c[COL_FUSION]];
        p->dtype = f[c[COL_DTYPE]];
        p->mode = f[c[COL_MODE]];
        p->check = f[c[COL_CHECK]];
        p->run_id = f[c[COL_RUN_ID]];
        p->gpu = gpu >= 0 ? f[gpu] : "";
        p->git_rev = rev >= 0 ? f[rev] : "";
        /* check=model: a prediction of `arbench model predict` (docs/model.md), its statistics are the model's */
        p->pass = strcmp(p->check, "pass") == 0 || strcmp(p->check, "model") == 0;
        p->median_us = p->p10_us = p->p90_us = NAN;
        int col = 0;
        const char *want = NULL;
        const char *bad = parse_keys(p, f, c, &col, &want);
        if (!bad && p->pass)
            bad = parse_times(p, f, c, &col, &want);
        if (bad) {
            const char *val = f[c[col]];
            snprintf(err, err_len, "%s: line %zu: column %s is '%.40s%s', expected %s", name, line, bad, val, strlen(val) > 40 ? "..." : "", want);
            goto err_free_points;
        }
    }
    return 0;
err_free_points:
    free_points(ps->p, first, ps->n);
    ps->n = first;
    return -1;
}

static int add_table(arb_pointset_t *ps, arb_table_t *t, const char *name, char *err, size_t err_len)
{
    if (arb_table_require(t, arb_points_required, name, err, err_len))
        goto err_free_table;
    char **paths = realloc(ps->paths, (ps->nfiles + 1) * sizeof *paths);
    if (paths)
        ps->paths = paths;
    arb_table_t *tables = realloc(ps->tables, (ps->nfiles + 1) * sizeof *tables);
    if (tables)
        ps->tables = tables;
    char *path = strdup(name);
    if (!paths || !tables || !path) {
        free(path);
        snprintf(err, err_len, "%s: out of memory", name);
        goto err_free_table;
    }
    if (convert_rows(ps, t, path, err, err_len)) {
        free(path);
        goto err_free_table;
    }
    ps->paths[ps->nfiles] = path;
    ps->tables[ps->nfiles] = *t;
    ps->nfiles++;
    return 0;
err_free_table:
    arb_table_free(t);
    if (!ps->n && !ps->nfiles)
        arb_points_free(ps); /* the arrays grown for this file: nothing else owns them */
    return -1;
}

int arb_points_load(arb_pointset_t *ps, const char *path, char *err, size_t err_len)
{
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return -1;
    return add_table(ps, &t, path, err, err_len);
}

int arb_points_load_mem(arb_pointset_t *ps, const char *data, size_t len, const char *name,
                        char *err, size_t err_len)
{
    arb_table_t t;
    if (arb_table_read_mem(data, len, name, &t, err, err_len))
        return -1;
    return add_table(ps, &t, name, err, err_len);
}

void arb_points_free(arb_pointset_t *ps)
{
    free_points(ps->p, 0, ps->n);
    free(ps->p);
    for (size_t i = 0; i < ps->nfiles; i++) {
        free(ps->paths[i]);
        arb_table_free(&ps->tables[i]);
    }
    free(ps->paths);
    free(ps->tables);
    memset(ps, 0, sizeof *ps);
}
