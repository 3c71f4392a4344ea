/* SPDX-License-Identifier: MIT */
/* An EAGLE-3 draft head's tensors, one shard's blocks (engine/draft/draft_weights.h). */
#include "draft/draft_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "weights/slice.h"

arb_status_t arb_draft_shard_make(const arb_draft_config_t *d, unsigned K, unsigned first, unsigned count,
                                  arb_draft_shard_t *sh, char *why, size_t len)
{
    const unsigned nh = d->num_attention_heads, nkv = d->num_key_value_heads, I = d->intermediate_size;
    memset(sh, 0, sizeof *sh);
    if (K == 0 || count == 0 || first + count > K)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "draft head: shards %u..%u of tp-shape %u", first, first + count, K);
    if (nh % K || I % K || (nkv % K && K % nkv))
        ARB_RAISE(
            ARB_ERR_INVALID, why, len,
            "%s: num_attention_heads %u, intermediate_size %u, num_key_value_heads %u do not split over tp-shape %u (heads and intermediate_size must be multiples of it; kv heads a multiple or a divisor)",
            d->source, nh, I, nkv, K);
    if (d->draft_vocab_size < K)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: draft_vocab_size %u is smaller than --tp-shape %u", d->source,
                  d->draft_vocab_size, K);
    const unsigned group = nh / nkv, vr = d->draft_vocab_size / K;
    sh->tp_shape = K, sh->first = first, sh->count = count;
    sh->head0 = first * (nh / K), sh->heads = count * (nh / K);
    sh->kv0 = sh->head0 / group;
    sh->kv_heads = (sh->head0 + sh->heads - 1) / group + 1 - sh->kv0;
    sh->inter0 = first * (I / K), sh->inter = count * (I / K);
    sh->vocab0 = first * vr;
    sh->vocab = first + count == K ? d->draft_vocab_size - sh->vocab0 : count * vr;
    return ARB_OK;
}

typedef struct plan_builder {
    arb_wplan_t *plan;
    size_t cap;
} plan_builder_t;

