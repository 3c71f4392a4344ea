/* SPDX-License-Identifier: MIT */
/* Latency tables for the modeled plugin: selection, parameters and log-bytes interpolation. */
#include "modeled_table.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "results/results.h"

static int set_text(char *dst, size_t len, const char *v, size_t vl)
{
    if (vl >= len)
        return -1;
    memcpy(dst, v, vl);
    dst[vl] = '\0';
    return 0;
}

arb_status_t modeled_parse_params(const char *params, modeled_select_t *sel, char *why, size_t why_len)
{
    memset(sel, 0, sizeof *sel);
    snprintf(sel->op, sizeof sel->op, "allreduce");
    sel->scale = 1.0;
    const char *p = params ? params : "";
    while (*p) {
        size_t item = strcspn(p, ",");
        const char *eq = memchr(p, '=', item);
        if (!eq) {
            ARB_WHY(why, why_len, "modeled params: item '%.*s': expected key=value (table, impl, params, mode, ranks, scale, offset_us)", (int)item, p);
            return ARB_ERR_INVALID;
        }
        size_t kl = (size_t)(eq - p);
        const char *v = eq + 1;
        if (kl == 6 && strncmp(p, "params", 6) == 0) { /* the rest of the string */
            if (set_text(sel->params, sizeof sel->params, v, strlen(v)))
                goto err_long;
            for (char *c = sel->params; *c; c++)
                if (*c == ';')
                    *c = ',';
            break;
        }
        size_t vl = item - kl - 1;
        char num[64];
        char *end;
        if (kl == 5 && strncmp(p, "table", 5) == 0) {
            if (set_text(sel->table, sizeof sel->table, v, vl))
                goto err_long;
        } else if (kl == 4 && strncmp(p, "impl", 4) == 0) {
            if (set_text(sel->impl, sizeof sel->impl, v, vl))
                goto err_long;
        } else if (kl == 4 && strncmp(p, "mode", 4) == 0) {
            if (set_text(sel->mode, sizeof sel->mode, v, vl) ||
                (strcmp(sel->mode, "graph") && strcmp(sel->mode, "eager") && strcmp(sel->mode, "context"))) {
                ARB_WHY(why, why_len, "modeled params: mode '%.*s': expected graph, eager or context", (int)vl, v);
                return ARB_ERR_INVALID;
            }
        } else if ((kl == 5 && strncmp(p, "ranks", 5) == 0) || (kl == 5 && strncmp(p, "scale", 5) == 0) ||
                   (kl == 9 && strncmp(p, "offset_us", 9) == 0)) {
            if (set_text(num, sizeof num, v, vl))
                goto err_long;
            double x = strtod(num, &end);
            int is_ranks = p[0] == 'r';
            if (end == num || *end || !isfinite(x) || x < 0 || (is_ranks && (x < 1 || x != floor(x) || x > 1 << 20)) ||
                (p[0] == 's' && !(x > 0))) {
                ARB_WHY(why, why_len, "modeled params: %.*s '%s': expected %s", (int)kl, p, num,
                         is_ranks ? "a whole number of ranks >= 1" : p[0] == 's' ? "a factor > 0" : "microseconds >= 0");
                return ARB_ERR_INVALID;
            }
            if (is_ranks) sel->ranks = (int)x;
            else if (p[0] == 's') sel->scale = x;
            else sel->offset_us = x;
        } else {
            ARB_WHY(why, why_len, "modeled params: unknown key '%.*s': expected table, impl, params, mode, ranks, scale or offset_us", (int)kl, p);
            return ARB_ERR_INVALID;
        }
        p += item + (p[item] == ',');
    }
    if (!sel->table[0]) {
        ARB_WHY(why, why_len, "modeled params: table=PATH is required (a results or profile CSV)");
        return ARB_ERR_INVALID;
    }
    return ARB_OK;
err_long:
    ARB_WHY(why, why_len, "modeled params: a value in '%.80s' is too long", params);
    return ARB_ERR_INVALID;
}

