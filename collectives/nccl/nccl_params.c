/* SPDX-License-Identifier: MIT */
#include "nccl_params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define ACCEPTED_KEYS "algo, proto, channels"
#define ACCEPTED_ALGOS "auto, Ring, Tree"
#define ACCEPTED_PROTOS "auto, LL, LL128, Simple"

static const char *const algo_names[] = {"Ring", "Tree", NULL};
static const char *const proto_names[] = {"LL", "LL128", "Simple", NULL};

/* The canonical spelling of `value` in names (case-insensitive), NULL if absent. */
static const char *lookup(const char *const *names, const char *value)
{
    for (const char *const *n = names; *n; n++)
        if (strcasecmp(*n, value) == 0)
            return *n;
    return NULL;
}

/* One "key=value" item, already split off and NUL-terminated. `seen` is a bitmask of
 * keys given so far, so that "algo=Ring,algo=Tree" is refused rather than last-wins. */
static arb_status_t parse_item(const char *params, char *item, arb_nccl_params_t *out,
                               unsigned *seen, char *why, size_t why_len)
{
    char *eq = strchr(item, '=');
    if (!eq || eq == item) {
        snprintf(why, why_len, "nccl params '%s': item '%s' is not key=value (keys: " ACCEPTED_KEYS ")", params, item);
        return ARB_ERR_INVALID;
    }
    *eq = '\0';
    const char *key = item, *value = eq + 1;
    unsigned bit;
    if (strcmp(key, "algo") == 0) {
        bit = 1u;
        if (strcasecmp(value, "auto") == 0) {
            out->algo = NULL;
        } else if (!(out->algo = lookup(algo_names, value))) {
            snprintf(why, why_len, "nccl params '%s': algo '%s' is not one of " ACCEPTED_ALGOS, params, value);
            return ARB_ERR_INVALID;
        }
    } else if (strcmp(key, "proto") == 0) {
        bit = 2u;
        if (strcasecmp(value, "auto") == 0) {
            out->proto = NULL;
        } else if (!(out->proto = lookup(proto_names, value))) {
            snprintf(why, why_len, "nccl params '%s': proto '%s' is not one of " ACCEPTED_PROTOS, params, value);
            return ARB_ERR_INVALID;
        }
    } else if (strcmp(key, "channels") == 0) {
        bit = 4u;
        char *end = NULL;
        errno = 0;
        long n = strtol(value, &end, 10);
        if (errno || !*value || *end || n < 1 || n > ARB_NCCL_MAX_CHANNELS) {
            snprintf(why, why_len, "nccl params '%s': channels '%s' is not an integer from 1 to %d", params, value, ARB_NCCL_MAX_CHANNELS);
            return ARB_ERR_INVALID;
        }
        out->channels = (int)n;
    } else {
        snprintf(why, why_len, "nccl params '%s': unknown key '%s' (keys: " ACCEPTED_KEYS ")", params, key);
        return ARB_ERR_INVALID;
    }
    if (*seen & bit) {
        snprintf(why, why_len, "nccl params '%s': key '%s' given twice", params, key);
        return ARB_ERR_INVALID;
    }
    *seen |= bit;
    return ARB_OK;
}

arb_status_t arb_nccl_params_parse(const char *params, arb_nccl_params_t *out, char *why,
                                   size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (!params || !*params)
        return ARB_OK;
    char *copy = strdup(params);
    if (!copy) {
        snprintf(why, why_len, "nccl params: out of host memory");
        return ARB_ERR_SYSTEM;
    }
    arb_status_t st = ARB_OK;
    unsigned seen = 0;
    /* strsep, not strtok: an empty item (",," or a trailing ',') is an error, not skipped. */
    char *rest = copy, *item;
    while (st == ARB_OK && (item = strsep(&rest, ",")) != NULL) {
        if (!*item) {
            snprintf(why, why_len, "nccl params '%s': empty item (expected key=value[,key=value...], keys: " ACCEPTED_KEYS ")", params);
            st = ARB_ERR_INVALID;
            break;
        }
        st = parse_item(params, item, out, &seen, why, why_len);
    }
    free(copy);
    if (st != ARB_OK)
        memset(out, 0, sizeof *out);
    return st;
}

int arb_nccl_params_forced(const arb_nccl_params_t *p)
{
    return p->algo || p->proto || p->channels;
}

void arb_nccl_version_str(int code, char *buf, size_t len)
{
    /* NCCL_VERSION(X,Y,Z): X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on. */
    int major, minor, patch = code % 100;
    if (code >= 10000) {
        major = code / 10000;
        minor = (code % 10000) / 100;
    } else {
        major = code / 1000;
        minor = (code % 1000) / 100;
    }
    snprintf(buf, len, "%d.%d.%d", major, minor, patch);
}

void arb_nccl_params_describe(const arb_nccl_params_t *p, const char *env_algo,
                              const char *env_proto, int nccl_version, char *buf, size_t len)
{
    const char *algo = p->algo ? p->algo : (env_algo && *env_algo) ? "env" : "auto";
    const char *proto = p->proto ? p->proto : (env_proto && *env_proto) ? "env" : "auto";
    char ver[32], chan[32] = "";
    arb_nccl_version_str(nccl_version, ver, sizeof ver);
    if (p->channels)
        snprintf(chan, sizeof chan, ",channels=%d", p->channels);
    snprintf(buf, len, "algo=%s,proto=%s%s,nccl=%s", algo, proto, chan, ver);
}
