/* SPDX-License-Identifier: MIT */
/* engine/weights/names.c: Kimi-K2's tensors as Hugging Face names them, their stored shapes
 * and one TP=8 rank's blocks (INT4 experts), the bf16 expert names, the tiny config's count,
 * Kimi-K2.5's language_model. prefix, each kind's bytes against the memory plan. */
#include <string.h>

#include "model/config.h"
#include "model/memplan.h"
#include "model/shard.h"
#include "model/wgen.h"
#include "tap.h"
#include "weights/names.h"

static char why[2048];

static const arb_wspec_t *spec(const arb_wplan_t *p, const char *name, unsigned ndim, uint64_t r, uint64_t c,
                               arb_wsplit_t split, uint64_t first, uint64_t count)
{
    const arb_wspec_t *s = arb_wplan_find(p, name);
    if (!s) {
        TAP_FAIL_("no spec '%s'", name);
        return NULL;
    }
    TAP_EQ_INT(s->ndim, ndim);
    TAP_EQ_U64(s->shape[0], r);
    if (ndim == 2)
        TAP_EQ_U64(s->shape[1], c);
    TAP_EQ_INT(s->split, split);
    TAP_EQ_U64(s->first, first);
    TAP_EQ_U64(s->count, count);
    return s;
}

static void t_kimi_int4_tp8(void)
{
    arb_model_config_t c;
    arb_shard_t sh;
    arb_wplan_t p;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 8, 3, ARB_WEIGHTS_INT4, &sh, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_wplan_make(&c, ARB_WEIGHTS_INT4, &sh, NULL, &p, why, sizeof why) == ARB_OK);
    /* embed, norm, lm_head; 61 x 9 attention tensors; layer 0 dense (3); 60 MoE layers of
     * router + bias, 384 experts x 3 projections x 3 parts, 3 shared */
    TAP_EQ_U64(p.n, 3 + 61 * 9 + 3 + 60 * (2 + 384 * 9 + 3));
    const arb_wspec_t *s;
    s = spec(&p, "model.embed_tokens.weight", 2, 163840, 7168, ARB_WSPLIT_WHOLE, 0, 163840);
    if (s)
        TAP_EQ_INT(s->tensor, ARB_W_EMBED);
    spec(&p, "model.layers.0.mlp.gate_proj.weight", 2, 18432, 7168, ARB_WSPLIT_ROWS, 3 * 2304, 2304);
    spec(&p, "model.layers.0.mlp.down_proj.weight", 2, 7168, 18432, ARB_WSPLIT_COLS, 3 * 2304, 2304);
    spec(&p, "model.layers.1.input_layernorm.weight", 1, 7168, 0, ARB_WSPLIT_WHOLE, 0, 7168);
    spec(&p, "model.layers.1.self_attn.q_a_proj.weight", 2, 1536, 7168, ARB_WSPLIT_WHOLE, 0, 1536);
    spec(&p, "model.layers.1.self_attn.q_a_layernorm.weight", 1, 1536, 0, ARB_WSPLIT_WHOLE, 0, 1536);
    spec(&p, "model.layers.1.self_attn.q_b_proj.weight", 2, 64 * 192, 1536, ARB_WSPLIT_ROWS, 24 * 192, 8 * 192);
    spec(&p, "model.layers.1.self_attn.kv_a_proj_with_mqa.weight", 2, 576, 7168, ARB_WSPLIT_WHOLE, 0, 576);
    spec(&p, "model.layers.1.self_attn.kv_a_layernorm.weight", 1, 512, 0, ARB_WSPLIT_WHOLE, 0, 512);
    spec(&p, "model.layers.1.self_attn.kv_b_proj.weight", 2, 64 * 256, 512, ARB_WSPLIT_ROWS, 24 * 256, 8 * 256);
    spec(&p, "model.layers.1.self_attn.o_proj.weight", 2, 7168, 8192, ARB_WSPLIT_COLS, 24 * 128, 8 * 128);
    spec(&p, "model.layers.1.post_attention_layernorm.weight", 1, 7168, 0, ARB_WSPLIT_WHOLE, 0, 7168);
    spec(&p, "model.layers.5.mlp.gate.weight", 2, 384, 7168, ARB_WSPLIT_WHOLE, 0, 384);
    s = spec(&p, "model.layers.5.mlp.gate.e_score_correction_bias", 1, 384, 0, ARB_WSPLIT_WHOLE, 0, 384);
    if (s)
        TAP_EQ_INT(s->dtype, ARB_ST_F32);
    spec(&p, "model.layers.5.mlp.shared_experts.up_proj.weight", 2, 2048, 7168, ARB_WSPLIT_ROWS, 768, 256);
    spec(&p, "model.layers.5.mlp.shared_experts.down_proj.weight", 2, 7168, 2048, ARB_WSPLIT_COLS, 768, 256);
    s = spec(&p, "model.layers.60.mlp.experts.383.gate_proj.weight_packed", 2, 2048, 7168 / 8, ARB_WSPLIT_ROWS, 768,
             256);
    if (s) {
        TAP_EQ_INT(s->dtype, ARB_ST_I32);
        TAP_EQ_INT(s->part, ARB_WPART_PACKED);
        TAP_EQ_INT(s->expert, 383);
        TAP_EQ_INT(s->layer, 60);
        TAP_EQ_INT(s->tensor, ARB_W_EXP_GATE);
    }
    s = spec(&p, "model.layers.60.mlp.experts.383.gate_proj.weight_scale", 2, 2048, 7168 / 32, ARB_WSPLIT_ROWS, 768,
             256);
    if (s) {
        TAP_EQ_INT(s->dtype, ARB_ST_BF16);
        TAP_EQ_INT(s->tensor, ARB_W_EXP_GATE_SCALE);
    }
    /* down: columns 768 .. 1023 of 2048 inputs = packed words 96 .. 127, groups 24 .. 31 */
    spec(&p, "model.layers.60.mlp.experts.383.down_proj.weight_packed", 2, 7168, 256, ARB_WSPLIT_COLS, 96, 32);
    s = spec(&p, "model.layers.60.mlp.experts.383.down_proj.weight_scale", 2, 7168, 64, ARB_WSPLIT_COLS, 24, 8);
    if (s)
        TAP_EQ_INT(s->tensor, ARB_W_EXP_DOWN_SCALE);
    s = spec(&p, "model.layers.60.mlp.experts.383.down_proj.weight_shape", 1, 2, 0, ARB_WSPLIT_WHOLE, 0, 2);
    if (s) {
        TAP_EQ_U64(s->logical[0], 7168);
        TAP_EQ_U64(s->logical[1], 2048);
    }
    spec(&p, "model.norm.weight", 1, 7168, 0, ARB_WSPLIT_WHOLE, 0, 7168);
    spec(&p, "lm_head.weight", 2, 163840, 7168, ARB_WSPLIT_ROWS, 3 * 20480, 20480);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.1.mlp.experts.0.gate_proj.weight") == NULL);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.61.input_layernorm.weight") == NULL);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.60.mlp.experts.384.up_proj.weight_packed") == NULL);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.0.mlp.gate.weight") == NULL); /* layer 0 is dense */
    /* this rank's INT4 expert bytes of one layer: 384 x 3 x 7168 x 256 x (1/2 + 2/32) */
    uint64_t exp_bytes = 0;
    for (size_t i = 0; i < p.n; i++)
        if (p.specs[i].layer == 1 && p.specs[i].expert >= 0 && p.specs[i].part != ARB_WPART_SHAPE)
            exp_bytes += arb_wspec_rank_numel(&p.specs[i]) * (p.specs[i].part == ARB_WPART_PACKED ? 4 : 2);
    TAP_EQ_U64(exp_bytes, 384ull * 3 * 7168 * 256 / 2 + 384ull * 3 * 7168 * 256 / 32 * 2);
    arb_wplan_free(&p);
}

