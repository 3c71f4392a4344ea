/* SPDX-License-Identifier: MIT */
/* The CPU reference's weights from engine/model/wgen.h, scaled and sharded as engine/forward.md
 * says (bit-identical to the GPU's generation: fp32, one rounding per operation). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "cpu/cpu_ref_model.h"
#include "model/int4.h"
#include "rmsnorm/rmsnorm.h"
#include "model/wgen.h"

/* c = (float)(g / sqrt(in)) [/ sqrt(2 Lz) for the residual-branch outputs], float64 first. */
static double c64_of(unsigned in, int residual_out, unsigned layers)
{
    double c = sqrt(3.0) / sqrt((double)in);
    return residual_out ? c / sqrt(2.0 * layers) : c;
}

static uint16_t *alloc_bf(size_t n, int *fail)
{
    uint16_t *p = n ? calloc(n, sizeof *p) : NULL;
    if (n && !p)
        *fail = 1;
    return p;
}

/* dst[r * cols + j] = bf16(c * u(t, l, base + (row0 + r) * total_cols + col0 + j)). */
static void gen_block(uint16_t *dst, uint64_t seed, uint32_t t, uint32_t l, uint64_t base, unsigned row0,
                      unsigned rows, unsigned col0, unsigned cols, unsigned total_cols, float c)
{
    for (unsigned r = 0; r < rows; r++)
        for (unsigned j = 0; j < cols; j++) {
            uint64_t idx = base + (uint64_t)(row0 + r) * total_cols + col0 + j;
            float v = c * arb_wgen_uniform(seed, t, l, idx);
            dst[(size_t)r * cols + j] = arb_f32_to_bf16(v);
        }
}

static void gen_norm(uint16_t *dst, unsigned n, uint64_t seed, uint32_t t, uint32_t l)
{
    for (unsigned i = 0; i < n; i++) {
        float p = 0.1f * arb_wgen_uniform(seed, t, l, i);
        dst[i] = arb_f32_to_bf16(1.0f + p);
    }
}

/* One routed expert tensor of INT4 (rows x cols per expert, unsharded), held block
 * rows [row0, row0+rows) x cols [col0, col0+cols): packed words and scales. */
static void gen_int4(int32_t *q, uint16_t *s, uint64_t seed, uint32_t t, uint32_t ts, uint32_t l, unsigned e,
                     unsigned total_rows, unsigned total_cols, unsigned row0, unsigned rows, unsigned col0,
                     unsigned cols, double c64)
{
    float cs = (float)(c64 / 4.61);
    for (unsigned r = 0; r < rows; r++) {
        for (unsigned j = 0; j < cols; j += ARB_INT4_PER_WORD) {
            int v[8];
            for (unsigned b = 0; b < 8; b++)
                v[b] = arb_wgen_int4(seed, t, l, arb_expert_index(e, total_rows, total_cols, row0 + r, col0 + j + b));
            q[((size_t)r * cols + j) / 8] = arb_int4_pack8(v);
        }
        for (unsigned j = 0; j < cols; j += ARB_INT4_GROUP) {
            float u = arb_wgen_uniform(seed, ts, l, arb_int4_scale_index(e, total_rows, total_cols, row0 + r, col0 + j));
            float p = 0.25f * u;
            s[((size_t)r * cols + j) / ARB_INT4_GROUP] = arb_f32_to_bf16(cs * (1.0f + p));
        }
    }
}

