/* SPDX-License-Identifier: MIT */
/*
 * The CPU reference's step (engine/forward.md "One step"): embedding, then per layer
 * attention -> SITE A (all-reduce + residual + post_attention_layernorm) -> MLP/MoE ->
 * SITE B (all-reduce + residual + the next input_layernorm, or model.norm), then the
 * lm_head shard. Every site goes through the instance API (host memory).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "cpu/cpu_ref_model.h"
#include "rmsnorm/rmsnorm.h"
#include "model/wgen.h"

static arb_status_t alloc_scratch(struct arb_cpu_model *m, char *why, size_t len)
{
    const arb_model_config_t *c = m->c;
    arb_cpu_scratch_t *w = &m->scratch;
    unsigned rq = c->q_lora_rank, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim, T = m->o.max_tokens;
    unsigned I = m->sh.dense_inter;
    I = m->sh.moe_inter > I ? m->sh.moe_inter : I;
    I = m->sh.shared_inter > I ? m->sh.shared_inter : I;
    w->qa_raw = calloc(rq, 2), w->qa = calloc(rq, 2);
    w->q = calloc((size_t)T * m->sh.heads * (c->qk_nope_head_dim + dr), 2);
    w->kva = calloc(rkv + dr, 2), w->qlat = calloc(rkv, 2), w->olat = calloc(rkv, 2);
    w->o = calloc((size_t)m->sh.heads * c->v_head_dim, 2);
    w->scores = calloc(m->o.context, sizeof(double));
    w->act = calloc(I, 2);
    w->acc = calloc(c->hidden_size, sizeof(double));
    w->router_scores = calloc(c->n_routed_experts, sizeof(float));
    if (!w->qa_raw || !w->qa || !w->q || !w->kva || !w->qlat || !w->olat || !w->o || !w->scores || !w->act ||
        !w->acc || !w->router_scores)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: out of host memory for the step scratch");
    return ARB_OK;
}

static void free_scratch(arb_cpu_scratch_t *w)
{
    void *ps[] = {w->qa_raw, w->qa, w->q, w->kva, w->qlat, w->olat, w->o, w->scores, w->act, w->acc,
                  w->router_scores};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        free(ps[i]);
}

/* Site s's instance in a step of T tokens: one-token steps take sites_t1 where given. */
static arb_inst_t *site_inst(const struct arb_cpu_model *m, unsigned s, unsigned T)
{
    arb_inst_t *const *set = T == 1 && m->o.sites_t1 ? m->o.sites_t1 : m->o.sites;
    return set ? set[s] : NULL;
}

/* Site s's slot in site_part: [0, 2L) for T > 1, [2L, 4L) for T = 1. */
static unsigned site_index(const struct arb_cpu_model *m, unsigned s, unsigned T)
{
    return (T == 1 ? 2 * m->c->num_hidden_layers : 0) + s;
}

/* One part buffer per distinct instance (arb_inst_alloc, collective, in site order), one
 * malloc'd buffer for sites without an instance. */
static arb_status_t alloc_parts(struct arb_cpu_model *m, char *why, size_t len)
{
    unsigned nsites = 2 * m->c->num_hidden_layers;
    size_t bytes = (size_t)m->o.max_tokens * m->c->hidden_size * sizeof(uint16_t);
    m->site_part = calloc(2 * (size_t)nsites, sizeof *m->site_part); /* T > 1, then T = 1 */
    m->owners = calloc(2 * (size_t)nsites, sizeof *m->owners);
    m->owned_part = calloc(2 * (size_t)nsites, sizeof *m->owned_part);
    m->site_path = calloc(nsites, sizeof *m->site_path);
    m->local_part = calloc(1, bytes);
    if (!m->site_part || !m->owners || !m->owned_part || !m->site_path || !m->local_part)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: out of host memory for the site table");
    for (unsigned s = 0; s < 2 * nsites; s++) { /* in site order: the T > 1 sites, then the T = 1 ones */
        arb_inst_t *in = site_inst(m, s % nsites, s < nsites ? 2 : 1);
        m->site_part[s] = m->local_part;
        if (!in)
            continue;
        unsigned k = 0;
        while (k < m->nowners && m->owners[k] != in)
            k++;
        if (k == m->nowners) {
            void *p = NULL;
            ARB_TRY(arb_inst_alloc(in, bytes, &p, why, len));
            m->owners[k] = in;
            m->owned_part[k] = p;
            m->nowners++;
        }
        m->site_part[s] = m->owned_part[k];
    }
    return ARB_OK;
}

