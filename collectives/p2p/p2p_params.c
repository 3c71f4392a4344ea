/* SPDX-License-Identifier: MIT */
#include "p2p_params.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Parses a whole decimal integer in [lo, hi]; 0 on success. */
static int parse_int(const char *s, long lo, long hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

arb_status_t p2p_params_parse(const char *params, int ping, int nranks, p2p_params_t *out,
                              char *why, size_t why_len)
{
    const char *keys = ping ? "timeout_ms, test_hang_rank"
                            : "variant, blocks, threads, row_blocks, timeout_ms, test_hang_rank";
    p2p_params_t p = {
        .variant = ping ? P2P_PING : P2P_ONESHOT_PUSH,
        .blocks = ping ? 1 : 8,
        .threads = ping ? 32 : 512,
        .timeout_ms = P2P_DEFAULT_TIMEOUT_MS,
        .test_hang_rank = -1,
        .row_blocks = 0,
    };
    unsigned seen = 0; /* one bit per key: a key given twice is an error */
    char buf[512];
    if (!params)
        params = "";
    if (strlen(params) >= sizeof buf) {
        snprintf(why, why_len, "params '%.40s...': longer than %zu characters", params, sizeof buf - 1);
        return ARB_ERR_INVALID;
    }
    memcpy(buf, params, strlen(params) + 1);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) {
            snprintf(why, why_len, "params '%s': '%s' is not key=value (keys: %s)", params, kv, keys);
            return ARB_ERR_INVALID;
        }
        *eq = '\0';
        const char *key = kv, *val = eq + 1;
        unsigned bit = 0;
        int bad = 0;
        if (!ping && strcmp(key, "variant") == 0) {
            bit = 1u << 0;
            bad = 1;
            for (int v = P2P_ONESHOT_PULL; v <= P2P_ONESHOT_FLAGFREE; v++)
                if (strcmp(val, variant_names[v]) == 0) {
                    p.variant = (p2p_variant_t)v;
                    bad = 0;
                }
            if (bad) {
                snprintf(why, why_len, "parameter variant='%s': expected oneshot-pull, oneshot-push, twoshot or oneshot-flagfree", val);
                return ARB_ERR_INVALID;
            }
        } else if (!ping && strcmp(key, "blocks") == 0) {
            bit = 1u << 1;
            if (parse_int(val, 1, P2P_MAX_BLOCKS, &p.blocks)) {
                snprintf(why, why_len, "parameter blocks='%s': expected an integer 1..%d", val, P2P_MAX_BLOCKS);
                return ARB_ERR_INVALID;
            }
        } else if (!ping && strcmp(key, "threads") == 0) {
            bit = 1u << 2;
            if (parse_int(val, 32, 1024, &p.threads) || p.threads % 32) {
                snprintf(why, why_len, "parameter threads='%s': expected a multiple of 32 in 32..1024", val);
                return ARB_ERR_INVALID;
            }
        } else if (!ping && strcmp(key, "row_blocks") == 0) {
            bit = 1u << 5;
            /* a thread-block cluster: 8 CTAs is the portable maximum; powers of two
             * so that any grid rounds down to whole clusters predictably */
            if (parse_int(val, 1, 8, &p.row_blocks) || (p.row_blocks & (p.row_blocks - 1))) {
                snprintf(why, why_len, "parameter row_blocks='%s': expected 1, 2, 4 or 8", val);
                return ARB_ERR_INVALID;
            }
        } else if (strcmp(key, "timeout_ms") == 0) {
            bit = 1u << 3;
            if (parse_int(val, 1, 600000, &p.timeout_ms)) {
                snprintf(why, why_len, "parameter timeout_ms='%s': expected milliseconds 1..600000", val);
                return ARB_ERR_INVALID;
            }
        } else if (strcmp(key, "test_hang_rank") == 0) {
            bit = 1u << 4;
            if (parse_int(val, 0, nranks - 1, &p.test_hang_rank)) {
                snprintf(why, why_len, "parameter test_hang_rank='%s': expected a rank 0..%d", val, nranks - 1);
                return ARB_ERR_INVALID;
            }
        } else {
            snprintf(why, why_len, "unknown parameter '%s' (keys: %s)", key, keys);
            return ARB_ERR_INVALID;
        }
        if (seen & bit) {
            snprintf(why, why_len, "parameter %s given twice in '%s'", key, params);
            return ARB_ERR_INVALID;
        }
        seen |= bit;
    }
    /* The ping needs one thread per rank (each signals one peer and waits for one). */
    if (ping && p.threads < nranks)
        p.threads = (nranks + 31) / 32 * 32;
    /* One thread per peer signals and waits in each CTA. */
    if (p.threads < nranks) {
        snprintf(why, why_len, "parameter threads=%d: needs at least one thread per rank (%d ranks)", p.threads, nranks);
        return ARB_ERR_INVALID;
    }
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
    if (n >= 0 && (size_t)n < len && p->variant != P2P_PING && p->timeout_ms != P2P_DEFAULT_TIMEOUT_MS)
        n += snprintf(buf + n, len - (size_t)n, ",timeout_ms=%d", p->timeout_ms);
    if (n >= 0 && (size_t)n < len && p->test_hang_rank >= 0)
        snprintf(buf + n, len - (size_t)n, ",test_hang_rank=%d", p->test_hang_rank);
}
