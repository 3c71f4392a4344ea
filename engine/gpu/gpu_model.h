/* SPDX-License-Identifier: MIT */
/*
 * The engine on the GPU: one rank's shard of a DeepSeek-V3 / Kimi-K2 model (weights
 * generated on the device from a seed, engine/model/wgen.h), its latent KV cache, and one step
 * of T new tokens at positions P0 .. P0+T-1 exactly as engine/forward.md defines it.
 *
 * What the driver does with it:
 *   arb_gpu_model_plan      bytes by kind, before anything is allocated (memory plan)
 *   arb_gpu_model_create    allocate (collective when call sites have instances)
 *   arb_gpu_model_generate  fill the weights from the seed (seconds for a 70 GB shard)
 *   arb_gpu_model_load      or from a checkpoint (engine/weights/load.h)
 *   arb_gpu_model_set_input token ids and P0 into device memory (outside any capture)
 *   arb_gpu_model_step      enqueue one step on a stream; capturable: it reads the tokens
 *                           and P0 from device memory, so one CUDA graph per T replays
 *   arb_gpu_model_read_*    this rank's (max logit, global index) per token, its logits,
 *                           the final hidden state, the experts each layer selected, the
 *                           states kept for the EAGLE-3 draft (opts.naux), embedding rows
 *   arb_gpu_model_step_bytes what a step must read (the HBM floor's numerator)
 *   arb_gpu_read_bandwidth  streaming-read bandwidth of the device (the floor's denominator)
 *   arb_gpu_moe_bench       one layer's MoE block against a per-expert cuBLAS loop (_sel: over
 *                           a given selection, T up to ARB_GPU_MOE_MAX_T)
 *   arb_gpu_model_destroy
 *
 * Shapes are per rank of tp_shape = K (forward.md's sharding); T <= ARB_GPU_MAX_T (the
 * skinny kernels' limit; prefill runs in chunks of at most that many tokens).
 * All functions return arb_status_t with a one-line reason in why (include/arbench/status.h).
 */
#ifndef ARB_ENGINE_GPU_MODEL_H
#define ARB_ENGINE_GPU_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"
#include "gpu/kernels/timeline.h"
#include "runtime/instance.h"
#include "weights/load.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest T of one step: every kernel keeps T accumulators per thread. */
#define ARB_GPU_MAX_T 8
#define ARB_GPU_MOE_MAX_T 16 /* the MoE kernels alone (tree verify): arb_gpu_moe_bench_sel */

typedef enum arb_gpu_wformat {
    ARB_GPU_BF16 = 0, /* every weight bf16 */
    ARB_GPU_INT4 = 1, /* routed experts W4A16 group 32 (forward.md's packing), the rest bf16 */
} arb_gpu_wformat_t;

/* The model, unsharded, as the driver read it from config.json (after overrides), plus
 * which shard this rank holds. The GPU model derives the per-rank splits itself and
 * refuses a split that is not exact (naming the field). */
typedef struct arb_gpu_dims {
    unsigned hidden;                /* H, hidden_size */
    unsigned layers;                /* Lz, num_hidden_layers after overrides */
    unsigned heads;                 /* nh, num_attention_heads */
    unsigned nope, rope, v_head;    /* qk_nope_head_dim, qk_rope_head_dim, v_head_dim */
    unsigned q_lora, kv_lora;       /* q_lora_rank, kv_lora_rank */
    unsigned experts, topk;         /* n_routed_experts after overrides, num_experts_per_tok */
    unsigned n_group, topk_group;   /* routing groups (1, 1 for Kimi-K2) */
    unsigned moe_inter, n_shared;   /* moe_intermediate_size, n_shared_experts */
    unsigned dense_inter;           /* intermediate_size (dense layers) */
    unsigned first_dense;           /* first_k_dense_replace: layers < it are dense */
    unsigned vocab;                 /* vocab_size */
    float routed_scaling;           /* routed_scaling_factor */
    float rms_eps;                  /* rms_norm_eps */
    float softmax_scale;            /* forward.md: (dn+dr)^-0.5 times the YaRN mscale^2 */
    const double *inv_freq;         /* [rope / 2] RoPE inverse frequencies (engine/model/rope.h), copied at create */
    double rope_mscale;             /* m of forward.md's RoPE (1 without YaRN) */
    unsigned tp_shape;              /* K: shard shapes of TP = K */
    unsigned shard;                 /* r < K: which shard this rank holds */
} arb_gpu_dims_t;

