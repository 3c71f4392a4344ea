/* SPDX-License-Identifier: MIT */
/* engine/model/config.c: the shipped configs field by field, Kimi-K2.5's text_config nesting,
 * a missing field and an unknown model_type named in the error, overrides recorded. */
#include <jansson.h>
#include <stdlib.h>

#include "tap.h"
#include "model/config.h"

static char why[1024];

static void t_kimi_k2(void)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_EQ_STR(c.name, "kimi-k2");
    TAP_EQ_INT(c.model_type, ARB_MODEL_KIMI_K2);
    TAP_EQ_INT(c.hidden_size, 7168);
    TAP_EQ_INT(c.num_hidden_layers, 61);
    TAP_EQ_INT(c.num_attention_heads, 64);
    TAP_EQ_INT(c.q_lora_rank, 1536);
    TAP_EQ_INT(c.kv_lora_rank, 512);
    TAP_EQ_INT(c.qk_nope_head_dim, 128);
    TAP_EQ_INT(c.qk_rope_head_dim, 64);
    TAP_EQ_INT(c.v_head_dim, 128);
    TAP_EQ_INT(c.n_routed_experts, 384);
    TAP_EQ_INT(c.num_experts_per_tok, 8);
    TAP_EQ_INT(c.n_shared_experts, 1);
    TAP_EQ_INT(c.moe_intermediate_size, 2048);
    TAP_EQ_INT(c.intermediate_size, 18432);
    TAP_EQ_INT(c.first_k_dense_replace, 1);
    TAP_EQ_INT(c.n_group, 1);
    TAP_EQ_INT(c.topk_group, 1);
    TAP_NEAR(c.routed_scaling_factor, 2.827, 0);
    TAP_EQ_STR(c.scoring_func, "sigmoid");
    TAP_EQ_INT(c.norm_topk_prob, 1);
    TAP_EQ_INT(c.vocab_size, 163840);
    TAP_NEAR(c.rms_norm_eps, 1e-6, 0);
    TAP_NEAR(c.rope_theta, 50000.0, 0);
    TAP_EQ_INT(c.rope_scaling.kind, ARB_ROPE_YARN);
    TAP_NEAR(c.rope_scaling.factor, 32.0, 0);
    TAP_NEAR(c.rope_scaling.beta_fast, 1.0, 0);
    TAP_NEAR(c.rope_scaling.beta_slow, 1.0, 0);
    TAP_NEAR(c.rope_scaling.mscale, 1.0, 0);
    TAP_NEAR(c.rope_scaling.mscale_all_dim, 1.0, 0);
    TAP_EQ_INT(c.rope_scaling.original_max_position_embeddings, 4096);
    TAP_EQ_STR(c.overrides, "");
    TAP_EQ_INT(c.nested_text_config, 0);
}

static void t_deepseek_v3(void)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("deepseek-v3", &c, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(c.model_type, ARB_MODEL_DEEPSEEK_V3);
    TAP_EQ_INT(c.num_attention_heads, 128);
    TAP_EQ_INT(c.n_routed_experts, 256);
    TAP_EQ_INT(c.n_group, 8);
    TAP_EQ_INT(c.topk_group, 4);
    TAP_EQ_INT(c.first_k_dense_replace, 3);
    TAP_EQ_INT(c.vocab_size, 129280);
    TAP_NEAR(c.routed_scaling_factor, 2.5, 0);
    TAP_NEAR(c.rope_theta, 10000.0, 0);
    TAP_NEAR(c.rope_scaling.factor, 40.0, 0);
    TAP_NEAR(c.rope_scaling.beta_fast, 32.0, 0);
}

static void t_tiny(void)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    TAP_CHECK(c.n_group > 1);                 /* group-limited routing exercised */
    TAP_CHECK(c.topk_group < c.n_group);
    TAP_EQ_INT(c.first_k_dense_replace, 1);   /* a dense first layer */
    TAP_CHECK(c.num_hidden_layers > c.first_k_dense_replace);
    TAP_EQ_INT(c.rope_scaling.kind, ARB_ROPE_YARN);
}

/* Kimi-K2.5's layout: the text model's fields under text_config. */
static const char *nested =
    "{\"model_type\": \"kimi_k25\", \"vision_config\": {}, \"text_config\": {"
    "\"model_type\": \"kimi_k2\", \"hidden_size\": 7168, \"num_hidden_layers\": 61, \"num_attention_heads\": 64,"
    "\"q_lora_rank\": 1536, \"kv_lora_rank\": 512, \"qk_nope_head_dim\": 128, \"qk_rope_head_dim\": 64,"
    "\"v_head_dim\": 128, \"n_routed_experts\": 384, \"num_experts_per_tok\": 8, \"n_shared_experts\": 1,"
    "\"moe_intermediate_size\": 2048, \"intermediate_size\": 18432, \"first_k_dense_replace\": 1, \"n_group\": 1,"
    "\"topk_group\": 1, \"routed_scaling_factor\": 2.827, \"scoring_func\": \"sigmoid\", \"norm_topk_prob\": true,"
    "\"vocab_size\": 163840, \"rms_norm_eps\": 1e-5, \"rope_theta\": 50000.0, \"rope_scaling\": {\"type\": \"yarn\","
    "\"factor\": 64.0, \"beta_fast\": 1.0, \"beta_slow\": 1.0, \"mscale\": 1.0, \"mscale_all_dim\": 1.0,"
    "\"original_max_position_embeddings\": 4096}}}";

