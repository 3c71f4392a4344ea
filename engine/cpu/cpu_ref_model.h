/* SPDX-License-Identifier: MIT */
/* The CPU reference's structs (internal to engine/cpu_ref*.c): weights as bf16 bits in
 * the unsharded tensors' order restricted to the held rows/columns, like llama2.c's
 * TransformerWeights and RunState. */
#ifndef ARB_ENGINE_CPU_REF_MODEL_H
#define ARB_ENGINE_CPU_REF_MODEL_H

#include "cpu/cpu_ref.h"
#include "cpu/cpu_ref_math.h"

typedef struct arb_cpu_layer {
    uint16_t *attn_norm;            /* [H] input_layernorm */
    uint16_t *q_a, *q_a_norm;       /* [rq x H], [rq] */
    uint16_t *q_b;                  /* [nh_r*(dn+dr) x rq] held heads */
    uint16_t *kv_a, *kv_a_norm;     /* [(rkv+dr) x H], [rkv] */
    uint16_t *kv_b;                 /* [nh_r*(dn+dv) x rkv]: per head dn rows W_uk, dv rows W_uv */
    uint16_t *o;                    /* [H x nh_r*dv] held columns of o_proj */
    uint16_t *ffn_norm;             /* [H] post_attention_layernorm */
    int dense;
    uint16_t *gate, *up, *down;     /* dense: [I_r x H], [I_r x H], [H x I_r] */
    uint16_t *router;               /* [E x H] */
    float *bias;                    /* [E] e_score_correction_bias */
    uint16_t *eg, *eu, *ed;         /* bf16 experts: [E][I_r x H], [E][I_r x H], [E][H x I_r] */
    int32_t *eg_q, *eu_q, *ed_q;    /* INT4 packed: [E][I_r x H/8], [E][I_r x H/8], [E][H x I_r/8] */
    uint16_t *eg_s, *eu_s, *ed_s;   /* INT4 scales:  [E][I_r x H/32], ..., [E][H x I_r/32] */
    uint16_t *sg, *su, *sd;         /* shared expert: [Is_r x H], [Is_r x H], [H x Is_r] */
    uint16_t *cache_ckv, *cache_kpe; /* [context x rkv], [context x dr] */
} arb_cpu_layer_t;

/* Per-step work arrays, sized at create for max_tokens and context. */
typedef struct arb_cpu_scratch {
    uint16_t *qa_raw, *qa;  /* [rq] */
    uint16_t *q;            /* [max_tokens x nh_r x (dn + dr)] */
    uint16_t *kva;          /* [rkv + dr] */
    uint16_t *qlat, *olat;  /* [rkv] */
    uint16_t *o;            /* [nh_r x dv] */
    double *scores;         /* [context] */
    uint16_t *act;          /* [max(I_d_r, I_e_r, I_s_r)] SiLU(gate) * up, bf16 */
    double *acc;            /* [H] the MoE block's fp32 (here float64) sum */
    float *router_scores;   /* [E] */
} arb_cpu_scratch_t;

struct arb_cpu_model {
    arb_cpu_model_opts_t o;
    const arb_model_config_t *c;
    arb_shard_t sh; /* the held range (sh.rank = shard_first) */
    arb_rope_t rope;
    arb_cpu_layer_t *layers;
    uint16_t *embed;      /* [V x H] embed_tokens when held (loaded, or opts.hold_embed); NULL: generated per token */
    uint16_t *final_norm; /* [H] */
    uint16_t *lm_head;    /* [V_r x H] */
    /* step state, T <= max_tokens rows each */
    uint16_t *res, *h, *part; /* [T x H]; part (and res, h) from arb_inst_alloc when a site has an instance */
    float *logits;            /* [T x V_r] */
    int32_t *experts;         /* [layers x T x topk] */
    arb_fusion_t *site_path;  /* [2 * layers] */
    unsigned T;
    uint16_t **site_part;     /* [2 * layers]: the part buffer of each site (its instance's arb_inst_alloc) */
    arb_inst_t **owners;      /* distinct instances that allocated a part buffer, [2 * layers] at most */
    uint16_t **owned_part;
    unsigned nowners;
    uint16_t *local_part;     /* malloc'd part for sites without an instance */
    uint16_t *aux;            /* [context x naux x H]: opts.aux_layers' outputs per position */
    arb_cpu_scratch_t scratch;
};

/* cpu_ref_weights.c */
arb_status_t arb_cpu_weights_generate(struct arb_cpu_model *m, char *why, size_t why_len);
/* The same arrays, allocated and left zero (filled from a checkpoint: cpu_ref_load.c). */
arb_status_t arb_cpu_weights_alloc(struct arb_cpu_model *m, char *why, size_t why_len);
/* cpu_ref_load.c: every weight of the held range from opts.wload. */
arb_status_t arb_cpu_weights_load(struct arb_cpu_model *m, char *why, size_t why_len);
void arb_cpu_weights_free(struct arb_cpu_model *m);

/* cpu_ref_mlp.c: part[T x H] of layer l's MLP (dense or MoE) for h[T x H]. */
void arb_cpu_mlp(struct arb_cpu_model *m, unsigned l, const uint16_t *h, unsigned T, uint16_t *part);
/* cpu_ref_attn.c: part[T x H] of layer l's attention; writes the cache rows pos0 .. pos0+T-1. */
void arb_cpu_attention(struct arb_cpu_model *m, unsigned l, const uint16_t *h, unsigned T, unsigned pos0,
                       uint16_t *part);

#endif
