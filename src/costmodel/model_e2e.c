/* SPDX-License-Identifier: MIT */
/* arbench model e2e: target tok/s from modeled-plugin engine runs (model_e2e.h, docs/model.md). */
#include "costmodel/model_e2e.h"
#include "costmodel/model_e2e_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/points.h"
#include "results/results.h"

/* Engine columns the rule needs (docs/engine.md); an engine-1 file has all of them. */
static const char *const engine_required[] = {"impl", "params", "mode", "phase", "tokens", "median_us",
                                              "compute_only_us", "read_gbs", "hbm_floor_us", "layers",
                                              "draft_us", "verify_us", "accept_rate", NULL};
static const char *const pred_required[] = {"impl", "params", "mode", "bytes", "median_us", "band_lo_us",
                                            "band_hi_us", "source", NULL};

typedef struct eng_row {
    char **f;
    const char *path;
    size_t line;
} eng_row_t;

/* The columns of one engine table, by index. */
enum { C_IMPL, C_PARAMS, C_MODE, C_PHASE, C_TOKENS, C_MEDIAN, C_COMPUTE, C_READ, C_FLOOR, C_LAYERS, C_DRAFT,
       C_VERIFY, C_ACCEPT, C_N };

typedef struct choice_rows {
    char choice[256], impl[64], items[192], mode[16];
    const int *col;
    eng_row_t decode, verify, spec; /* f == NULL: absent */
} choice_rows_t;

static int num(const char *s, double *out) { return *s && arb_parse_double_field(s, out) == 0 ? 0 : -1; }

/* `impl=NAME` and `params=...` of the modeled plugin's params (describe appends ",timer=..."). */
static int parse_modeled(const char *p, char *impl, size_t il, char *items, size_t pl)
{
    const char *i = strncmp(p, "impl=", 5) == 0 ? p : strstr(p, ",impl=");
    const char *q = strncmp(p, "params=", 7) == 0 ? p : strstr(p, ",params=");
    if (!i)
        return -1;
    i += (*i == ',') + 5;
    snprintf(impl, il, "%.*s", (int)strcspn(i, ","), i);
    items[0] = 0;
    if (q) {
        q += (*q == ',') + 7;
        const char *t = strstr(q, ",timer=");
        snprintf(items, pl, "%.*s", (int)(t ? (size_t)(t - q) : strlen(q)), q);
    }
    return impl[0] ? 0 : -1;
}

/* Every comma-separated item of `items` is an item of `params`. */
static int params_match(const char *params, const char *items)
{
    const char *s = items;
    while (*s) {
        size_t n = strcspn(s, ",;");
        int found = 0;
        for (const char *p = params; *p;) {
            size_t m = strcspn(p, ",");
            if (m == n && strncmp(p, s, n) == 0)
                found = 1;
            p += m + (p[m] == ',');
        }
        if (!found)
            return 0;
        s += n + (s[n] == ',' || s[n] == ';');
    }
    return 1;
}

/* Band ratios lo/median and hi/median of the predictions for (impl, items, mode) at `bytes`,
 * interpolated linearly in log(bytes) between the table's two nearest sizes. */
