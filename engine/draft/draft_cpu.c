/* SPDX-License-Identifier: MIT */
/* The EAGLE-3 draft head's CPU forward (engine/draft/draft_cpu.h). */
#include "draft/draft_cpu.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "cpu/cpu_ref_math.h"
#include "rmsnorm/rmsnorm.h"

#define NSITES 4 /* site A, site B; then their one-row instances */

struct arb_draft_cpu {
    arb_draft_cpu_opts_t o;
    const arb_draft_config_t *c;
    arb_draft_weights_t w;
    double *inv_freq;                /* [hd / 2] */
    uint16_t *kcache, *vcache;       /* [positions x kv_heads x hd] */
    uint16_t *res, *h, *x, *q, *att; /* [T x H], [T x H], [T x 2H], [T x heads hd], [T x heads hd] */
    uint16_t *act;                   /* [inter] */
    double *scores;                  /* [positions] */
    float *logits;                   /* [T x vocab] */
    arb_draft_parts_t parts;         /* [T x H] of each site slot */
    uint16_t *local_part;
    unsigned T;
};

arb_inst_t *arb_draft_site_inst(const arb_draft_cpu_opts_t *o, unsigned slot)
{
    return slot >= 2 && !o->sites_t1[slot - 2] ? o->sites[slot - 2]
           : slot >= 2                         ? o->sites_t1[slot - 2]
                                               : o->sites[slot];
}

arb_status_t arb_draft_parts_alloc(const arb_draft_cpu_opts_t *o, size_t bytes, void *local, arb_draft_parts_t *p,
                                   char *why, size_t len)
{
    for (unsigned s = 0; s < NSITES; s++) {
        arb_inst_t *in = arb_draft_site_inst(o, s);
        p->part[s] = local;
        for (unsigned j = 0; in && j < NSITES; j++) {
            if (p->owner[j] == in) {
                p->part[s] = p->owned[j];
                break;
            }
            if (!p->owner[j]) {
                void *b = NULL;
                ARB_TRY(arb_inst_alloc(in, bytes, &b, why, len));
                p->owner[j] = in, p->owned[j] = b, p->part[s] = b;
                break;
            }
        }
    }
    return ARB_OK;
}

void arb_draft_parts_free(arb_draft_parts_t *p)
{
    for (unsigned j = 0; j < NSITES && p->owner[j]; j++)
        arb_inst_free(p->owner[j], p->owned[j]);
    memset(p, 0, sizeof *p);
}

arb_status_t arb_draft_cpu_create(const arb_draft_cpu_opts_t *o, arb_draft_weights_t *w, arb_draft_cpu_t **out,
                                  char *why, size_t len)
{
    *out = NULL;
    arb_draft_cpu_t *m = calloc(1, sizeof *m);
    if (!m) {
        arb_draft_weights_free(w);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "draft head: out of host memory");
    }
    m->o = *o, m->c = o->cfg, m->w = *w;
    memset(w, 0, sizeof *w);
    const arb_draft_config_t *c = m->c;
    const arb_draft_shard_t *sh = &m->o.shard;
    const size_t T = o->max_tokens, H = c->hidden_size, hd = c->head_dim;
    m->inv_freq = calloc(hd / 2, sizeof *m->inv_freq);
    m->kcache = calloc((size_t)o->positions * sh->kv_heads * hd, 2);
    m->vcache = calloc((size_t)o->positions * sh->kv_heads * hd, 2);
    m->res = calloc(T * H, 2), m->h = calloc(T * H, 2), m->x = calloc(T * 2 * H, 2);
    m->q = calloc(T * sh->heads * hd, 2), m->att = calloc(T * sh->heads * hd, 2);
    m->act = calloc(sh->inter ? sh->inter : 1, 2);
    m->scores = calloc(o->positions ? o->positions : 1, sizeof *m->scores);
    m->logits = calloc(T * sh->vocab, sizeof *m->logits);
    arb_status_t st = ARB_OK;
    if (!m->inv_freq || !m->kcache || !m->vcache || !m->res || !m->h || !m->x || !m->q || !m->att || !m->act ||
        !m->scores || !m->logits)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len,
                       "draft head: out of host memory for its cache and step state");
    for (size_t i = 0; i < hd / 2; i++) /* HF's LlamaRotaryEmbedding without rope_scaling */
        m->inv_freq[i] = pow(c->rope_theta, -2.0 * (double)i / (double)hd);
    if (!(m->local_part = calloc(T * H, 2)))
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err, why, len, "draft head: out of host memory");
    ARB_TRY_GOTO(st, arb_draft_parts_alloc(&m->o, T * H * 2, m->local_part, &m->parts, why, len), err);
    *out = m;
    return ARB_OK;
