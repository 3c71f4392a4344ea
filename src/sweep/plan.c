/* SPDX-License-Identifier: MIT */
#include "sweep/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

#define DEFAULT_HIDDEN 7168u
#define DEFAULT_DENSE "32K:56K:+2K"
#define DEFAULT_TOKENS "1,2,3,4,6,8,12,16,24,32,48,64"
#define DEFAULT_FUSED_TOKENS "1,2,3,4,8,16,32,64"

void arb_plan_defaults(arb_plan_t *p)
{
    memset(p, 0, sizeof *p);
    p->impls_default = 1;
    p->hidden = DEFAULT_HIDDEN;
    p->modes = (1u << ARB_MODE_EAGER) | (1u << ARB_MODE_GRAPH) | (1u << ARB_MODE_CONTEXT);
    p->dtype = ARB_DTYPE_BF16;
    p->op = ARB_OP_ALLREDUCE;
    p->iters = 200;
    p->warmup = 20;
    p->graph_ops = 20;
    p->graph_replays = 50;
    p->context_us = 20.0;
    p->eps = 1e-6f;
    p->check = 1;
    p->bind = 1;
    char err[256];
    /* The defaults parse by construction; a failure here is a programming error. */
    if (arb_plan_set_tokens(p, DEFAULT_TOKENS, err, sizeof err))
        abort();
    size_t dense[ARB_MAX_SIZES], n = 0;
    if (arb_parse_size_list(DEFAULT_DENSE, dense, ARB_MAX_SIZES, &n, err, sizeof err))
        abort();
    for (size_t i = 0; i < n; i++) {
        int dup = 0;
        for (size_t j = 0; j < p->nsizes; j++)
            dup |= p->sizes[j] == dense[i];
        if (!dup) {
            p->sizes[p->nsizes] = dense[i];
            p->tokens[p->nsizes++] = 0;
        }
    }
}

arb_status_t arb_plan_parse_modes(const char *list, unsigned *modes, char *err, size_t err_len)
{
    *modes = 0;
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return ARB_ERR_INVALID;
    for (char *m = strtok_r(copy, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
        int found = -1;
        for (int i = 0; i < ARB_MODE_COUNT; i++)
            if (strcmp(m, arb_mode_names[i]) == 0)
                found = i;
        if (strcmp(m, "all") == 0) {
            *modes = (1u << ARB_MODE_COUNT) - 1;
            continue;
        }
        if (found < 0) {
            snprintf(err, err_len, "--modes: unknown mode '%s' (expected a comma-separated list of eager, graph, context, or all)", m);
            free(copy);
            return ARB_ERR_INVALID;
        }
        *modes |= 1u << found;
    }
    free(copy);
    if (!*modes) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--modes: empty list (expected eager, graph, context or all)");
    }
    return ARB_OK;
}

arb_status_t arb_plan_parse_dtype(const char *s, arb_dtype_t *d, char *err, size_t err_len)
{
    if (strcmp(s, "bf16") == 0)
        *d = ARB_DTYPE_BF16;
    else if (strcmp(s, "fp32") == 0)
        *d = ARB_DTYPE_FP32;
    else {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--dtype: unknown type '%s' (expected bf16 or fp32)", s);
    }
    return ARB_OK;
}

arb_status_t arb_plan_parse_op(const char *s, arb_op_t *op, char *err, size_t err_len)
{
    if (strcmp(s, "allreduce") == 0)
        *op = ARB_OP_ALLREDUCE;
    else if (strcmp(s, "allreduce_rmsnorm") == 0 || strcmp(s, "rmsnorm") == 0)
        *op = ARB_OP_ALLREDUCE_RMSNORM;
    else {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--op: unknown operation '%s' (expected allreduce or allreduce_rmsnorm)", s);
    }
    return ARB_OK;
}

/* Appends spec, expanded over every '|'-separated value of its parameters, in the order
 * the values are given (the first key varies slowest). */
