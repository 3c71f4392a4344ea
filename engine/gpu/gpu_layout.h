/* SPDX-License-Identifier: MIT */
/*
 * Inside the GPU model (engine/gpu/gpu_model.h): the per-rank shapes, where every weight
 * lives on the device, the step's buffers. Shared by gpu_model.cu (allocation, weights,
 * reads), gpu_step.cu (the forward pass) and gpu_bench.cu. C++ only.
 */
#ifndef ARB_ENGINE_GPU_LAYOUT_H
#define ARB_ENGINE_GPU_LAYOUT_H

#include "gpu/gpu_model.h"
#include "gpu/kernels/kernels.h"

/* The step's one-launch kernels' tickets (kernels.h: qkva_prep, router), a word each. */
enum { ARB_GPU_TICKET_QKVA, ARB_GPU_TICKET_ROUTER, ARB_GPU_TICKETS };

/* Shapes of this rank (forward.md's symbols, _r = per rank). */
struct arb_gpu_shapes {
    unsigned H, Lz, nh_r, dn, dr, dv, rq, rkv;
    unsigned E, k, I, I0;  /* routed experts; I = I_e_r rows of gate/up from I0 = r I_e_r */
    unsigned Is, Is0;      /* shared expert intermediate per rank and its first row */
    unsigned Id, Id0;      /* dense intermediate per rank and its first row */
    unsigned Vr, V0;       /* lm_head rows of this rank and the first */
    unsigned qkva_w;       /* rq + rkv + dr: width of the fused q_a + kv_a output */
    unsigned max_slots;    /* distinct experts of a step at most: min(max_tokens k, E) */
    unsigned chunks;       /* attention chunks of the full context */
};

/* The per-rank shapes of o's model (gpu_shapes.cu): ARB_OK, or ARB_ERR_INVALID with why naming the
 * dimension that does not split by tp_shape or the option the model refuses. */
arb_status_t arb_gpu_shapes_of(const arb_gpu_model_opts_t *o, arb_gpu_shapes *s, char *why, size_t len);

struct arb_gpu_layer {
    int dense;
    arbk::bf16 *attn_norm, *q_a_norm, *kv_a_norm, *ffn_norm;
    arbk::bf16 *qkv_a;  /* [(rq + rkv + dr) x H]: q_a's rows, then kv_a_proj_with_mqa's */
    arbk::bf16 *q_b;    /* [nh_r (dn + dr) x rq] */
    arbk::bf16 *kv_b;   /* [nh_r (dn + dv) x rkv]: per head dn rows of W_uk, then dv of W_uv */
    arbk::bf16 *o_proj; /* [H x nh_r dv] */
    arbk::bf16 *gate, *up, *down; /* dense: [Id x H], [Id x H], [H x Id] */
    arbk::bf16 *router;           /* [E x H] */
    float *router_bias;           /* [E] */
    arbk::moe_weights moe;        /* routed (expert-major) and shared expert */
    arbk::bf16 *cache_ckv;        /* [context x rkv] */
    arbk::bf16 *cache_kpe;        /* [context x dr] */
};

/* The persistent form's plan of steps of T tokens (gpu_persist.cu): the segments' shapes and
 * tiles, grids, shared memory, and their instruction lists on the device (off, then ent). */
struct arb_gpu_persist {
    arbk::persist_attn_args attn;
    arbk::persist_moe_args moe;
    size_t smem_attn, smem_moe;
    int nctas_attn, nctas_moe;       /* 0: that segment runs as launches */
    uint32_t *dev_attn, *dev_moe;
};

/* A call site: its instance (NULL: one rank, local residual + RMSNorm) and the buffer
 * that feeds it (from arb_inst_alloc; shared by the sites of one instance). */
struct arb_gpu_site {
    arb_inst_t *inst;
    arbk::bf16 *part; /* [max_tokens x H] */
};

