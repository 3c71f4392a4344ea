/* SPDX-License-Identifier: MIT */
/*
 * The weight format a checkpoint's config.json declares: no quantization_config (at the
 * top or under text_config) is bf16; quant_method "compressed-tensors" with format
 * "pack-quantized" and every config group's weights {num_bits 4, type int, symmetric,
 * strategy group, group_size 32} is INT4 routed experts (engine/weights/int4_ct.h). Any
 * other method or scheme (FP8 block quantization among them) is refused, naming the file
 * and the field.
 */
#ifndef ARB_ENGINE_WEIGHTS_QUANT_H
#define ARB_ENGINE_WEIGHTS_QUANT_H

#include <stddef.h>

#include "model/shard.h"

#ifdef __cplusplus
extern "C" {
#endif

/* From config.json text; origin names it in messages. */
arb_status_t arb_weights_format_parse(const char *json_text, const char *origin, arb_weight_format_t *wf, char *why,
                                      size_t why_len);

/* From the file at path. */
arb_status_t arb_weights_format_load(const char *path, arb_weight_format_t *wf, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
