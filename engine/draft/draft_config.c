/* SPDX-License-Identifier: MIT */
/* An EAGLE-3 draft head's config.json, checked against the target (engine/draft/draft_config.h). */
#include "draft/draft_config.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "arbench/status.h"

/* Integer field `key` of o into *out: required unless dflt >= 0 (its value when absent). */
static arb_status_t uint_field(json_t *o, const char *key, long dflt, const char *origin, unsigned *out, char *why,
                               size_t len)
{
    json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v)) {
        if (dflt < 0)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft config has no '%s' (expected a positive integer)", origin,
                      key);
        *out = (unsigned)dflt;
        return ARB_OK;
    }
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > INT_MAX)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft config field '%s' must be a positive integer", origin, key);
    *out = (unsigned)json_integer_value(v);
    return ARB_OK;
}

static arb_status_t real_field(json_t *o, const char *key, double dflt, const char *origin, double *out, char *why,
                               size_t len)
{
    json_t *v = json_object_get(o, key);
    *out = dflt;
    if (!v || json_is_null(v))
        return ARB_OK;
    if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) <= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft config field '%s' must be a positive number", origin, key);
    *out = json_number_value(v);
    return ARB_OK;
}

/* What this engine does not run, refused by name. */
static arb_status_t unsupported(json_t *root, const char *origin, char *why, size_t len)
{
    json_t *arch = json_object_get(root, "architectures");
    int llama_eagle3 = 0;
    for (size_t i = 0; json_is_array(arch) && i < json_array_size(arch); i++) {
        const char *a = json_string_value(json_array_get(arch, i));
        llama_eagle3 |= a && strcmp(a, "LlamaForCausalLMEagle3") == 0;
    }
    if (!llama_eagle3)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: architectures must name LlamaForCausalLMEagle3 (an EAGLE-3 draft head of one Llama layer)",
                  origin);
    static const char *const no_true[] = {"tie_word_embeddings", "attention_bias", "mlp_bias", "bias"};
    for (size_t i = 0; i < sizeof no_true / sizeof no_true[0]; i++)
        if (json_is_true(json_object_get(root, no_true[i])))
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "%s: draft config field '%s' is true: not supported (expected false or absent)", origin,
                      no_true[i]);
    const char *act = json_string_value(json_object_get(root, "hidden_act"));
    if (json_object_get(root, "hidden_act") && (!act || strcmp(act, "silu") != 0))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft config hidden_act '%s' is not supported (expected silu)",
                  origin, act ? act : "?");
    json_t *rs = json_object_get(root, "rope_scaling");
    if (rs && !json_is_null(rs))
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: draft config rope_scaling is not supported (expected null: plain RoPE)", origin);
    return ARB_OK;
}

/* eagle_config.eagle_aux_hidden_state_layer_ids, or SGLang's default for the target's layers. */
static arb_status_t aux_layers(json_t *root, const char *origin, const arb_model_config_t *t, arb_draft_config_t *d,
                               char *why, size_t len)
{
    const unsigned L = t->num_hidden_layers;
    json_t *ids = json_object_get(json_object_get(root, "eagle_config"), "eagle_aux_hidden_state_layer_ids");
    long v[ARB_DRAFT_AUX] = {1, (long)(L / 2) - 1, (long)L - 4}; /* inputs of 2, L/2, L-3 */
    d->aux_from_file = ids != NULL;
    if (ids) {
        if (!json_is_array(ids) || json_array_size(ids) != ARB_DRAFT_AUX)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "%s: eagle_config.eagle_aux_hidden_state_layer_ids must list %u layers", origin, ARB_DRAFT_AUX);
        for (unsigned i = 0; i < ARB_DRAFT_AUX; i++) {
            json_t *x = json_array_get(ids, i);
            v[i] = json_is_integer(x) ? (long)json_integer_value(x) : -1;
        }
    }
    for (unsigned i = 0; i < ARB_DRAFT_AUX; i++) {
        if (v[i] < 0 || v[i] >= (long)L || (i && v[i] <= v[i - 1]))
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "%s: fused target layers %ld, %ld, %ld (%s) are not ascending layers of the target's %u (%s)",
                      origin, v[0], v[1], v[2],
                      ids ? "eagle_config.eagle_aux_hidden_state_layer_ids" : "SGLang's default 1, L/2-1, L-4", L,
                      t->name);
        d->aux_layers[i] = (unsigned)v[i];
    }
    return ARB_OK;
}

