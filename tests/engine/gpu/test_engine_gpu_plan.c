/* SPDX-License-Identifier: MIT */
/*
 * The GPU model's host side, no GPU needed: the memory plan of Kimi-K2's TP=8 shard by
 * kind against the formulas of its shapes, and the refusals of shapes the kernels cannot
 * run (each naming the field).
 */
#include <string.h>

#include "tap.h"
#include "model/config.h"
#include "gpu/gpu_dims.h"
#include "gpu/gpu_model.h"
#include "model/engine_opts.h"
#include "model/rope.h"

static char why[1024];
static arb_model_config_t kimi, tiny;
static arb_rope_t kimi_rope, tiny_rope;

static arb_gpu_model_opts_t opts(const arb_model_config_t *c, const arb_rope_t *r, unsigned K, arb_gpu_wformat_t wf)
{
    arb_gpu_model_opts_t o = {.format = wf, .seed = 1, .max_tokens = 8, .context = 4096};
    if (arb_gpu_dims_from_config(c, r, K, 0, &o.dims, why, sizeof why) != ARB_OK)
        tap_diag("dims: %s", why);
    return o;
}

static void t_kimi_plan(void)
{
    arb_gpu_model_opts_t o = opts(&kimi, &kimi_rope, 8, ARB_GPU_INT4);
    arb_gpu_mem_t mem;
    TAP_REQUIRE(arb_gpu_model_plan(&o, &mem, why, sizeof why) == ARB_OK);
    const uint64_t H = 7168, L = 61, moe_layers = 60, Ir = 2048 / 8, E = 384;
    const uint64_t per_expert = 3 * Ir * H / 2 + 3 * Ir * H / 32 * 2; /* packed INT4 + bf16 scales */
    TAP_EQ_U64(mem.routed_experts, moe_layers * E * per_expert);
    TAP_EQ_U64(mem.embed, 163840 * H * 2);
    TAP_EQ_U64(mem.lm_head, 163840 / 8 * H * 2);
    TAP_EQ_U64(mem.attention, L * ((1536 + 512 + 64) * H + 8 * 192 * 1536 + 8 * 256 * 512 + H * 8 * 128) * 2);
    TAP_EQ_U64(mem.shared_expert, moe_layers * 3 * Ir * H * 2);
    TAP_EQ_U64(mem.dense_mlp, 1 * 3 * (18432 / 8) * H * 2);
    /* cache rows: layers x context x (512 + 64) bf16, each tensor rounded up to 256 bytes */
    TAP_EQ_U64(mem.kv_cache, L * (4096 * 512 * 2 + 4096 * 64 * 2));
    TAP_CHECK(mem.activations > 0 && mem.activations < 64u << 20);
    TAP_EQ_U64(mem.total, mem.embed + mem.attention + mem.norms_router + mem.dense_mlp + mem.shared_expert +
                              mem.routed_experts + mem.lm_head + mem.kv_cache + mem.activations);
    tap_diag("kimi-k2 int4 tp-shape 8: %.3f GB per rank", mem.total / 1e9);
    /* --fuse qb_absorb: the part sums [8 heads x 8 parts x 8 tokens x 512] fp32 and a ticket a
     * head in the activations, nothing else */
    arb_gpu_mem_t fused;
    o.fuse = ARB_FUSE_QB_ABSORB;
    TAP_REQUIRE(arb_gpu_model_plan(&o, &fused, why, sizeof why) == ARB_OK);
    TAP_CHECK(fused.activations >= mem.activations + 8 * 8 * 8 * 512 * 4 + 8 * 4);
    TAP_CHECK(fused.activations <= mem.activations + 8 * 8 * 8 * 512 * 4 + 8 * 4 + 2 * 256); /* two roundings */
    TAP_EQ_U64(fused.total - fused.activations, mem.total - mem.activations);
    /* --fuse merge_uv besides: the block sums [8 blocks x 8 tokens x 8 heads x 128] fp32 and a
     * ticket a row (8 tokens x 8 heads) more */
    arb_gpu_mem_t both;
    o.fuse = ARB_FUSE_QB_ABSORB | ARB_FUSE_MERGE_UV;
    TAP_REQUIRE(arb_gpu_model_plan(&o, &both, why, sizeof why) == ARB_OK);
    TAP_CHECK(both.activations >= fused.activations + 8 * 8 * 8 * 128 * 4 + 64 * 4);
    TAP_CHECK(both.activations <= fused.activations + 8 * 8 * 8 * 128 * 4 + 64 * 4 + 2 * 256);
    TAP_EQ_U64(both.total - both.activations, mem.total - mem.activations);
    o.fuse = 0;
    o.format = ARB_GPU_BF16;
    TAP_REQUIRE(arb_gpu_model_plan(&o, &mem, why, sizeof why) == ARB_OK);
    TAP_EQ_U64(mem.routed_experts, moe_layers * E * 3 * Ir * H * 2);
}

