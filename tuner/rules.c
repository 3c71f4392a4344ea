/* SPDX-License-Identifier: MIT */
#include "rules.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "nccl_tuner_abi.h"
#include "results/profile_row.h"
#include "results/results.h"
#include "results/role.h"

/* NCCL's MAXCHANNELS (src/include/device.h): NCCL never runs more channels than this. */
#define TUNER_MAX_CHANNELS 64

static const char *const algo_names[NCCL_NUM_ALGORITHMS_V5] = {
    [NCCL_ALGO_TREE] = "Tree",
    [NCCL_ALGO_RING] = "Ring",
    [NCCL_ALGO_COLLNET_DIRECT] = "CollnetDirect",
    [NCCL_ALGO_COLLNET_CHAIN] = "CollnetChain",
    [NCCL_ALGO_NVLS] = "NVLS",
    [NCCL_ALGO_NVLS_TREE] = "NVLSTree",
    [NCCL_ALGO_PAT] = "PAT",
};

static const char *const proto_names[NCCL_NUM_PROTOCOLS_V5] = {
    [NCCL_PROTO_LL] = "LL",
    [NCCL_PROTO_LL128] = "LL128",
    [NCCL_PROTO_SIMPLE] = "Simple",
};

const char *tuner_algo_name(int algo)
{
    if (algo == TUNER_NCCL_CHOICE)
        return "auto";
    return algo >= 0 && algo < NCCL_NUM_ALGORITHMS_V5 ? algo_names[algo] : "?";
}

const char *tuner_proto_name(int proto)
{
    if (proto == TUNER_NCCL_CHOICE)
        return "auto";
    return proto >= 0 && proto < NCCL_NUM_PROTOCOLS_V5 ? proto_names[proto] : "?";
}

/* Index of `name` in names[] (case-insensitive, as NCCL parses NCCL_ALGO, so CollNetDirect
 * also matches), "auto" -> TUNER_NCCL_CHOICE, else -2. */
static int lookup_name(const char *name, const char *const *names, int n)
{
    if (strcasecmp(name, "auto") == 0)
        return TUNER_NCCL_CHOICE;
    for (int i = 0; i < n; i++)
        if (strcasecmp(name, names[i]) == 0)
            return i;
    return -2;
}

/* A decimal integer of digits only (no sign, no spaces), into *v. */
static int parse_u64(const char *s, uint64_t *v)
{
    if (!s[0] || strspn(s, "0123456789") != strlen(s))
        return -1;
    errno = 0;
    unsigned long long x = strtoull(s, NULL, 10);
    if (errno == ERANGE)
        return -1;
    *v = (uint64_t)x;
    return 0;
}

typedef struct params {
    char algo[32], proto[32], channels[32];
    int has_algo, has_proto, has_channels;
} params_t;

/* Copies the value of `key` from a params string "k=v,k=v,..." into the matching slot;
 * unknown keys (nccl=2.28.3, ...) are ignored. Returns -1 on a value too long to be valid. */
static int parse_params(const char *s, params_t *p)
{
    memset(p, 0, sizeof *p);
    while (*s) {
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        if (eq) {
            size_t klen = (size_t)(eq - s), vlen = len - klen - 1;
            char *dst = NULL;
            int *has = NULL;
            if (klen == 4 && memcmp(s, "algo", 4) == 0) {
                dst = p->algo;
                has = &p->has_algo;
            } else if (klen == 5 && memcmp(s, "proto", 5) == 0) {
                dst = p->proto;
                has = &p->has_proto;
            } else if (klen == 8 && memcmp(s, "channels", 8) == 0) {
                dst = p->channels;
                has = &p->has_channels;
            }
            if (dst) {
                if (vlen >= sizeof p->algo)
                    return -1;
                memcpy(dst, eq + 1, vlen);
                dst[vlen] = '\0';
                *has = 1;
            }
        }
        s += len;
        if (*s == ',')
            s++;
    }
    return 0;
}

static int mode_rank(const char *mode)
{
    if (strcmp(mode, "graph") == 0)
        return 0;
    if (strcmp(mode, "context") == 0)
        return 1;
    if (strcmp(mode, "eager") == 0)
        return 2;
    return -1;
}

static int dtype_rank(const char *dtype)
{
    if (strcmp(dtype, "bf16") == 0)
        return 0;
    if (strcmp(dtype, "fp32") == 0)
        return 1;
    return 2;
}

typedef struct loader {
    const arb_table_t *t;
    const char *path;
    int c_schema, c_ranks, c_nodes, c_dtype, c_op, c_mode, c_min, c_max, c_impl, c_params;
    int c_rep, c_points, c_median, c_base_median, c_speedup, c_role; /* optional: -1 absent */
    tuner_warn_fn warn;
    void *warn_arg;
    char *err;
    size_t err_len;
} loader_t;

