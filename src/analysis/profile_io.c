/* SPDX-License-Identifier: MIT */
/* Tuning profiles on disk: CSV (libcsv) and JSON (jansson) writers, the CSV reader. */
#include "analysis/profile.h"

#include <csv.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
#include "results/profile_row.h"
#include "results/results.h"

/* The profile CSV columns in file order (docs/profile.md); readers go by name. */
#define PROFILE_COLUMNS(X)                                                               \
    X(schema) X(fabric) X(ranks) X(nodes) X(dtype) X(op) X(mode) X(min_bytes) X(max_bytes) \
    X(impl) X(params) X(median_us) X(baseline_impl) X(baseline_params)                   \
    X(baseline_median_us) X(speedup) X(confidence) X(sources) X(fusion) X(rep_bytes) X(points) \
    X(role)

enum {
#define PROFILE_ENUM(name) PCOL_##name,
    PROFILE_COLUMNS(PROFILE_ENUM)
#undef PROFILE_ENUM
    PCOL_COUNT
};

static const char *const profile_col_names[PCOL_COUNT] = {
#define PROFILE_NAME(name) #name,
    PROFILE_COLUMNS(PROFILE_NAME)
#undef PROFILE_NAME
};

/* Columns a reader needs; the rest are informative. */
static const char *const profile_required[] = {
    "schema", "fabric", "ranks", "nodes", "dtype", "op", "mode", "min_bytes", "max_bytes", "impl", "params", NULL,
};

/* ---- atomic files (base/outfile.h) ---- */

/* arb_outfile_commit, or discard when writing the content failed. */
static int atomic_commit(arb_outfile_t *a, int failed, char *err, size_t err_len)
{
    if (failed) {
        snprintf(err, err_len, "%s: cannot write (%s)", a->path, strerror(errno));
        arb_outfile_discard(a);
        return -1;
    }
    return arb_outfile_commit(a, err, err_len);
}

/* ---- CSV ---- */

static int put_field(FILE *f, const char *s, int last)
{
    int rc;
    if (strpbrk(s, ",\"\r\n") || (*s && (s[0] == ' ' || s[strlen(s) - 1] == ' ')))
        rc = csv_fwrite(f, s, strlen(s)) == 0 ? 0 : -1;
    else
        rc = fputs(s, f) < 0 ? -1 : 0;
    return rc || fputc(last ? '\n' : ',', f) == EOF ? -1 : 0;
}

static void fmt_double(char *buf, size_t len, const char *fmt, double v)
{
    if (isnan(v))
        buf[0] = '\0';
    else
        snprintf(buf, len, fmt, v);
}

int arb_profile_write_csv(const arb_profile_t *p, const char *path, char *err, size_t err_len)
{
    arb_outfile_t a;
    if (!arb_outfile_open(&a, "profile", path, err, err_len))
        return -1;
    int bad = 0;
    for (int c = 0; c < PCOL_COUNT; c++)
        bad |= put_field(a.f, profile_col_names[c], c == PCOL_COUNT - 1);
    for (size_t i = 0; i < p->n && !bad; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        char schema[8], ranks[16], nodes[16], minb[32], maxb[32], med[32], bmed[32], spd[32];
        char rep[32], pts[32];
        snprintf(schema, sizeof schema, "%d", ARB_PROFILE_SCHEMA);
        snprintf(ranks, sizeof ranks, "%d", e->ranks);
        snprintf(nodes, sizeof nodes, "%d", e->nodes);
        snprintf(minb, sizeof minb, "%zu", e->min_bytes);
        snprintf(maxb, sizeof maxb, "%zu", e->max_bytes);
        fmt_double(med, sizeof med, "%.3f", e->median_us);
        fmt_double(bmed, sizeof bmed, "%.3f", e->baseline_median_us);
        fmt_double(spd, sizeof spd, "%.4f", e->speedup);
        snprintf(rep, sizeof rep, "%zu", e->rep_bytes);
        snprintf(pts, sizeof pts, "%zu", e->points);
        const char *row[PCOL_COUNT] = {
            [PCOL_schema] = schema, [PCOL_fabric] = e->fabric, [PCOL_ranks] = ranks,
            [PCOL_nodes] = nodes, [PCOL_dtype] = e->dtype, [PCOL_op] = e->op, [PCOL_mode] = e->mode,
            [PCOL_min_bytes] = minb, [PCOL_max_bytes] = maxb, [PCOL_impl] = e->impl,
            [PCOL_params] = e->params, [PCOL_median_us] = med, [PCOL_baseline_impl] = e->baseline_impl,
            [PCOL_baseline_params] = e->baseline_params, [PCOL_baseline_median_us] = bmed,
            [PCOL_speedup] = spd, [PCOL_confidence] = e->confidence, [PCOL_sources] = e->sources,
            [PCOL_fusion] = e->fusion, [PCOL_rep_bytes] = rep, [PCOL_points] = pts,
            [PCOL_role] = arb_role_name(e->role),
        };
        for (int c = 0; c < PCOL_COUNT; c++)
            bad |= put_field(a.f, row[c], c == PCOL_COUNT - 1);
    }
    return atomic_commit(&a, bad, err, err_len);
}

