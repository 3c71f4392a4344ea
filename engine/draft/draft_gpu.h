/* SPDX-License-Identifier: MIT */
/*
 * The EAGLE-3 draft head's forward on the GPU: draft_cpu.h's equations, one shard range,
 * on the target's device and stream. Weights bf16 on the device; the projections, the
 * SwiGLU MLP and lm_head through the engine's bf16 GEMV (engine/gpu/kernels, fp32
 * accumulation), RMSNorm, rotate-half RoPE, causal GQA attention over the head's own KV
 * cache and the embedding gather as small kernels here (fp32 accumulation, bf16 at every
 * stored value, as the CPU draft but not float64: a near tie of logits may break the other
 * way); the two sites the fused all-reduce + residual + RMSNorm of the instance API on the
 * same instances as the CPU draft (the target's layer-0 sites). Eager launches, no graph.
 */
#ifndef ARB_ENGINE_DRAFT_GPU_H
#define ARB_ENGINE_DRAFT_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "draft/draft_cpu.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_draft_gpu arb_draft_gpu_t;

/* Takes the weights (uploaded, then freed; also on failure); collective over the sites'
 * instances (arb_inst_alloc). On the current device. */
arb_status_t arb_draft_gpu_create(const arb_draft_cpu_opts_t *o, arb_draft_weights_t *w, arb_draft_gpu_t **out,
                                  char *why, size_t why_len);
/* One step of T rows at pos0, enqueued on stream and synchronized. aux: the target's kept
 * rows on the device ([positions x 3 x H] bf16, row p the states at position p): fused from
 * rows pos0 .. pos0 + T - 1; NULL: one row (T = 1) from the last step's pre-norm output row
 * `from`. embed: the target's embedding table on the device [vocab x H]; tokens the T
 * inputs (host ids). */
arb_status_t arb_draft_gpu_step(arb_draft_gpu_t *m, const void *aux, unsigned from, const void *embed,
                                const uint32_t *tokens, unsigned T, unsigned pos0, void *stream, char *why,
                                size_t why_len);
/* Row t's best logit over the held draft vocabulary and its draft id (ties: lower id), of
 * the last step. */
void arb_draft_gpu_argmax(const arb_draft_gpu_t *m, unsigned t, float *best, uint32_t *draft_id);
uint32_t arb_draft_gpu_target_id(const arb_draft_gpu_t *m, uint32_t draft_id);
void arb_draft_gpu_destroy(arb_draft_gpu_t *m);

#ifdef __cplusplus
}
#endif

#endif
