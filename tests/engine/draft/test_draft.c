/* SPDX-License-Identifier: MIT */
/* The EAGLE-3 draft head's config.json (good, defaults, every refusal), its shard blocks,
 * its checkpoint read per shard (the blocks equal the written rows and columns), the
 * malformed checkpoints refused by name, and its forward (a block of rows = one row at a
 * time; fc; causal). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu/cpu_ref_math.h"
#include "draft/draft_cpu.h"
#include "draft/draft_weights.h"
#include "rmsnorm/rmsnorm.h"
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
    /* SpecForge's published configs/deepseek-v3-671b-eagle3.json, field for field */
    arb_model_config_t v3;
    TAP_REQUIRE(arb_config_load("deepseek-v3", &v3, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_draft_config_parse(
                    "{\"architectures\": [\"LlamaForCausalLMEagle3\"], \"eagle_config\": "
                    "{\"eagle_aux_hidden_state_layer_ids\": [1, 29, 57], \"use_aux_hidden_state\": true}, "
                    "\"bos_token_id\": 151643, \"eos_token_id\": 151645, \"hidden_act\": \"silu\", "
                    "\"hidden_size\": 7168, \"initializer_range\": 0.02, \"intermediate_size\": 40960, "
                    "\"max_position_embeddings\": 163840, \"model_type\": \"llama\", \"num_attention_heads\": 56, "
                    "\"num_key_value_heads\": 8, \"num_hidden_layers\": 1, \"pad_token_id\": 0, "
                    "\"rms_norm_eps\": 1e-05, \"tie_word_embeddings\": false, \"torch_dtype\": \"float16\", "
                    "\"transformers_version\": \"4.51.0\", \"use_cache\": true, \"vocab_size\": 129280, "
                    "\"draft_vocab_size\": 32000}",
                    "v3", &v3, &d, why, sizeof why) == ARB_OK);
    TAP_CHECK(d.head_dim == 128 && d.aux_layers[1] == 29 && d.draft_vocab_size == 32000 && d.aux_from_file);
    arb_draft_shard_t s8;
    TAP_CHECK(arb_draft_shard_make(&d, 8, 7, 1, &s8, why, sizeof why) == ARB_OK && s8.heads == 7 && s8.kv0 == 7 &&
              s8.kv_heads == 1 && s8.inter == 5120 && s8.vocab == 4000);
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
    char cfgpath[4200], sub[4200];
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    snprintf(sub, sizeof sub, "%s/split", dir);
    TAP_REQUIRE(mkdir(sub, 0755) == 0 && draft_write(sub, &dd, &w, "split") == 0);
    TAP_REQUIRE(draft_write(dir, &dd, &w, "none") == 0);
    arb_draft_config_t d;
    TAP_REQUIRE(arb_draft_config_load(cfgpath, &t, &d, why, sizeof why) == ARB_OK);
    for (unsigned r = 0; r < 4; r++) { /* shards 0, 1 of one file, then of the two files and their index */
        const char *from = r < 2 ? dir : sub;
        arb_draft_shard_t s;
        arb_draft_weights_t got;
        TAP_REQUIRE(arb_draft_shard_make(&d, 2, r % 2, 1, &s, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_draft_weights_load(from, &d, &s, &got, why, sizeof why) == ARB_OK);
        int q_ok = memcmp(got.q, w.q + (size_t)(r % 2) * 64 * 128, 64 * 128 * 2) == 0, o_ok = 1, d_ok = 1;
        for (unsigned row = 0; row < 64; row++) /* o_proj: columns of head r; down_proj: columns r * 32 .. */
            o_ok &= memcmp(got.o + row * 64, w.o + row * 128 + (r % 2) * 64, 64 * 2) == 0,
                d_ok &= memcmp(got.down + row * 32, w.down + row * 64 + (r % 2) * 32, 32 * 2) == 0;
        TAP_CHECK(q_ok && o_ok && d_ok);
        TAP_CHECK(memcmp(got.lm_head, w.lm_head + (size_t)(r % 2) * 24 * 64, 24 * 64 * 2) == 0);
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
    char path[8500];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    unlink(path), unlink(cfgpath);
    static const char *split_files[] = {"config.json", "model.safetensors.index.json",
                                        "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, split_files[i]);
        unlink(path);
    }
    rmdir(sub), rmdir(dir);
    draft_free(&w);
}

/* Seeded bf16 weights of about 1/sqrt(in); norms near 1. */
static void fill(uint16_t *w, size_t n, double scale, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ull + 1442695040888963407ull;
        w[i] = arb_f64_to_bf16(scale * ((double)(*state >> 11) / 9007199254740992.0 * 2 - 1));
    }
}

/* The forward on one shard, no call sites: a block of T rows equals T one-row steps (the
 * causal cache, rows independent of T), and fc is what the fused input goes through. */
static void test_forward(void)
{
    arb_model_config_t t = tiny();
    char dir[] = "/tmp/arb-draft-XXXXXX", why[2048], cfgpath[4200];
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    draft_dims_t dd = {.H = 64, .I = 64, .nh = 4, .nkv = 2, .hd = 16, .V = 512, .Vd = 40, .aux = {0, 1, 2}};
    draft_tensors_t w;
    TAP_REQUIRE(draft_alloc(&dd, &w) == 0);
    uint64_t st = 5;
    fill(w.fc, 64 * 192, 0.125, &st), fill(w.q, 64 * 128, 0.15, &st), fill(w.k, 32 * 128, 0.15, &st);
    fill(w.v, 32 * 128, 0.15, &st), fill(w.o, 64 * 64, 0.2, &st), fill(w.gate, 64 * 64, 0.2, &st);
    fill(w.up, 64 * 64, 0.2, &st), fill(w.down, 64 * 64, 0.2, &st), fill(w.lm_head, 40 * 64, 0.2, &st);
    uint16_t *norms[] = {w.in_norm, w.hidden_norm, w.post_norm, w.norm};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 64; j++)
            norms[i][j] = arb_f64_to_bf16(1.0 + 0.01 * ((j * 7 + i) % 11));
    for (unsigned j = 0; j < dd.Vd; j++)
        w.d2t[j] = (int64_t)(j * 11 % 512) - j;
    TAP_REQUIRE(draft_write(dir, &dd, &w, "none") == 0);
    snprintf(cfgpath, sizeof cfgpath, "%s/config.json", dir);
    arb_draft_config_t d;
    arb_draft_shard_t sh;
    TAP_REQUIRE(arb_draft_config_load(cfgpath, &t, &d, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_draft_shard_make(&d, 1, 0, 1, &sh, why, sizeof why) == ARB_OK);
    arb_draft_cpu_t *blk = NULL, *one = NULL;
    arb_draft_cpu_opts_t o = {.cfg = &d, .shard = sh, .max_tokens = 4, .positions = 8};
    for (int m = 0; m < 2; m++) {
        arb_draft_weights_t lw;
        TAP_REQUIRE(arb_draft_weights_load(dir, &d, &sh, &lw, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_draft_cpu_create(&o, &lw, m ? &one : &blk, why, sizeof why) == ARB_OK);
    }
    uint16_t aux[4 * 192], emb[4 * 64], fused[4 * 64];
    fill(aux, 4 * 192, 1.0, &st), fill(emb, 4 * 64, 1.0, &st);
    TAP_REQUIRE(arb_draft_cpu_step(blk, aux, 1, emb, 4, 0, why, sizeof why) == ARB_OK);
    uint16_t out_blk[4 * 64];
    float best_blk[4];
    uint32_t id_blk[4];
    memcpy(out_blk, arb_draft_cpu_out(blk), sizeof out_blk);
    for (unsigned r = 0; r < 4; r++)
        arb_draft_cpu_argmax(blk, r, &best_blk[r], &id_blk[r]);
    size_t same = 0, ids = 0;
    for (unsigned r = 0; r < 4; r++) { /* one row at a time, fc applied here: the same bits */
        arb_matvec_bf(w.fc, aux + r * 192, 64, 192, fused + r * 64);
        TAP_REQUIRE(arb_draft_cpu_step(one, fused + r * 64, 0, emb + r * 64, 1, r, why, sizeof why) == ARB_OK);
        same += memcmp(arb_draft_cpu_out(one), out_blk + r * 64, 64 * 2) == 0;
        float b;
        uint32_t id;
        arb_draft_cpu_argmax(one, 0, &b, &id);
        ids += id == id_blk[r] && b == best_blk[r];
    }
    TAP_CHECK(same == 4 && ids == 4);
    TAP_CHECK(arb_draft_cpu_target_id(one, 39) == 39 * 11 % 512);
    /* causal: changing row 3's input leaves rows 0..2 as they were */
    emb[3 * 64] ^= 0x0040;
    TAP_REQUIRE(arb_draft_cpu_step(blk, aux, 1, emb, 4, 0, why, sizeof why) == ARB_OK);
    TAP_CHECK(memcmp(arb_draft_cpu_out(blk), out_blk, 3 * 64 * 2) == 0);
    TAP_CHECK(memcmp(arb_draft_cpu_out(blk) + 3 * 64, out_blk + 3 * 64, 64 * 2) != 0);
    TAP_CHECK(arb_draft_cpu_step(blk, aux, 1, emb, 4, 6, why, sizeof why) == ARB_ERR_INVALID); /* past the cache */
    arb_draft_cpu_destroy(blk), arb_draft_cpu_destroy(one);
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
        {"forward", test_forward},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
