/* SPDX-License-Identifier: MIT */
/*
 * arb-engine-plotdata ENGINE.csv... OUTDIR: turns `arbench engine` results into gnuplot
 * input for plots/engine_render.sh (docs/engine-e2e.md, "Plots"). Per mode it writes
 *   OUTDIR/data/engine_steps_MODE.dat  one row per (phase, choice): label, compute_us,
 *                                      allreduce_us (median step = compute + all-reduce)
 *   OUTDIR/data/engine_spec_MODE.gp    the tok/s-vs-acceptance manifest: series files,
 *                                      plain decode rates, break-even marks
 *   OUTDIR/data/engine_spec_MODE__cN.dat  model curve of series N (choice, k): p, tok/s
 *                                      from its measured draft and verify medians
 *   OUTDIR/data/engine_spec_MODE__mN.dat  the measured points of series N: p, tok/s
 * Rows are read by column name (docs/engine-e2e.md, "Figures"); the choice is the
 * `choice` column where there is one, else `impl[:params]`. Decode/verify rows without
 * a split (neither compute_only_us nor allreduce_us: the compute-only configuration's
 * own rows) are not drawn. A later row for the same (mode, phase, choice[, k, p])
 * replaces an earlier one. A malformed file is refused naming file, line and column.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/points.h"
#include "results/results.h"
#include "stats/spec.h"

#define MAX_ROWS 4096

typedef struct row {
    const char *mode, *phase, *choice;
    unsigned k;
    double p, step_us, compute_us, allreduce_us, tok_s, draft_us, verify_us;
} row_t;

static row_t rows[MAX_ROWS];
static size_t nrows;

static int fail(const char *file, size_t line, const char *col, const char *want)
{
    fprintf(stderr, "arb-engine-plotdata: %s: line %zu: bad %s, expected %s\n", file, line, col, want);
    return -1;
}

/* The number in column `name` of row r; `need` 0 allows an empty field (NAN). */
static int num(const arb_table_t *t, size_t r, const char *name, int need, double *out, const char *file)
{
    int c = arb_table_col(t, name);
    if (c < 0) {
        fprintf(stderr, "arb-engine-plotdata: %s: missing column '%s' (is it an arbench engine results CSV? see docs/engine-e2e.md)\n", file, name);
        return -1;
    }
    const char *s = t->rows[r][c];
    *out = NAN;
    if (!*s && !need)
        return 0;
    if (arb_parse_double_field(s, out) || *out < 0)
        return fail(file, r + 2, name, "a finite number >= 0");
    return 0;
}

/* `file` may be "PATH=LABEL": every row of PATH is then drawn under LABEL (a short name
 * for a legend; replayed modeled tables otherwise show their whole parameter string). */
