/* SPDX-License-Identifier: MIT */
/* The model's files: measured rows in, fitted constants out and back (docs/model.md). */
#include "costmodel/model_io.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/points.h"
#include "base/outfile.h"
#include "results/results.h"

void arb_model_params_key(const char *params, char *out, size_t len)
{
    static const char *const drop[] = {"nccl", "timeout_ms", NULL};
    char tmp[512];
    arb_params_strip(params, drop, tmp, sizeof tmp);
    /* row_blocks=auto is p2p's default spelled out by newer builds: the same variant. */
    size_t o = 0;
    out[0] = '\0';
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (strcmp(t, "row_blocks=auto") == 0)
            continue;
        int w = snprintf(out + o, len - o, "%s%s", o ? "," : "", t);
        if (w < 0 || (size_t)w >= len - o)
            break;
        o += (size_t)w;
    }
}

static const char *const obs_required[] = {"impl", "params", "mode", "op", "dtype", "ranks", "bytes",
                                           "median_us", "check", "env", "fabric", NULL};

static int obs_push(arb_obs_set_t *s, const arb_obs_t *o)
{
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        arb_obs_t *p = realloc(s->o, nc * sizeof *p);
        if (!p)
            return -1;
        s->o = p;
        s->cap = nc;
    }
    s->o[s->n++] = *o;
    return 0;
}

arb_status_t arb_obs_load(arb_obs_set_t *s, const char *path, char *err, size_t err_len)
{
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return ARB_ERR_INVALID;
    arb_status_t rc = ARB_ERR_INVALID;
    if (arb_table_require(&t, obs_required, path, err, err_len))
        goto err_free_table;
    int c[11];
    for (int k = 0; k < 11; k++)
        c[k] = arb_table_col(&t, obs_required[k]);
    int src_col = arb_table_col(&t, "source");
    for (size_t r = 0; r < t.nrows; r++) {
        char **f = t.rows[r];
        const char *impl = f[c[0]], *check = f[c[8]];
        int is_floor = strcmp(impl, "noop") == 0 || strcmp(impl, "ping") == 0;
        if (src_col >= 0 && strcmp(f[src_col], "model") == 0)
            continue; /* a prediction is never a measurement */
        if (!(strcmp(check, "pass") == 0 || (is_floor && strcmp(check, "skip") == 0 && *f[c[7]])))
            continue;
        if (strcmp(f[c[3]], "allreduce") || strcmp(f[c[4]], "bf16"))
            continue;
        arb_obs_t o = {0};
        unsigned long long ranks, bytes;
        if (arb_parse_u64_field(f[c[5]], 1u << 20, &ranks) || ranks == 0 ||
            arb_parse_u64_field(f[c[6]], 1ull << 50, &bytes) || arb_parse_double_field(f[c[7]], &o.median_us) ||
            !(o.median_us > 0)) {
            ARB_WHY(err, err_len, "%s: line %zu: ranks '%.20s', bytes '%.20s' or median_us '%.20s' is not a valid number", path, r + 2, f[c[5]], f[c[6]], f[c[7]]);
            goto err_free_table;
        }
        o.ranks = (int)ranks;
        o.bytes = (double)bytes;
        o.key = arb_model_family(impl, f[c[1]]);
        if (o.key.family == ARB_FAM_NONE)
            continue;
        o.transport = strstr(f[c[9]], "NCCL_P2P_DISABLE=1") ? ARB_TRANSPORT_SHM : ARB_TRANSPORT_P2P;
        snprintf(o.impl, sizeof o.impl, "%s", impl);
        snprintf(o.params, sizeof o.params, "%s", f[c[1]]);
        snprintf(o.mode, sizeof o.mode, "%s", f[c[2]]);
        snprintf(o.op, sizeof o.op, "%s", f[c[3]]);
        snprintf(o.source, sizeof o.source, "%s", path);
        if (!s->fabric[0])
            snprintf(s->fabric, sizeof s->fabric, "%s", f[c[10]]);
        else if (strcmp(s->fabric, f[c[10]]) != 0) {
            ARB_WHY(err, err_len, "%s: line %zu: fabric '%s' differs from '%s' of the files before: fit one machine at a time", path, r + 2, f[c[10]], s->fabric);
            goto err_free_table;
        }
        if (obs_push(s, &o)) {
            ARB_WHY(err, err_len, "%s: out of memory", path);
            rc = ARB_ERR_SYSTEM;
            goto err_free_table;
        }
    }
    rc = ARB_OK;
err_free_table:
    arb_table_free(&t);
    return rc;
}

