/* SPDX-License-Identifier: MIT */
#include "analysis/points.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"

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

arb_point_key_t arb_point_key(const arb_point_t *p)
{
    return (arb_point_key_t){.fabric = p->fabric, .ranks = p->ranks, .nodes = p->nodes,
                             .dtype = p->dtype, .op = p->op, .mode = p->mode};
}

int arb_point_key_cmp(arb_point_key_t a, arb_point_key_t b)
{
    int c;
    if ((c = strcmp(a.fabric, b.fabric)) || (c = (a.ranks > b.ranks) - (a.ranks < b.ranks)) ||
        (c = (a.nodes > b.nodes) - (a.nodes < b.nodes)) || (c = strcmp(a.dtype, b.dtype)) ||
        (c = strcmp(a.op, b.op)))
        return c;
    return strcmp(a.mode, b.mode);
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

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The writer rounds samples and statistics to 3 decimals: a statistic recomputed from
 * the stored samples is off by at most 0.0005 + 0.0005 us. */
#define ROUNDING_US 0.0015
/* How far a strided subset's quantile may sit from the full set's (in quantile units). */
#define STRIDED_QUANTILE_SLACK 0.05

const char *arb_points_check_samples(const double *samples, size_t n, size_t n_total, double median,
                                     double p10, double p90, double min, double max, double mean,
                                     char *why, size_t why_len)
{
    if (!n)
        return NULL;
    const size_t cap = ARB_RESULTS_MAX_STORED_SAMPLES;
    size_t stride = n_total > cap ? (n_total + cap - 1) / cap : 1;
    if (n_total && n != (n_total + stride - 1) / stride) {
        snprintf(why, why_len, "samples_us holds %zu samples, but iters=%zu means %zu stored (stride %zu, at most %zu)", n, n_total, (n_total + stride - 1) / stride, stride, cap);
        return "samples_us";
    }
    if (!n_total && n >= cap)
        stride = 2; /* the total is not recorded: judge as a strided subset */
    double *s = malloc(n * sizeof *s);
    if (!s) {
        snprintf(why, why_len, "out of memory");
        return "samples_us";
    }
    memcpy(s, samples, n * sizeof *s);
    qsort(s, n, sizeof *s, cmp_double);
    const struct { const char *name; double v, q; } qs[] = {
        {"median_us", median, 0.5}, {"p10_us", p10, 0.1}, {"p90_us", p90, 0.9}};
    const char *bad = NULL;
    for (size_t k = 0; k < sizeof qs / sizeof qs[0] && !bad; k++) {
        double v = qs[k].v;
        if (stride == 1) {
            double want = arb_quantile_sorted(s, n, qs[k].q);
            if (fabs(v - want) > ROUNDING_US + 1e-9 * fabs(want)) {
                snprintf(why, why_len, "%s is %.3f, but the row's %zu samples give %.3f", qs[k].name, v, n, want);
                bad = qs[k].name;
            }
            continue;
        }
        size_t below = 0, upto = 0; /* samples < v and <= v, within the rounding */
        for (size_t i = 0; i < n; i++) {
            below += s[i] < v - ROUNDING_US;
            upto += s[i] <= v + ROUNDING_US;
        }
        double lo = (double)below / (double)n, hi = (double)upto / (double)n;
        if (hi < qs[k].q - STRIDED_QUANTILE_SLACK || lo > qs[k].q + STRIDED_QUANTILE_SLACK) {
            snprintf(why, why_len, "%s %.3f lies at quantile %.3f..%.3f of the row's %zu stored samples (stride %zu), expected %.2f +- %.2f", qs[k].name, v, lo, hi, n, stride, qs[k].q, STRIDED_QUANTILE_SLACK);
            bad = qs[k].name;
        }
    }
    if (!bad && !isnan(min) && (stride == 1 ? fabs(min - s[0]) : min - s[0]) > ROUNDING_US) {
        snprintf(why, why_len, "min_us is %.3f, but the smallest stored sample is %.3f", min, s[0]);
        bad = "min_us";
    }
    if (!bad && !isnan(max) && (stride == 1 ? fabs(max - s[n - 1]) : s[n - 1] - max) > ROUNDING_US) {
        snprintf(why, why_len, "max_us is %.3f, but the largest stored sample is %.3f", max, s[n - 1]);
        bad = "max_us";
    }
    if (!bad && !isnan(mean) && stride == 1) {
        double sum = 0;
        for (size_t i = 0; i < n; i++)
            sum += s[i];
        if (fabs(mean - sum / (double)n) > ROUNDING_US + 1e-9 * fabs(mean)) {
            snprintf(why, why_len, "mean_us is %.3f, but the row's %zu samples give %.3f", mean, n, sum / (double)n);
            bad = "mean_us";
        }
    }
    free(s);
    return bad;
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
    int gpu = arb_table_col(t, "gpu"), rev = arb_table_col(t, "git_rev"), env = arb_table_col(t, "env");
    /* Optional: older files lack role; min, max, mean and iters sharpen the sample check. */
    int role = arb_table_col(t, "role"), note = arb_table_col(t, "note"), iters = arb_table_col(t, "iters");
    int cmin = arb_table_col(t, "min_us"), cmax = arb_table_col(t, "max_us"), cmean = arb_table_col(t, "mean_us");
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
        p->env = env >= 0 ? f[env] : "";
        /* check=model: a prediction of `arbench model predict` (docs/model.md), its statistics are the model's */
        p->pass = strcmp(p->check, "pass") == 0 || strcmp(p->check, "model") == 0;
        p->median_us = p->p10_us = p->p90_us = NAN;
        if (role < 0 || !*f[role]) /* a file, or a writer, from before the column */
            p->role = arb_role_of_legacy_row(p->impl, note >= 0 ? f[note] : "");
        else if (arb_role_parse(f[role], &p->role)) {
            snprintf(err, err_len, "%s: line %zu: column role is '%.40s', expected reference, baseline or candidate", name, line, f[role]);
            goto err_free_points;
        }
        /* Reference floors are not checked (check=skip) but timed: their times are read. */
        p->timed = p->pass || *f[c[COL_MEDIAN]];
        int col = 0;
        const char *want = NULL;
        const char *bad = parse_keys(p, f, c, &col, &want);
        if (!bad && p->timed)
            bad = parse_times(p, f, c, &col, &want);
        if (!bad && p->timed) {
            unsigned long long n_total = 0;
            double extra[3] = {NAN, NAN, NAN};
            const int ecol[3] = {cmin, cmax, cmean};
            for (int k = 0; k < 3; k++)
                if (ecol[k] >= 0 && *f[ecol[k]] && arb_parse_double_field(f[ecol[k]], &extra[k])) {
                    snprintf(err, err_len, "%s: line %zu: column %s is '%.40s', expected a number of microseconds", name, line, t->header[ecol[k]], f[ecol[k]]);
                    goto err_free_points;
                }
            if (iters >= 0 && *f[iters] && arb_parse_u64_field(f[iters], (unsigned long long)SIZE_MAX, &n_total)) {
                snprintf(err, err_len, "%s: line %zu: column iters is '%.40s', expected a non-negative integer", name, line, f[iters]);
                goto err_free_points;
            }
            char why[256];
            const char *off = arb_points_check_samples(p->samples_us, p->nsamples, (size_t)n_total, p->median_us, p->p10_us,
                                                       p->p90_us, extra[0], extra[1], extra[2], why, sizeof why);
            if (off) {
                snprintf(err, err_len, "%s: line %zu (%s %s %s %zu B): statistics disagree with the row's own samples: %s (an edited or damaged file?)", name, line, p->impl, p->mode, p->op, p->bytes, why);
                goto err_free_points;
            }
        }
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