/* Allocates every weight of the held shard range and, with fill, generates it. */
static arb_status_t build(struct arb_cpu_model *m, int fill, char *why, size_t len)
{
    const arb_model_config_t *c = m->c;
    const arb_shard_t *sh = &m->sh;
    const uint64_t seed = m->o.seed;
    const unsigned H = c->hidden_size, Lz = c->num_hidden_layers, rq = c->q_lora_rank, rkv = c->kv_lora_rank;
    const unsigned dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim, dv = c->v_head_dim, E = c->n_routed_experts;
    const unsigned Ie = c->moe_intermediate_size, Is = c->n_shared_experts * Ie, Id = c->intermediate_size;
    const unsigned nh = c->num_attention_heads, ctx = m->o.context;
    int fail = 0, int4 = m->o.format == ARB_WEIGHTS_INT4;
    m->layers = calloc(Lz, sizeof *m->layers);
    if (!m->layers)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: out of host memory for %u layers", Lz);
    for (unsigned l = 0; l < Lz && !fail; l++) {
        arb_cpu_layer_t *L = &m->layers[l];
        L->dense = arb_config_layer_dense(c, l);
        L->attn_norm = alloc_bf(H, &fail);
        L->q_a = alloc_bf((size_t)rq * H, &fail);
        L->q_a_norm = alloc_bf(rq, &fail);
        L->q_b = alloc_bf((size_t)sh->q_b_rows * rq, &fail);
        L->kv_a = alloc_bf((size_t)(rkv + dr) * H, &fail);
        L->kv_a_norm = alloc_bf(rkv, &fail);
        L->kv_b = alloc_bf((size_t)sh->kv_b_rows * rkv, &fail);
        L->o = alloc_bf((size_t)H * sh->o_cols, &fail);
        L->ffn_norm = alloc_bf(H, &fail);
        L->cache_ckv = alloc_bf((size_t)ctx * rkv, &fail);
        L->cache_kpe = alloc_bf((size_t)ctx * dr, &fail);
        if (fail)
            break;
        if (fill) {
            gen_norm(L->attn_norm, H, seed, ARB_W_ATTN_NORM, l);
            gen_block(L->q_a, seed, ARB_W_Q_A, l, 0, 0, rq, 0, H, H, (float)c64_of(H, 0, Lz));
            gen_norm(L->q_a_norm, rq, seed, ARB_W_Q_A_NORM, l);
            gen_block(L->q_b, seed, ARB_W_Q_B, l, 0, sh->q_b_row0, sh->q_b_rows, 0, rq, rq, (float)c64_of(rq, 0, Lz));
            gen_block(L->kv_a, seed, ARB_W_KV_A, l, 0, 0, rkv + dr, 0, H, H, (float)c64_of(H, 0, Lz));
            gen_norm(L->kv_a_norm, rkv, seed, ARB_W_KV_A_NORM, l);
            gen_block(L->kv_b, seed, ARB_W_KV_B, l, 0, sh->kv_b_row0, sh->kv_b_rows, 0, rkv, rkv,
                      (float)c64_of(rkv, 0, Lz));
            gen_block(L->o, seed, ARB_W_O, l, 0, 0, H, sh->o_col0, sh->o_cols, nh * dv, (float)c64_of(nh * dv, 1, Lz));
            gen_norm(L->ffn_norm, H, seed, ARB_W_FFN_NORM, l);
        }
        (void)dn;
        if (L->dense) {
            L->gate = alloc_bf((size_t)sh->dense_inter * H, &fail);
            L->up = alloc_bf((size_t)sh->dense_inter * H, &fail);
            L->down = alloc_bf((size_t)H * sh->dense_inter, &fail);
            if (fail)
                break;
            if (!fill)
                continue;
            gen_block(L->gate, seed, ARB_W_DENSE_GATE, l, 0, sh->dense_inter0, sh->dense_inter, 0, H, H,
                      (float)c64_of(H, 0, Lz));
            gen_block(L->up, seed, ARB_W_DENSE_UP, l, 0, sh->dense_inter0, sh->dense_inter, 0, H, H,
                      (float)c64_of(H, 0, Lz));
            gen_block(L->down, seed, ARB_W_DENSE_DOWN, l, 0, 0, H, sh->dense_inter0, sh->dense_inter, Id,
                      (float)c64_of(Id, 1, Lz));
            continue;
        }
        const unsigned Ir = sh->moe_inter;
        L->router = alloc_bf((size_t)E * H, &fail);
        L->bias = calloc(E, sizeof *L->bias);
        fail |= !L->bias;
        L->sg = alloc_bf((size_t)sh->shared_inter * H, &fail);
        L->su = alloc_bf((size_t)sh->shared_inter * H, &fail);
        L->sd = alloc_bf((size_t)H * sh->shared_inter, &fail);
        if (int4) {
            size_t nq_in = (size_t)E * Ir * H / 8, nq_dn = (size_t)E * H * Ir / 8;
            L->eg_q = calloc(nq_in, sizeof(int32_t));
            L->eu_q = calloc(nq_in, sizeof(int32_t));
            L->ed_q = calloc(nq_dn, sizeof(int32_t));
            fail |= !L->eg_q || !L->eu_q || !L->ed_q;
            L->eg_s = alloc_bf(nq_in / 4, &fail);
            L->eu_s = alloc_bf(nq_in / 4, &fail);
            L->ed_s = alloc_bf(nq_dn / 4, &fail);
        } else {
            L->eg = alloc_bf((size_t)E * Ir * H, &fail);
            L->eu = alloc_bf((size_t)E * Ir * H, &fail);
            L->ed = alloc_bf((size_t)E * H * Ir, &fail);
        }
        if (fail)
            break;
        if (!fill)
            continue;
        gen_block(L->router, seed, ARB_W_ROUTER, l, 0, 0, E, 0, H, H, (float)c64_of(H, 0, Lz));
        for (unsigned e = 0; e < E; e++)
            L->bias[e] = 0.01f * arb_wgen_uniform(seed, ARB_W_ROUTER_BIAS, l, e);
        gen_block(L->sg, seed, ARB_W_SHARED_GATE, l, 0, sh->shared_inter0, sh->shared_inter, 0, H, H,
                  (float)c64_of(H, 0, Lz));
        gen_block(L->su, seed, ARB_W_SHARED_UP, l, 0, sh->shared_inter0, sh->shared_inter, 0, H, H,
                  (float)c64_of(H, 0, Lz));
        gen_block(L->sd, seed, ARB_W_SHARED_DOWN, l, 0, 0, H, sh->shared_inter0, sh->shared_inter, Is,
                  (float)c64_of(Is, 1, Lz));
        for (unsigned e = 0; e < E; e++) {
            size_t in_off = (size_t)e * Ir * H, dn_off = (size_t)e * H * Ir;
            if (int4) {
                gen_int4(L->eg_q + in_off / 8, L->eg_s + in_off / 32, seed, ARB_W_EXP_GATE, ARB_W_EXP_GATE_SCALE, l,
                         e, Ie, H, sh->moe_inter0, Ir, 0, H, c64_of(H, 0, Lz));
                gen_int4(L->eu_q + in_off / 8, L->eu_s + in_off / 32, seed, ARB_W_EXP_UP, ARB_W_EXP_UP_SCALE, l, e,
                         Ie, H, sh->moe_inter0, Ir, 0, H, c64_of(H, 0, Lz));
                gen_int4(L->ed_q + dn_off / 8, L->ed_s + dn_off / 32, seed, ARB_W_EXP_DOWN, ARB_W_EXP_DOWN_SCALE, l,
                         e, H, Ie, 0, H, sh->moe_inter0, Ir, c64_of(Ie, 1, Lz));
            } else {
                gen_block(L->eg + in_off, seed, ARB_W_EXP_GATE, l, (uint64_t)e * Ie * H, sh->moe_inter0, Ir, 0, H, H,
                          (float)c64_of(H, 0, Lz));
                gen_block(L->eu + in_off, seed, ARB_W_EXP_UP, l, (uint64_t)e * Ie * H, sh->moe_inter0, Ir, 0, H, H,
                          (float)c64_of(H, 0, Lz));
                gen_block(L->ed + dn_off, seed, ARB_W_EXP_DOWN, l, (uint64_t)e * H * Ie, 0, H, sh->moe_inter0, Ir, Ie,
                          (float)c64_of(Ie, 1, Lz));
            }
        }
    }
    if (!fail) {
        if (m->o.hold_embed || m->o.wload)
            m->embed = alloc_bf((size_t)c->vocab_size * H, &fail);
        m->final_norm = alloc_bf(H, &fail);
        m->lm_head = alloc_bf((size_t)sh->vocab * H, &fail);
    }
    if (fail)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: out of host memory for the weights");
    if (!fill)
        return ARB_OK;
    if (m->embed)
        gen_block(m->embed, seed, ARB_W_EMBED, 0, 0, 0, c->vocab_size, 0, H, H, (float)sqrt(3.0));
    gen_norm(m->final_norm, H, seed, ARB_W_FINAL_NORM, 0);
    gen_block(m->lm_head, seed, ARB_W_LM_HEAD, 0, 0, sh->vocab0, sh->vocab, 0, H, H, (float)c64_of(H, 0, Lz));
    return ARB_OK;
}

