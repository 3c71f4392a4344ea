/* SPDX-License-Identifier: MIT */
/*
 * For the tests: a tiny DeepSeek-V3 checkpoint written from its config (engine/configs/tiny.json):
 * config.json (plus quantization_config with INT4 experts), model.safetensors.index.json and
 * two shards, tensors alternating between them. Element values come from the generator key
 * of (tensor, part, layer, expert, stored index), INT4 values from its top four bits, so a
 * reader can check any block of any tensor; a checkpoint can be spoilt one way at a time.
 */
#ifndef ARB_TESTS_TINY_CKPT_H
#define ARB_TESTS_TINY_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/shard.h"
#include "weights/names.h"

typedef enum tiny_spoil {
    TINY_SPOIL_NONE = 0,
    TINY_SPOIL_SHAPE,         /* kv_a_layernorm of layer 1 one element longer than config.json says */
    TINY_SPOIL_DTYPE,         /* lm_head stored as F16 */
    TINY_SPOIL_MISSING,       /* model.norm.weight absent from the index and the shards */
    TINY_SPOIL_INDEX_PHANTOM, /* the index names a tensor its shard does not hold */
    TINY_SPOIL_WEIGHT_SHAPE,  /* an INT4 expert's weight_shape says {out, in + 32} */
} tiny_spoil_t;

extern const char *const tiny_shard_name[2];

/* The generator key of stored element `elem` (row-major, unsharded) of s. */
uint64_t tiny_key_of(const arb_wspec_t *s, uint64_t elem);

/* The INT4 value of logical element (row, col) of an expert projection (s: its weight_packed). */
int tiny_q_of(const arb_wspec_t *s, uint64_t row, uint64_t col);

/* Bytes per stored element of s as written. */
size_t tiny_elem_size(const arb_wspec_t *s);

/* Writes the checkpoint of config c into the existing folder dir, every name after prefix
 * (with a prefix, config.json nests the config under text_config as Kimi-K2.5's does);
 * 0 on success. */
int tiny_write(const char *dir, const arb_model_config_t *c, arb_weight_format_t wf, const char *prefix,
               tiny_spoil_t spoil, char *why, size_t why_len);

/* Removes what tiny_write wrote, and dir. */
void tiny_remove(const char *dir);

#endif