static void refused(arb_gpu_model_opts_t o, const char *field)
{
    arb_gpu_mem_t mem;
    why[0] = '\0';
    TAP_EQ_INT(arb_gpu_model_plan(&o, &mem, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, field);
}

static void t_refusals(void)
{
    refused(opts(&kimi, &kimi_rope, 3, ARB_GPU_INT4), "num_attention_heads"); /* 64 heads over 3 */
    arb_gpu_model_opts_t o = opts(&kimi, &kimi_rope, 8, ARB_GPU_INT4);
    o.max_tokens = 9;
    refused(o, "max_tokens");
    o = opts(&kimi, &kimi_rope, 8, ARB_GPU_INT4);
    o.context = 0;
    refused(o, "context");
    o = opts(&kimi, &kimi_rope, 8, ARB_GPU_INT4);
    o.dims.shard = 8;
    refused(o, "shard 8 of tp_shape 8");
    arb_model_config_t c = tiny;
    c.moe_intermediate_size = 64; /* 16 rows per shard of 4: not a group of 32 inputs (INT4 or bf16 tiles) */
    refused(opts(&c, &tiny_rope, 4, ARB_GPU_INT4), "moe_intermediate_size / tp_shape");
    refused(opts(&c, &tiny_rope, 4, ARB_GPU_BF16), "moe_intermediate_size / tp_shape");
    arb_gpu_mem_t mem;
    c.moe_intermediate_size = 128; /* 32 rows per shard of 4, the shared expert's too */
    o = opts(&c, &tiny_rope, 4, ARB_GPU_BF16);
    TAP_EQ_INT(arb_gpu_model_plan(&o, &mem, why, sizeof why), ARB_OK);
    o = opts(&tiny, &tiny_rope, 1, ARB_GPU_BF16); /* --fuse qb_absorb where dn is not 128 */
    o.fuse = ARB_FUSE_QB_ABSORB;
    refused(o, "--fuse qb_absorb needs qk_nope_head_dim 128");
    o.fuse = ARB_FUSE_MERGE_UV; /* fits the tiny model (v_head_dim 16, kv_lora_rank 32) */
    TAP_EQ_INT(arb_gpu_model_plan(&o, &mem, why, sizeof why), ARB_OK);
    c = tiny;
    c.v_head_dim = 160; /* past two threads a W_uv row of a merge block */
    o = opts(&c, &tiny_rope, 1, ARB_GPU_BF16);
    o.fuse = ARB_FUSE_MERGE_UV;
    refused(o, "--fuse merge_uv needs v_head_dim 1 .. 128");
    o = opts(&kimi, &kimi_rope, 8, ARB_GPU_INT4); /* --fuse prep_qb: with qb_absorb, at a q_lora_rank it fits */
    o.fuse = ARB_FUSE_PREP_QB;
    refused(o, "give --fuse qb_absorb,prep_qb");
    o.fuse = ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB;
    TAP_EQ_INT(arb_gpu_model_plan(&o, &mem, why, sizeof why), ARB_OK);
    c = kimi;
    c.q_lora_rank = 128; /* one q_b part of 128 inputs */
    o = opts(&c, &kimi_rope, 8, ARB_GPU_INT4);
    o.fuse = ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB;
    refused(o, "--fuse prep_qb needs q_b's rows in parts of at least 256 inputs");
    o.fuse = ARB_FUSE_QB_ABSORB;
    TAP_EQ_INT(arb_gpu_model_plan(&o, &mem, why, sizeof why), ARB_OK);
    c = tiny;
    strcpy(c.scoring_func, "softmax");
    arb_gpu_dims_t d;
    TAP_EQ_INT(arb_gpu_dims_from_config(&c, &tiny_rope, 1, 0, &d, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "scoring_func");
}

int main(int argc, char **argv)
{
    if (arb_config_load("kimi-k2", &kimi, why, sizeof why) != ARB_OK ||
        arb_rope_make(&kimi, &kimi_rope, why, sizeof why) != ARB_OK ||
        arb_config_load("tiny", &tiny, why, sizeof why) != ARB_OK ||
        arb_rope_make(&tiny, &tiny_rope, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "setup: %s\n", why);
        return 1;
    }
    static const tap_test_t tests[] = {{"kimi_plan", t_kimi_plan}, {"refusals", t_refusals}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
