/* SPDX-License-Identifier: MIT */
/* `arbench model check --observations DIR` (model_observe.h). */
#include "costmodel/model_observe.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/points.h"
#include "costmodel/model_io.h"
#include "costmodel/model_predict.h"
#include "results/results.h"

static const char *const cols[] = {"schema", "id",     "what",  "quantity", "fabric_spec", "ranks",
                                   "impl",   "params", "mode",  "phase",    "env",         "bytes",
                                   "calls",  "measured", "measured_lo", "measured_hi", "unit", "model_input",
                                   "source", "rev",    "note",  NULL};
enum { O_SCHEMA, O_ID, O_WHAT, O_QTY, O_SPEC, O_RANKS, O_IMPL, O_PARAMS, O_MODE, O_PHASE, O_ENV, O_BYTES, O_CALLS,
       O_MEAS, O_LO, O_HI, O_UNIT, O_INPUT, O_SOURCE, O_REV, O_NOTE, O_N };

static int num(const char *s, double *v) { return *s && arb_parse_double_field(s, v) == 0 ? 0 : -1; }

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The tok/s band of the e2e row choice = impl[:params], mode, phase of `path`. */
static arb_status_t e2e_row(const char *path, const char *impl, const char *params, const char *mode,
                            const char *phase, double *v, double *lo, double *hi, char *err, size_t err_len)
{
    static const char *const need[] = {"choice", "mode", "phase", "tok_s", "tok_s_lo", "tok_s_hi", NULL};
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return ARB_ERR_INVALID;
    arb_status_t rc = ARB_ERR_INVALID;
    char choice[512];
    snprintf(choice, sizeof choice, "%s%s%s", impl, *params ? ":" : "", params);
    if (arb_table_require(&t, need, path, err, err_len))
        goto out;
    int c[6];
    for (int k = 0; k < 6; k++)
        c[k] = arb_table_col(&t, need[k]);
    for (size_t r = 0; r < t.nrows; r++) {
        char **f = t.rows[r];
        if (strcmp(f[c[0]], choice) || strcmp(f[c[1]], mode) || strcmp(f[c[2]], phase))
            continue;
        if (num(f[c[3]], v) || num(f[c[4]], lo) || num(f[c[5]], hi))
            ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: line %zu: tok_s, tok_s_lo, tok_s_hi must be numbers", path, r + 2);
        rc = ARB_OK;
        goto out;
    }
    ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "%s: no row with choice '%s', mode %s, phase %s", path, choice, mode, phase);
out:
    arb_table_free(&t);
    return rc;
}