static void t_nested(void)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_parse(nested, "k25.json", &c, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(c.nested_text_config, 1);
    TAP_EQ_INT(c.model_type, ARB_MODEL_KIMI_K2);
    TAP_EQ_INT(c.hidden_size, 7168);
    TAP_NEAR(c.rms_norm_eps, 1e-5, 0);
    TAP_NEAR(c.rope_scaling.factor, 64.0, 0);
}

/* The nested text without `key` (in text_config, or in its rope_scaling). */
static char *without(const char *key)
{
    json_t *root = json_loads(nested, 0, NULL);
    json_t *text = json_object_get(root, "text_config");
    json_t *rs = json_object_get(text, "rope_scaling");
    if (json_object_del(text, key) != 0 && json_object_del(rs, key) != 0) {
        json_decref(root);
        return NULL;
    }
    char *s = json_dumps(root, 0);
    json_decref(root);
    return s;
}

static void t_missing_fields(void)
{
    static const char *keys[] = {"hidden_size", "num_hidden_layers", "num_attention_heads", "q_lora_rank",
                                 "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                                 "n_routed_experts", "num_experts_per_tok", "n_shared_experts",
                                 "moe_intermediate_size", "intermediate_size", "first_k_dense_replace", "n_group",
                                 "topk_group", "routed_scaling_factor", "scoring_func", "norm_topk_prob",
                                 "vocab_size", "rms_norm_eps", "rope_theta", "rope_scaling", "factor", "beta_fast",
                                 "beta_slow", "mscale", "mscale_all_dim", "original_max_position_embeddings"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        char *text = without(keys[i]);
        TAP_REQUIRE(text);
        arb_model_config_t c;
        why[0] = '\0';
        arb_status_t st = arb_config_parse(text, "k25.json", &c, why, sizeof why);
        TAP_EQ_INT(st, ARB_ERR_INVALID);
        char expect[128];
        snprintf(expect, sizeof expect, "missing field '%s'", keys[i]);
        TAP_HAS_STR(why, expect);
        free(text);
    }
}

static void t_unknown_model_type(void)
{
    arb_model_config_t c;
    const char *text = "{\"model_type\": \"llama\", \"hidden_size\": 4096}";
    TAP_EQ_INT(arb_config_parse(text, "llama.json", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "model_type 'llama' is not supported");
    TAP_HAS_STR(why, "deepseek_v3");
    TAP_EQ_INT(arb_config_parse("{\"hidden_size\": 1}", "x.json", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "missing field 'model_type'");
    TAP_EQ_INT(arb_config_parse("{not json", "bad.json", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "bad.json: not JSON");
    TAP_EQ_INT(arb_config_load("no-such-model", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "--config 'no-such-model'");
}

static void t_bad_values(void)
{
    arb_model_config_t c;
    char *s = malloc(strlen(nested) + 64);
    strcpy(s, nested);
    char *p = strstr(s, "\"sigmoid\"");
    memcpy(p, "\"softmx\" ", 9);
    TAP_EQ_INT(arb_config_parse(s, "k25.json", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "scoring_func 'softmx'");
    strcpy(s, nested);
    p = strstr(s, "\"hidden_size\": 7168");
    memcpy(p, "\"hidden_size\": -7168", 19); /* overwrites "7168" -> "-716" */
    TAP_EQ_INT(arb_config_parse(s, "k25.json", &c, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "hidden_size");
    free(s);
}

static void t_overrides(void)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("deepseek-v3", &c, why, sizeof why) == ARB_OK);
    arb_config_overrides_t ov = {.layers = 2, .experts = 64};
    TAP_REQUIRE(arb_config_override(&c, &ov, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(c.num_hidden_layers, 2);
    TAP_EQ_INT(c.first_k_dense_replace, 2); /* clamped to the layers */
    TAP_EQ_INT(c.n_routed_experts, 64);
    TAP_EQ_INT(c.file_num_hidden_layers, 61);
    TAP_EQ_INT(c.file_n_routed_experts, 256);
    TAP_EQ_STR(c.overrides, "layers=2,experts=64");
    arb_config_overrides_t bad = {.experts = 12}; /* not a multiple of n_group 8 */
    TAP_EQ_INT(arb_config_override(&c, &bad, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "--experts 12");
    arb_config_overrides_t few = {.experts = 8}; /* 1 expert per group: the group score needs 2 */
    TAP_REQUIRE(arb_config_load("deepseek-v3", &c, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(arb_config_override(&c, &few, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "n_group");
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"kimi_k2", t_kimi_k2},       {"deepseek_v3", t_deepseek_v3},
        {"tiny", t_tiny},             {"text_config_nesting", t_nested},
        {"missing_fields", t_missing_fields}, {"unknown_model_type", t_unknown_model_type},
        {"bad_values", t_bad_values}, {"overrides", t_overrides},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
