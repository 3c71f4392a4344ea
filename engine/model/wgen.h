/* SPDX-License-Identifier: MIT */
/*
 * Deterministic synthetic weights: one value per (seed, tensor, layer, global index),
 * the same on the CPU (reference engine) and the GPU (generation kernels), and the same
 * whatever the tensor-parallel degree, because the index is the element's position in
 * the unsharded tensor (engine/forward.md says how each tensor is scaled and sharded).
 * Header only; C11 and CUDA.
 */
#ifndef ARB_ENGINE_WGEN_H
#define ARB_ENGINE_WGEN_H

#include <stdint.h>

#if defined(__CUDACC__)
#define ARB_WGEN_FN __host__ __device__ static inline
#else
#define ARB_WGEN_FN static inline
#endif

/* Tensor identities: part of the key, so two tensors never share a stream. Append only. */
enum arb_wgen_tensor {
    ARB_W_EMBED = 1,
    ARB_W_ATTN_NORM,   /* input_layernorm */
    ARB_W_Q_A,         /* q_a_proj        [q_lora_rank x hidden] */
    ARB_W_Q_A_NORM,    /* q_a_layernorm   [q_lora_rank] */
    ARB_W_Q_B,         /* q_b_proj        [heads * (nope + rope) x q_lora_rank] */
    ARB_W_KV_A,        /* kv_a_proj_with_mqa [kv_lora_rank + rope x hidden] */
    ARB_W_KV_A_NORM,   /* kv_a_layernorm  [kv_lora_rank] */
    ARB_W_KV_B,        /* kv_b_proj       [heads * (nope + v) x kv_lora_rank] */
    ARB_W_O,           /* o_proj          [hidden x heads * v] */
    ARB_W_FFN_NORM,    /* post_attention_layernorm */
    ARB_W_ROUTER,      /* gate.weight     [experts x hidden] */
    ARB_W_ROUTER_BIAS, /* gate.e_score_correction_bias [experts], fp32 */
    ARB_W_EXP_GATE,    /* experts.E.gate_proj [moe_inter x hidden], expert-major index */
    ARB_W_EXP_UP,      /* experts.E.up_proj   [moe_inter x hidden] */
    ARB_W_EXP_DOWN,    /* experts.E.down_proj [hidden x moe_inter] */
    ARB_W_EXP_GATE_SCALE, /* INT4 group scales of the three above, [rows x in/32] per expert */
    ARB_W_EXP_UP_SCALE,
    ARB_W_EXP_DOWN_SCALE,
    ARB_W_SHARED_GATE, /* shared_experts.gate_proj [n_shared * moe_inter x hidden] */
    ARB_W_SHARED_UP,
    ARB_W_SHARED_DOWN, /* [hidden x n_shared * moe_inter] */
    ARB_W_DENSE_GATE,  /* mlp.gate_proj (dense layers) [intermediate x hidden] */
    ARB_W_DENSE_UP,
    ARB_W_DENSE_DOWN,  /* [hidden x intermediate] */
    ARB_W_FINAL_NORM,  /* model.norm */
    ARB_W_LM_HEAD,     /* lm_head [vocab x hidden] */
    ARB_W_PROMPT,      /* synthetic prompt tokens (index = position) */
    ARB_W_ACCEPT,      /* speculative accept draws (index = cycle * 64 + draft position) */
};

/* splitmix64's finalizer: a bijection of 64-bit words with good avalanche. */
ARB_WGEN_FN uint64_t arb_wgen_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* The key of element `index` (position in the unsharded tensor, row-major; experts
 * expert-major: index = (expert * rows + row) * cols + col) of tensor `t` in `layer`. */
ARB_WGEN_FN uint64_t arb_wgen_key(uint64_t seed, uint32_t t, uint32_t layer, uint64_t index)
{
    uint64_t stream = arb_wgen_mix(seed ^ ((uint64_t)t << 40) ^ ((uint64_t)layer << 20) ^ 0x9e3779b97f4a7c15ull);
    return arb_wgen_mix(stream + index * 0x9e3779b97f4a7c15ull);
}

/* Uniform in (-1, 1), exactly representable in float (24 random bits). */
ARB_WGEN_FN float arb_wgen_uniform(uint64_t seed, uint32_t t, uint32_t layer, uint64_t index)
{
    uint32_t bits = (uint32_t)(arb_wgen_key(seed, t, layer, index) >> 40); /* 24 bits */
    return ((float)bits + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
}

/* Uniform integer in [-8, 7]: a symmetric INT4 weight (Kimi-K2's W4A16 format). */
ARB_WGEN_FN int arb_wgen_int4(uint64_t seed, uint32_t t, uint32_t layer, uint64_t index)
{
    return (int)(arb_wgen_key(seed, t, layer, index) >> 60) - 8;
}

/* Uniform integer in [0, n). */
ARB_WGEN_FN uint32_t arb_wgen_below(uint64_t seed, uint32_t t, uint32_t layer, uint64_t index, uint32_t n)
{
    return (uint32_t)(((arb_wgen_key(seed, t, layer, index) >> 32) * (uint64_t)n) >> 32);
}

#endif
