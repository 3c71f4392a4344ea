/* SPDX-License-Identifier: MIT */
/* Per-call-site all-reduce choice from a tuning profile (rule in site_choice.h). */
#include "sites/site_choice.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "analysis/points.h"

const char *const arb_site_volatile_params[] = {"nccl", NULL};

size_t arb_site_bytes(const arb_site_t *s) { return (size_t)s->tokens * s->hidden * 2u; }

/* ---- reading: JSON is turned into the CSV columns and validated by the one reader ---- */

typedef struct strbuf {
    char *s;
    size_t n, cap;
    int oom;
} strbuf_t;

static void sb_put(strbuf_t *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->oom = 1;
            return;
        }
        b->s = t, b->cap = cap;
    }
    memcpy(b->s + b->n, s, n);
    b->n += n;
    b->s[b->n] = '\0';
}

/* One CSV field, always quoted ("" doubles a quote), so params with commas survive. */
static void sb_field(strbuf_t *b, const char *s, int last)
{
    sb_put(b, "\"", 1);
    for (const char *q = s; *q; q++) {
        sb_put(b, q, 1);
        if (*q == '"')
            sb_put(b, "\"", 1);
    }
    sb_put(b, last ? "\"\n" : "\",", 2);
}

/* JSON member -> CSV text. kind 's' string, 'i' integer, 'n' number, 'm' integer or
 * null meaning SIZE_MAX (max_bytes). null and absent members are empty fields. */
static int json_field(json_t *e, const char *key, char kind, char *out, size_t len, const char **want)
{
    json_t *v = json_object_get(e, key);
    out[0] = '\0';
    if (!v || json_is_null(v)) {
        if (kind == 'm' && v)
            snprintf(out, len, "%zu", (size_t)SIZE_MAX);
        return 0;
    }
    if (kind == 's' && json_is_string(v)) {
        snprintf(out, len, "%s", json_string_value(v));
        return 0;
    }
    if ((kind == 'i' || kind == 'm') && json_is_integer(v)) {
        snprintf(out, len, "%lld", (long long)json_integer_value(v));
        return 0;
    }
    if (kind == 'n' && json_is_number(v)) {
        snprintf(out, len, "%.17g", json_number_value(v));
        return 0;
    }
    *want = kind == 's' ? "a string" : kind == 'n' ? "a number" : kind == 'm' ? "an integer or null" : "an integer";
    return -1;
}

static const struct {
    const char *name;
    char kind;
} json_columns[] = {
    {"fabric", 's'}, {"ranks", 'i'}, {"nodes", 'i'}, {"dtype", 's'}, {"op", 's'}, {"mode", 's'},
    {"min_bytes", 'i'}, {"max_bytes", 'm'}, {"impl", 's'}, {"params", 's'}, {"median_us", 'n'},
    {"baseline_impl", 's'}, {"baseline_params", 's'}, {"baseline_median_us", 'n'}, {"speedup", 'n'},
    {"confidence", 's'}, {"sources", 's'}, {"fusion", 's'}, {"rep_bytes", 'i'},
};
#define NJSON_COLUMNS (sizeof json_columns / sizeof json_columns[0])

/* The CSV reader says "NAME: line N: ..."; for JSON, line N is entries[N - 2]. */
static void line_to_entry(char *why, size_t why_len, const char *name)
{
    size_t nl = strlen(name);
    unsigned long line;
    int off = 0;
    if (strncmp(why, name, nl) != 0 || sscanf(why + nl, ": line %lu:%n", &line, &off) != 1 || off == 0 || line < 2)
        return;
    char rest[1024];
    snprintf(rest, sizeof rest, "%s", why + nl + off);
    snprintf(why, why_len, "%s: entries[%lu]:%s", name, line - 2, rest);
}

