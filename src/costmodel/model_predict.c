/* SPDX-License-Identifier: MIT */
/* Predicted results files (source=model, with bands) and `model check` against measured runs. */
#include "costmodel/model_predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "arbench/status.h"
#include "base/meta.h"
#include "costmodel/model_fit.h"
#include "results/results.h"

/* The SHM twin of a P2P NCCL entry (same variant and mode, measured with P2P off). */
static const arb_fit_entry_t *shm_twin(const arb_fit_t *fit, const arb_fit_entry_t *e)
{
    char key[256];
    arb_model_params_key(e->params, key, sizeof key);
    return arb_fit_find(fit, e->impl, key, e->mode, ARB_TRANSPORT_SHM);
}

/* The entries a prediction covers: NCCL's P2P entries (SHM twins join them), and each
 * other variant once (its P2P-run entry where both runs measured it). */
static int predicted_entry(const arb_fit_t *fit, const arb_fit_entry_t *e)
{
    if (e->transport == ARB_TRANSPORT_P2P)
        return 1;
    if (e->key.family == ARB_FAM_NCCL)
        return 0;
    char key[256];
    arb_model_params_key(e->params, key, sizeof key);
    return arb_fit_find(fit, e->impl, key, e->mode, ARB_TRANSPORT_P2P) == NULL;
}

/* Predicts NCCL's own choice: the fastest predicted NCCL variant (docs/model.md). */
static int predict_auto(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                        double bytes, const char *mode, arb_transport_t transport, arb_prediction_t *best,
                        const arb_fit_entry_t **chosen)
{
    int found = 0;
    for (size_t i = 0; i < fit->n; i++) {
        const arb_fit_entry_t *e = &fit->e[i];
        if (e->key.family != ARB_FAM_NCCL || e->transport != ARB_TRANSPORT_P2P || strcmp(e->mode, mode))
            continue;
        arb_fit_entry_t forced = *e;
        forced.transport = transport;
        arb_prediction_t p;
        arb_model_predict_one(fit, fit_fab, &forced, shm_twin(fit, e), fab, n, bytes, &p);
        if (p.why_not || (found && p.us >= best->us))
            continue;
        *best = p;
        *chosen = e;
        found = 1;
    }
    /* NCCL picks by its own cost model, not ours: every variant whose central value lies
     * inside the choice's band is one we cannot rank below it, so its band joins. */
    for (size_t i = 0; found && i < fit->n; i++) {
        const arb_fit_entry_t *e = &fit->e[i];
        if (e->key.family != ARB_FAM_NCCL || e->transport != ARB_TRANSPORT_P2P || strcmp(e->mode, mode) || e == *chosen)
            continue;
        arb_fit_entry_t forced = *e;
        forced.transport = transport;
        arb_prediction_t p;
        arb_model_predict_one(fit, fit_fab, &forced, shm_twin(fit, e), fab, n, bytes, &p);
        if (p.why_not || p.us < best->lo_us || p.us > best->hi_us)
            continue;
        best->lo_us = fmin(best->lo_us, p.lo_us), best->hi_us = fmax(best->hi_us, p.hi_us);
    }
    return found;
}

typedef struct row_text {
    char bytes[24], count[24], tokens[24], hidden[16], ranks[16], med[24], lo[24], hi[24], alg[24], bus[24];
    char note[600], params[300], timing[600];
} row_text_t;