static void skip_row(const loader_t *ld, size_t line, const char *why, const char *value)
{
    char msg[512];
    snprintf(msg, sizeof msg, "%s: line %zu skipped: %s '%s'", ld->path, line, why, value);
    ld->warn(ld->warn_arg, msg);
}

static int bad_field(const loader_t *ld, size_t line, const char *col, const char *value,
                     const char *expected)
{
    snprintf(ld->err, ld->err_len, "%s: line %zu: column %s is '%s', expected %s", ld->path, line,
             col, value, expected);
    return -1;
}

/* Checks one row's numbers (every row, whatever its impl: a bad number means a damaged
 * file) and, for a row meant for NCCL on this communicator, fills *rule.
 * Returns -1 (error set) on a damaged row, 0 when the row is not for us, 1 for a rule. */
static int load_row(const loader_t *ld, size_t r, size_t nranks, size_t nnodes, tuner_rule_t *rule)
{
    char **row = ld->t->rows[r];
    size_t line = r + 2; /* line 1 is the header; profiles have no multi-line fields */
    uint64_t ranks, nodes = 0, lo, hi;
    if (strcmp(row[ld->c_schema], "1") != 0)
        return bad_field(ld, line, "schema", row[ld->c_schema], "1");
    if (parse_u64(row[ld->c_ranks], &ranks) || ranks == 0)
        return bad_field(ld, line, "ranks", row[ld->c_ranks], "a rank count >= 1");
    int nodes_known = ld->c_nodes >= 0 && row[ld->c_nodes][0];
    if (nodes_known && (parse_u64(row[ld->c_nodes], &nodes) || nodes == 0))
        return bad_field(ld, line, "nodes", row[ld->c_nodes], "a node count >= 1 or empty");
    if (parse_u64(row[ld->c_min], &lo))
        return bad_field(ld, line, "min_bytes", row[ld->c_min], "a byte count");
    if (parse_u64(row[ld->c_max], &hi))
        return bad_field(ld, line, "max_bytes", row[ld->c_max], "a byte count");
    if (lo > hi)
        return bad_field(ld, line, "min_bytes", row[ld->c_min], "at most max_bytes");
    const arb_profile_row_t pr = {
#define CELL(c) ((c) >= 0 ? row[c] : NULL)
        .min_bytes = row[ld->c_min], .max_bytes = row[ld->c_max], .rep_bytes = CELL(ld->c_rep),
        .points = CELL(ld->c_points), .median_us = CELL(ld->c_median), .baseline_median_us = CELL(ld->c_base_median),
        .speedup = CELL(ld->c_speedup), .role = CELL(ld->c_role),
#undef CELL
    };
    char why[256];
    const char *off = arb_profile_row_check(&pr, why, sizeof why);
    if (off) {
        snprintf(ld->err, ld->err_len, "%s: line %zu: column %s: %s (an edited or damaged profile?)", ld->path, line, off, why);
        return -1;
    }
    /* NCCL is steered where the baseline kept the range (role column; older profiles: impl). */
    arb_role_t role;
    if (!pr.role || !*pr.role || arb_role_parse(pr.role, &role))
        role = arb_role_of_legacy_row(row[ld->c_impl], "");
    if (role != ARB_ROLE_BASELINE || strcmp(row[ld->c_op], "allreduce") != 0)
        return 0; /* a candidate's or another operation's row: for servers, not NCCL */
    if (ranks != nranks || (nodes_known && nodes != nnodes))
        return 0;
    params_t p;
    if (parse_params(row[ld->c_params], &p)) {
        skip_row(ld, line, "params has an over-long value", row[ld->c_params]);
        return 0;
    }
    if (!p.has_algo && !p.has_proto)
        return 0; /* an NCCL row that does not name a choice */
    if (!p.has_algo || !p.has_proto) {
        skip_row(ld, line, "params must name both algo= and proto= (NCCL accepts no half choice), got",
                 row[ld->c_params]);
        return 0;
    }
    /* The nccl plugin writes "env" when NCCL_ALGO/NCCL_PROTO chose at measurement time:
     * the profile does not say what they were set to, so the row names no choice. */
    if (strcmp(p.algo, "env") == 0 || strcmp(p.proto, "env") == 0) {
        skip_row(ld, line, "algo/proto were set through NCCL_ALGO/NCCL_PROTO when measured, which the profile does not record:",
                 row[ld->c_params]);
        return 0;
    }
    int algo = lookup_name(p.algo, algo_names, NCCL_NUM_ALGORITHMS_V5);
    int proto = lookup_name(p.proto, proto_names, NCCL_NUM_PROTOCOLS_V5);
    if (algo == -2) {
        skip_row(ld, line, "unknown algorithm (expected Tree, Ring, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT or auto)",
                 p.algo);
        return 0;
    }
    if (proto == -2) {
        skip_row(ld, line, "unknown protocol (expected LL, LL128, Simple or auto)", p.proto);
        return 0;
    }
    uint64_t channels = 0;
    if (p.has_channels && (parse_u64(p.channels, &channels) || channels < 1 ||
                           channels > TUNER_MAX_CHANNELS)) {
        skip_row(ld, line, "channels must be an integer from 1 to 64, got", p.channels);
        return 0;
    }
    int mode = mode_rank(row[ld->c_mode]);
    if (mode < 0) {
        skip_row(ld, line, "unknown mode (expected graph, context or eager)", row[ld->c_mode]);
        return 0;
    }
    const char *dtype = ld->c_dtype >= 0 ? row[ld->c_dtype] : "";
    /* auto in either slot leaves both to NCCL: NCCL accepts no algorithm without protocol. */
    if (algo == TUNER_NCCL_CHOICE || proto == TUNER_NCCL_CHOICE)
        algo = proto = TUNER_NCCL_CHOICE;
    *rule = (tuner_rule_t){
        .min_bytes = lo,
        .max_bytes = hi,
        .mode_rank = mode,
        .dtype_rank = dtype_rank(dtype),
        .algo = algo,
        .proto = proto,
        .channels = (int)channels,
        .line = line,
    };
    snprintf(rule->what, sizeof rule->what, "%s/%s channels=%s (line %zu, %s, %s)",
             tuner_algo_name(algo), tuner_proto_name(proto), channels ? p.channels : "auto", line,
             row[ld->c_mode], dtype[0] ? dtype : "any dtype");
    return 1;
}