arb_status_t arb_site_profile_from_json(const char *data, size_t len, const char *name, arb_profile_t *p,
                                        char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    json_error_t jerr;
    json_t *root = json_loadb(data, len, 0, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: line %d: not JSON (%s); expected the JSON export of arbench profile (docs/profile.md)", name, jerr.line, jerr.text);
    arb_status_t st = ARB_OK;
    strbuf_t b = {0};
    json_t *schema = json_object_get(root, "schema"), *entries = json_object_get(root, "entries");
    if (!json_is_object(root) || !json_is_integer(schema) || !json_is_array(entries))
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out, why, why_len, "%s: expected an object with integer \"schema\" and array \"entries\" (the JSON export of arbench profile, docs/profile.md)", name);
    sb_field(&b, "schema", 0);
    for (size_t c = 0; c < NJSON_COLUMNS; c++)
        sb_field(&b, json_columns[c].name, c + 1 == NJSON_COLUMNS);
    char schema_s[32];
    snprintf(schema_s, sizeof schema_s, "%lld", (long long)json_integer_value(schema));
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        if (!json_is_object(e))
            ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out, why, why_len, "%s: entries[%zu]: expected an object", name, i);
        sb_field(&b, schema_s, 0);
        for (size_t c = 0; c < NJSON_COLUMNS; c++) {
            char v[4096];
            const char *want = "";
            if (json_field(e, json_columns[c].name, json_columns[c].kind, v, sizeof v, &want))
                ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out, why, why_len, "%s: entries[%zu].%s: expected %s", name, i, json_columns[c].name, want);
            sb_field(&b, v, c + 1 == NJSON_COLUMNS);
        }
    }
    if (b.oom)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, why_len, "%s: out of memory", name);
    if (arb_profile_read_mem(b.s, b.n, name, p, why, why_len)) {
        line_to_entry(why, why_len, name);
        st = ARB_ERR_INVALID;
    }
out:
    free(b.s);
    json_decref(root);
    return st;
}

arb_status_t arb_site_profile_load(const char *path, arb_profile_t *p, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    FILE *f = fopen(path, "rb");
    if (!f)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "profile %s: cannot open: %s", path, strerror(errno));
    int c;
    while ((c = fgetc(f)) != EOF && isspace(c))
        ;
    if (c != '{') {
        fclose(f);
        if (arb_profile_read(path, p, why, why_len))
            return ARB_ERR_INVALID;
        return ARB_OK;
    }
    strbuf_t b = {0};
    sb_put(&b, "{", 1);
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        sb_put(&b, chunk, n);
    int rerr = ferror(f);
    fclose(f);
    arb_status_t st;
    if (rerr)
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out, why, why_len, "profile %s: read error", path);
    if (b.oom)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, why_len, "profile %s: out of memory", path);
    st = arb_site_profile_from_json(b.s, b.n, path, p, why, why_len);
out:
    free(b.s);
    return st;
}

/* ---- matching ---- */

static arb_fusion_t fusion_of(const arb_profile_entry_t *e, arb_op_t site_op)
{
    if (site_op != ARB_OP_ALLREDUCE_RMSNORM)
        return ARB_FUSION_AUTO;
    if (strcmp(e->op, "allreduce") == 0)
        return ARB_FUSION_COMPOSED; /* an all-reduce measured alone: our RMSNorm after it */
    if (strcmp(e->fusion, "fused") == 0)
        return ARB_FUSION_PLUGIN;
    if (strcmp(e->fusion, "unfused") == 0)
        return ARB_FUSION_COMPOSED;
    return ARB_FUSION_AUTO;
}

/* What a filter stage compares; stage k keeps entries passing stages 0..k. */
enum { ST_FABRIC, ST_RANKS, ST_NODES, ST_DTYPE, ST_OP, ST_MODE, ST_SIZE, ST_COUNT };

static int op_tier(const arb_profile_entry_t *e, arb_op_t op)
{
    if (strcmp(e->op, arb_op_name(op)) == 0)
        return 0;
    if (op == ARB_OP_ALLREDUCE_RMSNORM && strcmp(e->op, "allreduce") == 0)
        return 1;
    return -1;
}