static void fill_row(arb_row_t *row, row_text_t *b, const arb_fabric_t *fab, const char *run_id, const char *now,
                     const char *argv, const char *impl, const char *params, const char *mode, int n, size_t bytes,
                     const arb_prediction_t *p, const char *note_extra, const char *fit_path)
{
    memset(row, 0, sizeof *row);
    snprintf(b->bytes, sizeof b->bytes, "%zu", bytes);
    snprintf(b->count, sizeof b->count, "%zu", bytes / 2);
    snprintf(b->ranks, sizeof b->ranks, "%d", n);
    int tok = bytes % (7168 * 2) == 0;
    snprintf(b->tokens, sizeof b->tokens, "%zu", tok ? bytes / (7168 * 2) : 0);
    snprintf(b->hidden, sizeof b->hidden, "%d", tok ? 7168 : 0);
    snprintf(b->params, sizeof b->params, "%s", params);
    snprintf(b->timing, sizeof b->timing, "model: fit %s, fabric %s", fit_path, fab->path_file);
    const char **f = row->f;
    f[ARB_COL_schema] = "1";
    f[ARB_COL_run_id] = run_id;
    f[ARB_COL_time] = now;
    f[ARB_COL_git_rev] = arb_git_rev();
    f[ARB_COL_arbench_version] = ARB_VERSION;
    f[ARB_COL_host] = "model";
    f[ARB_COL_argv] = argv;
    f[ARB_COL_gpu] = fab->gpu;
    f[ARB_COL_sm] = fab->sm;
    f[ARB_COL_fabric] = fab->label;
    f[ARB_COL_ranks] = b->ranks;
    f[ARB_COL_nodes] = "1";
    f[ARB_COL_impl] = impl;
    f[ARB_COL_params] = b->params;
    f[ARB_COL_backend] = "cuda";
    f[ARB_COL_op] = "allreduce";
    f[ARB_COL_dtype] = "bf16";
    f[ARB_COL_bytes] = b->bytes;
    f[ARB_COL_count] = b->count;
    f[ARB_COL_tokens] = b->tokens;
    f[ARB_COL_hidden] = b->hidden;
    f[ARB_COL_mode] = mode;
    f[ARB_COL_timing] = b->timing;
    f[ARB_COL_warmup] = "0";
    f[ARB_COL_iters] = "0";
    f[ARB_COL_source] = "model";
    if (p->why_not) {
        f[ARB_COL_check] = "skip";
        snprintf(b->note, sizeof b->note, "predicted: cannot run here: %s", p->why_not);
        f[ARB_COL_note] = b->note;
        return;
    }
    snprintf(b->med, sizeof b->med, "%.3f", p->us);
    snprintf(b->lo, sizeof b->lo, "%.3f", p->lo_us);
    snprintf(b->hi, sizeof b->hi, "%.3f", p->hi_us);
    double alg = bytes / (p->us * 1e3);
    snprintf(b->alg, sizeof b->alg, "%.3f", alg);
    snprintf(b->bus, sizeof b->bus, "%.3f", alg * 2.0 * (n - 1) / n);
    /* p10/p90 carry the band too: `arbench profile`'s no-samples rule then keeps a
     * predicted lead only where the bands do not overlap. */
    f[ARB_COL_median_us] = f[ARB_COL_mean_us] = b->med;
    f[ARB_COL_p10_us] = f[ARB_COL_band_lo_us] = b->lo;
    f[ARB_COL_p90_us] = f[ARB_COL_band_hi_us] = b->hi;
    f[ARB_COL_algbw_gbs] = b->alg;
    f[ARB_COL_busbw_gbs] = b->bus;
    f[ARB_COL_check] = "model";
    const char *routes = strstr(p->detail, "; routes ");
    snprintf(b->note, sizeof b->note, "predicted, not measured: band %.3f-%.3f us%s%s%s", p->lo_us, p->hi_us,
             routes ? routes : "", note_extra ? "; " : "", note_extra ? note_extra : "");
    f[ARB_COL_note] = b->note;
}

arb_status_t arb_model_write_predictions(const arb_fit_t *fit, const char *fit_path, const arb_fabric_t *fit_fab,
                                const arb_fabric_t *fab, int n, const size_t *sizes, size_t nsizes,
                                const char *out_path, const char *argv, size_t *nrows, char *err, size_t err_len)
{
    arb_results_writer_t *w = arb_results_open(out_path, err, err_len);
    if (!w)
        return ARB_ERR_SYSTEM;
    char now[32], run_id[128];
    arb_utc_now(now, sizeof now);
    snprintf(run_id, sizeof run_id, "model-%s-%s", fab->name, now);
    arb_row_t row;
    row_text_t b;
    *nrows = 0;
    int rc = 0; /* arb_results_append's */
    for (int m = 0; m < 3 && !rc; m++) {
        const char *mode = arb_model_modes[m];
        for (size_t i = 0; i < fit->n && !rc; i++) {
            const arb_fit_entry_t *e = &fit->e[i];
            if (strcmp(e->mode, mode) || !predicted_entry(fit, e))
                continue;
            for (size_t s = 0; s < nsizes && !rc; s++) {
                arb_prediction_t p;
                arb_model_predict_one(fit, fit_fab, e, shm_twin(fit, e), fab, n, (double)sizes[s], &p);
                fill_row(&row, &b, fab, run_id, now, argv, e->impl, e->params, mode, n, sizes[s], &p, NULL, fit_path);
                rc = arb_results_append(w, &row);
                ++*nrows;
            }
        }
        for (size_t s = 0; s < nsizes && !rc; s++) {
            arb_prediction_t p;
            const arb_fit_entry_t *chosen = NULL;
            if (!predict_auto(fit, fit_fab, fab, n, (double)sizes[s], mode, ARB_TRANSPORT_P2P, &p, &chosen))
                continue;
            char extra[400];
            snprintf(extra, sizeof extra, "NCCL's choice modeled as the fastest predicted NCCL variant: %s", chosen->params);
            fill_row(&row, &b, fab, run_id, now, argv, "nccl", "algo=auto,proto=auto", mode, n, sizes[s], &p, extra, fit_path);
            rc = arb_results_append(w, &row);
            ++*nrows;
        }
    }
    if (rc)
        ARB_WHY(err, err_len, "%s: write failed", out_path);
    if (arb_results_close(w) && !rc) {
        ARB_WHY(err, err_len, "%s: close failed", out_path);
        rc = -1;
    }
    return rc ? ARB_ERR_SYSTEM : ARB_OK;
}

