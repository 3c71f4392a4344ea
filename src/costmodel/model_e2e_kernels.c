/* SPDX-License-Identifier: MIT */
/* Compute on the target by kernel family, from the engine's per-kernel table (model_e2e_kernels.h). */
#include "costmodel/model_e2e_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/points.h"
#include "results/results.h"

static const char *const required[] = {"schema", "impl", "tokens", "read_gbs", "family", "family_layers",
                                       "floor_us", "graph_us", NULL};

/* An empty cell or one that is not a finite number is NAN (a family not measured). */
static double cell(const arb_table_t *t, size_t r, int c)
{
    double v;
    return c >= 0 && *t->rows[r][c] && arb_parse_double_field(t->rows[r][c], &v) == 0 ? v : NAN;
}

/* Row r of a per-kernel table is of the schema and of a compute-only run (c: required's columns). */
static int row_kind(const arb_table_t *t, size_t r, const int *c, const char *path, char *err, size_t err_len)
{
    char **f = t->rows[r];
    if (strcmp(f[c[0]], "engine-kernels-1"))
        ARB_RAISE(-1, err, err_len, "%s: line %zu: schema '%s', expected engine-kernels-1 (docs/engine.md)", path, r + 2,
                  f[c[0]]);
    if (strcmp(f[c[1]], "noop"))
        ARB_RAISE(-1, err, err_len,
                  "%s: line %zu: impl '%s', expected noop (the compute-only run's table: its steps hold no all-reduce)",
                  path, r + 2, f[c[1]]);
    return 0;
}

arb_status_t arb_e2e_kernel_same_step(const char *ref, const char *target, char *err, size_t err_len)
{
    static const char *const same[] = {"config", "weights", "tp_shape", "context", NULL};
    arb_table_t a, b;
    if (arb_table_read(ref, &a, err, err_len))
        return ARB_ERR_INVALID;
    if (arb_table_read(target, &b, err, err_len)) {
        arb_table_free(&a);
        return ARB_ERR_INVALID;
    }
    arb_status_t rc = ARB_ERR_INVALID;
    if (arb_table_require(&a, same, ref, err, err_len) || arb_table_require(&b, same, target, err, err_len))
        goto out;
    if (!a.nrows || !b.nrows)
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: no rows", a.nrows ? target : ref);
    for (int k = 0; same[k]; k++) {
        const char *x = a.rows[0][arb_table_col(&a, same[k])], *y = b.rows[0][arb_table_col(&b, same[k])];
        if (strcmp(x, y))
            ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: %s '%s' where %s has '%s': not the same step",
                           target, same[k], y, ref, x);
    }
    rc = ARB_OK;
out:
    arb_table_free(&a);
    arb_table_free(&b);
    return rc;
}

arb_status_t arb_e2e_kernel_step(const char *path, unsigned tokens, double *step_us, double *read_gbs, char *err,
                                 size_t err_len)
{
    *step_us = *read_gbs = NAN;
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return ARB_ERR_INVALID;
    arb_status_t rc = ARB_DECLINE;
    int c[8];
    if (arb_table_require(&t, required, path, err, err_len)) {
        rc = ARB_ERR_INVALID;
        goto out;
    }
    for (int k = 0; k < 8; k++)
        c[k] = arb_table_col(&t, required[k]);
    for (size_t r = 0; r < t.nrows; r++) {
        if (row_kind(&t, r, c, path, err, err_len)) {
            rc = ARB_ERR_INVALID;
            goto out;
        }
        const double g = cell(&t, r, c[7]);
        if (cell(&t, r, c[2]) == tokens && !strcmp(t.rows[r][c[4]], "step") && g > 0) {
            *step_us = g, *read_gbs = cell(&t, r, c[3]);
            rc = ARB_OK;
        }
    }
out:
    arb_table_free(&t);
    return rc;
}

arb_status_t arb_e2e_kernel_compute(const char *path, unsigned tokens, double target_read_gbs, double h200_peak_gbs,
                                    double launch_band, double issue_lo, double issue_hi, arb_e2e_kernel_compute_t *out,
                                    char *err, size_t err_len)
{
    memset(out, 0, sizeof *out);
    out->tokens = tokens;
    if (!(target_read_gbs > 0) || !(h200_peak_gbs > 0) || !(launch_band >= 0 && launch_band < 1) ||
        !(issue_lo > 0 && issue_lo <= issue_hi))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len,
                  "per-kernel compute: bandwidths must be > 0, the launch band in [0, 1), 0 < issue_lo <= issue_hi");
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return ARB_ERR_INVALID;
    arb_status_t rc = ARB_ERR_INVALID;
    int c[8];
    double read = NAN, step = NAN, step_floor = NAN, stream = 0, excess = 0;
    unsigned rows = 0;
    if (arb_table_require(&t, required, path, err, err_len))
        goto out;
    for (int k = 0; k < 8; k++)
        c[k] = arb_table_col(&t, required[k]);
    for (size_t r = 0; r < t.nrows; r++) {
        char **f = t.rows[r];
        if (row_kind(&t, r, c, path, err, err_len))
            goto out;
        if (cell(&t, r, c[2]) != tokens)
            continue;
        rows++;
        read = cell(&t, r, c[3]);
        double layers = cell(&t, r, c[5]), floor_us = cell(&t, r, c[6]), graph = cell(&t, r, c[7]);
        if (!strcmp(f[c[4]], "step")) {
            step = graph;
            step_floor = floor_us; /* the step's bytes over the H200's read: NAN when not written */
            continue;
        }
        if (!(layers >= 1))
            ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: line %zu: family_layers '%s', expected a whole number >= 1", path, r + 2, f[c[5]]);
        if (!(floor_us >= 0)) /* "other": time, no bytes; it stays in rest */
            continue;
        stream += layers * (isnan(graph) ? floor_us : fmax(0, fmin(graph, floor_us)));
        if (!isnan(graph) && graph > floor_us) /* beyond its streaming: launch, latency or issue */
            excess += layers * (graph - floor_us);
    }
    if (!rows)
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: no rows of %u tokens (the engine writes decode T = 1 and verify T = k + 1)", path, tokens);
    if (!(step > 0) || !(read > 0))
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: the %u-token step row lacks a graph time or read_gbs > 0", path, tokens);
    if (stream > step)
        stream = step; /* families overlapping in the replay: never more than the step */
    const double rest = step - stream, scaled = stream * read / target_read_gbs;
    if (excess > rest)
        excess = rest;
    const double gaps = rest - excess;
    /* The target cannot stream the step's bytes faster than its bandwidth allows. */
    const double fl = step_floor > 0 ? step_floor * read / target_read_gbs : 0;
    out->h200_step_us = step;
    out->stream_h200_us = stream;
    out->rest_us = rest;
    out->excess_us = excess;
    out->floor_target_us = fl;
    out->target_us = (arb_e2e_band_t){
        fmax(fl, rest + scaled),
        fmax(fl, gaps * (1 - launch_band) + excess * fmin(1 - launch_band, issue_lo) + scaled),
        fmax(fl, gaps * (1 + launch_band) + excess * fmax(1 + launch_band, issue_hi) +
                     scaled * fmax(1, h200_peak_gbs / read))};
    rc = ARB_OK;
out:
    arb_table_free(&t);
    return rc;
}
