/* SPDX-License-Identifier: MIT */
/*
 * A plan (engine/weights/names.h) against a checkpoint (engine/weights/index.h): every
 * tensor present with the shape config.json implies and an accepted dtype, checked before
 * any of it is read; then one rank's block of a tensor copied out of the mapping.
 */
#ifndef ARB_ENGINE_WEIGHTS_SLICE_H
#define ARB_ENGINE_WEIGHTS_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "weights/index.h"
#include "weights/names.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The prefix of the text model's names in ckpt: "" when it holds model.embed_tokens.weight,
 * "language_model." when it holds language_model.model.embed_tokens.weight (Kimi-K2.5),
 * NULL when neither (not a DeepSeek-V3-family checkpoint). */
const char *arb_wplan_detect_prefix(const arb_ckpt_t *ckpt);

/* With plan->fp8, a 2-D P.weight may be F8_E4M3 when P.weight_scale_inv is there, F32
 * [ceil(out/128) x ceil(in/128)]; that scale tensor is checked with it.
 * Checks every spec of `plan` in `ckpt`; the first failure names the tensor, the file
 * (the shard, or the checkpoint folder when absent) and what config.json expects.
 * rank_bytes (may be NULL): the bytes this rank reads. */
arb_status_t arb_wplan_check(const arb_wplan_t *plan, const arb_ckpt_t *ckpt, uint64_t *rank_bytes, char *why,
                             size_t why_len);

/* Copies this rank's block of `s` (arb_wspec_rank_numel elements of the file's dtype,
 * row-major [count x cols] or [rows x count]) into dst of dst_len bytes; weight_packed is
 * converted to the engine's INT4 nibbles (engine/weights/int4_ct.h). The spec must have
 * passed arb_wplan_check; a weight_shape spec is refused (it is checked, not loaded). */
arb_status_t arb_wspec_read(const arb_ckpt_t *ckpt, const arb_wspec_t *s, void *dst, size_t dst_len, char *why,
                            size_t why_len);

/* This rank's block of s as it lies in the mapping, when it is contiguous there and needs no
 * conversion (a whole tensor or a block of rows, not INT4 words): *p points at it; else
 * *p = NULL and arb_wspec_read copies. */
void arb_wspec_view(const arb_ckpt_t *ckpt, const arb_wspec_t *s, const void **p);

/* 1 when s is stored as FP8 in ckpt (and so read with arb_wspec_read_fp8). */
int arb_wspec_is_fp8(const arb_ckpt_t *ckpt, const arb_wspec_t *s);

/* This rank's block of an FP8 spec dequantized: bf16(float(fp8) * scale_inv[r / 128][c / 128])
 * (a float product, then round to nearest even, as PyTorch's weight.float() * scale then
 * .to(bfloat16)), arb_wspec_rank_numel bf16 values into dst of dst_len bytes. */
arb_status_t arb_wspec_read_fp8(const arb_ckpt_t *ckpt, const arb_wspec_t *s, uint16_t *dst, size_t dst_len, char *why,
                                size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