void arb_model_print_summary(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                             const size_t *sizes, size_t nsizes, const char *mode, FILE *out)
{
    fprintf(out, "predicted, %s mode, %d ranks of %s (us, band):\n%9s  %-56s %-22s  %-22s %s\n", mode, n, fab->name,
            "bytes", "fastest predicted", "us (band)", "NCCL's choice", "NCCL / fastest (both at their fast ends .. slow ends)");
    for (size_t s = 0; s < nsizes; s++) {
        arb_prediction_t best = {0}, p, nccl;
        const arb_fit_entry_t *win = NULL, *chosen = NULL;
        for (size_t i = 0; i < fit->n; i++) {
            const arb_fit_entry_t *e = &fit->e[i];
            if (strcmp(e->mode, mode) || !predicted_entry(fit, e))
                continue;
            arb_model_predict_one(fit, fit_fab, e, shm_twin(fit, e), fab, n, (double)sizes[s], &p);
            if (!p.why_not && (!win || p.us < best.us))
                best = p, win = e;
        }
        if (!win)
            continue;
        char name[64 + 256];
        snprintf(name, sizeof name, "%s %s", win->impl, win->params);
        fprintf(out, "%9zu  %-56.56s %7.2f (%5.2f-%6.2f)", sizes[s], name, best.us, best.lo_us, best.hi_us);
        if (predict_auto(fit, fit_fab, fab, n, (double)sizes[s], mode, ARB_TRANSPORT_P2P, &nccl, &chosen))
        {
            /* The ratio with both at their fast ends, nominal, and both at their slow ends. */
            double r[3] = {nccl.lo_us / best.lo_us, nccl.us / best.us, nccl.hi_us / best.hi_us};
            fprintf(out, "  %7.2f (%5.2f-%6.2f)  %5.2fx (%.2fx-%.2fx)\n", nccl.us, nccl.lo_us, nccl.hi_us, r[1],
                    fmin(fmin(r[0], r[1]), r[2]), fmax(fmax(r[0], r[1]), r[2]));
        }
        else
            fprintf(out, "  %-21s\n", "(not predicted)");
    }
}

/* ------------------------------------------------------------------ check ---------- */

int arb_model_predict_point(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_fabric_t *fab, int n,
                            arb_family_t f, const char *impl, const char *params_key, const char *mode,
                            arb_transport_t transport, double bytes, arb_prediction_t *p)
{
    const arb_fit_entry_t *chosen = NULL;
    if (f == ARB_FAM_NCCL_AUTO)
        return predict_auto(fit, fit_fab, fab, n, bytes, mode, transport, p, &chosen);
    if (f == ARB_FAM_NCCL) {
        const arb_fit_entry_t *e = arb_fit_find(fit, impl, params_key, mode, ARB_TRANSPORT_P2P);
        if (!e)
            return 0;
        arb_fit_entry_t forced = *e;
        forced.transport = transport;
        arb_model_predict_one(fit, fit_fab, &forced, shm_twin(fit, e), fab, n, bytes, p);
        return 1;
    }
    const arb_fit_entry_t *e = arb_fit_find(fit, impl, params_key, mode, transport);
    if (!e)
        return 0;
    arb_model_predict_one(fit, fit_fab, e, NULL, fab, n, bytes, p);
    return 1;
}

typedef struct check_group {
    char impl[32], params[256], mode[16];
    arb_transport_t transport;
    arb_family_t family;
    int n, inband;
    double max_abs, sum_abs, worst_bytes, worst_err;
} check_group_t;

