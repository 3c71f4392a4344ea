/* SPDX-License-Identifier: MIT */
#include "gpu/gpu_dims.h"

#include <string.h>

#include "arbench/status.h"

arb_status_t arb_gpu_dims_from_config(const arb_model_config_t *cfg, const arb_rope_t *rope, unsigned tp_shape,
                                      unsigned shard, arb_gpu_dims_t *d, char *why, size_t why_len)
{
    if (strcmp(cfg->scoring_func, "sigmoid") != 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu model: scoring_func \"%s\": the kernels implement \"sigmoid\"",
                  cfg->scoring_func);
    if (!cfg->norm_topk_prob)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "gpu model: norm_topk_prob false: the kernels implement true");
    memset(d, 0, sizeof *d);
    d->hidden = cfg->hidden_size;
    d->layers = cfg->num_hidden_layers;
    d->heads = cfg->num_attention_heads;
    d->nope = cfg->qk_nope_head_dim;
    d->rope = cfg->qk_rope_head_dim;
    d->v_head = cfg->v_head_dim;
    d->q_lora = cfg->q_lora_rank;
    d->kv_lora = cfg->kv_lora_rank;
    d->experts = cfg->n_routed_experts;
    d->topk = cfg->num_experts_per_tok;
    d->n_group = cfg->n_group;
    d->topk_group = cfg->topk_group;
    d->moe_inter = cfg->moe_intermediate_size;
    d->n_shared = cfg->n_shared_experts;
    d->dense_inter = cfg->intermediate_size;
    d->first_dense = cfg->first_k_dense_replace;
    d->vocab = cfg->vocab_size;
    d->routed_scaling = (float)cfg->routed_scaling_factor;
    d->rms_eps = (float)cfg->rms_norm_eps;
    d->softmax_scale = (float)rope->softmax_scale;
    d->inv_freq = rope->inv_freq;
    d->rope_mscale = rope->mscale;
    d->tp_shape = tp_shape;
    d->shard = shard;
    return ARB_OK;
}
