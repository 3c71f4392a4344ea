/* SPDX-License-Identifier: MIT */
/* Per-rank shapes of tp_shape K (engine/model/shard.h). */
#include "model/shard.h"

#include "arbench/status.h"

static arb_status_t split(const char *field, unsigned total, unsigned k, unsigned r, unsigned *part, unsigned *first,
                          char *why, size_t len)
{
    if (total % k)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s %u is not a multiple of --tp-shape %u (each rank needs an equal part)",
                  field, total, k);
    *part = total / k;
    *first = r * *part;
    return ARB_OK;
}

arb_status_t arb_shard_make(const arb_model_config_t *c, unsigned k, unsigned r, arb_weight_format_t wf,
                            arb_shard_t *sh, char *why, size_t len)
{
    if (k == 0 || r >= k)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "shard %u of --tp-shape %u: need 0 <= shard < tp-shape", r, k);
    sh->tp_shape = k;
    sh->rank = r;
    ARB_TRY(split("num_attention_heads", c->num_attention_heads, k, r, &sh->heads, &sh->head0, why, len));
    unsigned qk = c->qk_nope_head_dim + c->qk_rope_head_dim, kvb = c->qk_nope_head_dim + c->v_head_dim;
    sh->q_b_rows = sh->heads * qk;
    sh->q_b_row0 = sh->head0 * qk;
    sh->kv_b_rows = sh->heads * kvb;
    sh->kv_b_row0 = sh->head0 * kvb;
    sh->o_cols = sh->heads * c->v_head_dim;
    sh->o_col0 = sh->head0 * c->v_head_dim;
    ARB_TRY(split("moe_intermediate_size", c->moe_intermediate_size, k, r, &sh->moe_inter, &sh->moe_inter0, why, len));
    ARB_TRY(split("n_shared_experts * moe_intermediate_size", c->n_shared_experts * c->moe_intermediate_size, k, r,
                  &sh->shared_inter, &sh->shared_inter0, why, len));
    ARB_TRY(split("intermediate_size", c->intermediate_size, k, r, &sh->dense_inter, &sh->dense_inter0, why, len));
    if (c->vocab_size < k)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "vocab_size %u is smaller than --tp-shape %u", c->vocab_size, k);
    sh->vocab = c->vocab_size / k;
    sh->vocab0 = r * sh->vocab;
    if (r == k - 1)
        sh->vocab = c->vocab_size - sh->vocab0; /* the last rank takes the remainder */
    if (wf == ARB_WEIGHTS_INT4) {
        if (c->hidden_size % ARB_INT4_GROUP)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "--weights int4: hidden_size %u is not a multiple of the group size %u (gate/up inputs)",
                      c->hidden_size, ARB_INT4_GROUP);
        if (sh->moe_inter % ARB_INT4_GROUP)
            ARB_RAISE(ARB_ERR_INVALID, why, len,
                      "--weights int4: moe_intermediate_size / tp-shape = %u / %u = %u is not a multiple of the group "
                      "size %u (a shard of down_proj would split a group)",
                      c->moe_intermediate_size, k, sh->moe_inter, ARB_INT4_GROUP);
    }
    return ARB_OK;
}

arb_status_t arb_shard_make_range(const arb_model_config_t *c, unsigned k, unsigned first, unsigned count,
                                  arb_weight_format_t wf, arb_shard_t *sh, char *why, size_t len)
{
    if (count == 0 || first + count > k)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "shards %u..%u of --tp-shape %u: need 1 <= count and last < tp-shape",
                  first, first + count - 1, k);
    arb_shard_t last;
    ARB_TRY(arb_shard_make(c, k, first, wf, sh, why, len));
    ARB_TRY(arb_shard_make(c, k, first + count - 1, wf, &last, why, len));
    sh->heads = last.head0 + last.heads - sh->head0;
    sh->q_b_rows = last.q_b_row0 + last.q_b_rows - sh->q_b_row0;
    sh->kv_b_rows = last.kv_b_row0 + last.kv_b_rows - sh->kv_b_row0;
    sh->o_cols = last.o_col0 + last.o_cols - sh->o_col0;
    sh->moe_inter = last.moe_inter0 + last.moe_inter - sh->moe_inter0;
    sh->shared_inter = last.shared_inter0 + last.shared_inter - sh->shared_inter0;
    sh->dense_inter = last.dense_inter0 + last.dense_inter - sh->dense_inter0;
    sh->vocab = last.vocab0 + last.vocab - sh->vocab0;
    return ARB_OK;
}