static int gated(arb_family_t f)
{
    return f == ARB_FAM_NCCL || f == ARB_FAM_NCCL_AUTO || f == ARB_FAM_FLAGFREE || f == ARB_FAM_PUSH ||
           f == ARB_FAM_PULL || f == ARB_FAM_HOSTSTAGED;
}

arb_status_t arb_model_check(const arb_fit_t *fit, const arb_fabric_t *fit_fab, const arb_obs_set_t *obs,
                             double min_bytes, double max_bytes, double tol, int print_points, FILE *out,
                             int *failing_groups, char *err, size_t err_len)
{
    check_group_t *g = calloc(obs->n + 1, sizeof *g);
    size_t ng = 0;
    if (!g)
        ARB_RAISE(ARB_ERR_SYSTEM, err, err_len, "out of memory");
    if (print_points)
        fprintf(out, "%-10s %-46s %-7s %-4s %8s %9s %9s %19s %7s\n", "impl", "params", "mode", "via", "bytes",
                "measured", "model", "band", "error");
    for (size_t i = 0; i < obs->n; i++) {
        const arb_obs_t *o = &obs->o[i];
        arb_family_t f = o->key.family;
        if (f == ARB_FAM_LAUNCH || f == ARB_FAM_FLAG || o->bytes < min_bytes || o->bytes > max_bytes)
            continue;
        char key[256];
        arb_model_params_key(o->params, key, sizeof key);
        arb_prediction_t p;
        if (!arb_model_predict_point(fit, fit_fab, fit_fab, o->ranks, f, o->impl, key, o->mode, o->transport, o->bytes, &p))
            continue;
        if (p.why_not)
            continue;
        double e = (p.us - o->median_us) / o->median_us;
        size_t k;
        for (k = 0; k < ng; k++)
            if (g[k].transport == o->transport && !strcmp(g[k].impl, o->impl) && !strcmp(g[k].params, key) &&
                !strcmp(g[k].mode, o->mode))
                break;
        if (k == ng) {
            ng++;
            snprintf(g[k].impl, sizeof g[k].impl, "%s", o->impl);
            snprintf(g[k].params, sizeof g[k].params, "%s", key);
            snprintf(g[k].mode, sizeof g[k].mode, "%s", o->mode);
            g[k].transport = o->transport;
            g[k].family = f;
        }
        g[k].n++;
        g[k].sum_abs += fabs(e);
        g[k].inband += o->median_us >= p.lo_us && o->median_us <= p.hi_us;
        if (fabs(e) > g[k].max_abs) {
            g[k].max_abs = fabs(e);
            g[k].worst_err = e;
            g[k].worst_bytes = o->bytes;
        }
        if (print_points)
            fprintf(out, "%-10s %-46.46s %-7s %-4s %8.0f %9.3f %9.3f %9.3f-%-9.3f %+6.1f%%\n", o->impl, key, o->mode,
                    o->transport == ARB_TRANSPORT_SHM ? "shm" : "p2p", o->bytes, o->median_us, p.us, p.lo_us,
                    p.hi_us, 100 * e);
    }
    int failing = 0;
    fprintf(out, "%-10s %-46s %-7s %-4s %4s %9s %9s %12s %7s %s\n", "impl", "params", "mode", "via", "n", "mean|err|",
            "max|err|", "at bytes", "inband", "verdict");
    for (size_t k = 0; k < ng; k++) {
        int bad = g[k].max_abs > tol;
        const char *verdict = !gated(g[k].family) ? "(not gated)" : bad ? "FAIL" : "ok";
        failing += gated(g[k].family) && bad;
        fprintf(out, "%-10s %-46.46s %-7s %-4s %4d %8.1f%% %+8.1f%% %12.0f %3d/%-3d %s\n", g[k].impl, g[k].params,
                g[k].mode, g[k].transport == ARB_TRANSPORT_SHM ? "shm" : "p2p", g[k].n, 100 * g[k].sum_abs / g[k].n,
                100 * g[k].worst_err, g[k].worst_bytes, g[k].inband, g[k].n, verdict);
    }
    fprintf(out, "model check: %zu groups, %d gated groups beyond %.0f%% (sizes %.0f..%.0f bytes)\n", ng, failing,
            100 * tol, min_bytes, max_bytes);
    free(g);
    *failing_groups = failing;
    if (!ng)
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "no measured point matches a fitted variant between %.0f and %.0f bytes", min_bytes, max_bytes);
    return ARB_OK;
}