err:
    arb_draft_cpu_destroy(m);
    return st;
}

/* Rotate-half RoPE of one head vector x[hd] at position pos, rounded to bf16. */
static void rope_half(const arb_draft_cpu_t *m, uint16_t *x, unsigned pos)
{
    const unsigned half = m->c->head_dim / 2;
    for (unsigned i = 0; i < half; i++) {
        double cs = cos(pos * m->inv_freq[i]), sn = sin(pos * m->inv_freq[i]);
        double a = arb_bf(x[i]), b = arb_bf(x[i + half]);
        x[i] = arb_tobf(a * cs - b * sn);
        x[i + half] = arb_tobf(b * cs + a * sn);
    }
}

/* SITE: res = res + allreduce(part); h = rmsnorm(res, norm). */
static arb_status_t site(arb_draft_cpu_t *m, unsigned s, const uint16_t *norm, char *why, size_t len)
{
    const unsigned slot = m->T == 1 ? s + 2 : s, H = m->c->hidden_size;
    arb_inst_t *in = arb_draft_site_inst(&m->o, slot);
    uint16_t *part = m->parts.part[slot];
    if (!in) {
        for (size_t i = 0; i < (size_t)m->T * H; i++)
            m->res[i] = arb_tobf(arb_bf(m->res[i]) + arb_bf(part[i]));
        for (unsigned t = 0; t < m->T; t++)
            arb_rmsnorm_bf(m->res + (size_t)t * H, norm, H, m->c->rms_norm_eps, m->h + (size_t)t * H);
        return ARB_OK;
    }
    arb_rmsnorm_args_t a = {.x = part,
                            .residual = m->res,
                            .weight = norm,
                            .out = m->h,
                            .tokens = m->T,
                            .hidden = H,
                            .eps = (float)m->c->rms_norm_eps};
    arb_fusion_t used = ARB_FUSION_AUTO;
    return arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_AUTO, NULL, &used, why, len);
}

/* Attention of the held heads: cache rows pos0 .. first, then causal; part = o @ o_proj_r^T. */
static void attention(arb_draft_cpu_t *m, unsigned pos0, uint16_t *part)
{
    const arb_draft_config_t *c = m->c;
    const arb_draft_shard_t *sh = &m->o.shard;
    const unsigned H = c->hidden_size, hd = c->head_dim, nq = sh->heads, nkv = sh->kv_heads;
    const unsigned group = c->num_attention_heads / c->num_key_value_heads;
    const double scale = 1.0 / sqrt((double)hd);
    for (unsigned t = 0; t < m->T; t++) {
        const uint16_t *xt = m->x + (size_t)t * 2 * H;
        const unsigned P = pos0 + t;
        uint16_t *qt = m->q + (size_t)t * nq * hd, *kp = m->kcache + (size_t)P * nkv * hd,
                 *vp = m->vcache + (size_t)P * nkv * hd;
        arb_matvec_bf(m->w.q, xt, nq * hd, 2 * H, qt);  /* q = x @ q_proj_r^T */
        arb_matvec_bf(m->w.k, xt, nkv * hd, 2 * H, kp); /* k -> cache */
        arb_matvec_bf(m->w.v, xt, nkv * hd, 2 * H, vp); /* v -> cache */
        for (unsigned h = 0; h < nq; h++)
            rope_half(m, qt + (size_t)h * hd, P);
        for (unsigned h = 0; h < nkv; h++)
            rope_half(m, kp + (size_t)h * hd, P);
    }
    for (unsigned t = 0; t < m->T; t++) {
        const unsigned P = pos0 + t;
        uint16_t *ot = m->att + (size_t)t * nq * hd;
        for (unsigned h = 0; h < nq; h++) {
            const unsigned kvh = (sh->head0 + h) / group - sh->kv0;
            const uint16_t *qh = m->q + ((size_t)t * nq + h) * hd;
            double mx = -INFINITY, z = 0;
            for (unsigned p = 0; p <= P; p++) {
                m->scores[p] = arb_dot_bf(qh, m->kcache + ((size_t)p * nkv + kvh) * hd, hd) * scale;
                mx = m->scores[p] > mx ? m->scores[p] : mx;
            }
            for (unsigned p = 0; p <= P; p++)
                z += (m->scores[p] = exp(m->scores[p] - mx));
            for (unsigned d = 0; d < hd; d++) {
                double a = 0;
                for (unsigned p = 0; p <= P; p++)
                    a += m->scores[p] / z * arb_bf(m->vcache[((size_t)p * nkv + kvh) * hd + d]);
                ot[(size_t)h * hd + d] = arb_tobf(a);
            }
        }
        arb_matvec_bf(m->w.o, ot, H, nq * hd, part + (size_t)t * H); /* o_proj_r: partial */
    }
}