/* Every item of `want` ("k=v,k=v") is an item of `have`. */
static int params_contain(const char *have, const char *want)
{
    for (const char *w = want; *w;) {
        size_t wl = strcspn(w, ",");
        int found = 0;
        for (const char *h = have; *h && !found;) {
            size_t hl = strcspn(h, ",");
            found = hl == wl && strncmp(h, w, wl) == 0;
            h += hl + (h[hl] == ',');
        }
        if (wl && !found)
            return 0;
        w += wl + (w[wl] == ',');
    }
    return 1;
}

typedef struct cand {
    const char *impl, *params, *mode;
    int ranks;
    double bytes, us;
} cand_t;

static int cmp_cand(const void *a, const void *b)
{
    double x = ((const cand_t *)a)->bytes, y = ((const cand_t *)b)->bytes;
    return (x > y) - (x < y);
}

/* Collects candidate points from a results or a profile table. */
static size_t collect(const arb_table_t *t, const modeled_select_t *sel, cand_t *c)
{
    int profile = arb_table_col(t, "rep_bytes") >= 0 && arb_table_col(t, "min_bytes") >= 0;
    int ci = arb_table_col(t, "impl"), cp = arb_table_col(t, "params"), cm = arb_table_col(t, "mode");
    int cr = arb_table_col(t, "ranks"), co = arb_table_col(t, "op"), cmed = arb_table_col(t, "median_us");
    int cb = arb_table_col(t, profile ? "rep_bytes" : "bytes"), cc = arb_table_col(t, "check");
    int cbi = arb_table_col(t, "baseline_impl"), cbp = arb_table_col(t, "baseline_params");
    int cbm = arb_table_col(t, "baseline_median_us");
    if (ci < 0 || cp < 0 || cm < 0 || cr < 0 || co < 0 || cmed < 0 || cb < 0 || (!profile && cc < 0))
        return (size_t)-1;
    size_t n = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        char **f = t->rows[r];
        if (strcmp(f[co], sel->op) || (!profile && strcmp(f[cc], "pass") && strcmp(f[cc], "model")))
            continue;
        for (int base = 0; base < 1 + (profile && cbi >= 0 && cbp >= 0 && cbm >= 0); base++) {
            const char *impl = base ? f[cbi] : f[ci], *params = base ? f[cbp] : f[cp];
            const char *med = base ? f[cbm] : f[cmed];
            if ((sel->impl[0] && strcmp(impl, sel->impl)) || (base && !sel->impl[0]) || !params_contain(params, sel->params))
                continue;
            char *e1, *e2, *e3;
            double us = strtod(med, &e1), bytes = strtod(f[cb], &e2);
            long ranks = strtol(f[cr], &e3, 10);
            if (e1 == med || *e1 || !(us > 0) || e2 == f[cb] || *e2 || !(bytes > 0) || *e3 || ranks < 1)
                continue;
            c[n++] = (cand_t){impl, params, f[cm], (int)ranks, bytes, us};
        }
    }
    return n;
}

