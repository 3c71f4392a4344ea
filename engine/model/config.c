/* SPDX-License-Identifier: MIT */
/* Reads a DeepSeek-V3-family config.json into arb_model_config_t (engine/model/config.h). */
#include "model/config.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arbench/status.h"

#ifndef ARB_ENGINE_CONFIG_DIR
#define ARB_ENGINE_CONFIG_DIR ""
#endif
#ifndef ARB_ENGINE_CONFIG_INSTALL_DIR
#define ARB_ENGINE_CONFIG_INSTALL_DIR ""
#endif

/* A positive (or, with allow_zero, non-negative) integer field. */
static arb_status_t get_uint(json_t *o, const char *key, const char *origin, int allow_zero, unsigned *out,
                             char *why, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field '%s'", origin, key);
    if (!json_is_integer(v))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' must be an integer", origin, key);
    json_int_t x = json_integer_value(v);
    if (x < (allow_zero ? 0 : 1) || x > INT_MAX)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' = %lld is out of range (expected %s integer)", origin,
                  key, (long long)x, allow_zero ? "a non-negative" : "a positive");
    *out = (unsigned)x;
    return ARB_OK;
}

static arb_status_t get_num(json_t *o, const char *key, const char *origin, double *out, char *why, size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field '%s'", origin, key);
    if (!json_is_number(v))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' must be a number", origin, key);
    *out = json_number_value(v);
    if (!isfinite(*out))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' is not finite", origin, key);
    return ARB_OK;
}

static arb_status_t get_str(json_t *o, const char *key, const char *origin, char *out, size_t out_len, char *why,
                            size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!v)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field '%s'", origin, key);
    if (!json_is_string(v))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' must be a string", origin, key);
    if (strlen(json_string_value(v)) >= out_len)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field '%s' is too long", origin, key);
    snprintf(out, out_len, "%s", json_string_value(v));
    return ARB_OK;
}

static arb_status_t parse_rope_scaling(json_t *o, const char *origin, arb_rope_scaling_t *rs, char *why, size_t len)
{
    json_t *v = json_object_get(o, "rope_scaling");
    memset(rs, 0, sizeof *rs);
    if (!v)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field 'rope_scaling' (null for plain RoPE)", origin);
    if (json_is_null(v)) {
        rs->kind = ARB_ROPE_PLAIN;
        return ARB_OK;
    }
    if (!json_is_object(v))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field 'rope_scaling' must be an object or null", origin);
    char org[1100];
    snprintf(org, sizeof org, "%s rope_scaling", origin);
    json_t *t = json_object_get(v, "type");
    if (!t)
        t = json_object_get(v, "rope_type");
    if (!t || !json_is_string(t))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field 'type' (or 'rope_type')", org);
    if (strcmp(json_string_value(t), "yarn") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: type '%s' is not supported (accepted: yarn, or rope_scaling null)",
                  org, json_string_value(t));
    rs->kind = ARB_ROPE_YARN;
    ARB_TRY(get_num(v, "factor", org, &rs->factor, why, len));
    ARB_TRY(get_num(v, "beta_fast", org, &rs->beta_fast, why, len));
    ARB_TRY(get_num(v, "beta_slow", org, &rs->beta_slow, why, len));
    ARB_TRY(get_num(v, "mscale", org, &rs->mscale, why, len));
    ARB_TRY(get_num(v, "mscale_all_dim", org, &rs->mscale_all_dim, why, len));
    ARB_TRY(get_uint(v, "original_max_position_embeddings", org, 0, &rs->original_max_position_embeddings, why, len));
    if (!(rs->factor > 0) || !(rs->beta_fast > 0) || !(rs->beta_slow > 0))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: factor, beta_fast and beta_slow must be positive", org);
    return ARB_OK;
}

