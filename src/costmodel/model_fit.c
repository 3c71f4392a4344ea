/* SPDX-License-Identifier: MIT */
/* Fitting the model's constants on measured runs (docs/model.md, "Fit"). */
#include "costmodel/model_fit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
    if (!n)
        return NAN;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The floor of one family per mode: median over sizes of every matching row. */
static double floor_median(const arb_obs_set_t *obs, arb_family_t fam, int m)
{
    double *v = malloc((obs->n + 1) * sizeof *v);
    size_t k = 0;
    if (!v)
        return NAN;
    for (size_t i = 0; i < obs->n; i++)
        if (obs->o[i].key.family == fam && arb_model_mode_index(obs->o[i].mode) == m)
            v[k++] = obs->o[i].median_us;
    double r = median_of(v, k);
    free(v);
    return r;
}

const arb_fit_entry_t *arb_fit_find(const arb_fit_t *fit, const char *impl, const char *params_key,
                                    const char *mode, arb_transport_t transport)
{
    char key[256];
    for (size_t i = 0; i < fit->n; i++) {
        const arb_fit_entry_t *e = &fit->e[i];
        if (e->transport != transport || strcmp(e->impl, impl) || strcmp(e->mode, mode))
            continue;
        arb_model_params_key(e->params, key, sizeof key);
        if (strcmp(key, params_key) == 0)
            return e;
    }
    return NULL;
}

/* What the fit subtracts before the line: the terms the model knows on the fit fabric. */
static double known_us(const arb_fit_t *fit, const arb_fabric_t *fab, const arb_obs_t *o, int m,
                       const arb_fit_entry_t *p2p_twin)
{
    double t = fit->launch_us[m];
    int n = o->ranks;
    if (o->key.family == ARB_FAM_NCCL) {
        if (o->transport == ARB_TRANSPORT_SHM)
            return t + p2p_twin->offset_us; /* the rest is nsteps SHM hops + bytes */
        const double (*hw)[3] = fab->nvlink ? arb_nccl_hw_lat_nvlink_us : arb_nccl_hw_lat_pci_us;
        return t + 2.0 * (n - 1) * hw[o->key.algo][o->key.proto];
    }
    if (o->key.family == ARB_FAM_HOSTSTAGED)
        return t;
    return t + arb_family_shape(o->key.family).flag_latencies * fit->flag_us[m];
}

/* The bytes the line's slope multiplies: what one GPU issues (custom kernels) or what
 * NCCL's algorithm bandwidth divides (Ring 2(n-1)/n x S, Tree 2S). */
static double fit_x(const arb_obs_t *o)
{
    int n = o->ranks;
    if (o->key.family == ARB_FAM_NCCL)
        return n < 2 ? 0 : o->key.algo == ARB_NCCL_RING ? o->bytes * 2.0 * (n - 1) / n : 2.0 * o->bytes;
    return arb_family_issue_bytes(o->key.family, o->bytes, n);
}

/* Weighted least squares of y = a + b x with weights 1/t^2 (relative errors).
 * A slope that is not positive means the bytes do not show: b = 0, a = weighted mean. */
static void fit_line(const double *x, const double *y, const double *t, size_t n, double *a, double *b)
{
    double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        double w = 1.0 / (t[i] * t[i]);
        sw += w, sx += w * x[i], sy += w * y[i], sxx += w * x[i] * x[i], sxy += w * x[i] * y[i];
    }
    double det = sw * sxx - sx * sx;
    *b = det > 0 ? (sw * sxy - sx * sy) / det : 0;
    if (!(*b > 0)) {
        *b = 0;
        *a = sy / sw;
        return;
    }
    *a = (sy - *b * sx) / sw;
}

static int same_group(const arb_obs_t *a, const arb_obs_t *b)
{
    char ka[256], kb[256];
    if (a->transport != b->transport || a->ranks != b->ranks || strcmp(a->impl, b->impl) || strcmp(a->mode, b->mode))
        return 0;
    arb_model_params_key(a->params, ka, sizeof ka);
    arb_model_params_key(b->params, kb, sizeof kb);
    return strcmp(ka, kb) == 0;
}