/* Per-rank byte counts of one shard; the memory plan prints them by kind. */
typedef struct arb_gpu_mem {
    size_t embed;         /* embed_tokens, replicated */
    size_t attention;     /* q_a, kv_a, q_b, kv_b, o_proj of all layers */
    size_t norms_router;  /* all norms, routers and their biases */
    size_t dense_mlp;     /* dense layers' gate/up/down shards */
    size_t shared_expert; /* shared experts' shards */
    size_t routed_experts;/* routed experts' shards (packed INT4 plus scales, or bf16) */
    size_t lm_head;       /* lm_head shard */
    size_t kv_cache;      /* latent cache, replicated: layers x context x (kv_lora + rope) bf16 */
    size_t activations;   /* step buffers for max_tokens tokens (attention partials included) */
    size_t total;         /* the sum of the above (plugin buffers are the instances', not counted) */
} arb_gpu_mem_t;

/* What one step must read from memory, bytes, for the HBM floor. */
typedef struct arb_gpu_step_bytes {
    double attention;      /* attention weights of all layers (replicated q_a/kv_a included) */
    double kv_cache;       /* latent cache rows read: layers x (P0 + T) x (kv_lora + rope) x 2 */
    double dense_mlp;      /* dense layers' shards */
    double shared_expert;  /* shared experts' shards */
    double routed_experts; /* distinct selected experts per layer x one expert's shard bytes */
    double router;         /* routers (replicated) */
    double lm_head;        /* lm_head shard */
    double other;          /* embedding rows and norms */
    double total;
} arb_gpu_step_bytes_t;

typedef struct arb_gpu_model_opts {
    arb_gpu_dims_t dims;
    arb_gpu_wformat_t format;
    uint64_t seed;
    unsigned max_tokens;   /* largest T of any step, 1 .. ARB_GPU_MAX_T */
    unsigned context;      /* cache capacity in positions: every step needs P0 + T <= context */
    /* [2 * layers]: site A (after o_proj) of layer l at 2l, site B (after the MLP) at
     * 2l + 1. The model allocates each distinct instance's input buffer with
     * arb_inst_alloc (collective, in site order) and calls arb_inst_allreduce_rmsnorm
     * there. NULL (the array or an entry): one rank without a plugin, the residual add +
     * RMSNorm kernel on this rank's partial sums alone (single-GPU tests). */
    arb_inst_t *const *sites;
    /* [2 * layers] or NULL: the instances of one-token steps (decode, draft), where a
     * profile chose differently by shape; NULL: `sites` for every T. Same rules. */
    arb_inst_t *const *sites_t1;
    arb_fusion_t fusion;   /* passed to every arb_inst_allreduce_rmsnorm */
    int pdl;               /* 1: kernels launched with programmatic dependent launch */
    unsigned l2_ahead;     /* ARB_L2_AHEAD_* bits (engine_opts.h): the launches form's pulls toward L2 */
    unsigned l2_side;      /* ARB_L2_SIDE_* bits (engine_opts.h): the launches form's side branch of pulls toward L2 */
    unsigned side_upto;    /* ... in steps of at most this many tokens (0: every step) */
    unsigned wave_fit;     /* ARB_WAVE_FIT_* bits (engine_opts.h): the launches form's grids folded into one wave */
    unsigned wave_from;    /* ... in steps of at least this many tokens */
    unsigned fuse;         /* ARB_FUSE_* bits (engine_opts.h): the launches form's fused kernels, where the shapes fit */
    int moe_stage;         /* 1: the MoE launches' routed INT4 gate/up at T <= 3 stage more groups in shared memory */
    int moe_order;         /* the MoE gate/up grid's order: 0 auto, 1 shared expert first, 2 routed tiles first, 3 spread */
    int moe_early;         /* 1: the MoE launches' down reads the selection and its first round of weights before its
                              wait (gate/up triggers it after its own); 2: and its later rounds' toward L2 there;
                              3 spec, 4 spec-sync: the selection before the wait a guess, checked after it
                              (launch_ctx.moe_early) */
    int attn_min_rows;     /* the attention's row groups keep at least this many rows (0: the kernels' default) */
    int attn_fill;         /* the attention's grid aims at this many CTAs an SM (0: the kernels' default) */
    int attn_wide_from;    /* the attention's wide CTAs in steps of at least this many tokens (0: never) */
    /* bits: 1 each layer's attention (between the call sites before and after it), 2 each
     * MoE block, as one persistent launch (engine/gpu/gpu_persist.cu); 0: a launch per kernel */
    int persistent;
    /* The EAGLE-3 draft's inputs: the residual stream after layers aux_layers[0 .. naux)
     * (ascending) is kept per position, [context x naux x H] bf16 (counted in kv_cache);
     * naux 0: none. */
    unsigned naux;
    unsigned aux_layers[4];
} arb_gpu_model_opts_t;

