/* SPDX-License-Identifier: MIT */
/* engine/model/memplan.c: one rank of Kimi-K2 at TP=8 with INT4 experts, by hand (design.md:
 * experts ~63 GB, attention ~3 GB, embedding 2.3 GB), the kinds add up, and the step's
 * bytes count each selected expert of a layer once. */
#include "tap.h"
#include "model/config.h"
#include "model/memplan.h"
#include "model/shard.h"

static char why[1024];

static void t_kimi_tp8(void)
{
    arb_model_config_t c;
    arb_shard_t s;
    arb_memplan_t p;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 8, 0, ARB_WEIGHTS_INT4, &s, why, sizeof why) == ARB_OK);
    arb_memplan_compute(&c, &s, ARB_WEIGHTS_INT4, 4096 + 35, 8, 2, &p);
    /* 60 MoE layers x 384 experts x 3 x (256 x 7168) x 0.5 B */
    TAP_NEAR(p.bytes[ARB_MEM_ROUTED], 63417876480.0, 0);
    /* one bf16 scale per 32 of those values: 1/8 of the packed bytes */
    TAP_NEAR(p.bytes[ARB_MEM_ROUTED_SCALES], 7927234560.0, 0);
    /* 61 x 2 B x (1536 x 7168 + 576 x 7168 + 1536 x 1536 + 2048 x 512 + 7168 x 1024) */
    TAP_NEAR(p.bytes[ARB_MEM_ATTENTION], 3158179840.0, 0);
    TAP_NEAR(p.bytes[ARB_MEM_EMBED], 2348810240.0, 0);          /* 163840 x 7168 x 2 */
    TAP_NEAR(p.bytes[ARB_MEM_LM_HEAD], 293601280.0, 0);         /* 20480 x 7168 x 2 */
    TAP_NEAR(p.bytes[ARB_MEM_DENSE_MLP], 99090432.0, 0);        /* 1 x 3 x 2304 x 7168 x 2 */
    TAP_NEAR(p.bytes[ARB_MEM_SHARED_EXPERT], 660602880.0, 0);   /* 60 x 3 x 256 x 7168 x 2 */
    TAP_NEAR(p.bytes[ARB_MEM_KV_CACHE], 61.0 * 4131 * 576 * 2, 0);
    double sum = 0;
    for (int k = 0; k < ARB_MEM_KINDS; k++)
        sum += p.bytes[k];
    TAP_NEAR(sum, p.total, 0);
    tap_diag("kimi-k2 int4 tp-shape 8: %.2f GB per rank", p.total / 1e9);
    TAP_CHECK(p.total > 70e9 && p.total < 141e9); /* more than design.md's ~70 GB (scales), fits an H200 */
    p.available = 1e9;
    TAP_CHECK(!arb_memplan_fits(&p));
    p.available = -1;
    TAP_CHECK(arb_memplan_fits(&p));
}

static void t_step_bytes(void)
{
    arb_model_config_t c;
    arb_shard_t s;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 1, 0, ARB_WEIGHTS_BF16, &s, why, sizeof why) == ARB_OK);
    /* 3 layers x T=2 x topk 4: layer 0 dense; layer 1 picks 4 distinct per token with 2
     * shared between the tokens (6 distinct), layer 2 the same 4 for both (4 distinct) */
    int32_t ex[3 * 2 * 4] = {-1, -1, -1, -1, -1, -1, -1, -1, 0, 1, 2, 3, 2, 3, 4, 5, 7, 8, 9, 10, 10, 9, 8, 7};
    arb_step_bytes_t b;
    arb_step_bytes(&c, &s, ARB_WEIGHTS_BF16, 2, 10, ex, &b);
    double per_expert = 3.0 * 128 * 64 * 2; /* gate, up, down of one expert, bf16 */
    TAP_NEAR(b.routed_experts, 10 * per_expert, 0);
    TAP_NEAR(b.distinct_experts, 5.0, 0);
    TAP_NEAR(b.kv_cache, 3.0 * 12 * (32 + 8) * 2, 0); /* rows 0 .. P0+T-1 of every layer */
    TAP_NEAR(b.total, b.attention + b.kv_cache + b.dense_mlp + b.shared_expert + b.routed_experts + b.router +
                          b.lm_head + b.other, 1e-6);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi_tp8", t_kimi_tp8}, {"step_bytes", t_step_bytes}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
