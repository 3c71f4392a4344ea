/* SPDX-License-Identifier: MIT */
#include "p2p_params.h"

#include <stdio.h>
#include <string.h>

#include "arb_plugin_util.h"
#include "arbench/status.h"
#include "p2p_common.h"

static const char *const variant_names[] = {
    [P2P_ONESHOT_PULL] = "oneshot-pull",
    [P2P_ONESHOT_PUSH] = "oneshot-push",
    [P2P_TWOSHOT] = "twoshot",
    [P2P_ONESHOT_FLAGFREE] = "oneshot-flagfree",
    [P2P_PING] = "ping",
};

const char *p2p_variant_name(p2p_variant_t v)
{
    return (unsigned)v < sizeof variant_names / sizeof variant_names[0] ? variant_names[v] : "?";
}

enum { KEY_VARIANT, KEY_BLOCKS, KEY_THREADS, KEY_ROW_BLOCKS, KEY_PDL, KEY_TIMEOUT, KEY_HANG, NKEYS };
/* The names of p2p's knobs; lsa uses the same ones (blocks, row_blocks) for the same
 * meaning. The ping plugin takes the last two only. */
static const arb_kv_key_t p2p_keys[NKEYS] = {
    {"variant", NULL},    {"blocks", NULL},     {"threads", NULL},
    {"row_blocks", NULL}, {"pdl", NULL},      {"timeout_ms", NULL}, {"test_hang_rank", NULL},
};
static const arb_kv_key_t *const ping_keys = p2p_keys + KEY_TIMEOUT;

typedef struct parse_ctx {
    p2p_params_t *p;
    int ping, nranks;
} parse_ctx_t;

static arb_status_t on_pair(void *vctx, int key, const char *val, char *why, size_t why_len)
{
    parse_ctx_t *c = vctx;
    p2p_params_t *p = c->p;
    if (c->ping)
        key += KEY_TIMEOUT;
    switch (key) {
    case KEY_VARIANT:
        for (int v = P2P_ONESHOT_PULL; v <= P2P_ONESHOT_FLAGFREE; v++)
            if (strcmp(val, variant_names[v]) == 0) {
                p->variant = (p2p_variant_t)v;
                return ARB_OK;
            }
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter variant='%s': expected oneshot-pull, oneshot-push, twoshot or oneshot-flagfree", val);
    case KEY_BLOCKS:
        if (arb_kv_int(val, 1, P2P_MAX_BLOCKS, &p->blocks))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter blocks='%s': expected an integer 1..%d", val, P2P_MAX_BLOCKS);
        return ARB_OK;
    case KEY_THREADS:
        if (arb_kv_int(val, 32, 1024, &p->threads) || p->threads % 32)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter threads='%s': expected a multiple of 32 in 32..1024", val);
        return ARB_OK;
    case KEY_ROW_BLOCKS:
        /* a thread-block cluster: 8 CTAs is the portable maximum; powers of two so that
         * any grid rounds down to whole clusters predictably */
        if (arb_kv_int(val, 1, 8, &p->row_blocks) || (p->row_blocks & (p->row_blocks - 1)))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter row_blocks='%s': expected 1, 2, 4 or 8", val);
        return ARB_OK;
    case KEY_PDL:
        if (arb_kv_int(val, 0, 1, &p->pdl))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter pdl='%s': expected 0 or 1", val);
        return ARB_OK;
    case KEY_TIMEOUT:
        if (arb_kv_int(val, 1, 600000, &p->timeout_ms))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter timeout_ms='%s': expected milliseconds 1..600000", val);
        return ARB_OK;
    default:
        if (arb_kv_int(val, 0, c->nranks - 1, &p->test_hang_rank))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter test_hang_rank='%s': expected a rank 0..%d", val, c->nranks - 1);
        return ARB_OK;
    }
}

arb_status_t p2p_params_parse(const char *params, int ping, int nranks, p2p_params_t *out,
                              char *why, size_t why_len)
{
    p2p_params_t p = {
        .variant = ping ? P2P_PING : P2P_ONESHOT_PUSH,
        .blocks = ping ? 1 : 8,
        .threads = ping ? 32 : 512,
        .timeout_ms = P2P_DEFAULT_TIMEOUT_MS,
        .test_hang_rank = -1,
        .row_blocks = 0,
    };
    parse_ctx_t c = {&p, ping, nranks};
    ARB_TRY(arb_kv_parse(ping ? "ping" : "p2p", params, ping ? ping_keys : p2p_keys, ping ? NKEYS - KEY_TIMEOUT : NKEYS,
                         on_pair, &c, NULL, why, why_len));
    /* The ping needs one thread per rank (each signals one peer and waits for one). */
    if (ping && p.threads < nranks)
        p.threads = (nranks + 31) / 32 * 32;
    /* One thread per peer signals and waits in each CTA. */
    if (p.threads < nranks)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "p2p: parameter threads=%d: needs at least one thread per rank (%d ranks)", p.threads, nranks);
    *out = p;
    return ARB_OK;
}

void p2p_params_describe(const p2p_params_t *p, char *buf, size_t len)
{
    int n;
    if (p->variant == P2P_PING)
        n = snprintf(buf, len, "timeout_ms=%d", p->timeout_ms);
    else
        n = snprintf(buf, len, "variant=%s,blocks=%d,threads=%d", p2p_variant_name(p->variant), p->blocks,
                     p->threads);
    if (n < 0 || (size_t)n >= len)
        return;
    if (p->variant != P2P_PING && p->row_blocks > 0)
        n += snprintf(buf + n, len - (size_t)n, ",row_blocks=%d", p->row_blocks);
    if (n >= 0 && (size_t)n < len && p->variant != P2P_PING && p->pdl)
        n += snprintf(buf + n, len - (size_t)n, ",pdl=1");
    if (n >= 0 && (size_t)n < len && p->variant != P2P_PING && p->timeout_ms != P2P_DEFAULT_TIMEOUT_MS)
        n += snprintf(buf + n, len - (size_t)n, ",timeout_ms=%d", p->timeout_ms);
    if (n >= 0 && (size_t)n < len && p->test_hang_rank >= 0)
        snprintf(buf + n, len - (size_t)n, ",test_hang_rank=%d", p->test_hang_rank);
}
