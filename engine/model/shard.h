/* SPDX-License-Identifier: MIT */
/*
 * Per-rank shapes for tensor parallelism as SGLang/vLLM shard DeepSeek-V3
 * (engine/forward.md, "Sharding"): rank r holds shard r of tp_shape = K whatever the
 * number of ranks N <= K that exist. Column-parallel tensors keep a contiguous block of
 * rows of the unsharded tensor, row-parallel ones a contiguous block of columns; the
 * *_0 fields are the first global row/column, so a weight element's wgen index is its
 * position in the unsharded tensor. Splits that are not exact, and INT4 experts whose
 * shard would split a group of 32 inputs, are refused with a message naming the field.
 */
#ifndef ARB_ENGINE_SHARD_H
#define ARB_ENGINE_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Format of the routed experts (everything else is bf16). */
typedef enum arb_weight_format {
    ARB_WEIGHTS_BF16 = 0,
    ARB_WEIGHTS_INT4 = 1, /* W4A16 symmetric, group 32, 8 values per int32, bf16 scales */
} arb_weight_format_t;

#define ARB_INT4_GROUP 32u    /* inputs per scale */
#define ARB_INT4_PER_WORD 8u  /* 4-bit values per int32, value j in bits [4j, 4j+4) */

typedef struct arb_shard {
    unsigned tp_shape; /* K */
    unsigned rank;     /* r, 0 <= r < K */

    unsigned heads;  /* nh_r = nh / K */
    unsigned head0;  /* r * nh_r */
    unsigned q_b_rows, q_b_row0;   /* nh_r * (dn + dr), head0 * (dn + dr) */
    unsigned kv_b_rows, kv_b_row0; /* nh_r * (dn + dv), head0 * (dn + dv); per head dn rows of W_uk then dv of W_uv */
    unsigned o_cols, o_col0;       /* nh_r * dv, head0 * dv (columns of o_proj [H x nh*dv]) */

    unsigned moe_inter, moe_inter0;       /* I_e_r, r * I_e_r: rows of gate/up, columns of down */
    unsigned shared_inter, shared_inter0; /* I_s_r, r * I_s_r (I_s = n_shared * I_e) */
    unsigned dense_inter, dense_inter0;   /* I_d_r, r * I_d_r */

    unsigned vocab, vocab0; /* V_r rows of lm_head from vocab0; the last rank takes the remainder */
} arb_shard_t;

/* Shapes of rank `rank` of `tp_shape`; refuses a split that is not exact (naming the field
 * and the divisor) and, with ARB_WEIGHTS_INT4, hidden_size or I_e_r not a multiple of 32. */
arb_status_t arb_shard_make(const arb_model_config_t *cfg, unsigned tp_shape, unsigned rank,
                            arb_weight_format_t wf, arb_shard_t *sh, char *why, size_t why_len);

/* The union of shards first .. first+count-1 of tp_shape (contiguous blocks, so again one
 * contiguous block per sharded dimension): what one process holds when it stands in for
 * `count` ranks (the CPU reference covering all K shards on N < K processes). Each
 * shard is validated as by arb_shard_make; sh->rank = first. */
arb_status_t arb_shard_make_range(const arb_model_config_t *cfg, unsigned tp_shape, unsigned first, unsigned count,
                                  arb_weight_format_t wf, arb_shard_t *sh, char *why, size_t why_len);

/* wgen index of routed-expert element (expert e, global row, global col) of a tensor
 * [rows x cols] per expert (expert-major, forward.md "Weights"). */
static inline uint64_t arb_expert_index(unsigned e, unsigned rows, unsigned cols, unsigned row, unsigned col)
{
    return ((uint64_t)e * rows + row) * cols + col;
}

/* wgen index of the INT4 scale of (expert e, global row, global col): groups of 32
 * consecutive inputs, [rows x cols/32] per expert, expert-major. */
static inline uint64_t arb_int4_scale_index(unsigned e, unsigned rows, unsigned cols, unsigned row, unsigned col)
{
    return ((uint64_t)e * rows + row) * (cols / ARB_INT4_GROUP) + col / ARB_INT4_GROUP;
}

#ifdef __cplusplus
}
#endif

#endif
