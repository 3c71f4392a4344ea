/* SPDX-License-Identifier: MIT */
/*
 * The EAGLE-3 draft head's forward on the CPU (engine/draft/README.md), one shard range,
 * plain loops as engine/cpu's reference (float64 accumulation, bf16 at every stored value).
 * A step of T rows at positions pos0 .. pos0 + T - 1 (causal over the head's own KV cache):
 *
 *   res  = fused ? fc @ [a_low, a_mid, a_high] : hidden_in           [T x H]  (a_*: target states)
 *   x    = [input_layernorm(embed), hidden_norm(res)]                 [T x 2H]
 *   q, k, v = x @ q_proj_r^T, k_proj_r^T, v_proj_r^T; RoPE (rotate-half, rope_theta) on q, k
 *   k, v -> cache[pos]; o = softmax(q k^T / sqrt(hd)) v per held head (GQA: head h reads kv h / (nh / nkv))
 *   SITE A: res = res + allreduce(o @ o_proj_r^T); h = rmsnorm(res, post_attention_layernorm)
 *   SITE B: res = res + allreduce(down_r(silu(gate_r h) * up_r h)); h = rmsnorm(res, norm)
 *   out  = res (pre-norm: the next draft step's hidden_in); logits_r = h @ lm_head_r^T (fp32)
 *
 * The two sites are the fused all-reduce + residual + RMSNorm of the instance API, like
 * the target's (NULL: this process's partial sums alone).
 */
#ifndef ARB_ENGINE_DRAFT_CPU_H
#define ARB_ENGINE_DRAFT_CPU_H

#include <stddef.h>
#include <stdint.h>

#include "draft/draft_weights.h"
#include "runtime/instance.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_draft_cpu_opts {
    const arb_draft_config_t *cfg; /* must outlive the head */
    arb_draft_shard_t shard;
    unsigned max_tokens, positions;
    arb_inst_t *sites[2];    /* site A, site B (entries may be NULL) */
    arb_inst_t *sites_t1[2]; /* one-row steps' instances (NULL: sites) */
} arb_draft_cpu_opts_t;

typedef struct arb_draft_cpu arb_draft_cpu_t;

/* The input buffer of each site slot (0: site A, 1: site B, 2 and 3: their one-row
 * instances): one per distinct instance (arb_inst_alloc of `bytes`, collective, in slot
 * order), `local` for a slot without an instance. Shared by the CPU and GPU heads. */
typedef struct arb_draft_parts {
    arb_inst_t *owner[4];
    void *owned[4], *part[4];
} arb_draft_parts_t;

/* The instance of a slot (NULL: none). */
arb_inst_t *arb_draft_site_inst(const arb_draft_cpu_opts_t *o, unsigned slot);
arb_status_t arb_draft_parts_alloc(const arb_draft_cpu_opts_t *o, size_t bytes, void *local, arb_draft_parts_t *p,
                                   char *why, size_t why_len);
void arb_draft_parts_free(arb_draft_parts_t *p);

/* Takes the weights (freed with the head, also on failure); collective over the sites'
 * instances (arb_inst_alloc). */
arb_status_t arb_draft_cpu_create(const arb_draft_cpu_opts_t *o, arb_draft_weights_t *w, arb_draft_cpu_t **out,
                                  char *why, size_t why_len);
/* hidden_in: fused ? [T x 3H] : [T x H]; embed [T x H] (the target's, not yet normed). */
arb_status_t arb_draft_cpu_step(arb_draft_cpu_t *m, const uint16_t *hidden_in, int fused, const uint16_t *embed,
                                unsigned T, unsigned pos0, char *why, size_t why_len);
/* The last step's pre-norm output [T x H]. */
const uint16_t *arb_draft_cpu_out(const arb_draft_cpu_t *m);
/* Row t's best logit over the held draft vocabulary and its draft id (ties: lower id). */
void arb_draft_cpu_argmax(const arb_draft_cpu_t *m, unsigned t, float *best, uint32_t *draft_id);
/* The target id of a draft id (d2t). */
uint32_t arb_draft_cpu_target_id(const arb_draft_cpu_t *m, uint32_t draft_id);
void arb_draft_cpu_destroy(arb_draft_cpu_t *m);

#ifdef __cplusplus
}
#endif

#endif
