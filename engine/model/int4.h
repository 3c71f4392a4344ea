/* SPDX-License-Identifier: MIT */
/*
 * The engine's INT4 expert format (W4A16, symmetric, as Kimi-K2's compressed-tensors
 * pack-quantized experts): eight 4-bit two's-complement values per int32 along the input
 * dimension, value j of a word in bits [4j, 4j+4); one bf16 scale per group of 32
 * consecutive inputs. A compressed-tensors checkpoint stores q + 8 in each nibble instead
 * (offset binary): engine/weights/int4_ct.h converts (word ^ 0x88888888).
 * weight_packed [rows x in/8] int32, weight_scale [rows x in/32] bf16. Header only;
 * C11 and CUDA (host and device).
 */
#ifndef ARB_ENGINE_INT4_H
#define ARB_ENGINE_INT4_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ARB_INT4_FN __host__ __device__ static inline
#else
#define ARB_INT4_FN static inline
#endif

/* Packs q[0..7] (each in [-8, 7]) into one word. */
ARB_INT4_FN int32_t arb_int4_pack8(const int *q)
{
    uint32_t w = 0;
    for (int j = 0; j < 8; j++)
        w |= ((uint32_t)q[j] & 0xfu) << (4 * j);
    return (int32_t)w;
}

/* Value j (0..7) of a packed word, sign-extended to [-8, 7]. */
ARB_INT4_FN int arb_int4_unpack(int32_t word, int j)
{
    int v = (int)(((uint32_t)word >> (4 * j)) & 0xfu);
    return v >= 8 ? v - 16 : v;
}

#endif
