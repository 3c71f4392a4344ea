/* SPDX-License-Identifier: MIT */
/* The DeepSeek-V3 family's tensor list for one config and one rank (engine/weights/names.h). */
#include "weights/names.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "model/wgen.h"

typedef struct builder {
    arb_wplan_t *plan;
    size_t cap;
} builder_t;

static arb_wspec_t *add(builder_t *b, uint32_t tensor, unsigned layer, int expert, arb_wpart_t part, const char *fmt,
                        ...) __attribute__((format(printf, 6, 7)));

static arb_wspec_t *add(builder_t *b, uint32_t tensor, unsigned layer, int expert, arb_wpart_t part, const char *fmt,
                        ...)
{
    if (b->plan->n == b->cap)
        return NULL; /* the count below is exact; reaching the cap is a bug caught by the caller */
    arb_wspec_t *s = &b->plan->specs[b->plan->n++];
    memset(s, 0, sizeof *s);
    size_t np = (size_t)snprintf(s->name, sizeof s->name, "%s", b->plan->prefix);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->name + np, sizeof s->name - np, fmt, ap);
    va_end(ap);
    s->tensor = tensor;
    s->layer = layer;
    s->expert = expert;
    s->part = part;
    s->dtype = ARB_ST_BF16;
    return s;
}

static void set_1d(arb_wspec_t *s, uint64_t n, const char *why_shape)
{
    s->ndim = 1;
    s->shape[0] = n;
    s->split = ARB_WSPLIT_WHOLE;
    s->first = 0;
    s->count = n;
    s->why_shape = why_shape;
}

static void set_2d(arb_wspec_t *s, uint64_t rows, uint64_t cols, arb_wsplit_t split, uint64_t first, uint64_t count,
                   const char *why_shape)
{
    s->ndim = 2;
    s->shape[0] = rows;
    s->shape[1] = cols;
    s->split = split;
    s->first = split == ARB_WSPLIT_WHOLE ? 0 : first;
    s->count = split == ARB_WSPLIT_WHOLE ? rows : count;
    s->why_shape = why_shape;
}

/* One linear layer [out x in]: P.weight, or with int4 the three compressed-tensors parts.
 * split ROWS takes out-rows first..first+count-1, COLS takes in-columns (a multiple of 32). */
static void linear(builder_t *b, int int4, uint32_t t, uint32_t t_scale, unsigned l, int e, const char *prefix,
                   uint64_t out, uint64_t in, arb_wsplit_t split, uint64_t first, uint64_t count, const char *why)
{
    if (!int4) {
        arb_wspec_t *s = add(b, t, l, e, ARB_WPART_WEIGHT, "%s.weight", prefix);
        if (s)
            set_2d(s, out, in, split, first, count, why);
        return;
    }
    uint64_t div[2] = {ARB_INT4_PER_WORD, ARB_INT4_GROUP};
    for (int k = 0; k < 2; k++) {
        arb_wspec_t *s = add(b, k ? t_scale : t, l, e, k ? ARB_WPART_SCALE : ARB_WPART_PACKED,
                             k ? "%s.weight_scale" : "%s.weight_packed", prefix);
        if (!s)
            return;
        if (split == ARB_WSPLIT_COLS)
            set_2d(s, out, in / div[k], split, first / div[k], count / div[k], why);
        else
            set_2d(s, out, in / div[k], split, first, count, why);
        s->dtype = k ? ARB_ST_BF16 : ARB_ST_I32;
    }
    arb_wspec_t *s = add(b, t, l, e, ARB_WPART_SHAPE, "%s.weight_shape", prefix);
    if (!s)
        return;
    set_1d(s, 2, "{out, in}");
    s->logical[0] = out;
    s->logical[1] = in;
    s->dtype = ARB_ST_I64;
    s->dtype_alt = ARB_ST_I32;
}

/* gate/up [inter x H] by rows, down [H x inter] by columns. */
static void mlp(builder_t *b, int int4, const uint32_t t[3], const uint32_t ts[3], unsigned l, int e,
                const char *prefix, unsigned H, unsigned inter, unsigned first, unsigned count, const char *why_gu,
                const char *why_down)
{
    static const char *proj[3] = {"gate_proj", "up_proj", "down_proj"};
    char p[96];
    for (int k = 0; k < 3; k++) {
        snprintf(p, sizeof p, "%s.%s", prefix, proj[k]);
        if (k < 2)
            linear(b, int4, t[k], ts[k], l, e, p, inter, H, ARB_WSPLIT_ROWS, first, count, why_gu);
        else
            linear(b, int4, t[k], ts[k], l, e, p, H, inter, ARB_WSPLIT_COLS, first, count, why_down);
    }
}

