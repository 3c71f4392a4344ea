/* SPDX-License-Identifier: MIT */
/*
 * The model configuration: every field of a Hugging Face config.json of the DeepSeek-V3
 * family (model_type deepseek_v3 or kimi_k2; Kimi-K2.5 nests it under text_config) that
 * the forward pass (engine/forward.md) uses, read once with jansson into a plain struct.
 * A missing field or an unknown model_type is an error naming it. Command-line overrides
 * (--layers, --experts, ...) are applied afterwards and recorded in `overrides`.
 */
#ifndef ARB_ENGINE_CONFIG_H
#define ARB_ENGINE_CONFIG_H

#include <stddef.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum arb_model_type {
    ARB_MODEL_DEEPSEEK_V3 = 1, /* "deepseek_v3" */
    ARB_MODEL_KIMI_K2 = 2,     /* "kimi_k2" (the same architecture) */
} arb_model_type_t;

typedef enum arb_rope_kind {
    ARB_ROPE_PLAIN = 0, /* rope_scaling null: inv_freq = theta^(-2i/dr), m = 1 */
    ARB_ROPE_YARN = 1,  /* rope_scaling.type (or rope_type) "yarn" */
} arb_rope_kind_t;

typedef struct arb_rope_scaling {
    arb_rope_kind_t kind;
    double factor;
    double beta_fast;
    double beta_slow;
    double mscale;
    double mscale_all_dim; /* 0 in a file means "absent" in HF's code: no softmax_scale change */
    unsigned original_max_position_embeddings;
} arb_rope_scaling_t;

typedef struct arb_model_config {
    char name[64];      /* config name (file stem) or the path's basename */
    char source[1024];  /* the file it was read from */
    char model_type_str[32];
    arb_model_type_t model_type;
    int nested_text_config; /* 1 when the fields came from text_config (Kimi-K2.5) */

    unsigned hidden_size;           /* H */
    unsigned num_hidden_layers;     /* Lz (after --layers) */
    unsigned num_attention_heads;   /* nh */
    unsigned q_lora_rank;           /* rq */
    unsigned kv_lora_rank;          /* rkv */
    unsigned qk_nope_head_dim;      /* dn */
    unsigned qk_rope_head_dim;      /* dr (even) */
    unsigned v_head_dim;            /* dv */
    unsigned n_routed_experts;      /* E (after --experts) */
    unsigned num_experts_per_tok;   /* k (after --topk) */
    unsigned n_shared_experts;
    unsigned moe_intermediate_size; /* I_e */
    unsigned intermediate_size;     /* I_d (dense layers) */
    unsigned first_k_dense_replace; /* layers 0 .. this-1 are dense */
    unsigned n_group;
    unsigned topk_group;
    double routed_scaling_factor;
    char scoring_func[16];          /* "sigmoid" (the only one forward.md defines) */
    int norm_topk_prob;             /* 1: w_j normalised over the selected experts */
    unsigned vocab_size;            /* V */
    double rms_norm_eps;
    double rope_theta;
    arb_rope_scaling_t rope_scaling;

    /* The file's values before overrides, and what was overridden ("" when nothing),
     * e.g. "layers=4,experts=16": recorded in every results row. */
    unsigned file_num_hidden_layers;
    unsigned file_n_routed_experts;
    char overrides[256];
} arb_model_config_t;

/* Overrides from the command line; 0 (or < 0 for doubles) = keep the file's value. */
typedef struct arb_config_overrides {
    unsigned layers;  /* --layers L: num_hidden_layers (first_k_dense_replace clamped to L) */
    unsigned experts; /* --experts E: n_routed_experts (must stay a multiple of n_group, >= k) */
    unsigned topk;    /* --topk k: num_experts_per_tok */
    unsigned vocab;   /* --vocab V: vocab_size */
} arb_config_overrides_t;

/* `name_or_path`: a path (contains '/' or ends in ".json") or the name of a shipped config
 * (engine/configs/NAME.json in the source tree or the install's data dir). */
arb_status_t arb_config_load(const char *name_or_path, arb_model_config_t *cfg, char *why, size_t why_len);

/* The file arb_config_load reads for name_or_path, into path: returns 0 for a path, 1 for
 * a shipped name found, -1 for a name not found. */
int arb_config_path(const char *name_or_path, char *path, size_t len);

/* Parses config.json text; `origin` names it in messages. */
arb_status_t arb_config_parse(const char *json_text, const char *origin, arb_model_config_t *cfg, char *why,
                              size_t why_len);

/* Applies overrides (checks the result is still a valid model) and records them. */
arb_status_t arb_config_override(arb_model_config_t *cfg, const arb_config_overrides_t *ov, char *why,
                                 size_t why_len);

/* Checks the relations forward.md needs (dr even, E % n_group, topk_group <= n_group,
 * k <= experts in the kept groups, ...); arb_config_parse and _override call it. */
arb_status_t arb_config_validate(const arb_model_config_t *cfg, char *why, size_t why_len);

/* 1 when layer l runs the dense MLP (l < first_k_dense_replace), 0 for MoE. */
static inline int arb_config_layer_dense(const arb_model_config_t *cfg, unsigned l)
{
    return l < cfg->first_k_dense_replace;
}

#ifdef __cplusplus
}
#endif

#endif