void arb_obs_free(arb_obs_set_t *s)
{
    free(s->o);
    memset(s, 0, sizeof *s);
}

/* ------------------------------------------------------------- fit files ---------- */

void arb_fit_free(arb_fit_t *fit)
{
    free(fit->e);
    memset(fit, 0, sizeof *fit);
}

/* Writes one CSV field, quoted when it holds a comma, quote or space. */
static void put_field(FILE *f, const char *s, int last)
{
    if (strpbrk(s, ",\" \n")) {
        fputc('"', f);
        for (const char *p = s; *p; p++) {
            if (*p == '"')
                fputc('"', f);
            fputc(*p, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}

static void put_row(FILE *f, const char *kind, const char *impl, const char *params, const char *mode,
                    const char *transport, const char *family, double offset, double hop, double bw, double rel,
                    int points, const char *sources)
{
    char num[5][32];
    snprintf(num[0], sizeof num[0], "%.6g", offset);
    snprintf(num[1], sizeof num[1], "%.6g", hop);
    snprintf(num[2], sizeof num[2], "%.6g", bw);
    snprintf(num[3], sizeof num[3], "%.6g", rel);
    snprintf(num[4], sizeof num[4], "%d", points);
    const char *v[] = {kind, impl, params, mode, transport, family, num[0], num[1], num[2], num[3], num[4], sources};
    for (int i = 0; i < 12; i++)
        put_field(f, v[i], i == 11);
}

static const char *const fit_cols[] = {"kind", "impl", "params", "mode", "transport", "family", "offset_us",
                                       "hop_us", "bw_gbs", "rel_err", "points", "sources", NULL};

arb_status_t arb_fit_write(const arb_fit_t *fit, const char *path, char *err, size_t err_len)
{
    arb_outfile_t of;
    FILE *f = arb_outfile_open(&of, "fit", path, err, err_len);
    if (!f)
        return ARB_ERR_SYSTEM;
    for (int i = 0; fit_cols[i]; i++)
        put_field(f, fit_cols[i], fit_cols[i + 1] == NULL);
    put_row(f, "meta", "fabric", fit->fabric_file, "", "", "", 0, 0, 0, 0, fit->ranks, "");
    for (int m = 0; m < 3; m++) {
        if (isfinite(fit->launch_us[m]))
            put_row(f, "launch", "noop", "", arb_model_modes[m], "", "launch", fit->launch_us[m], 0, 0, 0, 0, "noop median over sizes");
        if (isfinite(fit->flag_us[m]))
            put_row(f, "flag", "ping", "", arb_model_modes[m], "", "flag", fit->flag_us[m], 0, 0, 0, 0, "ping - noop medians over sizes");
    }
    for (size_t i = 0; i < fit->n; i++) {
        const arb_fit_entry_t *e = &fit->e[i];
        put_row(f, "variant", e->impl, e->params, e->mode, e->transport == ARB_TRANSPORT_SHM ? "shm" : "p2p",
                arb_family_name(e->key.family), e->offset_us, e->hop_us, e->bw_gbs, e->rel_err, e->points, e->sources);
    }
    return arb_outfile_commit(&of, err, err_len) == 0 ? ARB_OK : ARB_ERR_SYSTEM;
}

static int num_field(const char *s, double *out)
{
    return arb_parse_double_field(s, out);
}

arb_status_t arb_fit_read(const char *path, arb_fit_t *fit, char *err, size_t err_len)
{
    memset(fit, 0, sizeof *fit);
    for (int m = 0; m < 3; m++)
        fit->launch_us[m] = fit->flag_us[m] = NAN;
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return ARB_ERR_INVALID;
    int c[12];
    arb_status_t rc = ARB_ERR_INVALID;
    if (arb_table_require(&t, fit_cols, path, err, err_len))
        goto err_free_table;
    for (int k = 0; k < 12; k++)
        c[k] = arb_table_col(&t, fit_cols[k]);
    fit->e = calloc(t.nrows + 1, sizeof *fit->e);
    if (!fit->e) {
        ARB_WHY(err, err_len, "%s: out of memory", path);
        rc = ARB_ERR_SYSTEM;
        goto err_free_table;
    }
    for (size_t r = 0; r < t.nrows; r++) {
        char **f = t.rows[r];
        const char *kind = f[c[0]];
        int m = arb_model_mode_index(f[c[3]]);
        double v[4], pts;
        for (int k = 0; k < 4; k++)
            if (num_field(f[c[6 + k]], &v[k])) {
                ARB_WHY(err, err_len, "%s: line %zu: %s '%.30s' is not a number", path, r + 2, fit_cols[6 + k], f[c[6 + k]]);
                goto err_free_table;
            }
        if (num_field(f[c[10]], &pts))
            pts = 0;
        if (strcmp(kind, "meta") == 0) {
            snprintf(fit->fabric_file, sizeof fit->fabric_file, "%s", f[c[2]]);
            fit->ranks = (int)pts;
        } else if ((strcmp(kind, "launch") == 0 || strcmp(kind, "flag") == 0) && m >= 0) {
            if (!(v[0] >= 0)) { /* floors are medians of times: never below zero */
                ARB_WHY(err, err_len, "%s: line %zu: %s %s offset_us %g: a %s floor is a time and cannot be negative", path, r + 2, kind, f[c[3]], v[0], kind);
                goto err_free_table;
            }
            (kind[0] == 'l' ? fit->launch_us : fit->flag_us)[m] = v[0];
        } else if (strcmp(kind, "variant") == 0 && m >= 0) {
            arb_fit_entry_t *e = &fit->e[fit->n++];
            snprintf(e->impl, sizeof e->impl, "%s", f[c[1]]);
            snprintf(e->params, sizeof e->params, "%s", f[c[2]]);
            snprintf(e->mode, sizeof e->mode, "%s", f[c[3]]);
            e->transport = strcmp(f[c[4]], "shm") == 0 ? ARB_TRANSPORT_SHM : ARB_TRANSPORT_P2P;
            e->key = arb_model_family(e->impl, e->params);
            e->offset_us = v[0], e->hop_us = v[1], e->bw_gbs = v[2], e->rel_err = v[3];
            e->points = (int)pts;
            snprintf(e->sources, sizeof e->sources, "%s", f[c[11]]);
            if (e->key.family == ARB_FAM_NONE || !(e->bw_gbs >= 0) || !(e->rel_err >= 0)) {
                ARB_WHY(err, err_len, "%s: line %zu: %s %s is not a modeled variant with bw_gbs >= 0 and rel_err >= 0", path, r + 2, e->impl, e->params);
                goto err_free_table;
            }
        } else {
            ARB_WHY(err, err_len, "%s: line %zu: kind '%.20s' mode '%.20s': expected meta, launch, flag or variant and a mode eager, graph or context", path, r + 2, kind, f[c[3]]);
            goto err_free_table;
        }
    }
    if (!fit->n || !fit->fabric_file[0]) {
        ARB_WHY(err, err_len, "%s: no variants or no meta row: not a file of `arbench model fit`", path);
        goto err_free_table;
    }
    rc = ARB_OK;
err_free_table:
    arb_table_free(&t);
    if (rc)
        arb_fit_free(fit);
    return rc;
}