typedef struct arb_gpu_model arb_gpu_model_t;

/* Per-rank bytes of the model create would allocate for opts (nothing is allocated). */
arb_status_t arb_gpu_model_plan(const arb_gpu_model_opts_t *opts, arb_gpu_mem_t *mem, char *why, size_t why_len);

/* Allocate weights, cache and step buffers on the current device. Collective over the
 * sites' instances when there are any. Weights are not filled: call generate. */
arb_status_t arb_gpu_model_create(const arb_gpu_model_opts_t *opts, arb_gpu_model_t **out, char *why,
                                  size_t why_len);

/* Fill every weight from opts.seed on the device and zero the cache; synchronizes. */
arb_status_t arb_gpu_model_generate(arb_gpu_model_t *m, char *why, size_t why_len);

/* Fill every weight from a checkpoint instead of the seed (gpu_model_load.cu): plan is this
 * rank's (arb_wload_plan of shard `shard` of tp_shape, already checked), each block placed
 * where the layout put its tensor, staged through two pinned host chunks of 64 MB (one
 * fills while the other's copies run); routed INT4 experts reshuffled on the host into the
 * fragment layout (kernels/moe_int4_layout.h). Zeroes the cache; synchronizes. stats (may
 * be NULL): bytes read and the seconds until the last copy finished. */
arb_status_t arb_gpu_model_load(arb_gpu_model_t *m, const arb_wload_t *w, const arb_wplan_t *plan, int progress,
                                arb_wload_stats_t *stats, char *why, size_t why_len);

/* The host side of that reshuffle, one expert's [rows x cols] matrix (rows a multiple of
 * 16, cols of 32): packed words in the engine's nibbles, row-major [rows x cols/8], to the
 * fragment layout's words; its scales [rows x cols/32] to the fragment layout's. */
void arb_gpu_int4_to_frag(const int32_t *src, uint32_t *dst, unsigned rows, unsigned cols);
void arb_gpu_scales_to_frag(const uint16_t *src, uint16_t *dst, unsigned rows, unsigned cols);

/* Copy T token ids and the position P0 of the first into the model's device inputs,
 * enqueued on stream (not inside a capture). Fails when T > max_tokens or
 * P0 + T > context or a token >= vocab. */
arb_status_t arb_gpu_model_set_input(arb_gpu_model_t *m, const uint32_t *tokens, unsigned T, unsigned pos0,
                                     void *stream, char *why, size_t why_len);

/* Enqueue one step of T tokens (reading the inputs set above from device memory):
 * writes the cache rows P0 .. P0+T-1 of every layer, the logits, this rank's argmax and
 * the selected experts. Nothing synchronizes; a capture of this call replays as a step
 * of the same T with whatever inputs the device memory holds then. */
arb_status_t arb_gpu_model_step(arb_gpu_model_t *m, unsigned T, void *stream, char *why, size_t why_len);

/* After the stream synchronized. best_logit[t], best_index[t] (global vocabulary index;
 * ties: lower index) of this rank's shard for the last step's T tokens. */
arb_status_t arb_gpu_model_read_argmax(arb_gpu_model_t *m, unsigned T, float *best_logit, uint32_t *best_index,
                                       char *why, size_t why_len);
/* logits[t * vocab_rank + v], fp32, vocab_rank = arb_gpu_model_vocab_rank(m). */
arb_status_t arb_gpu_model_read_logits(arb_gpu_model_t *m, unsigned T, float *logits, char *why, size_t why_len);
/* The final normed hidden state (model.norm's output), bf16 bits [T x H]. */
arb_status_t arb_gpu_model_read_hidden(arb_gpu_model_t *m, unsigned T, uint16_t *hidden, char *why,
                                       size_t why_len);
/* experts[(l * T + t) * topk + j] for every layer l (entries of dense layers are -1),
 * in the router's order (descending choice score). */
arb_status_t arb_gpu_model_read_experts(arb_gpu_model_t *m, unsigned T, int32_t *experts, char *why,
                                        size_t why_len);

/* The kept states (opts.naux) at positions pos0 .. pos0 + T - 1, bf16 [T x naux x H];
 * the embedding rows of tokens[0..T), bf16 [T x H]. Synchronous copies. */
