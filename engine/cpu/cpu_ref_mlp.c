/* SPDX-License-Identifier: MIT */
/*
 * The MLP of one layer on the held intermediate columns (engine/forward.md): the dense
 * MLP, or the MoE block: router (replicated), the selected experts' gate/up, SiLU*up
 * (stored bf16), down, the weighted sum with the shared expert (float64 here, stored
 * once as bf16). Routed experts are bf16 or INT4 (unpacked from the packed words).
 */
#include <math.h>
#include <string.h>

#include "cpu/cpu_ref_model.h"
#include "model/int4.h"
#include "model/router.h"

static double silu(double x)
{
    return x / (1.0 + exp(-x));
}

/* act[i] = bf16(silu(h . gate_i) * (h . up_i)) for i < rows (gate and up stay float64). */
static void gate_up_bf(const uint16_t *gate, const uint16_t *up, const uint16_t *h, unsigned rows, unsigned H,
                       uint16_t *act)
{
    for (unsigned i = 0; i < rows; i++)
        act[i] = arb_tobf(silu(arb_dot_bf(gate + (size_t)i * H, h, H)) * arb_dot_bf(up + (size_t)i * H, h, H));
}

/* sum_j w[row, j] x[j] of an INT4 row: packed [n/8] words, scales [n/32]. */
static double dot_int4(const int32_t *q, const uint16_t *s, const uint16_t *x, unsigned n)
{
    double sum = 0;
    for (unsigned g = 0; g < n / ARB_INT4_GROUP; g++) {
        double part = 0;
        for (unsigned j = g * ARB_INT4_GROUP; j < (g + 1) * ARB_INT4_GROUP; j++)
            part += arb_int4_unpack(q[j / 8], (int)(j % 8)) * arb_bf(x[j]);
        sum += part * arb_bf(s[g]);
    }
    return sum;
}

/* acc[r] += w * (down row r . act), r < H; down [H x n] bf16 or INT4. */
static void down_acc(const uint16_t *down, const int32_t *dq, const uint16_t *ds, const uint16_t *act, unsigned n,
                     unsigned H, double w, double *acc)
{
    for (unsigned r = 0; r < H; r++)
        acc[r] += w * (dq ? dot_int4(dq + (size_t)r * n / 8, ds + (size_t)r * n / 32, act, n)
                          : arb_dot_bf(down + (size_t)r * n, act, n));
}

void arb_cpu_mlp(struct arb_cpu_model *m, unsigned l, const uint16_t *h, unsigned T, uint16_t *part)
{
    const arb_model_config_t *c = m->c;
    arb_cpu_layer_t *L = &m->layers[l];
    const unsigned H = c->hidden_size, E = c->n_routed_experts, k = c->num_experts_per_tok;
    arb_cpu_scratch_t *w = &m->scratch;
    uint16_t *act = w->act;
    double *acc = w->acc;
    for (unsigned t = 0; t < T; t++) {
        const uint16_t *ht = h + (size_t)t * H;
        int32_t *sel = m->experts + ((size_t)l * T + t) * k;
        memset(acc, 0, sizeof(double) * H);
        if (L->dense) {                                              /* mlp: down(silu(gate h) * up h) */
            const unsigned I = m->sh.dense_inter;
            gate_up_bf(L->gate, L->up, ht, I, H, act);
            down_acc(L->down, NULL, NULL, act, I, H, 1.0, acc);
            for (unsigned j = 0; j < k; j++)
                sel[j] = -1;
        } else {
            for (unsigned e = 0; e < E; e++) {                       /* gate: sigmoid(h @ router^T), fp32 */
                float logit = (float)arb_dot_bf(L->router + (size_t)e * H, ht, H);
                w->router_scores[e] = (float)(1.0 / (1.0 + exp(-(double)logit)));
            }
            arb_router_cfg_t rc = {E, k, c->n_group, c->topk_group, c->routed_scaling_factor, c->norm_topk_prob};
            unsigned idx[ARB_ROUTER_MAX_TOPK];
            double wt[ARB_ROUTER_MAX_TOPK];
            arb_route(&rc, w->router_scores, L->bias, idx, wt); /* config validated: cannot fail */
            const unsigned I = m->sh.moe_inter, Hn = H;
            for (unsigned j = 0; j < k; j++) {                      /* routed experts e_j, weight w_j */
                unsigned e = idx[j];
                sel[j] = (int32_t)e;
                size_t in_off = (size_t)e * I * H, dn_off = (size_t)e * H * I;
                if (m->o.format == ARB_WEIGHTS_INT4) {
                    for (unsigned i = 0; i < I; i++) {
                        size_t row = in_off + (size_t)i * H;
                        double g = dot_int4(L->eg_q + row / 8, L->eg_s + row / 32, ht, Hn);
                        double u = dot_int4(L->eu_q + row / 8, L->eu_s + row / 32, ht, Hn);
                        act[i] = arb_tobf(silu(g) * u);
                    }
                    down_acc(NULL, L->ed_q + dn_off / 8, L->ed_s + dn_off / 32, act, I, H, wt[j], acc);
                } else {
                    gate_up_bf(L->eg + in_off, L->eu + in_off, ht, I, H, act);
                    down_acc(L->ed + dn_off, NULL, NULL, act, I, H, wt[j], acc);
                }
            }
            if (m->sh.shared_inter) {                               /* + shared_experts(h) */
                gate_up_bf(L->sg, L->su, ht, m->sh.shared_inter, H, act);
                down_acc(L->sd, NULL, NULL, act, m->sh.shared_inter, H, 1.0, acc);
            }
        }
        for (unsigned r = 0; r < H; r++)
            part[(size_t)t * H + r] = arb_tobf(acc[r]);
    }
}
