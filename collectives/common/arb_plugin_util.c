/* SPDX-License-Identifier: MIT */
/* Host helpers of the plugins: parameters, logging, the resident-grid resolver. */
#include "arb_plugin_util.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

/* "a, b, c" from the key names, for messages. */
static void key_list(const arb_kv_key_t *keys, int nkeys, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < nkeys && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", keys[i].name);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* The key index of name (either spelling), -1 when unknown; *old: the deprecated one. */
static int find_key(const arb_kv_key_t *keys, int nkeys, const char *name, int *old)
{
    for (int i = 0; i < nkeys; i++) {
        if (strcmp(keys[i].name, name) == 0) {
            *old = 0;
            return i;
        }
        if (keys[i].deprecated && strcmp(keys[i].deprecated, name) == 0) {
            *old = 1;
            return i;
        }
    }
    return -1;
}

arb_status_t arb_kv_parse(const char *plugin, const char *params, const arb_kv_key_t *keys, int nkeys,
                          arb_kv_fn on_pair, void *ctx, const arb_host_ops_t *ops, char *why, size_t why_len)
{
    char buf[ARB_KV_MAX_CHARS + 1], known[256];
    unsigned long long seen = 0; /* one bit per key: a key given twice is an error */
    if (!params || !*params)
        return ARB_OK;
    if (nkeys > 64)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: %d keys, the parser takes at most 64", plugin, nkeys);
    key_list(keys, nkeys, known, sizeof known);
    if (!nkeys)
        snprintf(known, sizeof known, "none");
    const size_t len = strlen(params);
    if (len > ARB_KV_MAX_CHARS)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: params '%.40s...': longer than %d characters", plugin, params,
                  ARB_KV_MAX_CHARS);
    memcpy(buf, params, len + 1);
    /* strsep, not strtok: an empty item (",," or a trailing ',') is an error, not skipped. */
    char *rest = buf, *item;
    while ((item = strsep(&rest, ",")) != NULL) {
        if (!*item)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len,
                      "%s: params '%s': empty item (expected key=value[,key=value...], keys: %s)", plugin, params,
                      known);
        char *eq = strchr(item, '=');
        if (!eq || eq == item)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: params '%s': '%s' is not key=value (keys: %s)", plugin,
                      params, item, known);
        if (!eq[1]) {
            *eq = '\0';
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: '%s=' is not key=value: %s '' has no value (keys: %s)",
                      plugin, item, item, known);
        }
        *eq = '\0';
        const char *key = item, *value = eq + 1;
        int old = 0;
        const int k = find_key(keys, nkeys, key, &old);
        if (k < 0)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: unknown parameter '%s' in '%s' (%s%s)", plugin, key, params,
                      nkeys ? "keys: " : "it takes no parameters", nkeys ? known : "");
        if (seen >> k & 1)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: parameter %s given twice in '%s'", plugin, keys[k].name,
                      params);
        seen |= 1ull << k;
        if (old && ops)
            arb_plog(ops, plugin, "parameter %s is deprecated: it is %s (the same knob), write %s=%s", key,
                     keys[k].name, keys[k].name, value);
        ARB_TRY(on_pair(ctx, k, value, why, why_len));
    }
    return ARB_OK;
}

int arb_kv_int(const char *value, long lo, long hi, int *out)
{
    char *end = NULL;
    if (!value || !*value || (lo >= 0 && (value[0] == '-' || value[0] == '+')))
        return -1;
    errno = 0;
    const long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

void arb_plog(const arb_host_ops_t *ops, const char *plugin, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (ops && ops->log)
        ops->log(ops->ctx, line);
    else
        fprintf(stderr, "arb-%s: %s\n", plugin, line);
}

arb_status_t arb_grid_agree(const arb_host_ops_t *ops, int nranks, const int mine[ARB_GRID_SIZES],
                            int fewest[ARB_GRID_SIZES], const char *plugin, char *why, size_t why_len)
{
    int all[64][ARB_GRID_SIZES];
    if (nranks < 1 || nranks > 64)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: %d ranks, the grid resolver takes 1 to 64", plugin, nranks);
    if (ops->allgather(ops->ctx, mine, all, sizeof all[0]) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "%s: host allgather of the resident-cluster counts failed", plugin);
    for (int i = 0; i < ARB_GRID_SIZES; i++) {
        fewest[i] = all[0][i];
        for (int r = 1; r < nranks; r++)
            fewest[i] = all[r][i] < fewest[i] ? all[r][i] : fewest[i];
    }
    return ARB_OK;
}

unsigned arb_grid_fit_mask(const int fewest[ARB_GRID_SIZES], int grid, int max_p)
{
    unsigned mask = 0;
    for (int i = 0; i < ARB_GRID_SIZES && (1 << i) <= max_p; i++)
        if ((long)fewest[i] * (1L << i) >= (long)grid)
            mask |= 1u << i;
    return mask;
}

int arb_grid_largest(const int fewest[ARB_GRID_SIZES], int ctas, int *grid)
{
    int best_g = 0, best_i = -1;
    for (int i = 0; i < ARB_GRID_SIZES; i++) {
        const int p = 1 << i, g = ctas / p * p;
        if (g > 0 && fewest[i] >= g / p && g >= best_g) {
            best_g = g;
            best_i = i;
        }
    }
    *grid = best_g;
    return best_i;
}