arb_status_t arb_cpu_model_create(const arb_cpu_model_opts_t *opts, arb_cpu_model_t **out, char *why, size_t len)
{
    *out = NULL;
    if (!opts->cfg || opts->max_tokens == 0 || opts->context == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "cpu reference: need a config, max_tokens >= 1 and context >= 1");
    struct arb_cpu_model *m = calloc(1, sizeof *m);
    if (!m)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: out of host memory");
    m->o = *opts;
    m->c = opts->cfg;
    const arb_model_config_t *c = m->c;
    arb_status_t st;
    ARB_TRY_GOTO(st, arb_shard_make_range(c, opts->tp_shape, opts->shard_first, opts->shard_count, opts->format,
                                          &m->sh, why, len), err);
    ARB_TRY_GOTO(st, arb_rope_make(c, &m->rope, why, len), err);
    size_t TH = (size_t)opts->max_tokens * c->hidden_size;
    m->res = calloc(TH, 2), m->h = calloc(TH, 2);
    m->logits = calloc((size_t)opts->max_tokens * m->sh.vocab, sizeof(float));
    m->experts = calloc((size_t)c->num_hidden_layers * opts->max_tokens * c->num_experts_per_tok, sizeof(int32_t));
    if (!m->res || !m->h || !m->logits || !m->experts)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len, "cpu reference: out of host memory for the step state");
    for (unsigned i = 0; i < opts->naux; i++)
        if (opts->aux_layers[i] >= c->num_hidden_layers)
            ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err, why, len, "cpu reference: hidden state of layer %u asked for, of %u layers", opts->aux_layers[i], c->num_hidden_layers);
    if (opts->naux && !(m->aux = calloc((size_t)opts->context * opts->naux * c->hidden_size, sizeof *m->aux)))
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len, "cpu reference: out of host memory for the draft's hidden states");
    ARB_TRY_GOTO(st, alloc_scratch(m, why, len), err);
    ARB_TRY_GOTO(st, alloc_parts(m, why, len), err);
    ARB_TRY_GOTO(st, opts->wload ? arb_cpu_weights_load(m, why, len) : arb_cpu_weights_generate(m, why, len), err);
    *out = m;
    return ARB_OK;
err:
    arb_cpu_model_destroy(m);
    return st;
}

/* SITE: res = res + allreduce(part); h = rmsnorm(res, norm). */
static arb_status_t site(struct arb_cpu_model *m, unsigned s, const uint16_t *norm, unsigned T, char *why,
                         size_t len)
{
    const arb_model_config_t *c = m->c;
    arb_inst_t *in = site_inst(m, s, T);
    uint16_t *part = m->site_part[site_index(m, s, T)];
    if (!in) { /* no communication: this process's partial sums alone */
        for (size_t i = 0; i < (size_t)T * c->hidden_size; i++)
            m->res[i] = arb_tobf(arb_bf(m->res[i]) + arb_bf(part[i]));
        for (unsigned t = 0; t < T; t++)
            arb_rmsnorm_bf(m->res + (size_t)t * c->hidden_size, norm, c->hidden_size, c->rms_norm_eps,
                           m->h + (size_t)t * c->hidden_size);
        m->site_path[s] = ARB_FUSION_AUTO;
        return ARB_OK;
    }
    arb_rmsnorm_args_t a = {.x = part, .residual = m->res, .weight = norm, .out = m->h,
                            .tokens = T, .hidden = c->hidden_size, .eps = (float)c->rms_norm_eps};
    arb_fusion_t used = ARB_FUSION_AUTO;
    arb_status_t st = arb_inst_allreduce_rmsnorm(in, &a, m->o.fusion, NULL, &used, why, len);
    m->site_path[s] = used;
    return st;
}

/* The draft's hook: res after layer l, per position, where l is one of opts.aux_layers. */
static void keep_aux(struct arb_cpu_model *m, unsigned l, unsigned T, unsigned pos0)
{
    const unsigned H = m->c->hidden_size, n = m->o.naux;
    for (unsigned i = 0; i < n; i++)
        if (m->o.aux_layers[i] == l)
            for (unsigned t = 0; t < T; t++)
                memcpy(m->aux + ((size_t)(pos0 + t) * n + i) * H, m->res + (size_t)t * H, H * sizeof *m->aux);
}