static arb_status_t band_ratios(const arb_table_t *t, const char *path, const choice_rows_t *c, double bytes,
                                double *rl, double *rh, char *err, size_t err_len)
{
    int col[8];
    for (int k = 0; k < 8; k++)
        col[k] = arb_table_col(t, pred_required[k]);
    double below = -1, above = -1, lb[2] = {0}, la[2] = {0};
    for (size_t r = 0; r < t->nrows; r++) {
        char **f = t->rows[r];
        double b, m, lo, hi;
        if (strcmp(f[col[7]], "model") || strcmp(f[col[0]], c->impl) || strcmp(f[col[2]], c->mode) ||
            !params_match(f[col[1]], c->items) || num(f[col[3]], &b) || num(f[col[4]], &m) ||
            num(f[col[5]], &lo) || num(f[col[6]], &hi) || !(m > 0))
            continue;
        if (b <= bytes && b >= below) {
            below = b, lb[0] = lo / m, lb[1] = hi / m;
        }
        if (b >= bytes && (above < 0 || b <= above)) {
            above = b, la[0] = lo / m, la[1] = hi / m;
        }
    }
    if (below < 0 || above < 0)
        ARB_RAISE(ARB_ERR_INVALID, err, err_len,
                  "%s: no predicted rows (source=model, with band_lo_us/band_hi_us) of impl=%s params %s mode %s on both sides of %.0f bytes",
                  path, c->impl, c->items[0] ? c->items : "(any)", c->mode, bytes);
    double w = above > below ? (log(bytes) - log(below)) / (log(above) - log(below)) : 0;
    *rl = lb[0] + w * (la[0] - lb[0]);
    *rh = lb[1] + w * (la[1] - lb[1]);
    return ARB_OK;
}

double arb_e2e_break_even(int k, double ratio)
{
    if (ratio <= 1)
        return 0;
    if (ratio > k + 1)
        return INFINITY;
    double lo = 0, hi = 1;
    while (hi - lo > 1e-15) {
        double p = 0.5 * (lo + hi), s = 0, pi = 1;
        for (int i = 0; i <= k; i++, pi *= p)
            s += pi;
        if (s < ratio)
            lo = p;
        else
            hi = p;
    }
    return 0.5 * (lo + hi);
}

/* compute_only_us of (mode, phase, tokens) from whichever file's run replayed noop. */
static int compute_ref(const eng_row_t *all, size_t n, const int *const *cols, const char *mode, const char *phase,
                       const char *tokens, double *out)
{
    for (size_t i = 0; i < n; i++) {
        const int *c = cols[i];
        char **f = all[i].f;
        if (!strcmp(f[c[C_MODE]], mode) && !strcmp(f[c[C_PHASE]], phase) && !strcmp(f[c[C_TOKENS]], tokens) &&
            num(f[c[C_COMPUTE]], out) == 0 && *out > 0)
            return 0;
    }
    return -1;
}

/* The compute part on the H200 scaled to the target, with the band of docs/model.md. */
static arb_e2e_band_t scale_compute(double c_us, double floor_us, double read_gbs, const arb_e2e_opts_t *o)
{
    double r = read_gbs / o->target_read_gbs, r_peak = o->h200_peak_gbs / o->target_read_gbs;
    double fl = floor_us > 0 && floor_us < c_us ? floor_us : c_us;
    arb_e2e_band_t b = {c_us * r, fl * r + (c_us - fl), c_us * (r_peak > r ? r_peak : r)};
    if (b.lo > b.v)
        b.lo = b.v;
    return b;
}

/* The NCCL choice's all-reduce minus each row's (same mode and phase), and the all-reduce
 * share: figures the compute scaling does not enter. The saving's band takes the two bands'
 * opposite ends (their errors need not move together). */
static void fill_savings(arb_e2e_result_t *res)
{
    for (size_t i = 0; i < res->nrows; i++) {
        arb_e2e_row_t *r = &res->rows[i];
        const arb_e2e_band_t a = r->allreduce_us, c = r->compute_us;
        r->allreduce_share = (arb_e2e_band_t){a.v / (a.v + c.v), a.lo / (a.lo + c.hi), a.hi / (a.hi + c.lo)};
        const arb_e2e_row_t *n = NULL;
        for (size_t j = 0; j < res->nrows && !n; j++)
            if (!strncmp(res->rows[j].choice, "nccl:", 5) && !strcmp(res->rows[j].mode, r->mode) &&
                !strcmp(res->rows[j].phase, r->phase))
                n = &res->rows[j];
        if (n == r) { /* NCCL against itself */
            r->saving_us = (arb_e2e_band_t){0, 0, 0};
            if (!isnan(r->verify_allreduce_us.v))
                r->verify_saving_us = r->saving_us;
            continue;
        }
        if (!n)
            continue;
        r->saving_us = (arb_e2e_band_t){n->allreduce_us.v - a.v, n->allreduce_us.lo - a.hi, n->allreduce_us.hi - a.lo};
        const arb_e2e_band_t nv = n->verify_allreduce_us, v = r->verify_allreduce_us;
        if (!isnan(v.v) && !isnan(nv.v))
            r->verify_saving_us = (arb_e2e_band_t){nv.v - v.v, nv.lo - v.hi, nv.hi - v.lo};
    }
}