static arb_status_t expand_grid(arb_plan_t *p, const arb_impl_spec_t *spec, char *err, size_t err_len)
{
    const char *bar = strchr(spec->params, '|');
    if (!bar) {
        if (p->nimpls >= ARB_MAX_IMPLS) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl: more than %d implementations (a parameter grid counts each combination)", ARB_MAX_IMPLS);
        }
        p->impls[p->nimpls++] = *spec;
        return ARB_OK;
    }
    /* The item holding the first '|': from the ',' (or ':'-less start) before it to the ',' after. */
    size_t start = (size_t)(bar - spec->params);
    while (start > 0 && spec->params[start - 1] != ',')
        start--;
    const char *eq = memchr(spec->params + start, '=', (size_t)(bar - spec->params) - start);
    if (!eq) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl %s: '|' alternatives go in a value, as in blocks=8|16 (got '%s')", spec->name, spec->params);
    }
    size_t vstart = (size_t)(eq + 1 - spec->params);
    size_t vend = vstart + strcspn(spec->params + vstart, ",");
    const char *alt = spec->params + vstart;
    while (alt < spec->params + vend) {
        size_t alen = strcspn(alt, "|,");
        if (alen == 0) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl %s: empty alternative in '%s'", spec->name, spec->params);
        }
        arb_impl_spec_t one = *spec;
        int n = snprintf(one.params, sizeof one.params, "%.*s%.*s%s", (int)vstart, spec->params, (int)alen, alt,
                         spec->params + vend);
        if (n < 0 || (size_t)n >= sizeof one.params) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl %s: parameters too long", spec->name);
        }
        if (expand_grid(p, &one, err, err_len))
            return ARB_ERR_INVALID;
        alt += alen;
        if (*alt == '|')
            alt++;
    }
    return ARB_OK;
}

/* "nccl,p2p:variant=oneshot-push,blocks=8" cannot be split on ',' naively: a new
 * item starts at a ',' followed by a name that has no '=' before the next ',' or ':'. */
arb_status_t arb_plan_parse_impls(const char *list, arb_plan_t *p, char *err, size_t err_len)
{
    p->nimpls = 0;
    p->impls_default = 0;
    const char *s = list;
    if (!*s) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl: empty list");
    }
    while (*s) {
        const char *end = s;
        const char *colon = NULL;
        while (*end) {
            if (*end == ':' && !colon)
                colon = end;
            if (*end == ',' ) {
                const char *q = end + 1;
                size_t span = strcspn(q, ",:=");
                if (!colon || q[span] != '=')
                    break; /* next token is a new implementation */
            }
            end++;
        }
        if (p->nimpls >= ARB_MAX_IMPLS) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl: more than %d implementations", ARB_MAX_IMPLS);
        }
        arb_impl_spec_t spec;
        memset(&spec, 0, sizeof spec);
        size_t nlen = (size_t)((colon ? colon : end) - s);
        if (nlen == 0 || nlen >= sizeof spec.name) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl: bad implementation name in '%s' (expected NAME[:PARAMS][,NAME...])", list);
        }
        memcpy(spec.name, s, nlen);
        spec.name[nlen] = '\0';
        spec.has_params = colon != NULL;
        if (colon) {
            size_t plen = (size_t)(end - colon - 1);
            if (plen >= sizeof spec.params) {
                ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--impl: parameters of '%s' too long", spec.name);
            }
            memcpy(spec.params, colon + 1, plen);
            spec.params[plen] = '\0';
        }
        if (expand_grid(p, &spec, err, err_len))
            return ARB_ERR_INVALID;
        s = *end ? end + 1 : end;
    }
    return ARB_OK;
}

arb_status_t arb_plan_set_sizes(arb_plan_t *p, const char *list, char *err, size_t err_len)
{
    char e[512];
    if (arb_parse_size_list(list, p->sizes, ARB_MAX_SIZES, &p->nsizes, e, sizeof e)) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--sizes: %s", e);
    }
    memset(p->tokens, 0, sizeof p->tokens);
    return ARB_OK;
}

arb_status_t arb_plan_set_tokens(arb_plan_t *p, const char *list, char *err, size_t err_len)
{
    unsigned toks[ARB_MAX_SIZES];
    size_t n = 0;
    char e[512];
    if (arb_parse_uint_list(list, toks, ARB_MAX_SIZES, &n, e, sizeof e)) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--tokens: %s", e);
    }
    /* Element size is applied in arb_plan_finish, once the dtype is known. */
    for (size_t i = 0; i < n; i++) {
        p->tokens[i] = toks[i];
        p->sizes[i] = 0;
    }
    p->nsizes = n;
    return ARB_OK;
}