static arb_status_t from_root(json_t *root, const char *origin, const arb_model_config_t *t, arb_draft_config_t *d,
                              char *why, size_t len)
{
    unsigned layers = 0, target_hidden = 0;
    ARB_TRY(unsupported(root, origin, why, len));
    ARB_TRY(uint_field(root, "num_hidden_layers", 1, origin, &layers, why, len));
    if (layers != 1)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: draft config num_hidden_layers %u: only one decoder layer (the midlayer) is supported", origin,
                  layers);
    ARB_TRY(uint_field(root, "hidden_size", -1, origin, &d->hidden_size, why, len));
    ARB_TRY(uint_field(root, "intermediate_size", -1, origin, &d->intermediate_size, why, len));
    ARB_TRY(uint_field(root, "num_attention_heads", -1, origin, &d->num_attention_heads, why, len));
    ARB_TRY(uint_field(root, "num_key_value_heads", d->num_attention_heads, origin, &d->num_key_value_heads, why, len));
    if (!json_object_get(root, "head_dim") && d->hidden_size % d->num_attention_heads)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: draft config has no head_dim and hidden_size %u is not a multiple of num_attention_heads %u",
                  origin, d->hidden_size, d->num_attention_heads);
    ARB_TRY(uint_field(root, "head_dim", d->hidden_size / d->num_attention_heads, origin, &d->head_dim, why, len));
    ARB_TRY(uint_field(root, "vocab_size", -1, origin, &d->vocab_size, why, len));
    ARB_TRY(uint_field(root, "draft_vocab_size", d->vocab_size, origin, &d->draft_vocab_size, why, len));
    ARB_TRY(uint_field(root, "target_hidden_size", d->hidden_size, origin, &target_hidden, why, len));
    ARB_TRY(real_field(root, "rms_norm_eps", 1e-6, origin, &d->rms_norm_eps, why, len));
    ARB_TRY(real_field(root, "rope_theta", 10000.0, origin, &d->rope_theta, why, len));
    if (d->head_dim % 2)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft head_dim %u must be even (RoPE pairs)", origin, d->head_dim);
    if (d->num_attention_heads % d->num_key_value_heads)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: draft num_attention_heads %u is not a multiple of num_key_value_heads %u", origin,
                  d->num_attention_heads, d->num_key_value_heads);
    if (d->hidden_size != t->hidden_size || target_hidden != t->hidden_size)
        ARB_RAISE(
            ARB_ERR_INVALID, why, len,
            "%s: draft hidden_size %u (target_hidden_size %u) differs from the target's hidden_size %u (%s): expected equal",
            origin, d->hidden_size, target_hidden, t->hidden_size, t->name);
    if (d->vocab_size != t->vocab_size)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft vocab_size %u differs from the target's vocab_size %u (%s)",
                  origin, d->vocab_size, t->vocab_size, t->name);
    if (d->draft_vocab_size > d->vocab_size)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft_vocab_size %u is larger than vocab_size %u", origin,
                  d->draft_vocab_size, d->vocab_size);
    return aux_layers(root, origin, t, d, why, len);
}

arb_status_t arb_draft_config_parse(const char *text, const char *origin, const arb_model_config_t *target,
                                    arb_draft_config_t *d, char *why, size_t len)
{
    memset(d, 0, sizeof *d);
    snprintf(d->source, sizeof d->source, "%s", origin);
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: %s at line %d", origin, jerr.text, jerr.line);
    arb_status_t st = json_is_object(root) ? from_root(root, origin, target, d, why, len) : ARB_ERR_INVALID;
    if (!json_is_object(root))
        snprintf(why, len, "%s: a draft config.json must be a JSON object", origin);
    json_decref(root);
    return st;
}

arb_status_t arb_draft_config_load(const char *path, const arb_model_config_t *target, arb_draft_config_t *d, char *why,
                                   size_t len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: cannot open the draft head's config.json", path);
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int big = !feof(f);
    fclose(f);
    if (big)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: a draft config.json over %zu bytes", path, sizeof buf - 1);
    buf[n] = 0;
    return arb_draft_config_parse(buf, path, target, d, why, len);
}