/* Fabric label, ranks and command of the prediction table (its first source=model row). */
static arb_status_t pred_inputs(const arb_table_t *t, const char *path, arb_e2e_result_t *res, char *err, size_t err_len)
{
    const int fab = arb_table_col(t, "fabric"), rk = arb_table_col(t, "ranks"), av = arb_table_col(t, "argv"),
              src = arb_table_col(t, "source");
    double ranks = 0;
    for (size_t r = 0; fab >= 0 && rk >= 0 && r < t->nrows; r++) {
        char **f = t->rows[r];
        if (strcmp(f[src], "model") || !*f[fab] || num(f[rk], &ranks) || !(ranks >= 1))
            continue;
        snprintf(res->fabric, sizeof res->fabric, "%s", f[fab]);
        snprintf(res->pred_argv, sizeof res->pred_argv, "%s", av >= 0 ? t->rows[r][av] : "");
        snprintf(res->pred_csv, sizeof res->pred_csv, "%s", path);
        res->ranks = (int)ranks;
        return ARB_OK;
    }
    ARB_RAISE(ARB_ERR_INVALID, err, err_len,
              "%s: no source=model row with a fabric label and ranks (columns fabric, ranks: the rows carry what was predicted)", path);
}

static arb_status_t predict_choice(const choice_rows_t *c, const eng_row_t *all, size_t n, const int *const *cols,
                                   const arb_table_t *pred, const char *pred_path, const arb_e2e_opts_t *o,
                                   arb_e2e_result_t *res, char *err, size_t err_len)
{
    const int *k = c->col;
    char **d = c->decode.f;
    double med, cmp, rd, fl, layers, rl, rh;
    if (num(d[k[C_MEDIAN]], &med) || num(d[k[C_READ]], &rd) || !(rd > 0) || num(d[k[C_LAYERS]], &layers) ||
        !(layers >= 1))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: decode row needs numeric median_us, read_gbs and layers",
                  c->decode.path, c->decode.line);
    if (num(d[k[C_FLOOR]], &fl))
        fl = 0;
    if (compute_ref(all, n, cols, c->mode, "decode", d[k[C_TOKENS]], &cmp))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len,
                  "no %s decode row with compute_only_us in the inputs: run the first engine run without --no-noop-replay",
                  c->mode);
    ARB_TRY(band_ratios(pred, pred_path, c, 1.0 * o->hidden * 2, &rl, &rh, err, err_len));
    if (res->nrows + 2 > ARB_E2E_MAX_ROWS)
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "more than %d predicted rows", ARB_E2E_MAX_ROWS);
    double ar = med > cmp ? med - cmp : 0; /* noise can put a tiny replay under the compute-only median */
    arb_e2e_row_t *row = &res->rows[res->nrows++];
    memset(row, 0, sizeof *row);
    snprintf(row->choice, sizeof row->choice, "%s", c->choice);
    snprintf(row->mode, sizeof row->mode, "%s", c->mode);
    snprintf(row->phase, sizeof row->phase, "decode");
    row->read_gbs_h200 = rd;
    row->compute_h200_us = cmp;
    row->compute_us = scale_compute(cmp, fl, rd, o);
    arb_e2e_kernel_compute_t kd = {0};
    double tok_d;
    if (o->kernels_csv) { /* compute by kernel family instead of one bandwidth ratio */
        if (num(d[k[C_TOKENS]], &tok_d) || !(tok_d >= 1))
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: decode row needs numeric tokens", c->decode.path, c->decode.line);
        ARB_TRY(arb_e2e_kernel_compute(o->kernels_csv, (unsigned)tok_d, o->target_read_gbs, o->h200_peak_gbs,
                                       o->launch_band, o->issue_lo > 0 ? o->issue_lo : 1, o->issue_hi > 0 ? o->issue_hi : 1,
                                       &kd, err, err_len));
        row->compute_us = kd.target_us;
    }
    if (o->compute_floor_x > 0) { /* the scenario: x times the step's bytes over the target's bandwidth */
        if (!(fl > 0))
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: --compute-at-floor needs the decode row's hbm_floor_us",
                      c->decode.path, c->decode.line);
        const double x = o->compute_floor_x * fl * rd / o->target_read_gbs;
        row->compute_us = (arb_e2e_band_t){x, x, x};
    }
    row->allreduce_us = (arb_e2e_band_t){ar, ar * rl, ar * rh};
    row->step_us = (arb_e2e_band_t){row->compute_us.v + ar, row->compute_us.lo + ar * rl, row->compute_us.hi + ar * rh};
    row->tok_s = (arb_e2e_band_t){1e6 / row->step_us.v, 1e6 / row->step_us.hi, 1e6 / row->step_us.lo};
    row->break_even = (arb_e2e_band_t){NAN, NAN, NAN};
    row->verify_allreduce_us = row->saving_us = row->verify_saving_us = (arb_e2e_band_t){NAN, NAN, NAN};
    snprintf(row->engine_csv, sizeof row->engine_csv, "%s", c->decode.path);
    if (!c->spec.f)
        return ARB_OK;
    const arb_e2e_row_t dec = *row;
    char **s = c->spec.f, **v = c->verify.f;
    double draft, p, vmed, vcmp, vfl, vtok, vrl, vrh;
    if (!v || num(s[k[C_DRAFT]], &draft) || num(s[k[C_ACCEPT]], &p) || !(p >= 0 && p <= 1) ||
        num(v[k[C_MEDIAN]], &vmed) || num(v[k[C_TOKENS]], &vtok) || !(vtok >= 2))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len,
                  "%s: line %zu: spec row needs numeric draft_us and accept_rate, and a verify row of the same choice",
                  c->spec.path, c->spec.line);
    if (num(v[k[C_FLOOR]], &vfl))
        vfl = 0;
    if (compute_ref(all, n, cols, c->mode, "verify", v[k[C_TOKENS]], &vcmp))
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "no %s verify row of %s tokens with compute_only_us in the inputs",
                  c->mode, v[k[C_TOKENS]]);
    ARB_TRY(band_ratios(pred, pred_path, c, vtok * o->hidden * 2, &vrl, &vrh, err, err_len));
    int kk = (int)vtok - 1;
    /* The draft is one layer, 2 calls per step at T = 1: k steps of decode's per-call time. */
    double dar = kk * ar / layers, dcmp = draft > dar ? draft - dar : 0;
    double var = vmed > vcmp ? vmed - vcmp : 0;
    arb_e2e_band_t vc = scale_compute(vcmp, vfl, rd, o);
    if (o->compute_floor_x > 0) {
        if (!(vfl > 0))
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "%s: line %zu: --compute-at-floor needs the verify row's hbm_floor_us",
                      c->verify.path, c->verify.line);
        const double x = o->compute_floor_x * vfl * rd / o->target_read_gbs;
        vc = (arb_e2e_band_t){x, x, x};
    } else if (o->kernels_csv) {
        arb_e2e_kernel_compute_t kv;
        ARB_TRY(arb_e2e_kernel_compute(o->kernels_csv, (unsigned)vtok, o->target_read_gbs, o->h200_peak_gbs,
                                       o->launch_band, o->issue_lo > 0 ? o->issue_lo : 1, o->issue_hi > 0 ? o->issue_hi : 1,
                                       &kv, err, err_len));
        vc = kv.target_us;
    }
    /* The draft has no floor of its own: decode's relative compute band. */
    const double dref = o->kernels_csv && !(o->compute_floor_x > 0) ? kd.h200_step_us : cmp;
    arb_e2e_band_t dc = {dcmp * dec.compute_us.v / dref, dcmp * dec.compute_us.lo / dref, dcmp * dec.compute_us.hi / dref};
    row = &res->rows[res->nrows++];
    *row = dec;
    snprintf(row->phase, sizeof row->phase, "spec");
    row->spec_k = kk;
    row->accept_rate = p;
    row->compute_h200_us = dcmp + vcmp;
    row->compute_us = (arb_e2e_band_t){dc.v + vc.v, dc.lo + vc.lo, dc.hi + vc.hi};
    row->allreduce_us = (arb_e2e_band_t){dar + var, dar * rl + var * vrl, dar * rh + var * vrh};
    row->verify_allreduce_us = (arb_e2e_band_t){var, var * vrl, var * vrh};
    row->step_us = (arb_e2e_band_t){row->compute_us.v + row->allreduce_us.v, row->compute_us.lo + row->allreduce_us.lo,
                                    row->compute_us.hi + row->allreduce_us.hi};
    double toks = 0, pi = 1;
    for (int i = 0; i <= kk; i++, pi *= p)
        toks += pi;
    row->tok_s = (arb_e2e_band_t){toks * 1e6 / row->step_us.v, toks * 1e6 / row->step_us.hi, toks * 1e6 / row->step_us.lo};
    /* Corners move compute and all-reduce of both steps together (one scaling, one fabric). */
    double b0 = arb_e2e_break_even(kk, row->step_us.v / dec.step_us.v);
    double b1 = arb_e2e_break_even(kk, row->step_us.lo / dec.step_us.lo);
    double b2 = arb_e2e_break_even(kk, row->step_us.hi / dec.step_us.hi);
    row->break_even = (arb_e2e_band_t){b0, fmin(b0, fmin(b1, b2)), fmax(b0, fmax(b1, b2))};
    return ARB_OK;
}