arb_status_t arb_config_validate(const arb_model_config_t *c, char *why, size_t len)
{
    const char *o = c->source[0] ? c->source : c->name;
    if (c->qk_rope_head_dim % 2)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: qk_rope_head_dim %u must be even (RoPE rotates pairs)", o,
                  c->qk_rope_head_dim);
    if (c->n_routed_experts % c->n_group)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: n_routed_experts %u is not a multiple of n_group %u", o,
                  c->n_routed_experts, c->n_group);
    if (c->topk_group < 1 || c->topk_group > c->n_group)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: topk_group %u must lie in 1..n_group (%u)", o, c->topk_group,
                  c->n_group);
    if (c->n_group > 1 && c->n_routed_experts / c->n_group < 2)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: n_group %u leaves fewer than 2 experts per group (the group score sums the top 2)", o,
                  c->n_group);
    unsigned kept = c->n_group > 1 ? c->topk_group * (c->n_routed_experts / c->n_group) : c->n_routed_experts;
    if (c->num_experts_per_tok > kept)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: num_experts_per_tok %u exceeds the %u experts of the topk_group kept groups", o,
                  c->num_experts_per_tok, kept);
    if (c->first_k_dense_replace > c->num_hidden_layers)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: first_k_dense_replace %u exceeds num_hidden_layers %u", o,
                  c->first_k_dense_replace, c->num_hidden_layers);
    if (strcmp(c->scoring_func, "sigmoid") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: scoring_func '%s' is not supported (accepted: sigmoid)", o,
                  c->scoring_func);
    if (!(c->rms_norm_eps > 0) || !(c->rope_theta > 1) || !(c->routed_scaling_factor > 0))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: rms_norm_eps and routed_scaling_factor must be > 0, rope_theta > 1",
                  o);
    return ARB_OK;
}

static arb_status_t parse_object(json_t *root, const char *origin, arb_model_config_t *c, char *why, size_t len)
{
    json_t *o = root;
    json_t *text = json_object_get(root, "text_config");
    if (text) {
        if (!json_is_object(text))
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field 'text_config' must be an object", origin);
        o = text;
        c->nested_text_config = 1;
    }
    ARB_TRY(get_str(o, "model_type", origin, c->model_type_str, sizeof c->model_type_str, why, len));
    if (strcmp(c->model_type_str, "deepseek_v3") == 0)
        c->model_type = ARB_MODEL_DEEPSEEK_V3;
    else if (strcmp(c->model_type_str, "kimi_k2") == 0)
        c->model_type = ARB_MODEL_KIMI_K2;
    else
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: model_type '%s' is not supported (accepted: deepseek_v3, kimi_k2; Kimi-K2.5 nests kimi_k2 "
                  "under text_config)",
                  origin, c->model_type_str);

    static const struct {
        const char *key;
        size_t off;
        int allow_zero;
    } uints[] = {
#define U(f, z) {#f, offsetof(arb_model_config_t, f), z}
        U(hidden_size, 0), U(num_hidden_layers, 0), U(num_attention_heads, 0), U(kv_lora_rank, 0),
        U(qk_nope_head_dim, 0), U(qk_rope_head_dim, 0), U(v_head_dim, 0), U(n_routed_experts, 0),
        U(num_experts_per_tok, 0), U(n_shared_experts, 1), U(moe_intermediate_size, 0), U(intermediate_size, 0),
        U(first_k_dense_replace, 1), U(n_group, 0), U(topk_group, 0), U(vocab_size, 0),
#undef U
    };
    for (size_t i = 0; i < sizeof uints / sizeof uints[0]; i++)
        ARB_TRY(get_uint(o, uints[i].key, origin, uints[i].allow_zero, (unsigned *)((char *)c + uints[i].off), why,
                         len));
    json_t *q = json_object_get(o, "q_lora_rank");
    if (q && json_is_null(q))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: q_lora_rank is null (no query compression, as DeepSeek-V2-Lite); forward.md needs q_lora_rank",
                  origin);
    ARB_TRY(get_uint(o, "q_lora_rank", origin, 0, &c->q_lora_rank, why, len));
    ARB_TRY(get_num(o, "routed_scaling_factor", origin, &c->routed_scaling_factor, why, len));
    ARB_TRY(get_num(o, "rms_norm_eps", origin, &c->rms_norm_eps, why, len));
    ARB_TRY(get_num(o, "rope_theta", origin, &c->rope_theta, why, len));
    ARB_TRY(get_str(o, "scoring_func", origin, c->scoring_func, sizeof c->scoring_func, why, len));
    json_t *n = json_object_get(o, "norm_topk_prob");
    if (!n)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing field 'norm_topk_prob'", origin);
    if (!json_is_boolean(n))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: field 'norm_topk_prob' must be true or false", origin);
    c->norm_topk_prob = json_is_true(n);
    /* Optional in the file, but when present they must be what forward.md implements. */
    json_t *tm = json_object_get(o, "topk_method");
    if (tm && (!json_is_string(tm) || strcmp(json_string_value(tm), "noaux_tc") != 0))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: topk_method must be \"noaux_tc\" (the correction-bias router)",
                  origin);
    json_t *lf = json_object_get(o, "moe_layer_freq");
    if (lf && (!json_is_integer(lf) || json_integer_value(lf) != 1))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: moe_layer_freq must be 1 (every layer after the dense ones is MoE)",
                  origin);
    ARB_TRY(parse_rope_scaling(o, origin, &c->rope_scaling, why, len));
    c->file_num_hidden_layers = c->num_hidden_layers;
    c->file_n_routed_experts = c->n_routed_experts;
    c->overrides[0] = '\0';
    return arb_config_validate(c, why, len);
}

