/* SPDX-License-Identifier: MIT */
/*
 * The memory plan: per-rank bytes by kind (weights by kind, latent KV cache, step
 * activations, buffers handed to plugins) for one shard of tp_shape K, computed from
 * the config before anything is allocated; printed, checked against what the device
 * (or the host, for the CPU backend) has free, and refused with the table when it does
 * not fit. The kinds add up to `total` exactly.
 */
#ifndef ARB_ENGINE_MEMPLAN_H
#define ARB_ENGINE_MEMPLAN_H

#include <stddef.h>
#include <stdio.h>

#include "model/config.h"
#include "model/shard.h"

#define ARB_MAX_EXPERTS_SEEN 4096u /* routed experts the step accounting tracks */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum arb_mem_kind {
    ARB_MEM_EMBED = 0,     /* embed_tokens [V x H] bf16, replicated */
    ARB_MEM_ATTENTION,     /* q_a, kv_a (replicated), q_b, kv_b, o_proj shards, all layers */
    ARB_MEM_NORMS_ROUTER,  /* every norm, the routers [E x H] bf16 and their fp32 biases */
    ARB_MEM_DENSE_MLP,     /* dense layers' gate/up/down shards */
    ARB_MEM_SHARED_EXPERT, /* shared experts' gate/up/down shards */
    ARB_MEM_ROUTED,        /* routed experts: bf16, or INT4 packed words */
    ARB_MEM_ROUTED_SCALES, /* INT4 group scales (bf16 per 32 inputs; 0 for bf16 experts) */
    ARB_MEM_LM_HEAD,       /* lm_head shard [V_r x H] */
    ARB_MEM_KV_CACHE,      /* layers x positions x (kv_lora_rank + qk_rope_head_dim) bf16, replicated */
    ARB_MEM_ACTIVATIONS,   /* step buffers for max_tokens tokens (attention scores over the context included) */
    ARB_MEM_PLUGIN,        /* per call-site instance: its input buffer and the composed path's scratch */
    ARB_MEM_KINDS
} arb_mem_kind_t;

extern const char *const arb_mem_kind_names[ARB_MEM_KINDS];

typedef struct arb_memplan {
    double bytes[ARB_MEM_KINDS];
    double total;
    double available;          /* what the device or host has free; < 0 when not known */
    char available_what[128];  /* e.g. "device 0 free (cudaMemGetInfo)", "host MemAvailable" */
} arb_memplan_t;

/* Bytes for shard `sh` of the model, a cache of `positions` rows, steps of up to
 * max_tokens tokens, and `instances` distinct call-site instances. */
void arb_memplan_compute(const arb_model_config_t *cfg, const arb_shard_t *sh, arb_weight_format_t wf,
                         unsigned positions, unsigned max_tokens, unsigned instances, arb_memplan_t *plan);

/* 1 when total <= available (or available unknown). */
int arb_memplan_fits(const arb_memplan_t *plan);

/* The table, one "# "-prefixed line per kind, the total and the verdict. */
void arb_memplan_print(FILE *f, const arb_memplan_t *plan, const char *title);

/* What one step must read from memory, bytes, per rank (the HBM floor's numerator):
 * every attention weight and norm, the cache rows 0 .. pos0+T-1 of every layer, the
 * dense and shared shards, the routers, the routed experts actually selected (each
 * distinct expert of a layer once, whatever the number of tokens that chose it), the
 * lm_head shard, the embedding rows. */
typedef struct arb_step_bytes {
    double attention, kv_cache, dense_mlp, shared_expert, routed_experts, router, lm_head, other, total;
    double distinct_experts; /* mean over MoE layers */
} arb_step_bytes_t;

/* experts: [layers x T x topk] as the backends report them (-1 in dense layers). */
void arb_step_bytes(const arb_model_config_t *cfg, const arb_shard_t *sh, arb_weight_format_t wf, unsigned T,
                    unsigned pos0, const int32_t *experts, arb_step_bytes_t *out);

/* MemAvailable of /proc/meminfo in bytes, or -1. */
double arb_memplan_host_available(void);

#ifdef __cplusplus
}
#endif

#endif