arb_status_t modeled_table_load(const modeled_select_t *sel, int default_ranks, modeled_table_t *t, char *why,
                       size_t why_len)
{
    memset(t, 0, sizeof *t);
    arb_table_t tab;
    char err[512];
    if (arb_table_read(sel->table, &tab, err, sizeof err)) {
        /* a table that cannot be read is a bad input, not a decline: a caller that falls back
         * on a decline (the engine's profile sites) would otherwise run another plugin under
         * the modeled choice's name and report it */
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "modeled: table %s", err);
    }
    arb_status_t rc = ARB_DECLINE; /* a table without the rows asked for declines */
    cand_t *c = calloc(2 * tab.nrows + 1, sizeof *c);
    if (!c) {
        ARB_RAISE_GOTO(rc, ARB_ERR_SYSTEM, err_free_tab, why, why_len, "modeled: out of memory");
    }
    size_t n = collect(&tab, sel, c);
    if (n == (size_t)-1) {
        ARB_WHY(why, why_len, "modeled: table %s lacks impl/params/mode/ranks/op/median_us and bytes/check (results) or rep_bytes (profile) columns", sel->table);
        goto err_free_c;
    }
    /* The mode: as asked, else graph when present, else the only one. */
    const char *mode = sel->mode[0] ? sel->mode : NULL;
    for (size_t i = 0; i < n && !mode; i++)
        if (strcmp(c[i].mode, "graph") == 0)
            mode = "graph";
    for (size_t i = 0; i < n && !mode; i++)
        if (strcmp(c[i].mode, c[0].mode))
            break;
        else if (i == n - 1)
            mode = c[0].mode;
    int ranks = sel->ranks;
    if (!ranks && n) {
        ranks = c[0].ranks;
        for (size_t i = 0; i < n; i++)
            if (c[i].ranks != ranks)
                ranks = default_ranks;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (mode && strcmp(c[i].mode, mode) == 0 && c[i].ranks == ranks)
            c[k++] = c[i];
    if (k == 0) {
        ARB_WHY(why, why_len, "modeled: table %s has no %s rows with impl=%s params=%s mode=%s ranks=%d (check pass or model)", sel->table, sel->op, sel->impl[0] ? sel->impl : "(any)", sel->params[0] ? sel->params : "(any)", mode ? mode : "(several: give mode=)", ranks);
        goto err_free_c;
    }
    /* One variant only, unless a profile's choices were asked for (no impl). */
    int profile = arb_table_col(&tab, "rep_bytes") >= 0;
    for (size_t i = 1; i < k; i++)
        if (!(profile && !sel->impl[0]) && (strcmp(c[i].impl, c[0].impl) || strcmp(c[i].params, c[0].params))) {
            ARB_WHY(why, why_len, "modeled: table %s: several variants match (%s %s and %s %s): give impl= and params=", sel->table, c[0].impl, c[0].params, c[i].impl, c[i].params);
            goto err_free_c;
        }
    qsort(c, k, sizeof *c, cmp_cand);
    t->bytes = malloc(k * sizeof *t->bytes);
    t->us = malloc(k * sizeof *t->us);
    if (!t->bytes || !t->us) {
        ARB_RAISE_GOTO(rc, ARB_ERR_SYSTEM, err_free_c, why, why_len, "modeled: out of memory");
    }
    /* Rows of one size (repeats) average into one point. */
    for (size_t i = 0; i < k;) {
        size_t j = i;
        double sum = 0;
        while (j < k && c[j].bytes == c[i].bytes)
            sum += c[j++].us;
        t->bytes[t->n] = c[i].bytes;
        t->us[t->n++] = sum / (double)(j - i) * sel->scale - sel->offset_us;
        if (t->us[t->n - 1] < 0)
            t->us[t->n - 1] = 0;
        i = j;
    }
    snprintf(t->desc, sizeof t->desc, "table %s: %s impl=%s params=%s mode=%s ranks=%d scale=%g offset_us=%g, %zu sizes", sel->table, sel->op, profile && !sel->impl[0] ? "(profile choices)" : c[0].impl, profile && !sel->impl[0] ? "" : c[0].params, mode, ranks, sel->scale, sel->offset_us, t->n);
    rc = ARB_OK;
err_free_c:
    free(c);
err_free_tab:
    arb_table_free(&tab);
    if (rc)
        modeled_table_free(t);
    return rc;
}

void modeled_table_free(modeled_table_t *t)
{
    free(t->bytes);
    free(t->us);
    memset(t, 0, sizeof *t);
}

arb_status_t modeled_table_lookup(const modeled_table_t *t, double bytes, double *us, char *why, size_t why_len)
{
    if (!t->n || bytes < t->bytes[0] || bytes > t->bytes[t->n - 1] || !(bytes > 0)) {
        ARB_WHY(why, why_len, "modeled: %.0f bytes per rank is outside the %s (%.0f..%.0f bytes)", bytes, t->desc,
                 t->n ? t->bytes[0] : 0.0, t->n ? t->bytes[t->n - 1] : 0.0);
        return ARB_DECLINE;
    }
    size_t hi = 0;
    while (t->bytes[hi] < bytes)
        hi++;
    if (t->bytes[hi] == bytes) {
        *us = t->us[hi];
        return ARB_OK;
    }
    size_t lo = hi - 1;
    double w = (log(bytes) - log(t->bytes[lo])) / (log(t->bytes[hi]) - log(t->bytes[lo]));
    *us = t->us[lo] + w * (t->us[hi] - t->us[lo]);
    return ARB_OK;
}