static arb_status_t fit_group(arb_fit_t *fit, const arb_fabric_t *fab, const arb_obs_t *const *g, size_t n, int m,
                     char *err, size_t err_len)
{
    const arb_obs_t *o0 = g[0];
    char key[256];
    arb_model_params_key(o0->params, key, sizeof key);
    const arb_fit_entry_t *twin = NULL;
    if (o0->key.family == ARB_FAM_NCCL && o0->transport == ARB_TRANSPORT_SHM &&
        !(twin = arb_fit_find(fit, o0->impl, key, o0->mode, ARB_TRANSPORT_P2P))) {
        ARB_WHY(err, err_len, "nccl %s %s with NCCL_P2P_DISABLE=1: the fit needs the same variant measured with P2P too (its fixed part)", o0->params, o0->mode);
        return ARB_ERR_INVALID;
    }
    double *x = malloc(3 * n * sizeof *x);
    if (!x) {
        ARB_WHY(err, err_len, "out of memory");
        return ARB_ERR_SYSTEM;
    }
    double *y = x + n, *t = y + n, a, b;
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        x[i] = fit_x(g[i]);
        t[i] = g[i]->median_us;
        y[i] = t[i] - known_us(fit, fab, g[i], m, twin);
        distinct += i == 0 || g[i]->bytes != g[i - 1]->bytes;
    }
    if (distinct < 2) {
        free(x);
        ARB_WHY(err, err_len, "%s %s %s: measured at one size only; the fit needs at least two", o0->impl, o0->params, o0->mode);
        return ARB_ERR_INVALID;
    }
    fit_line(x, y, t, n, &a, &b);
    arb_fit_entry_t *e = &fit->e[fit->n];
    memset(e, 0, sizeof *e);
    snprintf(e->impl, sizeof e->impl, "%s", o0->impl);
    snprintf(e->params, sizeof e->params, "%s", o0->params);
    snprintf(e->mode, sizeof e->mode, "%s", o0->mode);
    e->key = o0->key;
    e->transport = o0->transport;
    e->bw_gbs = b > 0 ? 1.0 / (1e3 * b) : 0;
    e->points = (int)n;
    if (twin) {
        e->offset_us = twin->offset_us;
        e->hop_us = a / (2.0 * (o0->ranks - 1));
    } else {
        e->offset_us = a;
    }
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs(a + b * x[i] - y[i]) / t[i];
        if (r > worst)
            worst = r;
    }
    e->rel_err = worst;
    /* Sources: the files of the group, space-separated, at most what fits. */
    for (size_t i = 0; i < n; i++)
        if (!strstr(e->sources, g[i]->source) && strlen(e->sources) + strlen(g[i]->source) + 2 < sizeof e->sources)
            snprintf(e->sources + strlen(e->sources), sizeof e->sources - strlen(e->sources), "%s%s",
                     e->sources[0] ? " " : "", g[i]->source);
    fit->n++;
    free(x);
    return ARB_OK;
}

static int cmp_obs_bytes(const void *pa, const void *pb)
{
    const arb_obs_t *a = *(const arb_obs_t *const *)pa, *b = *(const arb_obs_t *const *)pb;
    return (a->bytes > b->bytes) - (a->bytes < b->bytes);
}

arb_status_t arb_model_fit(const arb_obs_set_t *obs, const arb_fabric_t *fab, double min_bytes, double max_bytes,
                  arb_fit_t *fit, char *err, size_t err_len)
{
    memset(fit, 0, sizeof *fit);
    snprintf(fit->fabric_file, sizeof fit->fabric_file, "%s", fab->path_file);
    int have_floor = 0;
    for (int m = 0; m < 3; m++) {
        fit->launch_us[m] = floor_median(obs, ARB_FAM_LAUNCH, m);
        fit->flag_us[m] = floor_median(obs, ARB_FAM_FLAG, m) - fit->launch_us[m];
        have_floor |= isfinite(fit->launch_us[m]) && isfinite(fit->flag_us[m]);
    }
    if (!have_floor) {
        ARB_WHY(err, err_len, "no mode has both reference floors: the fit needs noop and ping rows (a default `arbench sweep` measures them)");
        return ARB_ERR_INVALID;
    }
    fit->e = calloc(obs->n + 1, sizeof *fit->e);
    const arb_obs_t **g = calloc(obs->n + 1, sizeof *g);
    char *done = calloc(obs->n + 1, 1);
    arb_status_t rc = ARB_ERR_INVALID;
    if (!fit->e || !g || !done) {
        ARB_WHY(err, err_len, "out of memory");
        rc = ARB_ERR_SYSTEM;
        goto err_free;
    }
    /* P2P groups first: an SHM group's fixed part is its P2P twin's. */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < obs->n; i++) {
            const arb_obs_t *o = &obs->o[i];
            arb_family_t f = o->key.family;
            int m = arb_model_mode_index(o->mode);
            if (done[i] || f == ARB_FAM_NONE || f == ARB_FAM_LAUNCH || f == ARB_FAM_FLAG || f == ARB_FAM_NCCL_AUTO ||
                (int)o->transport != pass || m < 0 || !isfinite(fit->launch_us[m]) || !isfinite(fit->flag_us[m]))
                continue;
            size_t n = 0;
            for (size_t j = i; j < obs->n; j++)
                if (!done[j] && same_group(o, &obs->o[j])) {
                    done[j] = 1;
                    if (obs->o[j].bytes >= min_bytes && obs->o[j].bytes <= max_bytes)
                        g[n++] = &obs->o[j];
                }
            if (n == 0)
                continue;
            if (!fit->ranks)
                fit->ranks = o->ranks;
            qsort(g, n, sizeof *g, cmp_obs_bytes);
            ARB_TRY_GOTO(rc, fit_group(fit, fab, g, n, m, err, err_len), err_free);
        }
    rc = ARB_ERR_INVALID;
    if (!fit->n) {
        ARB_WHY(err, err_len, "no modeled implementation measured between %.0f and %.0f bytes", min_bytes, max_bytes);
        goto err_free;
    }
    rc = ARB_OK;
err_free:
    free(g);
    free(done);
    if (rc)
        arb_fit_free(fit);
    return rc;
}