static void t_bf16_and_tiny(void)
{
    arb_model_config_t c;
    arb_shard_t sh;
    arb_wplan_t p;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, 2, 1, ARB_WEIGHTS_BF16, &sh, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_wplan_make(&c, ARB_WEIGHTS_BF16, &sh, NULL, &p, why, sizeof why) == ARB_OK);
    TAP_EQ_U64(p.n, 3 + 3 * 9 + 3 + 2 * (2 + 16 * 3 + 3));
    spec(&p, "model.layers.2.mlp.experts.15.down_proj.weight", 2, 64, 128, ARB_WSPLIT_COLS, 64, 64);
    spec(&p, "model.layers.2.mlp.experts.15.up_proj.weight", 2, 128, 64, ARB_WSPLIT_ROWS, 64, 64);
    spec(&p, "lm_head.weight", 2, 512, 64, ARB_WSPLIT_ROWS, 256, 256);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.2.mlp.experts.15.up_proj.weight_packed") == NULL);
    arb_wplan_free(&p);
    /* Kimi-K2.5: the same names under language_model. */
    TAP_REQUIRE(arb_wplan_make(&c, ARB_WEIGHTS_BF16, &sh, "language_model.", &p, why, sizeof why) == ARB_OK);
    spec(&p, "language_model.model.layers.2.mlp.experts.15.down_proj.weight", 2, 64, 128, ARB_WSPLIT_COLS, 64, 64);
    spec(&p, "language_model.lm_head.weight", 2, 512, 64, ARB_WSPLIT_ROWS, 256, 256);
    TAP_CHECK(arb_wplan_find(&p, "lm_head.weight") == NULL);
    arb_wplan_free(&p);
    TAP_EQ_INT(arb_wplan_make(&c, ARB_WEIGHTS_BF16, &sh, "a.very.long.prefix.of.more.than.31.characters.", &p, why,
                              sizeof why),
               ARB_ERR_INVALID);
    TAP_HAS_STR(why, "longer than 31 characters");
    /* --layers 2 keeps layers 0 and 1 */
    arb_config_overrides_t ov = {.layers = 2};
    TAP_REQUIRE(arb_config_override(&c, &ov, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_wplan_make(&c, ARB_WEIGHTS_BF16, &sh, NULL, &p, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.1.mlp.experts.0.up_proj.weight") != NULL);
    TAP_CHECK(arb_wplan_find(&p, "model.layers.2.input_layernorm.weight") == NULL);
    arb_wplan_free(&p);
}

/* The memory plan's kind of a spec's bytes (engine/model/memplan.h). */
static arb_mem_kind_t kind_of(const arb_wspec_t *s)
{
    switch (s->tensor) {
    case ARB_W_EMBED: return ARB_MEM_EMBED;
    case ARB_W_Q_A:
    case ARB_W_Q_B:
    case ARB_W_KV_A:
    case ARB_W_KV_B:
    case ARB_W_O: return ARB_MEM_ATTENTION;
    case ARB_W_DENSE_GATE:
    case ARB_W_DENSE_UP:
    case ARB_W_DENSE_DOWN: return ARB_MEM_DENSE_MLP;
    case ARB_W_SHARED_GATE:
    case ARB_W_SHARED_UP:
    case ARB_W_SHARED_DOWN: return ARB_MEM_SHARED_EXPERT;
    case ARB_W_EXP_GATE:
    case ARB_W_EXP_UP:
    case ARB_W_EXP_DOWN: return ARB_MEM_ROUTED;
    case ARB_W_EXP_GATE_SCALE:
    case ARB_W_EXP_UP_SCALE:
    case ARB_W_EXP_DOWN_SCALE: return ARB_MEM_ROUTED_SCALES;
    case ARB_W_LM_HEAD: return ARB_MEM_LM_HEAD;
    default: return ARB_MEM_NORMS_ROUTER;
    }
}

/* Each weight kind's bytes of a rank's plan equal the memory plan's for the same shard:
 * two independent accounts of the same shapes and splits. */
static void agree_with_memplan(const char *config, unsigned k, unsigned r, arb_weight_format_t wf)
{
    arb_model_config_t c;
    arb_shard_t sh;
    arb_wplan_t p;
    arb_memplan_t mp;
    TAP_REQUIRE(arb_config_load(config, &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_shard_make(&c, k, r, wf, &sh, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_wplan_make(&c, wf, &sh, NULL, &p, why, sizeof why) == ARB_OK);
    arb_memplan_compute(&c, &sh, wf, 16, 1, 1, &mp);
    double bytes[ARB_MEM_KINDS] = {0};
    for (size_t i = 0; i < p.n; i++)
        if (p.specs[i].part != ARB_WPART_SHAPE)
            bytes[kind_of(&p.specs[i])] +=
                (double)(arb_wspec_rank_numel(&p.specs[i]) * arb_st_dtype_size(p.specs[i].dtype));
    for (int kind = ARB_MEM_EMBED; kind <= ARB_MEM_LM_HEAD; kind++)
        if (bytes[kind] != mp.bytes[kind])
            TAP_FAIL_("%s tp %u rank %u %s: %s the names give %.0f bytes, the memory plan %.0f", config, k, r,
                      wf == ARB_WEIGHTS_INT4 ? "int4" : "bf16", arb_mem_kind_names[kind], bytes[kind], mp.bytes[kind]);
    arb_wplan_free(&p);
}

static void t_memplan(void)
{
    agree_with_memplan("kimi-k2", 8, 3, ARB_WEIGHTS_INT4);
    agree_with_memplan("kimi-k2", 8, 7, ARB_WEIGHTS_BF16);
    agree_with_memplan("deepseek-v3", 4, 1, ARB_WEIGHTS_BF16);
    agree_with_memplan("tiny", 2, 1, ARB_WEIGHTS_INT4);
    agree_with_memplan("tiny", 1, 0, ARB_WEIGHTS_BF16);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi_k2_int4_tp8", t_kimi_int4_tp8},
                                       {"bf16_and_tiny", t_bf16_and_tiny},
                                       {"bytes_agree_with_memplan", t_memplan}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