static int load(const char *arg, arb_table_t *t)
{
    char err[1024];
    static char paths[64][4096];
    static int npaths;
    const char *label = NULL, *file = arg;
    const char *eq = strstr(arg, ".csv=");
    if (eq && npaths < 64) {
        size_t n = (size_t)(eq - arg) + 4;
        if (n >= sizeof paths[0]) {
            fprintf(stderr, "arb-engine-plotdata: %s: path too long\n", arg);
            return -1;
        }
        memcpy(paths[npaths], arg, n);
        paths[npaths][n] = '\0';
        file = paths[npaths++];
        label = eq + 5;
        if (!*label) {
            fprintf(stderr, "arb-engine-plotdata: %s: empty label after '=' (expected PATH.csv=LABEL)\n", arg);
            return -1;
        }
    }
    if (arb_table_read(file, t, err, sizeof err)) {
        fprintf(stderr, "arb-engine-plotdata: %s\n", err);
        return -1;
    }
    static const char *const required[] = {"mode", "phase", NULL};
    if (arb_table_require(t, required, file, err, sizeof err)) {
        fprintf(stderr, "arb-engine-plotdata: %s\n", err);
        return -1;
    }
    int c_rate = arb_table_col(t, "accept_rate");
    int c_choice = arb_table_col(t, "choice"), c_impl = arb_table_col(t, "impl"), c_params = arb_table_col(t, "params");
    if (c_choice < 0 && c_impl < 0) {
        fprintf(stderr, "arb-engine-plotdata: %s: missing column 'choice' or 'impl' (is it an arbench engine results CSV? see docs/engine-e2e.md)\n", file);
        return -1;
    }
    for (size_t r = 0; r < t->nrows; r++) {
        row_t w = {.mode = t->rows[r][arb_table_col(t, "mode")], .phase = t->rows[r][arb_table_col(t, "phase")]};
        if (label) {
            w.choice = label;
        } else if (c_choice >= 0) {
            w.choice = t->rows[r][c_choice];
        } else { /* impl[:params], kept in a pool that lives as long as the rows */
            static char pool[1 << 20];
            static size_t used;
            const char *impl = t->rows[r][c_impl], *params = c_params >= 0 ? t->rows[r][c_params] : "";
            int n = snprintf(pool + used, sizeof pool - used, "%s%s%s", impl, *params ? ":" : "", params);
            if (n < 0 || used + (size_t)n + 1 >= sizeof pool) {
                fprintf(stderr, "arb-engine-plotdata: %s: labels longer than 1 MiB in all\n", file);
                return -1;
            }
            w.choice = pool + used;
            used += (size_t)n + 1;
        }
        int is_step = !strcmp(w.phase, "decode") || !strcmp(w.phase, "verify"), is_spec = !strcmp(w.phase, "spec");
        if (!strcmp(w.phase, "ab-decode") || !strcmp(w.phase, "ab-verify"))
            continue; /* the interleaved A/B rows: their configurations' own rows are drawn */
        if (!is_step && !is_spec)
            return fail(file, r + 2, "phase", "decode, verify, spec, ab-decode or ab-verify");
        if (strcmp(w.mode, "graph") && strcmp(w.mode, "eager"))
            return fail(file, r + 2, "mode", "graph or eager");
        if (!*w.choice)
            return fail(file, r + 2, "choice", "a non-empty label");
        if (is_step && (num(t, r, "median_us", 1, &w.step_us, file) || num(t, r, "compute_only_us", 0, &w.compute_us, file) ||
                        num(t, r, "allreduce_us", 0, &w.allreduce_us, file)))
            return -1;
        if (is_step && isnan(w.compute_us) && isnan(w.allreduce_us))
            continue; /* no split: nothing to stack */
        if (is_spec && c_rate >= 0 && !strcmp(t->rows[r][c_rate], "greedy"))
            continue; /* greedy acceptance has no rate to plot against */
        double k = NAN;
        /* k: the spec_k column, or the engine's own rows' tokens (T = k + 1) */
        int has_k = arb_table_col(t, "spec_k") >= 0;
        if (is_spec && (num(t, r, has_k ? "spec_k" : "tokens", 1, &k, file) || num(t, r, "accept_rate", 1, &w.p, file) ||
                        num(t, r, "tok_s", 1, &w.tok_s, file) || num(t, r, "draft_us", 1, &w.draft_us, file) ||
                        num(t, r, "verify_us", 1, &w.verify_us, file)))
            return -1;
        if (is_spec && !has_k)
            k -= 1;
        if (is_spec && (k < 1 || k > ARB_SPEC_MAX_K || k != floor(k)))
            return fail(file, r + 2, "spec_k", "an integer from 1 to 16");
        if (is_spec && w.p > 1)
            return fail(file, r + 2, "accept_rate", "a probability from 0 to 1");
        w.k = is_spec ? (unsigned)k : 0;
        /* the split: whichever part is missing is the rest of the step */
        if (is_step && isnan(w.allreduce_us))
            w.allreduce_us = w.step_us - w.compute_us;
        if (is_step && isnan(w.compute_us))
            w.compute_us = w.step_us - w.allreduce_us;
        if (is_step && w.allreduce_us < 0) /* noise: the compute-only replay was slower than the step */
            w.allreduce_us = 0, w.compute_us = w.step_us;
        if (is_step && w.compute_us < 0)
            return fail(file, r + 2, "allreduce_us", "at most median_us");
        size_t i = 0;
        for (; i < nrows; i++)
            if (!strcmp(rows[i].mode, w.mode) && !strcmp(rows[i].phase, w.phase) && !strcmp(rows[i].choice, w.choice) &&
                rows[i].k == w.k && (!is_spec || rows[i].p == w.p))
                break;
        if (i == MAX_ROWS) {
            fprintf(stderr, "arb-engine-plotdata: %s: more than %d distinct rows\n", file, MAX_ROWS);
            return -1;
        }
        rows[i] = w;
        nrows += i == nrows;
    }
    return 0;
}

