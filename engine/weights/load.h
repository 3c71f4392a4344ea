/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint folder loaded into a backend (`arbench engine --weights-dir DIR`), host side:
 * open DIR (engine/weights/index.h), read its config.json's quantization_config
 * (engine/weights/quant.h), find the names' prefix, check one rank's plan against it
 * (every tensor present, shape from config.json, dtype) before any device memory is
 * touched, then hand the backend each tensor block of that rank in the engine's form:
 *
 *   bf16 weights and norms      BF16 (FP8 block-quantized ones dequantized here)
 *   e_score_correction_bias     F32 (a BF16 one widened)
 *   INT4 weight_packed          I32 words in the engine's nibbles (engine/model/int4.h)
 *   INT4 weight_scale           BF16
 *
 * row-major [count x cols] or [rows x count] as arb_wspec_read gives it (held rows or
 * columns of the unsharded tensor). The backend places each block (the CPU reference in
 * its arrays, the GPU in device memory, INT4 reshuffled to its fragment layout).
 */
#ifndef ARB_ENGINE_WEIGHTS_LOAD_H
#define ARB_ENGINE_WEIGHTS_LOAD_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/shard.h"
#include "weights/index.h"
#include "weights/names.h"
#include "weights/quant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_wload {
    char dir[1024];
    char config[1100];         /* DIR/config.json */
    arb_ckpt_t ckpt;
    arb_ckpt_quant_t quant;    /* what the checkpoint stores */
    arb_weight_format_t format; /* the engine's routed-expert format it implies */
    const char *prefix;        /* "" or "language_model." */
} arb_wload_t;

/* What one fill read and how long it took. */
typedef struct arb_wload_stats {
    uint64_t bytes;       /* bytes of the checkpoint read (file dtypes) */
    uint64_t tensors;
    uint64_t dequantized; /* FP8 tensors dequantized to bf16 */
    double seconds;       /* wall time of the whole fill, the backend's copies included */
} arb_wload_stats_t;

/* Opens DIR: the shards, the quantization, the prefix. On error nothing stays open. */
arb_status_t arb_wload_open(const char *dir, arb_wload_t *w, char *why, size_t why_len);
void arb_wload_close(arb_wload_t *w);

/* The plan of shard (range) sh of cfg, checked against the checkpoint; *bytes (may be
 * NULL): what it reads. */
arb_status_t arb_wload_plan(const arb_wload_t *w, const arb_model_config_t *cfg, const arb_shard_t *sh,
                            arb_wplan_t *plan, uint64_t *bytes, char *why, size_t why_len);

/* Receives one block (the engine's form above, `bytes` bytes); data is valid during the call. */
typedef arb_status_t (*arb_wload_sink_fn)(void *ctx, const arb_wspec_t *s, const void *data, size_t bytes,
                                          char *why, size_t why_len);

/* Reads every block of the plan (weight_shape tensors are checked, not read) into sink, in
 * plan order. progress: a line on stderr that rewrites itself (a terminal's). */
arb_status_t arb_wload_fill(const arb_wload_t *w, const arb_wplan_t *plan, arb_wload_sink_fn sink, void *ctx,
                            int progress, arb_wload_stats_t *stats, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
