/* SPDX-License-Identifier: MIT */
/* The EAGLE-3 draft head's config.json (good, defaults, every refusal), its shard blocks,
 * its checkpoint read per shard (the blocks equal the written rows and columns) and the
 * malformed checkpoints refused by name. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "draft/draft_weights.h"
#include "draft_ckpt.h"
#include "tap.h"

static arb_model_config_t tiny(void)
{
    arb_model_config_t c;
    char why[512];
    if (arb_config_load("tiny", &c, why, sizeof why) != ARB_OK)
        fprintf(stderr, "# %s\n", why);
    return c;
}

#define GOOD                                                                                                           \
    "\"architectures\": [\"LlamaForCausalLMEagle3\"], \"hidden_size\": 64, \"intermediate_size\": 64, "                \
    "\"num_attention_heads\": 2, \"num_key_value_heads\": 1, \"head_dim\": 64, \"vocab_size\": 512, "                  \
    "\"draft_vocab_size\": 48, \"rms_norm_eps\": 1e-5, \"rope_scaling\": null"

static void test_config(void)
{
    arb_model_config_t t = tiny();
    arb_draft_config_t d;
    char why[1024];
    TAP_REQUIRE(arb_draft_config_parse("{" GOOD
                                       ", \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [0, 1, 2]}}",
                                       "good", &t, &d, why, sizeof why) == ARB_OK);
    TAP_CHECK(d.head_dim == 64 && d.num_key_value_heads == 1 && d.draft_vocab_size == 48 && d.rope_theta == 10000.0);
    TAP_CHECK(d.aux_layers[0] == 0 && d.aux_layers[2] == 2 && d.aux_from_file && d.rms_norm_eps == 1e-5);
    /* without eagle_config: SGLang's default, the inputs of layers 2, L/2, L-3 (61 layers: 1, 29, 57) */
    arb_model_config_t k2;
    TAP_REQUIRE(arb_config_load("kimi-k2", &k2, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(
        arb_draft_config_parse("{\"architectures\": [\"LlamaForCausalLMEagle3\"], \"hidden_size\": 7168, "
                               "\"intermediate_size\": 18432, \"num_attention_heads\": 64, "
                               "\"num_key_value_heads\": 8, \"vocab_size\": 163840, \"draft_vocab_size\": 32000}",
                               "k2", &k2, &d, why, sizeof why) == ARB_OK);
    TAP_CHECK(d.aux_layers[0] == 1 && d.aux_layers[1] == 29 && d.aux_layers[2] == 57 && !d.aux_from_file);
    TAP_CHECK(d.head_dim == 112);
    static const struct {
        const char *json, *needle;
    } bad[] = {
        {"{" GOOD ", \"architectures\": [\"LlamaForCausalLM\"]}", "LlamaForCausalLMEagle3"},
        {"{" GOOD ", \"num_hidden_layers\": 2}", "num_hidden_layers"},
        {"{" GOOD ", \"tie_word_embeddings\": true}", "tie_word_embeddings"},
        {"{" GOOD ", \"hidden_act\": \"gelu\"}", "hidden_act"},
        {"{" GOOD ", \"rope_scaling\": {\"rope_type\": \"llama3\"}}", "rope_scaling"},
        {"{" GOOD ", \"target_hidden_size\": 128}", "target_hidden_size"},
        {"{" GOOD ", \"vocab_size\": 500}", "vocab_size"},
        {"{" GOOD ", \"draft_vocab_size\": 600}", "draft_vocab_size"},
        {"{" GOOD ", \"num_key_value_heads\": 3}", "num_key_value_heads"},
        {"{" GOOD ", \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [0, 1, 3]}}",
         "eagle_aux_hidden_state_layer_ids"},
        {"{" GOOD ", \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [1, 1, 2]}}", "ascending"},
        {"{" GOOD ", \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [0, 1]}}", "3 layers"},
        {"{\"architectures\": [\"LlamaForCausalLMEagle3\"], \"hidden_size\": 64}", "intermediate_size"},
        {"[1, 2]", "JSON object"},
        {"{" GOOD, "bad"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        arb_status_t st = arb_draft_config_parse(bad[i].json, "bad", &t, &d, why, sizeof why);
        TAP_CHECK(st == ARB_ERR_INVALID);
        TAP_HAS_STR(why, bad[i].needle);
    }
    /* tiny (3 layers) with the default layers: 1, 0, -1 is refused, naming the rule */
    TAP_CHECK(arb_draft_config_parse("{" GOOD "}", "bad", &t, &d, why, sizeof why) == ARB_ERR_INVALID);
    TAP_HAS_STR(why, "SGLang's default");
}

static void test_shard(void)
{
    arb_model_config_t t = tiny();
    arb_draft_config_t d;
    arb_draft_shard_t s;
    char why[1024];
    TAP_REQUIRE(arb_draft_config_parse(
                    "{" GOOD ", \"num_attention_heads\": 4, \"head_dim\": 16, \"num_key_value_heads\": 2, "
                    "\"draft_vocab_size\": 49, \"eagle_config\": {\"eagle_aux_hidden_state_layer_ids\": [0, 1, 2]}}",
                    "s", &t, &d, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_draft_shard_make(&d, 4, 3, 1, &s, why, sizeof why) ==
                ARB_OK); /* 4 shards, 2 kv heads: replicated pairs */
    TAP_CHECK(s.head0 == 3 && s.heads == 1 && s.kv0 == 1 && s.kv_heads == 1 && s.inter0 == 48 && s.inter == 16);
    TAP_CHECK(s.vocab0 == 36 && s.vocab == 13); /* the last shard takes the remainder */
    TAP_REQUIRE(arb_draft_shard_make(&d, 2, 0, 2, &s, why, sizeof why) == ARB_OK); /* one rank standing in for both */
    TAP_CHECK(s.head0 == 0 && s.heads == 4 && s.kv0 == 0 && s.kv_heads == 2 && s.vocab == 49);
    TAP_CHECK(arb_draft_shard_make(&d, 8, 0, 1, &s, why, sizeof why) == ARB_ERR_INVALID);
    TAP_HAS_STR(why, "tp-shape 8");
}

/* A head with distinct values everywhere, written, then read as 1 of 1 and both of 2 shards. */
static void test_checkpoint(void)
{
    arb_model_config_t t = tiny();
    char dir[] = "/tmp/arb-draft-XXXXXX", why[2048];
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    draft_dims_t dd = {.H = 64, .I = 64, .nh = 2, .nkv = 1, .hd = 64, .V = 512, .Vd = 48, .aux = {0, 1, 2}};
    draft_tensors_t w;
    TAP_REQUIRE(draft_alloc(&dd, &w) == 0);
    uint16_t *all[] = {w.q, w.o, w.lm_head, w.down};
    size_t n[] = {128 * 128, 64 * 128, 48 * 64, 64 * 64};
    for (size_t a = 0; a < 4; a++)
        for (size_t i = 0; i < n[a]; i++)
            all[a][i] = (uint16_t)(i * 7 + a);
    for (unsigned j = 0; j < dd.Vd; j++)
        w.d2t[j] = 3 * j;
    TAP_REQUIRE(draft_write(dir, &dd, &w, "none") == 0);
    char cfgpath[4200];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    arb_draft_config_t d;
    TAP_REQUIRE(arb_draft_config_load(cfgpath, &t, &d, why, sizeof why) == ARB_OK);
    for (unsigned r = 0; r < 2; r++) {
        arb_draft_shard_t s;
        arb_draft_weights_t got;
        TAP_REQUIRE(arb_draft_shard_make(&d, 2, r, 1, &s, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_draft_weights_load(dir, &d, &s, &got, why, sizeof why) == ARB_OK);
        int q_ok = memcmp(got.q, w.q + (size_t)r * 64 * 128, 64 * 128 * 2) == 0, o_ok = 1, d_ok = 1;
        for (unsigned row = 0; row < 64; row++) /* o_proj: columns of head r; down_proj: columns r * 32 .. */
            o_ok &= memcmp(got.o + row * 64, w.o + row * 128 + r * 64, 64 * 2) == 0,
                d_ok &= memcmp(got.down + row * 32, w.down + row * 64 + r * 32, 32 * 2) == 0;
        TAP_CHECK(q_ok && o_ok && d_ok);
        TAP_CHECK(memcmp(got.lm_head, w.lm_head + (size_t)r * 24 * 64, 24 * 64 * 2) == 0);
        TAP_CHECK(got.d2t[47] == 141 && memcmp(got.k, w.k, 64 * 128 * 2) == 0); /* replicated: the one kv head */
        arb_draft_weights_free(&got);
    }
    /* malformed: each refused naming the tensor or field, the file and what was expected */
    static const struct {
        const char *spoil, *n1, *n2;
    } bad[] = {
        {"missing", "lm_head.weight", "draft_vocab_size x hidden_size"},
        {"shape", "q_proj.weight", "[128, 128]"},
        {"dtype", "fc.weight", "expected BF16"},
        {"d2t", "d2t", "vocab_size 512"},
        {"truncated", "model.safetensors", "file"},
        {"hidden", "hidden_size", "config.json"},
        {"arch", "LlamaForCausalLMEagle3", "config.json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        TAP_REQUIRE(draft_write(dir, &dd, &w, bad[i].spoil) == 0);
        arb_draft_shard_t s;
        why[0] = 0;
        arb_status_t st = arb_draft_config_load(cfgpath, &t, &d, why, sizeof why);
        if (st == ARB_OK && arb_draft_shard_make(&d, 2, 1, 1, &s, why, sizeof why) == ARB_OK)
            st = arb_draft_weights_check(dir, &d, &s, why, sizeof why);
        printf("# %s: %s\n", bad[i].spoil, why);
        TAP_CHECK(st == ARB_ERR_INVALID);
        TAP_HAS_STR(why, bad[i].n1);
        TAP_HAS_STR(why, bad[i].n2);
    }
    char path[4200];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path), unlink(cfgpath), rmdir(dir);
    draft_free(&w);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"config", test_config},
        {"shard", test_shard},
        {"checkpoint", test_checkpoint},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