arb_status_t arb_cpu_weights_generate(struct arb_cpu_model *m, char *why, size_t len)
{
    return build(m, 1, why, len);
}

arb_status_t arb_cpu_weights_alloc(struct arb_cpu_model *m, char *why, size_t len)
{
    return build(m, 0, why, len);
}

void arb_cpu_weights_free(struct arb_cpu_model *m)
{
    if (m->layers) {
        for (unsigned l = 0; l < m->c->num_hidden_layers; l++) {
            arb_cpu_layer_t *L = &m->layers[l];
            void *ps[] = {L->attn_norm, L->q_a, L->q_a_norm, L->q_b, L->kv_a, L->kv_a_norm, L->kv_b, L->o,
                          L->ffn_norm, L->gate, L->up, L->down, L->router, L->bias, L->eg, L->eu, L->ed, L->eg_q,
                          L->eu_q, L->ed_q, L->eg_s, L->eu_s, L->ed_s, L->sg, L->su, L->sd, L->cache_ckv,
                          L->cache_kpe};
            for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++)
                free(ps[i]);
        }
        free(m->layers);
    }
    free(m->embed);
    free(m->final_norm);
    free(m->lm_head);
    m->layers = NULL;
    m->embed = m->final_norm = m->lm_head = NULL;
}
