/* SPDX-License-Identifier: MIT */
/* The weight format from config.json's quantization_config (engine/weights/quant.h). */
#include "weights/quant.h"

#include <jansson.h>
#include <string.h>

#include "arbench/status.h"
#include "weights/int4_ct.h"

static const char *str_field(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static arb_status_t group_scheme(json_t *w, const char *origin, const char *group, char *why, size_t len)
{
    char org[1200];
    snprintf(org, sizeof org, "%s quantization_config.config_groups.%s.weights", origin, group);
    if (!json_is_object(w))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: missing (expected an object)", org);
    const char *type = str_field(w, "type"), *strategy = str_field(w, "strategy");
    if (!type || strcmp(type, "int") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: type '%s' is not supported (accepted: int)", org,
                  type ? type : "(missing)");
    if (!strategy || strcmp(strategy, "group") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: strategy '%s' is not supported (accepted: group)", org,
                  strategy ? strategy : "(missing)");
    json_t *bits = json_object_get(w, "num_bits"), *gs = json_object_get(w, "group_size"),
           *sym = json_object_get(w, "symmetric");
    if (!json_is_integer(bits) || !json_is_integer(gs) || !json_is_boolean(sym))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: needs integer num_bits and group_size and boolean symmetric", org);
    if (json_integer_value(bits) < 0 || json_integer_value(gs) < 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: num_bits and group_size must be non-negative", org);
    arb_int4_ct_scheme_t s = {.num_bits = (unsigned)json_integer_value(bits),
                              .group_size = (unsigned)json_integer_value(gs),
                              .symmetric = json_is_true(sym)};
    return arb_int4_ct_scheme_check(&s, org, why, len);
}

/* DeepSeek-V3's {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}. */
static arb_status_t fp8_scheme(json_t *q, const char *origin, char *why, size_t len)
{
    const char *fmt = str_field(q, "fmt");
    if (fmt && strcmp(fmt, "e4m3") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: quantization_config.fmt '%s' is not supported (accepted: e4m3)",
                  origin, fmt);
    json_t *b = json_object_get(q, "weight_block_size");
    if (!json_is_array(b) || json_array_size(b) != 2 || !json_is_integer(json_array_get(b, 0)) ||
        !json_is_integer(json_array_get(b, 1)) || json_integer_value(json_array_get(b, 0)) != ARB_FP8_BLOCK ||
        json_integer_value(json_array_get(b, 1)) != ARB_FP8_BLOCK)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: quantization_config.weight_block_size must be [%u, %u] (the blocks the loader dequantizes)",
                  origin, ARB_FP8_BLOCK, ARB_FP8_BLOCK);
    return ARB_OK;
}

static arb_status_t from_root(json_t *root, const char *origin, arb_ckpt_quant_t *cq, char *why, size_t len)
{
    arb_weight_format_t *wf = &cq->experts;
    cq->fp8 = 0;
    json_t *q = json_object_get(root, "quantization_config");
    json_t *text = json_object_get(root, "text_config");
    if (!q && json_is_object(text))
        q = json_object_get(text, "quantization_config");
    if (!q || json_is_null(q)) {
        *wf = ARB_WEIGHTS_BF16;
        return ARB_OK;
    }
    if (!json_is_object(q))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: quantization_config must be an object", origin);
    const char *method = str_field(q, "quant_method"), *format = str_field(q, "format");
    if (method && strcmp(method, "fp8") == 0) {
        ARB_TRY(fp8_scheme(q, origin, why, len));
        *wf = ARB_WEIGHTS_BF16;
        cq->fp8 = 1;
        return ARB_OK;
    }
    if (!method || strcmp(method, "compressed-tensors") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: quantization_config.quant_method '%s' is not supported (accepted: compressed-tensors "
                  "pack-quantized INT4, fp8 e4m3 128x128 blocks, or no quantization_config for bf16)",
                  origin, method ? method : "(missing)");
    if (!format || strcmp(format, "pack-quantized") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "%s: quantization_config.format '%s' is not supported (accepted: pack-quantized)", origin,
                  format ? format : "(missing)");
    json_t *groups = json_object_get(q, "config_groups");
    if (!json_is_object(groups) || json_object_size(groups) == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: quantization_config.config_groups missing or empty", origin);
    const char *key;
    json_t *g;
    json_object_foreach(groups, key, g) ARB_TRY(group_scheme(json_object_get(g, "weights"), origin, key, why, len));
    *wf = ARB_WEIGHTS_INT4;
    return ARB_OK;
}

arb_status_t arb_weights_quant_parse(const char *text, const char *origin, arb_ckpt_quant_t *q, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: %s at line %d", origin, jerr.text, jerr.line);
    arb_status_t st = from_root(root, origin, q, why, len);
    json_decref(root);
    return st;
}

arb_status_t arb_weights_quant_load(const char *path, arb_ckpt_quant_t *q, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: %s at line %d", path, jerr.text, jerr.line);
    arb_status_t st = from_root(root, path, q, why, len);
    json_decref(root);
    return st;
}

arb_status_t arb_weights_format_parse(const char *text, const char *origin, arb_weight_format_t *wf, char *why,
                                      size_t len)
{
    arb_ckpt_quant_t q;
    ARB_TRY(arb_weights_quant_parse(text, origin, &q, why, len));
    *wf = q.experts;
    return ARB_OK;
}

arb_status_t arb_weights_format_load(const char *path, arb_weight_format_t *wf, char *why, size_t len)
{
    arb_ckpt_quant_t q;
    ARB_TRY(arb_weights_quant_load(path, &q, why, len));
    *wf = q.experts;
    return ARB_OK;
}