arb_status_t arb_config_parse(const char *json_text, const char *origin, arb_model_config_t *c, char *why,
                              size_t len)
{
    memset(c, 0, sizeof *c);
    snprintf(c->source, sizeof c->source, "%s", origin);
    const char *base = strrchr(origin, '/');
    snprintf(c->name, sizeof c->name, "%s", base ? base + 1 : origin);
    char *dot = strstr(c->name, ".json");
    if (dot)
        *dot = '\0';
    json_error_t err;
    json_t *root = json_loads(json_text, 0, &err);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: not JSON (line %d: %s)", origin, err.line, err.text);
    arb_status_t st = ARB_OK;
    if (!json_is_object(root))
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out, why, len, "%s: the top level must be an object", origin);
    st = parse_object(root, origin, c, why, len);
out:
    json_decref(root);
    return st;
}

static char *read_file(const char *path, size_t max)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *buf = malloc(max + 1);
    size_t n = buf ? fread(buf, 1, max, f) : 0;
    fclose(f);
    if (!buf)
        return NULL;
    buf[n] = '\0';
    return buf;
}

int arb_config_path(const char *name_or_path, char *path, size_t len)
{
    const char *dirs[] = {ARB_ENGINE_CONFIG_DIR, ARB_ENGINE_CONFIG_INSTALL_DIR};
    size_t nl = strlen(name_or_path);
    if (strchr(name_or_path, '/') || (nl > 5 && strcmp(name_or_path + nl - 5, ".json") == 0)) {
        snprintf(path, len, "%s", name_or_path);
        return 0;
    }
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, len, "%s/%s.json", dirs[i], name_or_path);
        if (dirs[i][0] && access(path, R_OK) == 0)
            return 1;
    }
    return -1;
}

arb_status_t arb_config_load(const char *name_or_path, arb_model_config_t *c, char *why, size_t len)
{
    char path[1024];
    const char *dirs[] = {ARB_ENGINE_CONFIG_DIR, ARB_ENGINE_CONFIG_INSTALL_DIR};
    const size_t max_bytes = 1u << 20; /* a config.json is a few KB */
    char *text = NULL;
    if (!*name_or_path)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--config '': expected a shipped config name or a path to config.json");
    int found = arb_config_path(name_or_path, path, sizeof path), is_path = found == 0;
    if (found >= 0)
        text = read_file(path, max_bytes);
    if (!text && is_path)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--config '%s': cannot read the file", name_or_path);
    if (!text)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "--config '%s': no shipped config of that name in %s or %s (names: kimi-k2, deepseek-v3, "
                  "tiny; or give a path to a config.json)",
                  name_or_path, dirs[0], dirs[1]);
    arb_status_t st = arb_config_parse(text, path, c, why, len);
    free(text);
    if (st == ARB_OK && !is_path)
        snprintf(c->name, sizeof c->name, "%s", name_or_path);
    return st;
}

static void note(char *buf, size_t n, const char *key, unsigned v)
{
    size_t used = strlen(buf);
    snprintf(buf + used, n - used, "%s%s=%u", used ? "," : "", key, v);
}

arb_status_t arb_config_override(arb_model_config_t *c, const arb_config_overrides_t *ov, char *why, size_t len)
{
    if (ov->layers) {
        c->num_hidden_layers = ov->layers;
        if (c->first_k_dense_replace > ov->layers)
            c->first_k_dense_replace = ov->layers;
        note(c->overrides, sizeof c->overrides, "layers", ov->layers);
    }
    if (ov->experts) {
        if (ov->experts % c->n_group)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "--experts %u: must be a multiple of n_group %u of %s", ov->experts,
                      c->n_group, c->name);
        c->n_routed_experts = ov->experts;
        note(c->overrides, sizeof c->overrides, "experts", ov->experts);
    }
    if (ov->topk) {
        c->num_experts_per_tok = ov->topk;
        note(c->overrides, sizeof c->overrides, "topk", ov->topk);
    }
    if (ov->vocab) {
        c->vocab_size = ov->vocab;
        note(c->overrides, sizeof c->overrides, "vocab", ov->vocab);
    }
    return arb_config_validate(c, why, len);
}