void arb_cpu_model_embed(const arb_cpu_model_t *m, uint32_t token, uint16_t *out)
{
    const unsigned H = m->c->hidden_size;
    if (m->embed) { /* loaded (--weights-dir) or held as a table */
        memcpy(out, m->embed + (size_t)token * H, (size_t)H * 2);
        return;
    }
    const float ce = (float)sqrt(3.0);
    for (unsigned j = 0; j < H; j++)
        out[j] = arb_f32_to_bf16(ce * arb_wgen_uniform(m->o.seed, ARB_W_EMBED, 0, (uint64_t)token * H + j));
}

const uint16_t *arb_cpu_model_aux(const arb_cpu_model_t *m, unsigned pos)
{
    if (!m->aux || pos >= m->o.context)
        return NULL;
    return m->aux + (size_t)pos * m->o.naux * m->c->hidden_size;
}

arb_status_t arb_cpu_model_step(arb_cpu_model_t *m, const uint32_t *tokens, unsigned T, unsigned pos0, char *why,
                                size_t len)
{
    const arb_model_config_t *c = m->c;
    const unsigned H = c->hidden_size, Lz = c->num_hidden_layers;
    if (T == 0 || T > m->o.max_tokens || pos0 + T > m->o.context)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "cpu step: T %u at position %u: need 1 <= T <= %u and P0 + T <= %u", T,
                  pos0, m->o.max_tokens, m->o.context);
    for (unsigned t = 0; t < T; t++) {                 /* x = embed_tokens[token] */
        if (tokens[t] >= c->vocab_size)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "cpu step: token %u >= vocab_size %u", tokens[t], c->vocab_size);
        arb_cpu_model_embed(m, tokens[t], m->res + (size_t)t * H);
        arb_rmsnorm_bf(m->res + (size_t)t * H, m->layers[0].attn_norm, H, c->rms_norm_eps, m->h + (size_t)t * H);
    }
    m->T = T;
    for (unsigned l = 0; l < Lz; l++) {
        arb_cpu_attention(m, l, m->h, T, pos0, m->site_part[site_index(m, 2 * l, T)]);
        ARB_TRY(site(m, 2 * l, m->layers[l].ffn_norm, T, why, len));
        arb_cpu_mlp(m, l, m->h, T, m->site_part[site_index(m, 2 * l + 1, T)]);
        ARB_TRY(site(m, 2 * l + 1, l + 1 < Lz ? m->layers[l + 1].attn_norm : m->final_norm, T, why, len));
        keep_aux(m, l, T, pos0);
    }
    for (unsigned t = 0; t < T; t++)                   /* logits_r = h @ lm_head_r^T, fp32 */
        for (unsigned v = 0; v < m->sh.vocab; v++)
            m->logits[(size_t)t * m->sh.vocab + v] =
                (float)arb_dot_bf(m->lm_head + (size_t)v * H, m->h + (size_t)t * H, H);
    return ARB_OK;
}

const float *arb_cpu_model_logits(const arb_cpu_model_t *m)
{
    return m->logits;
}

unsigned arb_cpu_model_vocab_rank(const arb_cpu_model_t *m)
{
    return m->sh.vocab;
}

unsigned arb_cpu_model_vocab_base(const arb_cpu_model_t *m)
{
    return m->sh.vocab0;
}

void arb_cpu_model_argmax(const arb_cpu_model_t *m, unsigned t, float *best_logit, uint32_t *best_index)
{
    const float *lg = m->logits + (size_t)t * m->sh.vocab;
    unsigned best = 0;
    for (unsigned v = 1; v < m->sh.vocab; v++)
        if (lg[v] > lg[best])
            best = v;
    *best_logit = lg[best];
    *best_index = m->sh.vocab0 + best;
}

const int32_t *arb_cpu_model_experts(const arb_cpu_model_t *m)
{
    return m->experts;
}

size_t arb_cpu_model_experts_len(const arb_cpu_model_t *m, unsigned T)
{
    return (size_t)m->c->num_hidden_layers * T * m->c->num_experts_per_tok;
}

arb_fusion_t arb_cpu_model_site_path(const arb_cpu_model_t *m, unsigned s)
{
    return m->site_path[s];
}

const uint16_t *arb_cpu_model_hidden(const arb_cpu_model_t *m)
{
    return m->h;
}

void arb_cpu_model_destroy(arb_cpu_model_t *m)
{
    if (!m)
        return;
    for (unsigned k = 0; k < m->nowners; k++)
        arb_inst_free(m->owners[k], m->owned_part[k]);
    arb_cpu_weights_free(m);
    free_scratch(&m->scratch);
    free(m->site_part), free(m->owners), free(m->owned_part), free(m->site_path), free(m->local_part);
    free(m->res), free(m->h), free(m->logits), free(m->experts), free(m->aux);
    free(m);
}
