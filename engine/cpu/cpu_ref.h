/* SPDX-License-Identifier: MIT */
/*
 * The CPU reference engine: the oracle of engine/forward.md, plain loops with float64
 * accumulation and bf16 rounding at exactly forward.md's storage points. One process
 * holds a contiguous range of shards of tp_shape K (its own shard r, or K/N shards when
 * N < K processes stand in for all K ranks) and calls the two fused all-reduce +
 * residual + RMSNorm call sites of every layer through the instance API on host memory.
 * Same shape as engine/gpu/gpu_model.h (sites array, fusion, set_input/step/read).
 */
#ifndef ARB_ENGINE_CPU_REF_H
#define ARB_ENGINE_CPU_REF_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "runtime/instance.h"
#include "model/rope.h"
#include "model/shard.h"
#include "weights/load.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_cpu_model_opts {
    const arb_model_config_t *cfg; /* after overrides; must outlive the model */
    arb_weight_format_t format;
    uint64_t seed;
    unsigned tp_shape;    /* K */
    unsigned shard_first; /* first shard this process holds */
    unsigned shard_count; /* how many consecutive shards (1: exactly one rank's work) */
    unsigned max_tokens;  /* largest T of a step */
    unsigned context;     /* cache capacity, positions */
    /* [2 * layers] as in gpu_model.h (site A of layer l at 2l, site B at 2l+1); NULL (the
     * array or an entry): no communication, the host residual + RMSNorm on this process's
     * partial sums alone. */
    arb_inst_t *const *sites;
    arb_inst_t *const *sites_t1; /* [2 * layers] or NULL: one-token steps' instances (gpu_model.h) */
    arb_fusion_t fusion;
    /* the EAGLE-3 draft's hook: after each step, the residual stream after these layers
     * (ascending; naux 0: none) is kept per position, [context x naux x H] bf16 */
    unsigned naux;
    const unsigned *aux_layers;
    /* NULL: weights generated from seed. Else read from this checkpoint (engine/weights/load.h;
     * its plan for the held range was checked by the caller or is checked here); format must
     * be the checkpoint's. load_progress: a progress line on stderr; load_stats (may be NULL):
     * what the load read and how long it took. */
    const arb_wload_t *wload;
    int load_progress;
    arb_wload_stats_t *load_stats;
    int hold_embed; /* 1: keep embed_tokens as a [V x H] table (generated), as a loaded model does */
} arb_cpu_model_opts_t;

typedef struct arb_cpu_model arb_cpu_model_t;

/* Allocates and generates the weights of the shard range (collective over the sites'
 * instances: their buffers come from arb_inst_alloc, in site order). */
arb_status_t arb_cpu_model_create(const arb_cpu_model_opts_t *opts, arb_cpu_model_t **out, char *why, size_t why_len);

/* One step of T tokens at positions pos0 .. pos0+T-1 (causal; writes the cache rows).
 * Afterwards read the logits (fp32 [T x vocab_rank]) and the local argmax. */
arb_status_t arb_cpu_model_step(arb_cpu_model_t *m, const uint32_t *tokens, unsigned T, unsigned pos0, char *why,
                                size_t why_len);

const float *arb_cpu_model_logits(const arb_cpu_model_t *m); /* [T x vocab_rank] of the last step */
unsigned arb_cpu_model_vocab_rank(const arb_cpu_model_t *m);
unsigned arb_cpu_model_vocab_base(const arb_cpu_model_t *m);
/* Local argmax of the last step's token t (ties: lower index), global vocabulary index. */
void arb_cpu_model_argmax(const arb_cpu_model_t *m, unsigned t, float *best_logit, uint32_t *best_index);
/* experts[(l * T + t) * topk + j] of the last step, -1 for dense layers (router order). */
const int32_t *arb_cpu_model_experts(const arb_cpu_model_t *m);
/* Entries of that array for a step of T tokens: layers x T x topk. */
size_t arb_cpu_model_experts_len(const arb_cpu_model_t *m, unsigned T);
/* The path each site's last call took (ARB_FUSION_PLUGIN / _COMPOSED; _AUTO = local). */
arb_fusion_t arb_cpu_model_site_path(const arb_cpu_model_t *m, unsigned site);
/* The residual stream after opts.aux_layers at position pos, [naux x H] bf16 (NULL
 * without aux layers or past the cache); valid for the positions a step has written. */
const uint16_t *arb_cpu_model_aux(const arb_cpu_model_t *m, unsigned pos);
/* The target's input embedding of token (< vocab_size), bf16 bits [H]. */
void arb_cpu_model_embed(const arb_cpu_model_t *m, uint32_t token, uint16_t *out);
/* Final normed hidden state of the last step, bf16 bits [T x H]. */
const uint16_t *arb_cpu_model_hidden(const arb_cpu_model_t *m);

/* Host bytes one process may give its reference (--check-steps builds one per rank, every
 * rank of a node at the same time): MemAvailable (bytes, < 0 when unknown) less a margin
 * (ARB_CPU_REF_MARGIN_FRACTION of it, at least ARB_CPU_REF_MARGIN_MIN bytes), split evenly
 * over the node's local_ranks; 0 when the margin takes it all; ARB_CPU_REF_BUDGET_UNKNOWN
 * when MemAvailable is unknown. *margin (may be NULL): the margin taken, bytes. */
#define ARB_CPU_REF_MARGIN_FRACTION 0.10
#define ARB_CPU_REF_MARGIN_MIN 4e9
#define ARB_CPU_REF_BUDGET_UNKNOWN 8e9
double arb_cpu_ref_host_budget(double mem_available, unsigned local_ranks, double *margin);

/* Where the model holds the block of spec s (a plan of its held range, engine/weights/names.h),
 * in the engine's form of engine/weights/load.h; *bytes its size. NULL when it holds no such
 * tensor (embed_tokens of a model without hold_embed). Loading writes there; a writer reads. */
void *arb_cpu_model_weight(arb_cpu_model_t *m, const arb_wspec_t *s, size_t *bytes);

void arb_cpu_model_destroy(arb_cpu_model_t *m);

#ifdef __cplusplus
}
#endif

#endif
