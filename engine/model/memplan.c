/* SPDX-License-Identifier: MIT */
/* Per-rank memory plan (engine/model/memplan.h). */
#include "model/memplan.h"

#include <stdio.h>
#include <string.h>

const char *const arb_mem_kind_names[ARB_MEM_KINDS] = {
    "embed_tokens", "attention", "norms+router", "dense_mlp", "shared_expert", "routed_experts",
    "routed_scales", "lm_head", "kv_cache", "activations", "plugin_buffers",
};

void arb_memplan_compute(const arb_model_config_t *c, const arb_shard_t *sh, arb_weight_format_t wf,
                         unsigned positions, unsigned max_tokens, unsigned instances, arb_memplan_t *p)
{
    memset(p, 0, sizeof *p);
    p->available = -1;
    const double b16 = 2, H = c->hidden_size, L = c->num_hidden_layers, E = c->n_routed_experts;
    const double rq = c->q_lora_rank, rkv = c->kv_lora_rank, dr = c->qk_rope_head_dim, T = max_tokens;
    const unsigned moe_layers = c->num_hidden_layers - c->first_k_dense_replace;
    const unsigned dense_layers = c->first_k_dense_replace;
    p->bytes[ARB_MEM_EMBED] = (double)c->vocab_size * H * b16;
    double attn = rq * H + (rkv + dr) * H + (double)sh->q_b_rows * rq + (double)sh->kv_b_rows * rkv + H * sh->o_cols;
    p->bytes[ARB_MEM_ATTENTION] = L * attn * b16;
    p->bytes[ARB_MEM_NORMS_ROUTER] = (L * (2 * H + rq + rkv) + H) * b16 + moe_layers * E * (H * b16 + 4);
    p->bytes[ARB_MEM_DENSE_MLP] = dense_layers * 3.0 * sh->dense_inter * H * b16;
    p->bytes[ARB_MEM_SHARED_EXPERT] = moe_layers * 3.0 * sh->shared_inter * H * b16;
    double expert_elems = 3.0 * sh->moe_inter * H; /* gate, up, down of one expert's shard */
    if (wf == ARB_WEIGHTS_INT4) {
        p->bytes[ARB_MEM_ROUTED] = moe_layers * E * expert_elems * 0.5;
        p->bytes[ARB_MEM_ROUTED_SCALES] = moe_layers * E * expert_elems / ARB_INT4_GROUP * b16;
    } else {
        p->bytes[ARB_MEM_ROUTED] = moe_layers * E * expert_elems * b16;
    }
    p->bytes[ARB_MEM_LM_HEAD] = (double)sh->vocab * H * b16;
    p->bytes[ARB_MEM_KV_CACHE] = L * positions * (rkv + dr) * b16;
    /* res, h, a local part; q, kva, qlat, olat, o; fp32 attention scores over the
     * positions; the SiLU*up products of the selected experts and the widest MLP shard;
     * fp32 router scores and logits. */
    double nh = sh->heads, dqk = c->qk_nope_head_dim + dr, dv = c->v_head_dim;
    double inter = sh->dense_inter > sh->moe_inter * c->num_experts_per_tok + sh->shared_inter
                       ? sh->dense_inter
                       : (double)sh->moe_inter * c->num_experts_per_tok + sh->shared_inter;
    double act = T * (3 * H + nh * dqk + (rkv + dr) + 2 * nh * rkv + nh * dv + inter) * b16 +
                 T * (nh * positions + E + sh->vocab) * 4;
    p->bytes[ARB_MEM_ACTIVATIONS] = act;
    p->bytes[ARB_MEM_PLUGIN] = instances * 2.0 * T * H * b16;
    for (int k = 0; k < ARB_MEM_KINDS; k++)
        p->total += p->bytes[k];
}

int arb_memplan_fits(const arb_memplan_t *p)
{
    return p->available < 0 || p->total <= p->available;
}

void arb_memplan_print(FILE *f, const arb_memplan_t *p, const char *title)
{
    fprintf(f, "# memory plan, per rank: %s\n", title);
    fprintf(f, "#   %-16s %16s %10s\n", "kind", "bytes", "GB");
    for (int k = 0; k < ARB_MEM_KINDS; k++)
        fprintf(f, "#   %-16s %16.0f %10.3f\n", arb_mem_kind_names[k], p->bytes[k], p->bytes[k] / 1e9);
    fprintf(f, "#   %-16s %16.0f %10.3f\n", "total", p->total, p->total / 1e9);
    if (p->available >= 0)
        fprintf(f, "#   %-16s %16.0f %10.3f  (%s): %s\n", "available", p->available, p->available / 1e9,
                p->available_what, arb_memplan_fits(p) ? "fits" : "DOES NOT FIT");
    else
        fprintf(f, "#   available: not known (%s)\n", p->available_what[0] ? p->available_what : "not queried");
}

double arb_memplan_host_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return -1;
    char line[256];
    double kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024.0;
}

void arb_step_bytes(const arb_model_config_t *c, const arb_shard_t *sh, arb_weight_format_t wf, unsigned T,
                    unsigned pos0, const int32_t *experts, arb_step_bytes_t *o)
{
    arb_memplan_t p;
    arb_memplan_compute(c, sh, wf, 0, 0, 0, &p);
    memset(o, 0, sizeof *o);
    const unsigned L = c->num_hidden_layers, k = c->num_experts_per_tok, E = c->n_routed_experts;
    const unsigned moe_layers = L - c->first_k_dense_replace;
    const double H = c->hidden_size;
    double router = moe_layers * (double)E * (H * 2 + 4);
    o->attention = p.bytes[ARB_MEM_ATTENTION];
    o->dense_mlp = p.bytes[ARB_MEM_DENSE_MLP];
    o->shared_expert = p.bytes[ARB_MEM_SHARED_EXPERT];
    o->router = router;
    o->lm_head = p.bytes[ARB_MEM_LM_HEAD];
    o->kv_cache = (double)L * (pos0 + T) * (c->kv_lora_rank + c->qk_rope_head_dim) * 2;
    o->other = T * H * 2 + (p.bytes[ARB_MEM_NORMS_ROUTER] - router);
    double per_expert = moe_layers ? (p.bytes[ARB_MEM_ROUTED] + p.bytes[ARB_MEM_ROUTED_SCALES]) / ((double)moe_layers * E)
                                   : 0;
    unsigned char seen[ARB_MAX_EXPERTS_SEEN];
    double distinct_sum = 0;
    for (unsigned l = c->first_k_dense_replace; l < L; l++) {
        memset(seen, 0, E < sizeof seen ? E : sizeof seen);
        unsigned distinct = 0;
        for (unsigned i = 0; i < T * k; i++) {
            int32_t e = experts[(size_t)l * T * k + i];
            if (e >= 0 && (unsigned)e < E && (unsigned)e < sizeof seen && !seen[e]) {
                seen[e] = 1;
                distinct++;
            }
        }
        distinct_sum += distinct;
    }
    o->routed_experts = distinct_sum * per_expert;
    o->distinct_experts = moe_layers ? distinct_sum / moe_layers : 0;
    o->total = o->attention + o->kv_cache + o->dense_mlp + o->shared_expert + o->routed_experts + o->router +
               o->lm_head + o->other;
}
