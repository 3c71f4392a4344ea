/* SPDX-License-Identifier: MIT */
/*
 * An EAGLE-3 draft head's tensors (SpecForge's state dict, as SGLang loads it), one rank's
 * blocks of them, read through engine/weights (safetensors, the index, the plan check):
 *
 *   fc.weight [H x 3H]                                            replicated
 *   midlayer.input_layernorm / hidden_norm / post_attention_layernorm .weight [H]   replicated
 *   midlayer.self_attn.q_proj.weight [nh hd x 2H]                 rows of the rank's heads
 *   midlayer.self_attn.{k,v}_proj.weight [nkv hd x 2H]            rows of the kv heads those heads read
 *   midlayer.self_attn.o_proj.weight [H x nh hd]                  columns of the rank's heads
 *   midlayer.mlp.{gate,up}_proj.weight [I x H] rows, .down_proj.weight [H x I] columns
 *   norm.weight [H]                                               replicated
 *   lm_head.weight [Vd x H]                                       rows vocab0 .. (the last shard takes the remainder)
 *   d2t [Vd] I64: target id = draft id + d2t[draft id]             replicated
 *
 * (t2d [V] BOOL and embed_tokens.weight are not read: the embedding is the target's, as in
 * SGLang.) Every name may carry the prefix "model." (found from fc.weight). Split as SGLang
 * shards LlamaForCausalLMEagle3: q/k/v column-parallel by heads (kv heads replicated when
 * the shards outnumber them), o_proj and down_proj row-parallel then all-reduced, gate/up
 * by rows, lm_head by vocabulary rows, fc and the norms replicated.
 */
#ifndef ARB_ENGINE_DRAFT_WEIGHTS_H
#define ARB_ENGINE_DRAFT_WEIGHTS_H

#include <stddef.h>
#include <stdint.h>

#include "draft/draft_config.h"
#include "weights/index.h"
#include "weights/names.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The blocks a range of shards [first, first + count) of tp_shape K holds. */
typedef struct arb_draft_shard {
    unsigned tp_shape, first, count;
    unsigned head0, heads;  /* query heads */
    unsigned kv0, kv_heads; /* the kv heads they read */
    unsigned inter0, inter; /* MLP intermediate rows */
    unsigned vocab0, vocab; /* lm_head rows (draft vocabulary) */
} arb_draft_shard_t;

arb_status_t arb_draft_shard_make(const arb_draft_config_t *d, unsigned tp_shape, unsigned first, unsigned count,
                                  arb_draft_shard_t *sh, char *why, size_t why_len);

/* The tensor list of a shard; prefix "" or "model.". */
arb_status_t arb_draft_plan_make(const arb_draft_config_t *d, const arb_draft_shard_t *sh, const char *prefix,
                                 arb_wplan_t *plan, char *why, size_t why_len);

/* One shard's weights, bf16 bits in the unsharded tensors' order restricted to the held
 * rows or columns (as engine/cpu/cpu_ref_model.h holds the target's). */
typedef struct arb_draft_weights {
    uint16_t *fc;                                       /* [H x 3H] */
    uint16_t *in_norm, *hidden_norm, *post_norm, *norm; /* [H] */
    uint16_t *q, *k, *v;                                /* [heads hd x 2H], [kv_heads hd x 2H] x 2 */
    uint16_t *o;                                        /* [H x heads hd] */
    uint16_t *gate, *up, *down;                         /* [inter x H] x 2, [H x inter] */
    uint16_t *lm_head;                                  /* [vocab x H] */
    int64_t *d2t;                                       /* [Vd] */
} arb_draft_weights_t;

/* Opens the checkpoint in dir, checks every tensor of the plan (missing, shape, dtype: the
 * message names the tensor, the file and the expected shape) and d2t's values (target ids
 * inside the vocabulary), then reads the shard's blocks. */
arb_status_t arb_draft_weights_load(const char *dir, const arb_draft_config_t *d, const arb_draft_shard_t *sh,
                                    arb_draft_weights_t *w, char *why, size_t why_len);
/* The checks of arb_draft_weights_load without reading the blocks. */
arb_status_t arb_draft_weights_check(const char *dir, const arb_draft_config_t *d, const arb_draft_shard_t *sh,
                                     char *why, size_t why_len);
void arb_draft_weights_free(arb_draft_weights_t *w);

#ifdef __cplusplus
}
#endif

#endif