static int passes(const arb_profile_entry_t *e, const arb_site_t *s, int stage)
{
    switch (stage) {
    case ST_FABRIC: return strcmp(e->fabric, s->fabric) == 0;
    case ST_RANKS: return e->ranks == s->ranks;
    case ST_NODES: return e->nodes == 0 || s->nodes == 0 || e->nodes == s->nodes;
    case ST_DTYPE: return strcmp(e->dtype, "bf16") == 0;
    case ST_OP: return op_tier(e, s->op) >= 0;
    case ST_MODE: return strcmp(e->mode, arb_mode_names[s->mode]) == 0;
    default: {
        size_t b = arb_site_bytes(s);
        return e->min_bytes <= b && b <= e->max_bytes;
    }
    }
}

/* The distinct values the surviving entries have at `stage`, for the fallback line. */
static void list_values(const arb_profile_t *p, const arb_site_t *s, int stage, char *out, size_t len)
{
    size_t used = 0, shown = 0;
    out[0] = '\0';
    for (size_t i = 0; i < p->n; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        int ok = 1;
        for (int k = 0; k < stage && ok; k++)
            ok = passes(e, s, k);
        if (!ok)
            continue;
        char v[128];
        switch (stage) {
        case ST_FABRIC: snprintf(v, sizeof v, "%s", e->fabric); break;
        case ST_RANKS: snprintf(v, sizeof v, "%d", e->ranks); break;
        case ST_NODES: snprintf(v, sizeof v, "%d", e->nodes); break;
        case ST_DTYPE: snprintf(v, sizeof v, "%s", e->dtype); break;
        case ST_OP: snprintf(v, sizeof v, "%s", e->op); break;
        case ST_MODE: snprintf(v, sizeof v, "%s", e->mode); break;
        default:
            if (e->max_bytes == SIZE_MAX)
                snprintf(v, sizeof v, "[%zu, max] %s", e->min_bytes, e->op);
            else
                snprintf(v, sizeof v, "[%zu, %zu] %s", e->min_bytes, e->max_bytes, e->op);
        }
        /* each value once */
        char needle[132];
        snprintf(needle, sizeof needle, "%s;", v);
        if (strstr(out, needle) || used + strlen(needle) + 8 >= len)
            continue;
        used += (size_t)snprintf(out + used, len - used, "%s", needle);
        shown++;
    }
    if (used)
        out[used - 1] = '\0'; /* drop the last ';' */
    (void)shown;
}

static const char *const stage_missing[ST_COUNT] = {
    "fabric", "ranks", "nodes", "dtype bf16", "op", "mode", "size range",
};

static void site_text(const arb_site_t *s, char *buf, size_t len)
{
    snprintf(buf, len, "site %s (%s, %zu B = %u x %u x 2, %s, %d ranks, fabric %s)", s->name ? s->name : "?",
             arb_op_name(s->op), arb_site_bytes(s), s->tokens, s->hidden, arb_mode_names[s->mode], s->ranks, s->fabric);
}

static void set_fallback(arb_choice_t *out, const arb_site_t *s, const char *fallback)
{
    snprintf(out->impl, sizeof out->impl, "%s", fallback);
    out->params[0] = '\0';
    out->fusion = s->op == ARB_OP_ALLREDUCE_RMSNORM ? ARB_FUSION_COMPOSED : ARB_FUSION_AUTO;
    out->from_profile = 0;
    out->entry = NULL;
}