int tuner_rules_load(const char *path, size_t nranks, size_t nnodes, tuner_rules_t *out,
                     tuner_warn_fn warn, void *warn_arg, char *err, size_t err_len)
{
    static const char *const required[] = {"schema", "ranks", "op", "mode", "min_bytes",
                                           "max_bytes", "impl", "params", NULL};
    memset(out, 0, sizeof *out);
    arb_table_t t;
    if (arb_table_read(path, &t, err, err_len))
        return -1;
    int rc = -1;
    if (arb_table_require(&t, required, path, err, err_len))
        goto free_table;
    loader_t ld = {
        .t = &t,
        .path = path,
        .c_schema = arb_table_col(&t, "schema"),
        .c_ranks = arb_table_col(&t, "ranks"),
        .c_nodes = arb_table_col(&t, "nodes"), /* optional: absent = unknown */
        .c_dtype = arb_table_col(&t, "dtype"), /* optional: only a preference */
        .c_op = arb_table_col(&t, "op"),
        .c_mode = arb_table_col(&t, "mode"),
        .c_min = arb_table_col(&t, "min_bytes"),
        .c_max = arb_table_col(&t, "max_bytes"),
        .c_impl = arb_table_col(&t, "impl"),
        .c_params = arb_table_col(&t, "params"),
        .c_rep = arb_table_col(&t, "rep_bytes"),
        .c_points = arb_table_col(&t, "points"),
        .c_median = arb_table_col(&t, "median_us"),
        .c_base_median = arb_table_col(&t, "baseline_median_us"),
        .c_speedup = arb_table_col(&t, "speedup"),
        .c_role = arb_table_col(&t, "role"),
        .warn = warn,
        .warn_arg = warn_arg,
        .err = err,
        .err_len = err_len,
    };
    if (t.nrows) {
        out->v = calloc(t.nrows, sizeof *out->v);
        if (!out->v) {
            snprintf(err, err_len, "%s: out of memory for %zu rows", path, t.nrows);
            goto free_table;
        }
    }
    for (size_t r = 0; r < t.nrows; r++) {
        int got = load_row(&ld, r, nranks, nnodes, &out->v[out->n]);
        if (got < 0) {
            tuner_rules_free(out);
            goto free_table;
        }
        out->n += (size_t)got;
    }
    rc = 0;
free_table: /* on success too: the rules are copies, the table is no longer needed */
    arb_table_free(&t);
    return rc;
}

/* Is a preferred over b? Lower mode rank, then dtype rank, then narrower range, then
 * earlier line: deterministic whatever the row order. */
static int preferred(const tuner_rule_t *a, const tuner_rule_t *b)
{
    if (a->mode_rank != b->mode_rank)
        return a->mode_rank < b->mode_rank;
    if (a->dtype_rank != b->dtype_rank)
        return a->dtype_rank < b->dtype_rank;
    uint64_t wa = a->max_bytes - a->min_bytes, wb = b->max_bytes - b->min_bytes;
    if (wa != wb)
        return wa < wb;
    return a->line < b->line;
}

tuner_rule_t *tuner_rules_find(const tuner_rules_t *rules, uint64_t nbytes)
{
    tuner_rule_t *best = NULL;
    for (size_t i = 0; i < rules->n; i++) {
        tuner_rule_t *r = &rules->v[i];
        if (nbytes < r->min_bytes || nbytes > r->max_bytes)
            continue;
        if (!best || preferred(r, best))
            best = r;
    }
    return best;
}

void tuner_rules_free(tuner_rules_t *rules)
{
    free(rules->v);
    rules->v = NULL;
    rules->n = 0;
}
