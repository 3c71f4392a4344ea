/* SPDX-License-Identifier: MIT */
#include "nccl_params.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "arb_plugin_util.h"
#include "arbench/status.h"

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

enum { KEY_ALGO, KEY_PROTO, KEY_CHANNELS, NKEYS };
static const arb_kv_key_t keys[NKEYS] = {{"algo", NULL}, {"proto", NULL}, {"channels", NULL}};

static arb_status_t on_pair(void *ctx, int key, const char *value, char *why, size_t why_len)
{
    arb_nccl_params_t *out = ctx;
    switch (key) {
    case KEY_ALGO:
        if (strcasecmp(value, "auto") == 0)
            out->algo = NULL;
        else if (!(out->algo = lookup(algo_names, value)))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "nccl: algo '%s' is not one of " ACCEPTED_ALGOS, value);
        return ARB_OK;
    case KEY_PROTO:
        if (strcasecmp(value, "auto") == 0)
            out->proto = NULL;
        else if (!(out->proto = lookup(proto_names, value)))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "nccl: proto '%s' is not one of " ACCEPTED_PROTOS, value);
        return ARB_OK;
    default:
        if (arb_kv_int(value, 1, ARB_NCCL_MAX_CHANNELS, &out->channels))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "nccl: channels '%s' is not an integer from 1 to %d", value,
                      ARB_NCCL_MAX_CHANNELS);
        return ARB_OK;
    }
}

arb_status_t arb_nccl_params_parse(const char *params, arb_nccl_params_t *out, char *why,
                                   size_t why_len)
{
    memset(out, 0, sizeof *out);
    const arb_status_t st = arb_kv_parse("nccl", params, keys, NKEYS, on_pair, out, NULL, why, why_len);
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