arb_status_t arb_site_choose(const arb_profile_t *p, const char *profile_name, const arb_site_t *site,
                             const char *fallback, arb_choice_t *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (!site->tokens || !site->hidden || !site->fabric || !*site->fabric || site->ranks < 1 ||
        (unsigned)site->mode >= ARB_MODE_COUNT)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "call site %s: expected tokens >= 1, hidden >= 1, ranks >= 1, a mode and a fabric label", site->name ? site->name : "?");
    char st[256];
    site_text(site, st, sizeof st);
    const char *pname = profile_name ? profile_name : "the profile";
    const char *fb = fallback && *fallback ? fallback : ARB_SITE_FALLBACK;
    if (strlen(fb) >= sizeof out->impl)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "fallback implementation '%s': longer than %zu bytes", fb, sizeof out->impl - 1);
    if (!p || p->n == 0) {
        set_fallback(out, site, fb);
        snprintf(out->note, sizeof out->note, "%s: no profile entries%s%s -> %s (its own choice)%s", st,
                 p ? " in " : "", p ? pname : "", fb, out->fusion == ARB_FUSION_COMPOSED ? ", composed" : "");
        return ARB_OK;
    }
    const arb_profile_entry_t *best = NULL;
    int best_tier = 0, best_exact_nodes = 0;
    for (size_t i = 0; i < p->n; i++) {
        const arb_profile_entry_t *e = &p->e[i];
        int ok = 1;
        for (int k = 0; k < ST_COUNT && ok; k++)
            ok = passes(e, site, k);
        if (!ok)
            continue;
        int tier = op_tier(e, site->op), exact = site->nodes != 0 && e->nodes == site->nodes;
        if (!best || tier < best_tier || (tier == best_tier && exact > best_exact_nodes))
            best = e, best_tier = tier, best_exact_nodes = exact;
    }
    if (!best) {
        /* The first stage that leaves nothing names what the profile lacks. */
        int stage = 0;
        for (; stage < ST_COUNT; stage++) {
            size_t left = 0;
            for (size_t i = 0; i < p->n; i++) {
                int ok = 1;
                for (int k = 0; k <= stage && ok; k++)
                    ok = passes(&p->e[i], site, k);
                left += ok;
            }
            if (!left)
                break;
        }
        char have[256];
        list_values(p, site, stage, have, sizeof have);
        set_fallback(out, site, fb);
        snprintf(out->note, sizeof out->note, "%s: no entry in %s for its %s (%s has: %s) -> %s (its own choice)%s", st,
                 pname, stage_missing[stage], pname, *have ? have : "nothing", fb, out->fusion == ARB_FUSION_COMPOSED ? ", composed" : "");
        return ARB_OK;
    }
    if (strlen(best->impl) >= sizeof out->impl)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: impl '%s' is longer than %zu bytes", pname, best->impl, sizeof out->impl - 1);
    snprintf(out->impl, sizeof out->impl, "%s", best->impl);
    arb_params_strip(best->params, arb_site_volatile_params, out->params, sizeof out->params);
    out->fusion = fusion_of(best, site->op);
    out->from_profile = 1;
    out->entry = best;
    char range[64];
    if (best->max_bytes == SIZE_MAX)
        snprintf(range, sizeof range, "[%zu, max]", best->min_bytes);
    else
        snprintf(range, sizeof range, "[%zu, %zu]", best->min_bytes, best->max_bytes);
    char label[340];
    arb_choice_label(out, label, sizeof label);
    snprintf(out->note, sizeof out->note, "%s: %s from %s (%s %s %s, confidence %s)", st, label, pname, best->op, best->mode,
             range, *best->confidence ? best->confidence : "-");
    return ARB_OK;
}

arb_status_t arb_choice_parse(const char *spec, arb_choice_t *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    const char *colon = strchr(spec, ':');
    size_t nlen = colon ? (size_t)(colon - spec) : strlen(spec);
    if (nlen == 0 || nlen >= sizeof out->impl)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "implementation '%s': expected IMPL[:params] with a name of 1 to %zu bytes", spec, sizeof out->impl - 1);
    if (colon && strlen(colon + 1) >= sizeof out->params)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "implementation '%s': params longer than %zu bytes", spec, sizeof out->params - 1);
    memcpy(out->impl, spec, nlen);
    out->impl[nlen] = '\0';
    snprintf(out->params, sizeof out->params, "%s", colon ? colon + 1 : "");
    out->fusion = ARB_FUSION_AUTO;
    snprintf(out->note, sizeof out->note, "%s given on the command line", spec);
    return ARB_OK;
}

void arb_choice_label(const arb_choice_t *c, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s%s%s", c->impl, *c->params ? ":" : "", c->params,
             c->fusion == ARB_FUSION_PLUGIN ? " fused" : c->fusion == ARB_FUSION_COMPOSED ? " unfused" : "");
}
