/* SPDX-License-Identifier: MIT */
/*
 * The weight format a checkpoint's config.json declares: no quantization_config (at the
 * top or under text_config) is bf16; quant_method "compressed-tensors" with format
 * "pack-quantized" and every config group's weights {num_bits 4, type int, symmetric,
 * strategy group, group_size 32} is INT4 routed experts (engine/weights/int4_ct.h);
 * quant_method "fp8" with fmt "e4m3" and weight_block_size [128, 128] (DeepSeek-V3's own
 * checkpoint) is FP8 block-quantized linear weights, each P.weight F8_E4M3 with
 * P.weight_scale_inv F32 [ceil(out/128) x ceil(in/128)], w = fp8 * scale_inv of its block,
 * dequantized to bf16 at load (engine/weights/load.h). Any other method or scheme is
 * refused, naming the file and the field.
 */
#ifndef ARB_ENGINE_WEIGHTS_QUANT_H
#define ARB_ENGINE_WEIGHTS_QUANT_H

#include <stddef.h>

#include "model/shard.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_FP8_BLOCK 128u /* rows and columns per FP8 scale block */

/* What a checkpoint stores. */
typedef struct arb_ckpt_quant {
    arb_weight_format_t experts; /* the engine's routed-expert format: INT4 for compressed-tensors */
    int fp8;                     /* 1: FP8 block-quantized linear weights (dequantized at load) */
} arb_ckpt_quant_t;

/* From config.json text; origin names it in messages. */
arb_status_t arb_weights_quant_parse(const char *json_text, const char *origin, arb_ckpt_quant_t *q, char *why,
                                     size_t why_len);
arb_status_t arb_weights_quant_load(const char *path, arb_ckpt_quant_t *q, char *why, size_t why_len);

/* The engine's routed-expert format only (FP8 checkpoints give bf16). */
arb_status_t arb_weights_format_parse(const char *json_text, const char *origin, arb_weight_format_t *wf, char *why,
                                      size_t why_len);

/* From the file at path. */
arb_status_t arb_weights_format_load(const char *path, arb_weight_format_t *wf, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