/* ---- JSON ---- */

static json_t *num_or_null(double v) { return isnan(v) ? json_null() : json_real(v); }

int arb_profile_write_json(const arb_profile_t *p, const char *path, char *err, size_t err_len)
{
    json_t *sources = json_array(), *entries = json_array();
    json_t *root = json_pack("{s:i, s:s, s:o, s:o}", "schema", ARB_PROFILE_SCHEMA, "generator",
                             "arbench profile", "sources", sources, "entries", entries);
    int bad = !root;
    for (size_t i = 0; i < p->nsources && !bad; i++) {
        json_t *runs = json_array();
        char *copy = strdup(p->source_runs[i]);
        for (char *save = NULL, *t = copy ? strtok_r(copy, " ", &save) : NULL; t; t = strtok_r(NULL, " ", &save))
            bad |= json_array_append_new(runs, json_string(t));
        free(copy);
        bad |= !copy || json_array_append_new(sources, json_pack("{s:s, s:o}", "file", p->source_files[i], "run_ids", runs));
    }
    for (size_t i = 0; i < p->n && !bad; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        /* max_bytes SIZE_MAX (open-ended) does not fit a JSON integer: written as null. */
        json_t *maxb = e->max_bytes == SIZE_MAX ? json_null() : json_integer((json_int_t)e->max_bytes);
        json_t *o = json_pack("{s:s, s:i, s:i, s:s, s:s, s:s, s:s, s:I, s:o, s:s, s:s, s:s, s:f, s:I, s:s, s:s, s:o, s:o, s:s, s:s}",
                              "fabric", e->fabric, "ranks", e->ranks, "nodes", e->nodes, "dtype", e->dtype,
                              "op", e->op, "fusion", e->fusion, "mode", e->mode,
                              "min_bytes", (json_int_t)e->min_bytes, "max_bytes", maxb,
                              "impl", e->impl, "params", e->params, "confidence", e->confidence,
                              "median_us", e->median_us, "rep_bytes", (json_int_t)e->rep_bytes,
                              "baseline_impl", e->baseline_impl, "baseline_params", e->baseline_params,
                              "baseline_median_us", num_or_null(e->baseline_median_us),
                              "speedup", num_or_null(e->speedup), "sources", e->sources,
                              "role", arb_role_name(e->role));
        bad |= !o || json_array_append_new(entries, o);
    }
    if (bad) {
        json_decref(root);
        snprintf(err, err_len, "%s: cannot build the JSON document (out of memory or invalid UTF-8 in a field)", path);
        return -1;
    }
    arb_outfile_t a;
    if (!arb_outfile_open(&a, "profile", path, err, err_len)) {
        json_decref(root);
        return -1;
    }
    bad = json_dumpf(root, a.f, JSON_INDENT(2)) != 0 || fputc('\n', a.f) == EOF;
    json_decref(root);
    return atomic_commit(&a, bad, err, err_len);
}

/* ---- human-readable ---- */