static void norm(builder_t *b, uint32_t t, unsigned l, const char *name, uint64_t n, const char *why)
{
    arb_wspec_t *s = add(b, t, l, -1, ARB_WPART_WEIGHT, "%s", name);
    if (s)
        set_1d(s, n, why);
}

static void attention(builder_t *b, const arb_model_config_t *c, const arb_shard_t *sh, unsigned l)
{
    char p[96];
    unsigned H = c->hidden_size, nh = c->num_attention_heads, dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim,
             dv = c->v_head_dim, rq = c->q_lora_rank, rkv = c->kv_lora_rank;
    snprintf(p, sizeof p, "model.layers.%u.input_layernorm.weight", l);
    norm(b, ARB_W_ATTN_NORM, l, p, H, "hidden_size");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.q_a_proj", l);
    linear(b, 0, ARB_W_Q_A, 0, l, -1, p, rq, H, ARB_WSPLIT_WHOLE, 0, 0, "q_lora_rank x hidden_size");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.q_a_layernorm.weight", l);
    norm(b, ARB_W_Q_A_NORM, l, p, rq, "q_lora_rank");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.q_b_proj", l);
    linear(b, 0, ARB_W_Q_B, 0, l, -1, p, (uint64_t)nh * (dn + dr), rq, ARB_WSPLIT_ROWS, sh->q_b_row0, sh->q_b_rows,
           "num_attention_heads x (qk_nope_head_dim + qk_rope_head_dim) x q_lora_rank");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.kv_a_proj_with_mqa", l);
    linear(b, 0, ARB_W_KV_A, 0, l, -1, p, rkv + dr, H, ARB_WSPLIT_WHOLE, 0, 0,
           "(kv_lora_rank + qk_rope_head_dim) x hidden_size");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.kv_a_layernorm.weight", l);
    norm(b, ARB_W_KV_A_NORM, l, p, rkv, "kv_lora_rank");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.kv_b_proj", l);
    linear(b, 0, ARB_W_KV_B, 0, l, -1, p, (uint64_t)nh * (dn + dv), rkv, ARB_WSPLIT_ROWS, sh->kv_b_row0, sh->kv_b_rows,
           "num_attention_heads x (qk_nope_head_dim + v_head_dim) x kv_lora_rank");
    snprintf(p, sizeof p, "model.layers.%u.self_attn.o_proj", l);
    linear(b, 0, ARB_W_O, 0, l, -1, p, H, (uint64_t)nh * dv, ARB_WSPLIT_COLS, sh->o_col0, sh->o_cols,
           "hidden_size x num_attention_heads * v_head_dim");
    snprintf(p, sizeof p, "model.layers.%u.post_attention_layernorm.weight", l);
    norm(b, ARB_W_FFN_NORM, l, p, H, "hidden_size");
}

static void moe(builder_t *b, const arb_model_config_t *c, const arb_shard_t *sh, unsigned l, int int4)
{
    static const uint32_t te[3] = {ARB_W_EXP_GATE, ARB_W_EXP_UP, ARB_W_EXP_DOWN};
    static const uint32_t tes[3] = {ARB_W_EXP_GATE_SCALE, ARB_W_EXP_UP_SCALE, ARB_W_EXP_DOWN_SCALE};
    static const uint32_t tsh[3] = {ARB_W_SHARED_GATE, ARB_W_SHARED_UP, ARB_W_SHARED_DOWN};
    char p[96];
    unsigned H = c->hidden_size, E = c->n_routed_experts;
    snprintf(p, sizeof p, "model.layers.%u.mlp.gate", l);
    linear(b, 0, ARB_W_ROUTER, 0, l, -1, p, E, H, ARB_WSPLIT_WHOLE, 0, 0, "n_routed_experts x hidden_size");
    arb_wspec_t *s = add(b, ARB_W_ROUTER_BIAS, l, -1, ARB_WPART_WEIGHT, "%s.e_score_correction_bias", p);
    if (s) {
        set_1d(s, E, "n_routed_experts");
        s->dtype = ARB_ST_F32;
        s->dtype_alt = ARB_ST_BF16;
    }
    for (unsigned e = 0; e < E; e++) {
        snprintf(p, sizeof p, "model.layers.%u.mlp.experts.%u", l, e);
        mlp(b, int4, te, tes, l, (int)e, p, H, c->moe_intermediate_size, sh->moe_inter0, sh->moe_inter,
            "moe_intermediate_size x hidden_size", "hidden_size x moe_intermediate_size");
    }
    if (c->n_shared_experts) {
        snprintf(p, sizeof p, "model.layers.%u.mlp.shared_experts", l);
        mlp(b, 0, tsh, tsh, l, -1, p, H, c->n_shared_experts * c->moe_intermediate_size, sh->shared_inter0,
            sh->shared_inter, "n_shared_experts * moe_intermediate_size x hidden_size",
            "hidden_size x n_shared_experts * moe_intermediate_size");
    }
}