struct arb_gpu_model {
    arb_gpu_model_opts_t o;
    double inv_freq[256];
    arb_gpu_shapes s;
    arb_gpu_mem_t mem;
    int sms;
    void *weights, *cache, *act; /* the three device allocations */
    size_t weight_bytes;
    arb_gpu_layer *layers;
    arbk::bf16 *embed, *final_norm, *lm_head;
    /* step buffers (max_tokens = Tm rows) */
    int32_t *tokens, *pos0;       /* [Tm], [1]: the inputs a captured step reads */
    float2 *rope_cs;              /* [context x dr/2] (cos * m, sin * m) */
    arbk::bf16 *res, *h;          /* [Tm x H] residual stream, normed hidden */
    arbk::bf16 *qkva, *qa, *q, *qlat, *qpe, *o_heads;
    float *partial;               /* [chunks x Tm nh_r x (rkv + 4)] */
    float *router_logits;         /* [Tm x E] */
    arbk::moe_route route;        /* coef, uniq, n_uniq, the shared expert's parts (experts: per layer below) */
    int32_t *experts;             /* [Lz x Tm x k]: layer l of a T-step at l T k */
    arbk::bf16 *act_moe, *act_sh, *act_dense;
    float *logits, *best_logit;   /* [Tm x Vr], [Tm] */
    int32_t *best_index;          /* [Tm] */
    arbk::bf16 *local_part;       /* [Tm x H] for sites without an instance */
    unsigned *tickets;            /* [ARB_GPU_TICKETS] the one-launch kernels' last-block tickets, left zero */
    float *qb_scratch;            /* --fuse qb_absorb: [nh_r x 8 x kMaxT x rkv] the absorption's part sums, else NULL */
    unsigned *qb_tickets;         /* --fuse qb_absorb: [nh_r] a ticket per head, left zero, else NULL */
    float *uv_scratch;            /* --fuse merge_uv: [rkv / 64 x kMaxT nh_r x dv] W_uv's block sums, else NULL */
    unsigned *uv_tickets;         /* --fuse merge_uv: [kMaxT nh_r] a ticket per row, left zero, else NULL */
    arbk::bf16 *aux;              /* [context x naux x H]: opts.aux_layers' outputs per position (cache allocation) */
    arb_gpu_site *sites;          /* [4 Lz]: steps of T > 1 at [0, 2 Lz), of T = 1 at [2 Lz, 4 Lz) (arb_gpu_site_at) */
    /* profiling (arb_gpu_model_profile): an event after every launch of one step */
    int prof_n, prof_cap;
    cudaEvent_t *prof_ev;
    int *prof_kind;
    struct arb_gpu_prof_graph *prof_graph; /* arb_gpu_model_profile_graph's capture: nodes by kind */
    unsigned last_T;
    /* the persistent form (opts.persistent): plans by T [max_tokens + 1], every segment's
     * stage counters [2 Lz x ARB_PERSIST_MAX_STAGES] and the error word after them */
    arb_gpu_persist *persist;
    unsigned *pcnt;
    int *perr;
    /* --l2-side (opts.l2_side): the side branch's stream, forked from the step's stream at
     * side_fork and joined back at side_join (gpu_step.cu); NULL without it */
    cudaStream_t side;
    cudaEvent_t side_fork, side_join;
    int side_forked; /* this step has forked the side branch (its end joins it then) */
};

/* While prof_graph is set (a capture of one step): files the nodes captured since the
 * previous mark under `kind` (gpu_profile.cu). */
void arb_gpu_prof_graph_mark(arb_gpu_model *m, cudaStream_t st, int kind);

/* Site i as a step of T tokens uses it: one-token steps (decode, draft) may have their own
 * instances (opts.sites_t1), as a server dispatches per batch-size bucket. */
static inline arb_gpu_site &arb_gpu_site_at(arb_gpu_model *m, unsigned i, unsigned T)
{
    return m->sites[(T == 1 ? 2 * m->s.Lz : 0) + i];
}

/* The persistent form (gpu_persist.cu): plans at create, free at destroy, the counters'
 * reset at a step's start, a layer's attention or MoE block as one launch, and the
 * deadline check (after the stream synchronized). */
arb_status_t arb_gpu_persist_setup(arb_gpu_model *m, char *why, size_t len);
void arb_gpu_persist_free(arb_gpu_model *m);
arb_status_t arb_gpu_persist_begin(arb_gpu_model *m, cudaStream_t st, char *why, size_t len);
arb_status_t arb_gpu_persist_attention(arb_gpu_model *m, unsigned l, unsigned T, const arbk::launch_ctx &lc,
                                       char *why, size_t len);
arb_status_t arb_gpu_persist_moe(arb_gpu_model *m, unsigned l, unsigned T, const arbk::launch_ctx &lc, char *why,
                                 size_t len);
arb_status_t arb_gpu_persist_check(const arb_gpu_model *m, char *why, size_t len);

/* Bytes of one routed expert's shard (gate, up, down; INT4 with scales). */
double arb_gpu_expert_bytes(const arb_gpu_model_t *m);

#endif