void arb_profile_print(const arb_profile_t *p, FILE *f)
{
    fprintf(f, "%-12s %5s %5s %-5s %-25s %-7s %12s %12s  %-10s %-40s %10s %8s  %s\n", "fabric", "ranks",
            "nodes", "dtype", "op", "mode", "min_bytes", "max_bytes", "impl", "params", "median_us",
            "speedup", "confidence");
    for (size_t i = 0; i < p->n; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        char maxb[32];
        if (e->max_bytes == SIZE_MAX)
            snprintf(maxb, sizeof maxb, "max");
        else
            snprintf(maxb, sizeof maxb, "%zu", e->max_bytes);
        char op[96];
        snprintf(op, sizeof op, "%s%s%s", e->op, *e->fusion ? "/" : "", e->fusion);
        fprintf(f, "%-12s %5d %5d %-5s %-25s %-7s %12zu %12s  %-10s %-40s %10.3f %8.3f  %s\n", e->fabric,
                e->ranks, e->nodes, e->dtype, op, e->mode, e->min_bytes, maxb,
                e->impl, e->params, e->median_us, e->speedup, e->confidence);
    }
}

/* ---- reading ---- */

static const char *col_or_empty(const arb_table_t *t, size_t r, int c) { return c >= 0 ? t->rows[r][c] : ""; }

static double opt_double(const char *s)
{
    double v;
    return *s && arb_parse_double_field(s, &v) == 0 ? v : NAN;
}

/* A row's group: the key of the points it was built from. */
static arb_point_key_t entry_key(const arb_profile_entry_t *e)
{
    return (arb_point_key_t){.fabric = e->fabric, .ranks = e->ranks, .nodes = e->nodes,
                             .dtype = e->dtype, .op = e->op, .mode = e->mode};
}

static int entry_key_cmp(const arb_profile_entry_t *a, const arb_profile_entry_t *b)
{
    return arb_point_key_cmp(entry_key(a), entry_key(b));
}

static int cmp_entry(const void *pa, const void *pb)
{
    const arb_profile_entry_t *a = *(const arb_profile_entry_t *const *)pa;
    const arb_profile_entry_t *b = *(const arb_profile_entry_t *const *)pb;
    int c = entry_key_cmp(a, b);
    if (c)
        return c;
    return (a->min_bytes > b->min_bytes) - (a->min_bytes < b->min_bytes);
}

/* Two rows of one key that cover the same size would make a lookup ambiguous. */
static int check_overlaps(const arb_profile_t *p, const char *name, char *err, size_t err_len)
{
    const arb_profile_entry_t **v = malloc((p->n + 1) * sizeof *v);
    if (!v) {
        snprintf(err, err_len, "%s: out of memory", name);
        return -1;
    }
    for (size_t i = 0; i < p->n; i++)
        v[i] = &p->e[i];
    qsort(v, p->n, sizeof *v, cmp_entry);
    int rc = 0;
    for (size_t i = 1; i < p->n && !rc; i++)
        if (entry_key_cmp(v[i - 1], v[i]) == 0 && v[i - 1]->max_bytes >= v[i]->min_bytes) {
            snprintf(err, err_len, "%s: ranges [%zu, %zu] and [%zu, %zu] overlap for fabric %s, ranks %d, dtype %s, op %s, mode %s; expected disjoint ranges", name, v[i - 1]->min_bytes, v[i - 1]->max_bytes, v[i]->min_bytes, v[i]->max_bytes, v[i]->fabric, v[i]->ranks, v[i]->dtype, v[i]->op, v[i]->mode);
            rc = -1;
        }
    free(v);
    return rc;
}