static int cmp_size_tok(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return (x[0] > y[0]) - (x[0] < y[0]);
}

arb_status_t arb_plan_finish(arb_plan_t *p, char *err, size_t err_len)
{
    size_t elt = arb_dtype_size(p->dtype);
    if (p->op == ARB_OP_ALLREDUCE_RMSNORM && p->dtype != ARB_DTYPE_BF16) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--op allreduce_rmsnorm: only --dtype bf16 is supported");
    }
    if (p->hidden == 0) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--hidden: expected a positive integer");
    }
    size_t pairs[ARB_MAX_SIZES][2];
    size_t n = 0;
    for (size_t i = 0; i < p->nsizes; i++) {
        size_t bytes = p->tokens[i] ? (size_t)p->tokens[i] * p->hidden * elt : p->sizes[i];
        if (p->op == ARB_OP_ALLREDUCE_RMSNORM && !p->tokens[i]) {
            if (bytes % ((size_t)p->hidden * elt)) {
                ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--sizes: %zu bytes is not a whole number of %u-wide bf16 rows; give --tokens for --op allreduce_rmsnorm", bytes, p->hidden);
            }
            p->tokens[i] = (unsigned)(bytes / ((size_t)p->hidden * elt));
        }
        if (bytes == 0 || bytes % elt) {
            ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--sizes: %zu bytes is not a whole number of %s elements (%zu bytes each)", bytes, arb_dtype_name(p->dtype), elt);
        }
        int dup = 0;
        for (size_t j = 0; j < n; j++)
            if (pairs[j][0] == bytes) {
                dup = 1;
                if (p->tokens[i] && !pairs[j][1])
                    pairs[j][1] = p->tokens[i];
            }
        if (!dup) {
            pairs[n][0] = bytes;
            pairs[n][1] = p->tokens[i];
            n++;
        }
    }
    qsort(pairs, n, sizeof pairs[0], cmp_size_tok);
    for (size_t i = 0; i < n; i++) {
        p->sizes[i] = pairs[i][0];
        p->tokens[i] = (unsigned)pairs[i][1];
    }
    p->nsizes = n;
    if (p->iters == 0 || p->graph_ops == 0 || p->graph_replays == 0) {
        ARB_RAISE(ARB_ERR_INVALID, err, err_len, "--iters, --graph-ops and --graph-replays must be positive");
    }
    return ARB_OK;
}

size_t arb_plan_canonical(const arb_plan_t *p, char *buf, size_t len)
{
    size_t used = 0;
#define PUT(...)                                                                   \
    do {                                                                           \
        int n_ = snprintf(buf + (used < len ? used : len), used < len ? len - used : 0, __VA_ARGS__); \
        if (n_ > 0)                                                                \
            used += (size_t)n_;                                                    \
    } while (0)
    PUT("op=%s dtype=%s hidden=%u modes=%u iters=%u warmup=%u graph_ops=%u replays=%u context_us=%.3f eps=%g check=%d host=%d impls=",
        arb_op_name(p->op), arb_dtype_name(p->dtype), p->hidden, p->modes, p->iters, p->warmup,
        p->graph_ops, p->graph_replays, p->context_us, (double)p->eps, p->check, p->host_only);
    for (size_t i = 0; i < p->nimpls; i++)
        PUT("%s%s%s%s", i ? "," : "", p->impls[i].name, p->impls[i].has_params ? ":" : "", p->impls[i].params);
    PUT(" sizes=");
    for (size_t i = 0; i < p->nsizes; i++)
        PUT("%s%zu", i ? "," : "", p->sizes[i]);
#undef PUT
    return used;
}

unsigned long long arb_plan_hash(const arb_plan_t *p)
{
    size_t need = arb_plan_canonical(p, NULL, 0) + 1;
    char *buf = malloc(need);
    if (!buf)
        return 0;
    arb_plan_canonical(p, buf, need);
    unsigned long long h = 1469598103934665603ull; /* FNV-1a 64 */
    for (const unsigned char *c = (const unsigned char *)buf; *c; c++) {
        h ^= *c;
        h *= 1099511628211ull;
    }
    free(buf);
    return h;
}