/* Text for a gnuplot double-quoted string. */
static void gp_text(char *out, size_t len, const char *s)
{
    size_t o = 0;
    for (; *s && o + 1 < len; s++)
        out[o++] = *s == '"' || *s == '\\' || *s == '\n' || *s == '\r' ? '\'' : *s;
    out[o] = '\0';
}

static FILE *create(const char *dir, const char *name)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        fprintf(stderr, "arb-engine-plotdata: %s: cannot create (%s)\n", path, strerror(errno));
    return f;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int write_steps(const char *dir, const char *mode)
{
    char name[256], t[256];
    snprintf(name, sizeof name, "engine_steps_%s.gp", mode);
    FILE *m = create(dir, name);
    if (!m)
        return -1;
    fprintf(m, "# generated by arb-engine-plotdata; see docs/engine-e2e.md\n"
               "title_text = \"median step time: compute and all-reduce, %s mode\"\ndatafile = \"engine_steps_%s.dat\"\n", mode, mode);
    if (fclose(m))
        return -1;
    snprintf(name, sizeof name, "engine_steps_%s.dat", mode);
    FILE *f = create(dir, name);
    if (!f)
        return -1;
    fprintf(f, "# label compute_us allreduce_us\n");
    size_t n = 0;
    static const char *const phases[] = {"decode", "verify"};
    for (int ph = 0; ph < 2; ph++)
        for (size_t i = 0; i < nrows; i++)
            if (!strcmp(rows[i].mode, mode) && !strcmp(rows[i].phase, phases[ph])) {
                gp_text(t, sizeof t, rows[i].choice);
                fprintf(f, "\"%s %s\" %.6g %.6g\n", phases[ph], t, rows[i].compute_us, rows[i].allreduce_us);
                n++;
            }
    if (fclose(f))
        return -1;
    return n ? 0 : 1;
}

/* Plain decode tok/s of a choice in a mode: its decode row. NAN when absent. */
static double plain_step(const char *mode, const char *choice)
{
    for (size_t i = 0; i < nrows; i++)
        if (!strcmp(rows[i].mode, mode) && !strcmp(rows[i].phase, "decode") && !strcmp(rows[i].choice, choice))
            return rows[i].step_us;
    return NAN;
}