static int read_table(const arb_table_t *t, const char *name, arb_profile_t *p, char *err, size_t err_len)
{
    for (size_t i = 0; profile_required[i]; i++)
        if (arb_table_col(t, profile_required[i]) < 0) {
            snprintf(err, err_len, "%s: missing column '%s' (is it an arbench profile CSV? see docs/profile.md)", name, profile_required[i]);
            return -1;
        }
    int c[PCOL_COUNT];
    for (int k = 0; k < PCOL_COUNT; k++)
        c[k] = arb_table_col(t, profile_col_names[k]);
    p->e = calloc(t->nrows + 1, sizeof *p->e);
    if (!p->e) {
        snprintf(err, err_len, "%s: out of memory", name);
        return -1;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        arb_profile_entry_t *e = &p->e[p->n++];
        unsigned long long ranks, nodes = 0, minb, maxb;
        const char *bad = NULL, *want = "";
        const char *nodes_s = col_or_empty(t, r, c[PCOL_nodes]);
        if (strcmp(col_or_empty(t, r, c[PCOL_schema]), "1") != 0)
            bad = "schema", want = "1 (this arbench reads profile schema 1)";
        else if (arb_parse_u64_field(col_or_empty(t, r, c[PCOL_ranks]), 1u << 20, &ranks) || !ranks)
            bad = "ranks", want = "a positive integer";
        else if (*nodes_s && arb_parse_u64_field(nodes_s, 1u << 20, &nodes))
            bad = "nodes", want = "a non-negative integer or empty";
        else if (arb_parse_u64_field(col_or_empty(t, r, c[PCOL_min_bytes]), SIZE_MAX, &minb))
            bad = "min_bytes", want = "a non-negative integer";
        else if (arb_parse_u64_field(col_or_empty(t, r, c[PCOL_max_bytes]), SIZE_MAX, &maxb) || maxb < minb)
            bad = "max_bytes", want = "an integer >= min_bytes";
        else if (!*col_or_empty(t, r, c[PCOL_impl]))
            bad = "impl", want = "a plugin name";
        if (bad) {
            snprintf(err, err_len, "%s: line %zu: bad %s, expected %s", name, r + 2, bad, want);
            return -1;
        }
        const arb_profile_row_t row = {
#define CELL(col) (c[PCOL_##col] >= 0 ? t->rows[r][c[PCOL_##col]] : NULL)
            .min_bytes = CELL(min_bytes), .max_bytes = CELL(max_bytes), .rep_bytes = CELL(rep_bytes),
            .points = CELL(points), .median_us = CELL(median_us), .baseline_median_us = CELL(baseline_median_us),
            .speedup = CELL(speedup), .role = CELL(role),
#undef CELL
        };
        char why[256];
        const char *off = arb_profile_row_check(&row, why, sizeof why);
        if (off) {
            snprintf(err, err_len, "%s: line %zu: column %s: %s (an edited or damaged profile?)", name, r + 2, off, why);
            return -1;
        }
        if (!row.role || !*row.role || arb_role_parse(row.role, &e->role))
            e->role = arb_role_of_legacy_row(col_or_empty(t, r, c[PCOL_impl]), "");
        e->ranks = (int)ranks;
        e->nodes = (int)nodes;
        e->min_bytes = (size_t)minb;
        e->max_bytes = (size_t)maxb;
        e->median_us = opt_double(col_or_empty(t, r, c[PCOL_median_us]));
        e->baseline_median_us = opt_double(col_or_empty(t, r, c[PCOL_baseline_median_us]));
        e->speedup = opt_double(col_or_empty(t, r, c[PCOL_speedup]));
        unsigned long long v;
        e->rep_bytes = arb_parse_u64_field(col_or_empty(t, r, c[PCOL_rep_bytes]), SIZE_MAX, &v) ? 0 : (size_t)v;
        e->points = arb_parse_u64_field(col_or_empty(t, r, c[PCOL_points]), SIZE_MAX, &v) ? 0 : (size_t)v;
        struct { char **dst; int col; } s[] = {
            {&e->fabric, PCOL_fabric}, {&e->dtype, PCOL_dtype}, {&e->op, PCOL_op}, {&e->mode, PCOL_mode},
            {&e->impl, PCOL_impl}, {&e->params, PCOL_params}, {&e->fusion, PCOL_fusion},
            {&e->baseline_impl, PCOL_baseline_impl}, {&e->baseline_params, PCOL_baseline_params},
            {&e->confidence, PCOL_confidence}, {&e->sources, PCOL_sources},
        };
        for (size_t k = 0; k < sizeof s / sizeof s[0]; k++)
            if (!(*s[k].dst = strdup(col_or_empty(t, r, c[s[k].col])))) {
                snprintf(err, err_len, "%s: out of memory", name);
                return -1;
            }
    }
    return check_overlaps(p, name, err, err_len);
}

int arb_profile_read_mem(const char *data, size_t len, const char *name, arb_profile_t *p,
                         char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    arb_table_t t;
    if (arb_table_read_mem(data, len, name, &t, err, err_len))
        return -1;
    int rc = read_table(&t, name, p, err, err_len);
    arb_table_free(&t);
    if (rc)
        arb_profile_free(p);
    return rc;
}

int arb_profile_read(const char *path, arb_profile_t *p, char *err, size_t err_len)
{
    memset(p, 0, sizeof *p);
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return -1;
    int rc = read_table(&t, path, p, err, err_len);
    arb_table_free(&t);
    if (rc)
        arb_profile_free(p);
    return rc;
}