arb_status_t arb_gpu_model_read_aux(arb_gpu_model_t *m, unsigned pos0, unsigned T, uint16_t *out, char *why,
                                    size_t why_len);
arb_status_t arb_gpu_model_read_embed(arb_gpu_model_t *m, const uint32_t *tokens, unsigned T, uint16_t *out,
                                      char *why, size_t why_len);
/* The device addresses of the same: the kept states [context x naux x H] (NULL: naux 0)
 * and the embedding table [vocab x H], bf16. */
const void *arb_gpu_model_aux_device(const arb_gpu_model_t *m);
const void *arb_gpu_model_embed_device(const arb_gpu_model_t *m);

/* Per-rank row counts and offsets the driver needs for the distributed argmax. */
unsigned arb_gpu_model_vocab_rank(const arb_gpu_model_t *m);
unsigned arb_gpu_model_vocab_base(const arb_gpu_model_t *m);
/* The sizes create allocated (equal to plan's). */
const arb_gpu_mem_t *arb_gpu_model_mem(const arb_gpu_model_t *m);

/* Bytes a step of T tokens at P0 reads, given the experts it selected (read_experts'
 * layout). Pure arithmetic on the model's layout. */
void arb_gpu_model_step_bytes(const arb_gpu_model_t *m, unsigned T, unsigned pos0, const int32_t *experts,
                              arb_gpu_step_bytes_t *out);

/* Streaming-read bandwidth of the current device, bytes/s: the median of `reps` timed
 * reads of the model's weights (at least several GB, so past L2). */
arb_status_t arb_gpu_read_bandwidth(arb_gpu_model_t *m, int reps, void *stream, double *bytes_per_s, char *why,
                                    size_t why_len);

/* One layer's MoE block (routed experts of the last step's selection plus the shared
 * expert, T tokens), each form captured in a CUDA graph over many layers so weights
 * rotate past L2, replayed, timed per layer (median of reps). */
typedef struct arb_gpu_moe_bench {
    unsigned T;
    double experts_per_layer;   /* distinct routed experts, mean over MoE layers */
    double ours_us;             /* our two kernels, the model's format */
    double ours_bytes;          /* bytes they read per layer (weights + scales) */
    double cublas_us;           /* per-expert cuBLAS loop (bf16 gate|up GEMM, SiLU*up, down GEMM, weighted add) */
    double cublas_bytes;        /* bf16 bytes it reads per layer */
    int layers_timed;           /* MoE layers in one replay */
    int layers_total;           /* the model's MoE layers (more than layers_timed where the cuBLAS loop's copies did not fit) */
} arb_gpu_moe_bench_t;

arb_status_t arb_gpu_moe_bench(arb_gpu_model_t *m, unsigned T, int reps, void *stream, arb_gpu_moe_bench_t *out,
                               char *why, size_t why_len);
/* The same over a given selection, experts [Lz x T x k] (a dense layer's rows ignored; each
 * expert in 0 .. E - 1, at most 128 distinct a layer), for T = 1 .. ARB_GPU_MOE_MAX_T: past
 * ARB_GPU_MAX_T no step runs, and the bench uses its own token and activation buffers. */
arb_status_t arb_gpu_moe_bench_sel(arb_gpu_model_t *m, unsigned T, const int32_t *experts, int reps, void *stream,
                                   arb_gpu_moe_bench_t *out, char *why, size_t why_len);

/* Where a step's time goes: the launches of a step by kind. */
typedef enum arb_gpu_prof_kind {
    ARB_GPU_PROF_EMBED = 0,
    ARB_GPU_PROF_QKV_A,      /* fused q_a + kv_a GEMV */
    ARB_GPU_PROF_MLA_PREP,   /* latent norms, RoPE, cache rows: since qkva_prep, inside qkv_a's launch (no nodes of its own) */
    ARB_GPU_PROF_Q_B,
    ARB_GPU_PROF_ABSORB,     /* q_nope @ W_uk, RoPE of q_pe */
    ARB_GPU_PROF_ATTEND,     /* flash-decoding partials over the cache */
    ARB_GPU_PROF_COMBINE,    /* merge + W_uv */
    ARB_GPU_PROF_O_PROJ,
    ARB_GPU_PROF_SITE_A,
    ARB_GPU_PROF_ROUTER,
    ARB_GPU_PROF_MOE_GATE_UP,
    ARB_GPU_PROF_MOE_DOWN,
    ARB_GPU_PROF_DENSE,
    ARB_GPU_PROF_SITE_B,
    ARB_GPU_PROF_LM_HEAD,    /* lm_head GEMV + argmax */
    ARB_GPU_PROF_KINDS
} arb_gpu_prof_kind_t;

