/* SPDX-License-Identifier: MIT */
/*
 * The tensors of a DeepSeek-V3-family checkpoint as Hugging Face publishes them, for one
 * config.json and one rank of tp_shape K: each tensor's name, its stored (unsharded)
 * shape as config.json implies it, the dtypes accepted, and the block this rank reads
 * (engine/forward.md "Sharding"; engine/model/shard.h gives the ranges):
 *
 *   model.embed_tokens.weight [V x H], model.norm.weight [H]             replicated
 *   lm_head.weight [V x H]                                                rows vocab0 ..
 *   model.layers.L.input_layernorm.weight, .post_attention_layernorm.weight [H]   replicated
 *   model.layers.L.self_attn.q_a_proj.weight [rq x H], .q_a_layernorm.weight [rq],
 *     .kv_a_proj_with_mqa.weight [rkv + dr x H], .kv_a_layernorm.weight [rkv]       replicated
 *   model.layers.L.self_attn.q_b_proj.weight [nh (dn + dr) x rq]           rows of the rank's heads
 *   model.layers.L.self_attn.kv_b_proj.weight [nh (dn + dv) x rkv]          rows of the rank's heads
 *   model.layers.L.self_attn.o_proj.weight [H x nh dv]                      columns of the rank's heads
 *   dense layers: model.layers.L.mlp.{gate,up}_proj.weight [I_d x H] rows, .down_proj.weight [H x I_d] columns
 *   MoE layers:   model.layers.L.mlp.gate.weight [E x H], .gate.e_score_correction_bias [E] (F32)  replicated
 *                 model.layers.L.mlp.shared_experts.{gate,up,down}_proj.weight   as the dense MLP, I_s
 *                 model.layers.L.mlp.experts.X.{gate,up,down}_proj.weight       as the dense MLP, I_e
 *
 * With INT4 routed experts (compressed-tensors pack-quantized) each expert projection P is
 * three tensors instead of P.weight: P.weight_packed [out x in/8] I32, P.weight_scale
 * [out x in/32] BF16 (split as the weight is: gate/up by rows, down by columns, in packed
 * words and groups) and P.weight_shape [2] I32 or I64 = {out, in}, replicated. Everything
 * else is BF16. Tensors a checkpoint has beyond these (DeepSeek-V3's multi-token-prediction
 * layer 61, layers past --layers) are not read. Kimi-K2.5 wraps the same text model as
 * `language_model` (vision_tower and mm_projector beside it): every name above then
 * carries the prefix "language_model." (arb_wplan_detect_prefix in slice.h finds it).
 */
#ifndef ARB_ENGINE_WEIGHTS_NAMES_H
#define ARB_ENGINE_WEIGHTS_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/shard.h"
#include "weights/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum arb_wsplit {
    ARB_WSPLIT_WHOLE = 0, /* replicated: every rank reads all of it */
    ARB_WSPLIT_ROWS = 1,  /* column-parallel: rows first .. first+count-1 of [rows x cols] */
    ARB_WSPLIT_COLS = 2,  /* row-parallel: columns first .. first+count-1 */
} arb_wsplit_t;

typedef enum arb_wpart {
    ARB_WPART_WEIGHT = 0, /* P.weight (or a bias) */
    ARB_WPART_PACKED = 1, /* P.weight_packed: converted to the engine's nibbles when read */
    ARB_WPART_SCALE = 2,  /* P.weight_scale */
    ARB_WPART_SHAPE = 3,  /* P.weight_shape: checked against {out, in}, not loaded */
} arb_wpart_t;

typedef struct arb_wspec {
    char name[112];
    uint32_t tensor; /* enum arb_wgen_tensor (engine/model/wgen.h): which weight of the engine */
    unsigned layer;  /* 0 for embed_tokens, model.norm, lm_head */
    int expert;      /* routed expert number, -1 otherwise */
    arb_wpart_t part;
    unsigned ndim;                   /* 1 or 2 */
    uint64_t shape[2];               /* stored, unsharded */
    uint64_t logical[2];             /* ARB_WPART_SHAPE: the {out, in} it must hold */
    arb_st_dtype_t dtype, dtype_alt; /* accepted; dtype_alt 0 when only one */
    arb_wsplit_t split;
    uint64_t first, count; /* this rank's rows or columns (whole: 0 and shape[0]) */
    const char *why_shape; /* the config.json fields behind shape, for messages */
} arb_wspec_t;

typedef struct arb_wplan {
    arb_weight_format_t format;
    char prefix[32];   /* before every name: "" or "language_model." */
    char config[1024]; /* the config.json the shapes come from */
    int fp8;           /* 1: linear weights may be F8_E4M3 with a weight_scale_inv (engine/weights/quant.h) */
    size_t n;
    arb_wspec_t *specs; /* model order: embed, layers, norm, lm_head */
} arb_wplan_t;

/* The tensors rank sh->rank (or shard range sh) of sh->tp_shape reads for `cfg` (after
 * overrides: --layers L keeps layers 0 .. L-1; --experts E experts 0 .. E-1 and a router
 * of E rows, which a real checkpoint of more experts refuses), each name after `prefix`
 * (NULL or "" for none; at most 31 characters). */
arb_status_t arb_wplan_make(const arb_model_config_t *cfg, arb_weight_format_t wf, const arb_shard_t *sh,
                            const char *prefix, arb_wplan_t *plan, char *why, size_t why_len);

void arb_wplan_free(arb_wplan_t *plan);

/* The spec called `name`, NULL when the plan has none (linear search: tests and messages). */
const arb_wspec_t *arb_wplan_find(const arb_wplan_t *plan, const char *name);

/* Elements of this rank's block of s (what arb_wspec_read writes). */
uint64_t arb_wspec_rank_numel(const arb_wspec_t *s);

#ifdef __cplusplus
}
#endif

#endif
