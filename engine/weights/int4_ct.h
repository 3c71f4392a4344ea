/* SPDX-License-Identifier: MIT */
/*
 * compressed-tensors `pack-quantized` INT4 (W4A16, symmetric, group strategy) into the
 * engine's INT4 layout (engine/model/int4.h). Both put eight values per int32 along the
 * input dimension, value j in bits [4j, 4j+4), as weight_packed [out x in/8] with one
 * scale per group of consecutive inputs, weight_scale [out x in/group]; they differ in
 * the nibble: compressed-tensors stores q + 8 (pack_to_int32 adds 2^(bits-1) to make it
 * unsigned; unpack_from_int32 subtracts it), the engine stores q in two's complement.
 * q + 8 and q agree in the low three bits and differ in the top one, so the conversion is
 * one XOR per word; the dequantized weight is q * scale in both (no zero point).
 */
#ifndef ARB_ENGINE_WEIGHTS_INT4_CT_H
#define ARB_ENGINE_WEIGHTS_INT4_CT_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_INT4_CT_FLIP 0x88888888u /* the top bit of each of the eight nibbles */

/* One compressed-tensors word to the engine's encoding (and back: the map is its own inverse). */
static inline int32_t arb_int4_ct_to_engine(int32_t ct_word) { return (int32_t)((uint32_t)ct_word ^ ARB_INT4_CT_FLIP); }

/* Value j (0..7) of a compressed-tensors word, in [-8, 7]. */
static inline int arb_int4_ct_unpack(int32_t ct_word, int j)
{
    return (int)(((uint32_t)ct_word >> (4 * j)) & 0xfu) - 8;
}

/* Packs q[0..7] (each in [-8, 7]) as compressed-tensors does. */
static inline int32_t arb_int4_ct_pack8(const int *q)
{
    uint32_t w = 0;
    for (int j = 0; j < 8; j++)
        w |= (uint32_t)(q[j] + 8) << (4 * j);
    return (int32_t)w;
}

/* The quantization a checkpoint's config.json declares. */
typedef struct arb_int4_ct_scheme {
    unsigned num_bits;   /* 4 */
    unsigned group_size; /* inputs per scale */
    int symmetric;       /* 1 */
} arb_int4_ct_scheme_t;

/* Converts `words` int32 in place (any slice of weight_packed: whole words only). */
void arb_int4_ct_convert(int32_t *words, size_t n_words);

/* Checks the scheme is one the engine runs (4 bits, symmetric, group_size 32), naming
 * `origin` and the field that differs. */
arb_status_t arb_int4_ct_scheme_check(const arb_int4_ct_scheme_t *s, const char *origin, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