const char *arb_gpu_prof_name(int kind);

/* One eager step of T tokens (the inputs as set) with an event after every launch:
 * us[kind] = the summed device time of that kind's launches over the step, from the
 * previous launch's end (so launch gaps count with the kernel that follows). Synchronizes. */
arb_status_t arb_gpu_model_profile(arb_gpu_model_t *m, unsigned T, void *stream, double us[ARB_GPU_PROF_KINDS],
                                   char *why, size_t why_len);

/* The same in graph replay: the step of T tokens (the inputs as set) captured once and
 * replayed `reps` times whole and, interleaved, once per kind with that kind's graph nodes
 * disabled; us[kind] = median(whole) - median(without the kind), microseconds: what the kind
 * adds to a replayed step (its launch latency included; noise can make a tiny kind's
 * negative), NAN when not measured (no nodes, a node the driver will not disable, or a bit of
 * keep_mask: 1u << kind, e.g. the call sites of a collective run, whose kernels every rank
 * must run). *step_us = median(whole).
 * A disabled kind leaves its outputs stale, so later kinds run on the previous replay's
 * values (routing may change at T > 1). Every rank must make the same calls. Synchronizes. */
arb_status_t arb_gpu_model_profile_graph(arb_gpu_model_t *m, unsigned T, int reps, unsigned keep_mask, void *stream,
                                         double us[ARB_GPU_PROF_KINDS], double *step_us, char *why, size_t why_len);

/* The chain profile (chain_plan.h): windows of the same capture replayed, each ending at one
 * launch of a measured layer (ARB_GPU_CHAIN_LEAD layers before it in the window), `reps`
 * times interleaved with the whole step; us[kind] = the step's estimate of what that kind
 * adds to the chain's end (the measured layers' segments scaled to their class's layer count,
 * the tail once; they add up to about the step), NAN for a kind not measured (the
 * embedding, mla_prep). A window that starts past the head first gets the residual stream and
 * the normed hidden state a replay of the step up to its start left (two copies at its roots).
 * *step_us = median of the whole step in the same replays; `layers`
 * the measured layers and what each added. One rank (its call sites' kernels alone: a
 * collective's peers would not replay the same windows). Synchronizes. */
#define ARB_GPU_CHAIN_LEAD 2u
typedef struct arb_gpu_chain_layers {
    unsigned n;
    unsigned layer[3];
    int dense[3];
    double us[3];
} arb_gpu_chain_layers_t;
arb_status_t arb_gpu_model_profile_chain(arb_gpu_model_t *m, unsigned T, int reps, void *stream,
                                         double us[ARB_GPU_PROF_KINDS], double *step_us, arb_gpu_chain_layers_t *layers,
                                         char *why, size_t why_len);

void arb_gpu_model_destroy(arb_gpu_model_t *m);

/* The step's timeline (a build configured with -Dengine_timeline=true; kernels/timeline.cuh):
 * _begin makes room for cap CTA records on the device and turns recording on for every
 * instrumented kernel launched or replayed until _end, which turns it off, copies up to cap of
 * them into out (*n; *dropped: CTAs past the room) in the order they started recording, each
 * with its launch's number (arb_tl_number_launches; ARB_ERR_SYSTEM where the records cannot be
 * numbered), and frees the room. One recording at a time in the process. ARB_DECLINE from _begin in another
 * build (the option named). */
arb_status_t arb_gpu_timeline_begin(size_t cap, char *why, size_t why_len);
arb_status_t arb_gpu_timeline_end(arb_tl_rec_t *out, size_t cap, size_t *n, size_t *dropped, char *why,
                                  size_t why_len);
/* In the same builds: *n, the MoE down CTAs whose --moe-early spec guess of the selection was wrong
 * (they issued their first round again) since the last call, which clears it; waits for the device
 * first. ARB_DECLINE in another build. */
arb_status_t arb_gpu_moe_reissues(unsigned *n, char *why, size_t why_len);

/* For tests: the persistent form's wait (gpu_persist.cu) on a counter holding `value`
 * until it reaches `target` or timeout_ns pass; *err the error word after it (code when
 * the deadline passed, 0 when not), *seconds how long the wait took. */
arb_status_t arb_gpu_persist_probe(unsigned value, unsigned target, unsigned long long timeout_ns, int code, int *err,
                                   double *seconds, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
