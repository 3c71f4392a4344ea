/* SPDX-License-Identifier: MIT */
/*
 * MLA attention with weight absorption, one rank's heads (engine/forward.md):
 * the latent cache row of each new token is written first, then every token attends to
 * positions p <= its own (causal inside the block), in the 512-dim latent space.
 */
#include <math.h>
#include <string.h>

#include "cpu/cpu_ref_model.h"

void arb_cpu_attention(struct arb_cpu_model *m, unsigned l, const uint16_t *h, unsigned T, unsigned pos0,
                       uint16_t *part)
{
    const arb_model_config_t *c = m->c;
    arb_cpu_layer_t *L = &m->layers[l];
    const unsigned H = c->hidden_size, rq = c->q_lora_rank, rkv = c->kv_lora_rank;
    const unsigned dn = c->qk_nope_head_dim, dr = c->qk_rope_head_dim, dv = c->v_head_dim;
    const unsigned nh = m->sh.heads, qk = dn + dr;
    const double eps = c->rms_norm_eps;
    arb_cpu_scratch_t *w = &m->scratch;
    uint16_t *qa_raw = w->qa_raw, *qa = w->qa, *q = w->q, *kva = w->kva, *qlat = w->qlat, *olat = w->olat, *o = w->o;
    double *s = w->scores;

    for (unsigned t = 0; t < T; t++) {
        const uint16_t *ht = h + (size_t)t * H;
        unsigned P = pos0 + t;
        arb_matvec_bf(L->q_a, ht, rq, H, qa_raw);                       /* h @ q_a^T          [rq] */
        arb_rmsnorm_bf(qa_raw, L->q_a_norm, rq, eps, qa);               /* q_a_layernorm      [rq] */
        arb_matvec_bf(L->q_b, qa, nh * qk, rq, q + (size_t)t * nh * qk); /* qa @ q_b_r^T [nh_r x (dn+dr)] */
        arb_matvec_bf(L->kv_a, ht, rkv + dr, H, kva);                   /* h @ kv_a^T    [rkv + dr] */
        uint16_t *ckv = L->cache_ckv + (size_t)P * rkv, *kpe = L->cache_kpe + (size_t)P * dr;
        arb_rmsnorm_bf(kva, L->kv_a_norm, rkv, eps, ckv);               /* kv_a_layernorm -> cache */
        memcpy(kpe, kva + rkv, sizeof(uint16_t) * dr);
        arb_rope_bf(&m->rope, kpe, P);                                  /* k_pe rotated -> cache */
    }
    for (unsigned t = 0; t < T; t++) {
        unsigned P = pos0 + t;
        for (unsigned hd = 0; hd < nh; hd++) {
            uint16_t *qh = q + ((size_t)t * nh + hd) * qk;
            arb_rope_bf(&m->rope, qh + dn, P);                          /* q_pe rotated in place */
            const uint16_t *w_uk = L->kv_b + (size_t)hd * (dn + dv) * rkv; /* [dn x rkv] */
            const uint16_t *w_uv = w_uk + (size_t)dn * rkv;                /* [dv x rkv] */
            for (unsigned j = 0; j < rkv; j++) {                        /* qlat = q_nope @ W_uk */
                double a = 0;
                for (unsigned d = 0; d < dn; d++)
                    a += arb_bf(qh[d]) * arb_bf(w_uk[(size_t)d * rkv + j]);
                qlat[j] = arb_tobf(a);
            }
            double mx = -INFINITY;
            for (unsigned p = 0; p <= P; p++) {                         /* scores, causal */
                double a = arb_dot_bf(qlat, L->cache_ckv + (size_t)p * rkv, rkv) +
                           arb_dot_bf(qh + dn, L->cache_kpe + (size_t)p * dr, dr);
                s[p] = a * m->rope.softmax_scale;
                mx = s[p] > mx ? s[p] : mx;
            }
            double z = 0;
            for (unsigned p = 0; p <= P; p++)
                z += (s[p] = exp(s[p] - mx));
            for (unsigned j = 0; j < rkv; j++) {                        /* olat = softmax @ ckv */
                double a = 0;
                for (unsigned p = 0; p <= P; p++)
                    a += s[p] / z * arb_bf(L->cache_ckv[(size_t)p * rkv + j]);
                olat[j] = arb_tobf(a);
            }
            arb_matvec_bf(w_uv, olat, dv, rkv, o + (size_t)hd * dv);    /* o = olat @ W_uv^T [dv] */
        }
        arb_matvec_bf(L->o, o, H, nh * dv, part + (size_t)t * H);       /* o_proj_r: partial [H] */
    }
}