/* part = down_r(silu(gate_r h) * up_r h), the product stored bf16. */
static void mlp(arb_draft_cpu_t *m, uint16_t *part)
{
    const unsigned H = m->c->hidden_size, I = m->o.shard.inter;
    for (unsigned t = 0; t < m->T; t++) {
        const uint16_t *ht = m->h + (size_t)t * H;
        for (unsigned i = 0; i < I; i++) {
            double g = arb_dot_bf(m->w.gate + (size_t)i * H, ht, H), u = arb_dot_bf(m->w.up + (size_t)i * H, ht, H);
            m->act[i] = arb_tobf(g / (1.0 + exp(-g)) * u);
        }
        arb_matvec_bf(m->w.down, m->act, H, I, part + (size_t)t * H);
    }
}

arb_status_t arb_draft_cpu_step(arb_draft_cpu_t *m, const uint16_t *hidden_in, int fused, const uint16_t *embed,
                                unsigned T, unsigned pos0, char *why, size_t len)
{
    const arb_draft_config_t *c = m->c;
    const unsigned H = c->hidden_size;
    if (T == 0 || T > m->o.max_tokens || pos0 + T > m->o.positions)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "draft step: %u rows at position %u; expected 1 to %u rows inside %u positions", T, pos0,
                  m->o.max_tokens, m->o.positions);
    m->T = T;
    for (unsigned t = 0; t < T; t++) {
        uint16_t *rt = m->res + (size_t)t * H, *xt = m->x + (size_t)t * 2 * H;
        if (fused) /* res = fc([a_low, a_mid, a_high]) */
            arb_matvec_bf(m->w.fc, hidden_in + (size_t)t * 3 * H, H, 3 * H, rt);
        else
            memcpy(rt, hidden_in + (size_t)t * H, H * sizeof *rt);
        arb_rmsnorm_bf(embed + (size_t)t * H, m->w.in_norm, H, c->rms_norm_eps, xt); /* input_layernorm(embed) */
        arb_rmsnorm_bf(rt, m->w.hidden_norm, H, c->rms_norm_eps, xt + H);            /* hidden_norm(res) */
    }
    uint16_t *pa = m->parts.part[T == 1 ? 2 : 0], *pb = m->parts.part[T == 1 ? 3 : 1];
    attention(m, pos0, pa);
    ARB_TRY(site(m, 0, m->w.post_norm, why, len));
    mlp(m, pb);
    ARB_TRY(site(m, 1, m->w.norm, why, len));
    const unsigned V = m->o.shard.vocab;
    for (unsigned t = 0; t < T; t++) /* logits_r = h @ lm_head_r^T, fp32 */
        for (unsigned v = 0; v < V; v++)
            m->logits[(size_t)t * V + v] = (float)arb_dot_bf(m->w.lm_head + (size_t)v * H, m->h + (size_t)t * H, H);
    return ARB_OK;
}

const uint16_t *arb_draft_cpu_out(const arb_draft_cpu_t *m) { return m->res; }

void arb_draft_cpu_argmax(const arb_draft_cpu_t *m, unsigned t, float *best, uint32_t *draft_id)
{
    const unsigned V = m->o.shard.vocab;
    const float *lg = m->logits + (size_t)t * V;
    unsigned b = 0;
    for (unsigned v = 1; v < V; v++)
        if (lg[v] > lg[b])
            b = v;
    *best = lg[b];
    *draft_id = m->o.shard.vocab0 + b;
}

uint32_t arb_draft_cpu_target_id(const arb_draft_cpu_t *m, uint32_t draft_id)
{
    return (uint32_t)((int64_t)draft_id + m->w.d2t[draft_id]);
}

void arb_draft_cpu_destroy(arb_draft_cpu_t *m)
{
    if (!m)
        return;
    arb_draft_parts_free(&m->parts);
    arb_draft_weights_free(&m->w);
    void *ps[] = {m->inv_freq, m->kcache, m->vcache, m->res,    m->h,      m->x,
                  m->q,        m->att,    m->act,    m->scores, m->logits, m->local_part};
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
        free(ps[i]);
    free(m);
}