/* One observation: prints its line; *verdict 1 pass, 0 fail, -1 not tested. */
static arb_status_t check_one(const arb_fit_t *fit, const arb_fabric_t *fit_fab, char **f, const char *path,
                              size_t line, double tol, FILE *out, int *verdict, char *err, size_t err_len)
{
    double meas, lo, hi, pv = NAN, plo = NAN, phi = NAN;
    const char *why = NULL;
    if (strcmp(f[O_SCHEMA], "observation-1"))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: schema '%s', expected observation-1", path, line, f[O_SCHEMA]);
    if (num(f[O_MEAS], &meas) || !(meas > 0))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: measured '%s', expected a number > 0", path, line, f[O_MEAS]);
    if (num(f[O_LO], &lo))
        lo = meas;
    if (num(f[O_HI], &hi))
        hi = meas;
    if (!*f[O_SOURCE])
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: observation %s has no source", path, line, f[O_ID]);
    if (!strcmp(f[O_QTY], "allreduce")) {
        double ranks, bytes, calls;
        if (num(f[O_RANKS], &ranks) || !(ranks >= 1) || num(f[O_BYTES], &bytes) || !(bytes > 0) ||
            num(f[O_CALLS], &calls) || !(calls >= 1))
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: an allreduce observation needs ranks >= 1, bytes > 0, calls >= 1", path, line);
        double scale = !strcmp(f[O_UNIT], "us") ? 1 : !strcmp(f[O_UNIT], "ms") ? 1e-3 : 0;
        if (!scale)
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: unit '%s', expected us or ms", path, line, f[O_UNIT]);
        arb_fabric_t fab;
        if (arb_fabric_read(f[O_SPEC], &fab, err, err_len))
            return ARB_ERR_INVALID;
        if ((int)ranks > fab.ngpus)
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: ranks %.0f, but %s has %d GPUs", path, line, ranks, f[O_SPEC], fab.ngpus);
        char key[256];
        arb_model_params_key(f[O_PARAMS], key, sizeof key);
        arb_variant_key_t vk = arb_model_family(f[O_IMPL], f[O_PARAMS]);
        arb_transport_t tr = strstr(f[O_ENV], "NCCL_P2P_DISABLE=1") ? ARB_TRANSPORT_SHM : ARB_TRANSPORT_P2P;
        const arb_fabric_t *on = strcmp(f[O_SPEC], fit_fab->path_file) ? &fab : fit_fab;
        arb_prediction_t p;
        if (vk.family == ARB_FAM_NONE)
            why = "not modeled (docs/model.md, Not modeled)";
        else if (!arb_model_predict_point(fit, fit_fab, on, (int)ranks, vk.family, f[O_IMPL], key, f[O_MODE], tr, bytes, &p))
            why = "no fitted variant of this impl, params and mode";
        else if (p.why_not)
            why = p.why_not;
        else
            pv = p.us * calls * scale, plo = p.lo_us * calls * scale, phi = p.hi_us * calls * scale;
    } else if (!strcmp(f[O_QTY], "e2e_tok_s")) {
        ARB_TRY(e2e_row(f[O_INPUT], f[O_IMPL], f[O_PARAMS], f[O_MODE], f[O_PHASE], &pv, &plo, &phi, err, err_len));
    } else {
        why = f[O_NOTE][0] ? f[O_NOTE] : "the model predicts no such quantity";
    }
    char m[64];
    snprintf(m, sizeof m, "%.4g (%.4g-%.4g) %s", meas, lo, hi, f[O_UNIT]);
    fprintf(out, "%-44s %-8s %-18s %-26s", f[O_ID], f[O_WHAT], f[O_QTY], m);
    if (why) {
        *verdict = -1;
        fprintf(out, "  not tested: %s\n", why);
        return ARB_OK;
    }
    const double e = (pv - meas) / meas;
    const int overlap = plo <= hi && phi >= lo;
    *verdict = fabs(e) <= tol;
    snprintf(m, sizeof m, "%.4g (%.4g-%.4g)", pv, plo, phi);
    fprintf(out, "  %-24s %+7.1f%%  band %-8s  %s\n", m, 100 * e, overlap ? "overlaps" : "misses",
            *verdict ? "pass" : "FAIL");
    return ARB_OK;
}

arb_status_t arb_model_check_observations(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const char *dir,
                                          double tol, FILE *out, arb_observe_tally_t *tally, char *err,
                                          size_t err_len)
{
    *tally = (arb_observe_tally_t){0};
    DIR *d = opendir(dir);
    if (!d)
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--observations %s: cannot open the directory (expected model/observations/)", dir);
    char **names = NULL;
    size_t n = 0;
    arb_status_t rc = ARB_OK;
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".csv"))
            continue;
        char **nn = realloc(names, (n + 1) * sizeof *names);
        if (!nn || !(nn[n] = malloc(strlen(dir) + l + 2))) {
            names = nn ? nn : names;
            rc = ARB_ERR_SYSTEM;
            ARB_WHY(err, err_len, "out of memory");
            break;
        }
        names = nn;
        sprintf(names[n++], "%s/%s", dir, e->d_name);
    }
    closedir(d);
    if (rc == ARB_OK && !n)
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "--observations %s: no *.csv files", dir);
    if (rc == ARB_OK) {
        qsort(names, n, sizeof *names, by_name);
        fprintf(out, "%-44s %-8s %-18s %-26s  %-24s %8s  %-13s  %s\n", "observation", "what", "quantity",
                "measured (range) unit", "model (band)", "error", "band", "verdict");
    }
    for (size_t i = 0; rc == ARB_OK && i < n; i++) {
        arb_table_t t;
        if (arb_table_read(names[i], &t, err, err_len)) {
            rc = ARB_ERR_INVALID;
            break;
        }
        if (arb_table_require(&t, cols, names[i], err, err_len))
            rc = ARB_ERR_INVALID;
        int c[O_N];
        for (int k = 0; k < O_N; k++)
            c[k] = arb_table_col(&t, cols[k]);
        for (size_t r = 0; rc == ARB_OK && r < t.nrows; r++) {
            char *f[O_N];
            for (int k = 0; k < O_N; k++)
                f[k] = t.rows[r][c[k]];
            int v;
            rc = check_one(fit, fit_fab, f, names[i], r + 2, tol, out, &v, err, err_len);
            if (rc == ARB_OK)
                *(v > 0 ? &tally->pass : v == 0 ? &tally->fail : &tally->untested) += 1;
        }
        arb_table_free(&t);
    }
    if (rc == ARB_OK)
        fprintf(out, "model check --observations %s: %d pass, %d FAIL (central value beyond %.0f%%), %d not tested\n", dir,
                tally->pass, tally->fail, 100 * tol, tally->untested);
out:
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}
