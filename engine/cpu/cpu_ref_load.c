/* SPDX-License-Identifier: MIT */
/* The CPU reference's weights from a checkpoint (engine/weights/load.h): each block of the
 * held range copied into the array the generator would have filled (cpu_ref_model.h). */
#include <stdio.h>
#include <string.h>

#include "arbench/status.h"
#include "cpu/cpu_ref_model.h"
#include "model/wgen.h"

void *arb_cpu_model_weight(arb_cpu_model_t *m, const arb_wspec_t *s, size_t *bytes)
{
    const arb_model_config_t *c = m->c;
    const size_t H = c->hidden_size, Ir = m->sh.moe_inter;
    const size_t per_expert = Ir * H; /* gate, up and down hold as many elements */
    const int e = s->expert < 0 ? 0 : s->expert;
    *bytes = 0;
    if (s->part == ARB_WPART_SHAPE || (s->tensor != ARB_W_EMBED && s->tensor != ARB_W_FINAL_NORM &&
                                       s->tensor != ARB_W_LM_HEAD && s->layer >= c->num_hidden_layers))
        return NULL;
    arb_cpu_layer_t *L = &m->layers[s->layer];
    void *p = NULL;
    size_t n = (size_t)arb_wspec_rank_numel(s), es = 2;
    switch (s->tensor) {
    case ARB_W_EMBED: p = m->embed; break;
    case ARB_W_FINAL_NORM: p = m->final_norm; break;
    case ARB_W_LM_HEAD: p = m->lm_head; break;
    case ARB_W_ATTN_NORM: p = L->attn_norm; break;
    case ARB_W_Q_A: p = L->q_a; break;
    case ARB_W_Q_A_NORM: p = L->q_a_norm; break;
    case ARB_W_Q_B: p = L->q_b; break;
    case ARB_W_KV_A: p = L->kv_a; break;
    case ARB_W_KV_A_NORM: p = L->kv_a_norm; break;
    case ARB_W_KV_B: p = L->kv_b; break;
    case ARB_W_O: p = L->o; break;
    case ARB_W_FFN_NORM: p = L->ffn_norm; break;
    case ARB_W_DENSE_GATE: p = L->gate; break;
    case ARB_W_DENSE_UP: p = L->up; break;
    case ARB_W_DENSE_DOWN: p = L->down; break;
    case ARB_W_ROUTER: p = L->router; break;
    case ARB_W_ROUTER_BIAS: p = L->bias, es = 4; break;
    case ARB_W_SHARED_GATE: p = L->sg; break;
    case ARB_W_SHARED_UP: p = L->su; break;
    case ARB_W_SHARED_DOWN: p = L->sd; break;
    case ARB_W_EXP_GATE:
    case ARB_W_EXP_UP:
    case ARB_W_EXP_DOWN: {
        int k = s->tensor == ARB_W_EXP_GATE ? 0 : s->tensor == ARB_W_EXP_UP ? 1 : 2;
        if (s->part == ARB_WPART_PACKED) {
            int32_t *q[3] = {L->eg_q, L->eu_q, L->ed_q};
            p = q[k] ? q[k] + (size_t)e * per_expert / ARB_INT4_PER_WORD : NULL, es = 4;
        } else {
            uint16_t *w[3] = {L->eg, L->eu, L->ed};
            p = w[k] ? w[k] + (size_t)e * per_expert : NULL;
        }
        break;
    }
    case ARB_W_EXP_GATE_SCALE:
    case ARB_W_EXP_UP_SCALE:
    case ARB_W_EXP_DOWN_SCALE: {
        uint16_t *sc[3] = {L->eg_s, L->eu_s, L->ed_s};
        uint16_t *b = sc[s->tensor - ARB_W_EXP_GATE_SCALE];
        p = b ? b + (size_t)e * per_expert / ARB_INT4_GROUP : NULL;
        break;
    }
    default: return NULL;
    }
    if (p)
        *bytes = n * es;
    return p;
}

static arb_status_t sink(void *ctx, const arb_wspec_t *s, const void *data, size_t bytes, char *why, size_t len)
{
    size_t have = 0;
    void *dst = arb_cpu_model_weight(ctx, s, &have);
    if (!dst || have != bytes)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "cpu reference: no place for tensor '%s' (%zu bytes; the model holds %zu)",
                  s->name, bytes, have);
    memcpy(dst, data, bytes);
    return ARB_OK;
}

arb_status_t arb_cpu_weights_load(struct arb_cpu_model *m, char *why, size_t len)
{
    const arb_wload_t *w = m->o.wload;
    if (w->format != m->o.format)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "cpu reference: %s holds %s routed experts, the model was asked for %s",
                  w->dir, w->format == ARB_WEIGHTS_INT4 ? "int4" : "bf16",
                  m->o.format == ARB_WEIGHTS_INT4 ? "int4" : "bf16");
    ARB_TRY(arb_cpu_weights_alloc(m, why, len));
    arb_wplan_t plan;
    ARB_TRY(arb_wload_plan(w, m->c, &m->sh, &plan, NULL, why, len));
    arb_status_t st = arb_wload_fill(w, &plan, sink, m, m->o.load_progress, m->o.load_stats, why, len);
    arb_wplan_free(&plan);
    return st;
}