/* One spec: name after the prefix, [rows x cols] (cols 0: 1-D), split and the held range. */
static void spec(plan_builder_t *b, const char *name, uint64_t rows, uint64_t cols, arb_wsplit_t split, uint64_t first,
                 uint64_t count, arb_st_dtype_t dtype, const char *why_shape)
{
    if (b->plan->n == b->cap)
        return;
    arb_wspec_t *s = &b->plan->specs[b->plan->n++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s%s", b->plan->prefix, name);
    s->expert = -1;
    s->ndim = cols ? 2 : 1;
    s->shape[0] = rows, s->shape[1] = cols;
    s->split = split;
    s->first = split == ARB_WSPLIT_WHOLE ? 0 : first;
    s->count = split == ARB_WSPLIT_WHOLE ? rows : count;
    s->dtype = dtype;
    s->why_shape = why_shape;
}

enum {
    P_FC,
    P_IN_NORM,
    P_HIDDEN_NORM,
    P_Q,
    P_K,
    P_V,
    P_O,
    P_POST_NORM,
    P_GATE,
    P_UP,
    P_DOWN,
    P_NORM,
    P_LM_HEAD,
    P_D2T,
    P_COUNT
};

arb_status_t arb_draft_plan_make(const arb_draft_config_t *d, const arb_draft_shard_t *sh, const char *prefix,
                                 arb_wplan_t *plan, char *why, size_t len)
{
    memset(plan, 0, sizeof *plan);
    snprintf(plan->prefix, sizeof plan->prefix, "%s", prefix ? prefix : "");
    snprintf(plan->config, sizeof plan->config, "%s", d->source);
    plan->format = ARB_WEIGHTS_BF16;
    plan_builder_t b = {.plan = plan, .cap = P_COUNT};
    plan->specs = calloc(b.cap, sizeof *plan->specs);
    if (!plan->specs)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory for the draft's tensor list", d->source);
    const uint64_t H = d->hidden_size, hd = d->head_dim, nh = d->num_attention_heads, nkv = d->num_key_value_heads;
    const arb_wsplit_t W = ARB_WSPLIT_WHOLE, R = ARB_WSPLIT_ROWS, C = ARB_WSPLIT_COLS;
    spec(&b, "fc.weight", H, 3 * H, W, 0, 0, ARB_ST_BF16, "hidden_size x 3 hidden_size");
    spec(&b, "midlayer.input_layernorm.weight", H, 0, W, 0, 0, ARB_ST_BF16, "hidden_size");
    spec(&b, "midlayer.hidden_norm.weight", H, 0, W, 0, 0, ARB_ST_BF16, "hidden_size");
    spec(&b, "midlayer.self_attn.q_proj.weight", nh * hd, 2 * H, R, sh->head0 * hd, sh->heads * hd, ARB_ST_BF16,
         "num_attention_heads * head_dim x 2 hidden_size");
    spec(&b, "midlayer.self_attn.k_proj.weight", nkv * hd, 2 * H, R, sh->kv0 * hd, sh->kv_heads * hd, ARB_ST_BF16,
         "num_key_value_heads * head_dim x 2 hidden_size");
    spec(&b, "midlayer.self_attn.v_proj.weight", nkv * hd, 2 * H, R, sh->kv0 * hd, sh->kv_heads * hd, ARB_ST_BF16,
         "num_key_value_heads * head_dim x 2 hidden_size");
    spec(&b, "midlayer.self_attn.o_proj.weight", H, nh * hd, C, sh->head0 * hd, sh->heads * hd, ARB_ST_BF16,
         "hidden_size x num_attention_heads * head_dim");
    spec(&b, "midlayer.post_attention_layernorm.weight", H, 0, W, 0, 0, ARB_ST_BF16, "hidden_size");
    spec(&b, "midlayer.mlp.gate_proj.weight", d->intermediate_size, H, R, sh->inter0, sh->inter, ARB_ST_BF16,
         "intermediate_size x hidden_size");
    spec(&b, "midlayer.mlp.up_proj.weight", d->intermediate_size, H, R, sh->inter0, sh->inter, ARB_ST_BF16,
         "intermediate_size x hidden_size");
    spec(&b, "midlayer.mlp.down_proj.weight", H, d->intermediate_size, C, sh->inter0, sh->inter, ARB_ST_BF16,
         "hidden_size x intermediate_size");
    spec(&b, "norm.weight", H, 0, W, 0, 0, ARB_ST_BF16, "hidden_size");
    spec(&b, "lm_head.weight", d->draft_vocab_size, H, R, sh->vocab0, sh->vocab, ARB_ST_BF16,
         "draft_vocab_size x hidden_size");
    spec(&b, "d2t", d->draft_vocab_size, 0, W, 0, 0, ARB_ST_I64, "draft_vocab_size (target id - draft id)");
    return ARB_OK;
}

/* The checkpoint open, the prefix found, the plan made and checked, d2t's values checked. */
static arb_status_t open_checked(const char *dir, const arb_draft_config_t *d, const arb_draft_shard_t *sh,
                                 arb_ckpt_t *ck, arb_wplan_t *plan, char *why, size_t len)
{
    ARB_TRY(arb_ckpt_open(dir, ck, why, len));
    const char *prefix = arb_ckpt_find(ck, "fc.weight") ? "" : arb_ckpt_find(ck, "model.fc.weight") ? "model." : "";
    arb_status_t st = arb_draft_plan_make(d, sh, prefix, plan, why, len);
    if (st == ARB_OK)
        st = arb_wplan_check(plan, ck, NULL, why, len);
    if (st == ARB_OK) {
        const arb_wspec_t *s = &plan->specs[P_D2T];
        const arb_ckpt_entry_t *e = arb_ckpt_find(ck, s->name);
        const uint8_t *p = (const uint8_t *)arb_st_data(arb_ckpt_file(ck, e), e->t);
        for (uint64_t i = 0; i < s->shape[0] && st == ARB_OK; i++) {
            int64_t off;
            memcpy(&off, p + 8 * i, 8);
            if (off < -(int64_t)i || (int64_t)i + off >= (int64_t)d->vocab_size) {
                snprintf(why, len,
                         "%s: tensor '%s' maps draft id %llu to target id %lld (expected 0 .. vocab_size %u - 1)",
                         arb_ckpt_file(ck, e)->path, s->name, (unsigned long long)i, (long long)((int64_t)i + off),
                         d->vocab_size);
                st = ARB_ERR_INVALID;
            }
        }
    }
    if (st != ARB_OK) {
        arb_wplan_free(plan);
        arb_ckpt_close(ck);
    }
    return st;
}

arb_status_t arb_draft_weights_check(const char *dir, const arb_draft_config_t *d, const arb_draft_shard_t *sh,
                                     char *why, size_t len)
{
    arb_ckpt_t ck;
    arb_wplan_t plan;
    ARB_TRY(open_checked(dir, d, sh, &ck, &plan, why, len));
    arb_wplan_free(&plan);
    arb_ckpt_close(&ck);
    return ARB_OK;
}

arb_status_t arb_draft_weights_load(const char *dir, const arb_draft_config_t *d, const arb_draft_shard_t *sh,
                                    arb_draft_weights_t *w, char *why, size_t len)
{
    memset(w, 0, sizeof *w);
    arb_ckpt_t ck;
    arb_wplan_t plan;
    ARB_TRY(open_checked(dir, d, sh, &ck, &plan, why, len));
    void **dst[P_COUNT] = {(void **)&w->fc,      (void **)&w->in_norm, (void **)&w->hidden_norm, (void **)&w->q,
                           (void **)&w->k,       (void **)&w->v,       (void **)&w->o,           (void **)&w->post_norm,
                           (void **)&w->gate,    (void **)&w->up,      (void **)&w->down,        (void **)&w->norm,
                           (void **)&w->lm_head, (void **)&w->d2t};
    arb_status_t st = ARB_OK;
    for (unsigned i = 0; i < P_COUNT && st == ARB_OK; i++) {
        const arb_wspec_t *s = &plan.specs[i];
        size_t bytes = arb_wspec_rank_numel(s) * arb_st_dtype_size(s->dtype);
        *dst[i] = malloc(bytes ? bytes : 1);
        if (!*dst[i]) {
            snprintf(why, len, "%s: out of host memory for tensor '%s' (%zu bytes)", dir, s->name, bytes);
            st = ARB_ERR_SYSTEM;
        } else {
            st = arb_wspec_read(&ck, s, *dst[i], bytes, why, len);
        }
    }
    arb_wplan_free(&plan);
    arb_ckpt_close(&ck);
    if (st != ARB_OK)
        arb_draft_weights_free(w);
    return st;
}

void arb_draft_weights_free(arb_draft_weights_t *w)
{
    void *ps[] = {w->fc, w->in_norm, w->hidden_norm, w->post_norm, w->norm, w->q,       w->k,
                  w->v,  w->o,       w->gate,        w->up,        w->down, w->lm_head, w->d2t};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        free(ps[i]);
    memset(w, 0, sizeof *w);
}