arb_status_t arb_e2e_predict(const char *const *engine_csvs, size_t nfiles, const char *pred_csv,
                             const arb_e2e_opts_t *o, arb_e2e_result_t *res, char *err, size_t err_len)
{
    arb_status_t rc = ARB_ERR_INVALID;
    arb_table_t pred = {0}, *tabs = calloc(nfiles ? nfiles : 1, sizeof *tabs);
    int(*cols)[C_N] = calloc(nfiles ? nfiles : 1, sizeof *cols);
    size_t nall = 0, nch = 0, cap = 0;
    eng_row_t *all = NULL;
    const int **rowcols = NULL;
    choice_rows_t *ch = NULL;
    res->nrows = 0;
    if (!tabs || !cols)
        ARB_RAISE_GOTO(rc, ARB_ERR_SYSTEM, out, err, err_len, "out of memory");
    if (!(o->target_read_gbs > 0) || !(o->h200_peak_gbs > 0) || o->hidden < 1)
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "target read bandwidth, H200 peak and hidden must be positive");
    if (arb_table_read(pred_csv, &pred, err, err_len) || arb_table_require(&pred, pred_required, pred_csv, err, err_len) ||
        pred_inputs(&pred, pred_csv, res, err, err_len))
        goto out;
    res->target_read_gbs = o->target_read_gbs, res->h200_peak_gbs = o->h200_peak_gbs;
    res->compute_floor_x = o->compute_floor_x;
    snprintf(res->kernels_csv, sizeof res->kernels_csv, "%s", o->kernels_csv ? o->kernels_csv : "");
    snprintf(res->gpu_spec, sizeof res->gpu_spec, "%s", o->gpu_spec ? o->gpu_spec : "");
    snprintf(res->gpu_ref_spec, sizeof res->gpu_ref_spec, "%s", o->gpu_ref_spec ? o->gpu_ref_spec : "");
    for (size_t i = 0; i < nfiles; i++) {
        if (arb_table_read(engine_csvs[i], &tabs[i], err, err_len))
            goto out;
        if (arb_table_require(&tabs[i], engine_required, engine_csvs[i], err, err_len))
            goto out;
        for (int k = 0; k < C_N; k++)
            cols[i][k] = arb_table_col(&tabs[i], engine_required[k]);
        cap += tabs[i].nrows;
    }
    all = calloc(cap ? cap : 1, sizeof *all);
    rowcols = calloc(cap ? cap : 1, sizeof *rowcols);
    ch = calloc(cap ? cap : 1, sizeof *ch);
    if (!all || !rowcols || !ch)
        ARB_RAISE_GOTO(rc, ARB_ERR_SYSTEM, out, err, err_len, "out of memory");
    for (size_t i = 0; i < nfiles; i++)
        for (size_t r = 0; r < tabs[i].nrows; r++) {
            all[nall] = (eng_row_t){tabs[i].rows[r], engine_csvs[i], r + 2};
            rowcols[nall++] = cols[i];
        }
    for (size_t a = 0; a < nall; a++) {
        char **f = all[a].f, impl[64], items[192];
        const int *c = rowcols[a];
        const char *ph = f[c[C_PHASE]];
        if (strcmp(f[c[C_IMPL]], "modeled") || (strcmp(ph, "decode") && strcmp(ph, "verify") && strcmp(ph, "spec")))
            continue;
        if (parse_modeled(f[c[C_PARAMS]], impl, sizeof impl, items, sizeof items))
            ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len,
                           "%s: line %zu: modeled params '%.80s' lack impl=NAME (expected modeled:table=...,impl=NAME,...,params=...)",
                           all[a].path, all[a].line, f[c[C_PARAMS]]);
        size_t j = 0;
        while (j < nch && !(strcmp(ch[j].impl, impl) == 0 && strcmp(ch[j].items, items) == 0 &&
                            strcmp(ch[j].mode, f[c[C_MODE]]) == 0))
            j++;
        if (j == nch) {
            nch++;
            snprintf(ch[j].impl, sizeof ch[j].impl, "%s", impl);
            snprintf(ch[j].items, sizeof ch[j].items, "%s", items);
            snprintf(ch[j].mode, sizeof ch[j].mode, "%s", f[c[C_MODE]]);
            snprintf(ch[j].choice, sizeof ch[j].choice, "%s%s%s", impl, items[0] ? ":" : "", items);
            ch[j].col = c;
        }
        double pr;
        if (o->accept_rate > 0 && !strcmp(ph, "spec") &&
            (num(f[c[C_ACCEPT]], &pr) || fabs(pr - o->accept_rate) > 1e-9))
            continue; /* --accept-rate: only the spec rows of that p */
        eng_row_t *slot = !strcmp(ph, "decode") ? &ch[j].decode : !strcmp(ph, "verify") ? &ch[j].verify : &ch[j].spec;
        if (!slot->f)
            *slot = all[a];
    }
    if (nch == 0)
        ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len,
                       "no impl=modeled decode rows in the engine files: run the engine with --impl 'modeled:table=PRED.csv,impl=NAME,...'");
    for (size_t j = 0; j < nch; j++) {
        if (!ch[j].decode.f)
            ARB_RAISE_GOTO(rc, ARB_ERR_INVALID, out, err, err_len, "choice %s (%s): no decode row", ch[j].choice, ch[j].mode);
        if (predict_choice(&ch[j], all, nall, rowcols, &pred, pred_csv, o, res, err, err_len))
            goto out;
    }
    fill_savings(res);
    rc = ARB_OK;
out:
    for (size_t i = 0; tabs && i < nfiles; i++)
        arb_table_free(&tabs[i]);
    arb_table_free(&pred);
    free(tabs), free(cols), free(all), free(rowcols), free(ch);
    return rc;
}