static int write_spec(const char *dir, const char *mode)
{
    char name[256], t[256];
    snprintf(name, sizeof name, "engine_spec_%s.gp", mode);
    FILE *m = create(dir, name);
    if (!m)
        return -1;
    fprintf(m, "# generated by arb-engine-plotdata; see docs/engine-e2e.md\ntitle_text = \"tok/s against acceptance rate, %s mode\"\n", mode);
    size_t nser = 0;
    int bad = 0;
    for (size_t i = 0; i < nrows && !bad; i++) {
        if (strcmp(rows[i].mode, mode) || strcmp(rows[i].phase, "spec"))
            continue;
        int seen = 0; /* one series per (choice, k), at its first row */
        for (size_t j = 0; j < i && !seen; j++)
            seen = !strcmp(rows[j].mode, mode) && !strcmp(rows[j].phase, "spec") && !strcmp(rows[j].choice, rows[i].choice) && rows[j].k == rows[i].k;
        if (seen)
            continue;
        double d[MAX_ROWS], v[MAX_ROWS];
        size_t n = 0;
        char mname[300], cname[300];
        snprintf(mname, sizeof mname, "engine_spec_%s__m%zu.dat", mode, nser);
        snprintf(cname, sizeof cname, "engine_spec_%s__c%zu.dat", mode, nser);
        FILE *mf = create(dir, mname), *cf = create(dir, cname);
        if (!mf || !cf) {
            if (mf)
                fclose(mf);
            if (cf)
                fclose(cf);
            bad = 1;
            break;
        }
        fprintf(mf, "# accept_rate tok_s\n");
        for (size_t j = i; j < nrows; j++)
            if (!strcmp(rows[j].mode, mode) && !strcmp(rows[j].phase, "spec") && !strcmp(rows[j].choice, rows[i].choice) && rows[j].k == rows[i].k) {
                fprintf(mf, "%.6g %.6g\n", rows[j].p, rows[j].tok_s);
                d[n] = rows[j].draft_us, v[n] = rows[j].verify_us, n++;
            }
        qsort(d, n, sizeof *d, cmp_double);
        qsort(v, n, sizeof *v, cmp_double);
        double draft = n % 2 ? d[n / 2] : 0.5 * (d[n / 2 - 1] + d[n / 2]);
        double verify = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
        unsigned k = rows[i].k;
        fprintf(cf, "# accept_rate tok_s_model\n");
        for (int s = 0; s <= 100; s++)
            fprintf(cf, "%.2f %.6g\n", s / 100.0, arb_spec_tok_s(s / 100.0, k, draft / k, verify));
        bad |= fclose(mf) != 0;
        bad |= fclose(cf) != 0;
        double plain_us = plain_step(mode, rows[i].choice), be = NAN;
        char why[256];
        if (isfinite(plain_us) && plain_us > 0 && verify > 0 &&
            arb_spec_break_even(k, draft / k, verify, plain_us, &be, why, sizeof why) != ARB_OK)
            be = NAN;
        gp_text(t, sizeof t, rows[i].choice);
        int first_of_choice = 1; /* plain decode is drawn once per choice */
        for (size_t j = 0; j < i && first_of_choice; j++)
            first_of_choice = strcmp(rows[j].mode, mode) || strcmp(rows[j].phase, "spec") || strcmp(rows[j].choice, rows[i].choice);
        nser++;
        fprintf(m, "plain_draw_%zu = %d\n", nser, first_of_choice && isfinite(plain_us));
        /* plain_N -1: no decode row for the choice; be_N -1 unknown, 2 never breaks even */
        fprintf(m, "curve_%zu = \"%s\"\npoints_%zu = \"%s\"\nchoice_%zu = \"%s\"\ntitle_%zu = \"%s k=%u\"\nplain_%zu = %.6g\nbe_%zu = %.6g\n",
                nser, cname, nser, mname, nser, t, nser, t, k, nser, isfinite(plain_us) ? 1e6 / plain_us : -1.0, nser,
                isnan(be) ? -1.0 : isinf(be) ? 2.0 : be);
    }
    fprintf(m, "nseries = %zu\n", nser);
    bad |= fclose(m) != 0;
    return bad ? -1 : nser ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: arb-engine-plotdata ENGINE.csv... OUTDIR (expected at least one engine results file, then the output directory)\n");
        return 2;
    }
    arb_table_t tables[64];
    int nt = 0;
    for (int a = 1; a < argc - 1; a++) {
        if (nt == 64) {
            fprintf(stderr, "arb-engine-plotdata: more than 64 input files\n");
            return 2;
        }
        if (load(argv[a], &tables[nt++]))
            return 2;
    }
    char dir[8192];
    snprintf(dir, sizeof dir, "%s/data", argv[argc - 1]);
    if ((mkdir(argv[argc - 1], 0777) && errno != EEXIST) || (mkdir(dir, 0777) && errno != EEXIST)) {
        fprintf(stderr, "arb-engine-plotdata: %s: cannot create (%s)\n", dir, strerror(errno));
        return 2;
    }
    int figures = 0;
    for (size_t i = 0; i < nrows; i++) {
        int first = 1; /* each mode once */
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(rows[j].mode, rows[i].mode) != 0;
        if (!first)
            continue;
        int s = write_steps(dir, rows[i].mode), p = write_spec(dir, rows[i].mode);
        if (s < 0 || p < 0)
            return 1;
        figures += (s == 0) + (p == 0);
        if (s == 1) { /* no decode/verify rows: no breakdown file */
            char path[8448];
            snprintf(path, sizeof path, "%s/engine_steps_%s.dat", dir, rows[i].mode);
            remove(path);
            snprintf(path, sizeof path, "%s/engine_steps_%s.gp", dir, rows[i].mode);
            remove(path);
        }
        if (p == 1) {
            char path[8448];
            snprintf(path, sizeof path, "%s/engine_spec_%s.gp", dir, rows[i].mode);
            remove(path);
        }
    }
    for (int i = 0; i < nt; i++)
        arb_table_free(&tables[i]);
    if (!figures) {
        fprintf(stderr, "arb-engine-plotdata: no decode, verify or spec rows in the input\n");
        return 2;
    }
    return 0;
}