static size_t count_specs(const arb_model_config_t *c, int int4)
{
    size_t per_linear_exp = int4 ? 3 : 1;
    size_t attn = 9, dense = 3,
           moe = 2 + (size_t)c->n_routed_experts * 3 * per_linear_exp + (c->n_shared_experts ? 3 : 0);
    size_t n = 3; /* embed, norm, lm_head */
    for (unsigned l = 0; l < c->num_hidden_layers; l++)
        n += attn + (arb_config_layer_dense(c, l) ? dense : moe);
    return n;
}

arb_status_t arb_wplan_make(const arb_model_config_t *c, arb_weight_format_t wf, const arb_shard_t *sh,
                            const char *prefix, arb_wplan_t *plan, char *why, size_t len)
{
    static const uint32_t td[3] = {ARB_W_DENSE_GATE, ARB_W_DENSE_UP, ARB_W_DENSE_DOWN};
    memset(plan, 0, sizeof *plan);
    if (prefix && strlen(prefix) >= sizeof plan->prefix)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "tensor name prefix '%s' is longer than %zu characters", prefix,
                  sizeof plan->prefix - 1);
    snprintf(plan->prefix, sizeof plan->prefix, "%s", prefix ? prefix : "");
    plan->format = wf;
    snprintf(plan->config, sizeof plan->config, "%s", c->source[0] ? c->source : c->name);
    int int4 = wf == ARB_WEIGHTS_INT4;
    builder_t b = {.plan = plan, .cap = count_specs(c, int4)};
    plan->specs = calloc(b.cap, sizeof *plan->specs);
    if (!plan->specs)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory for %zu tensor specs", plan->config, b.cap);
    unsigned H = c->hidden_size, V = c->vocab_size;
    arb_wspec_t *s = add(&b, ARB_W_EMBED, 0, -1, ARB_WPART_WEIGHT, "model.embed_tokens.weight");
    set_2d(s, V, H, ARB_WSPLIT_WHOLE, 0, 0, "vocab_size x hidden_size");
    char p[96];
    for (unsigned l = 0; l < c->num_hidden_layers; l++) {
        attention(&b, c, sh, l);
        if (arb_config_layer_dense(c, l)) {
            snprintf(p, sizeof p, "model.layers.%u.mlp", l);
            mlp(&b, 0, td, td, l, -1, p, H, c->intermediate_size, sh->dense_inter0, sh->dense_inter,
                "intermediate_size x hidden_size", "hidden_size x intermediate_size");
        } else {
            moe(&b, c, sh, l, int4);
        }
    }
    norm(&b, ARB_W_FINAL_NORM, 0, "model.norm.weight", H, "hidden_size");
    s = add(&b, ARB_W_LM_HEAD, 0, -1, ARB_WPART_WEIGHT, "lm_head.weight");
    if (s)
        set_2d(s, V, H, ARB_WSPLIT_ROWS, sh->vocab0, sh->vocab, "vocab_size x hidden_size");
    if (plan->n != b.cap) {
        size_t n = plan->n;
        arb_wplan_free(plan);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "internal: tensor count %zu differs from the plan's %zu", n, b.cap);
    }
    return ARB_OK;
}

void arb_wplan_free(arb_wplan_t *plan)
{
    free(plan->specs);
    plan->specs = NULL;
    plan->n = 0;
}

const arb_wspec_t *arb_wplan_find(const arb_wplan_t *plan, const char *name)
{
    for (size_t i = 0; i < plan->n; i++)
        if (strcmp(plan->specs[i].name, name) == 0)
            return &plan->specs[i];
    return NULL;
}

uint64_t arb_wspec_rank_numel(const arb_wspec_t *s)
{
    if (s->ndim == 1)
        return s->count;
    return s->split == ARB_WSPLIT_COLS ? s->shape[0] * s->count : s->count * s->shape[1];
}
