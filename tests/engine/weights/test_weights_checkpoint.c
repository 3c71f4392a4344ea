/* SPDX-License-Identifier: MIT */
/* A tiny DeepSeek-V3 checkpoint (engine/configs/tiny.json), bf16 and with compressed-tensors
 * INT4 experts, written over two shard files with an index, read back: every tensor's
 * bytes at tp-shape 1 and every rank's block at tp-shape 2 (INT4 words converted to the
 * engine's nibbles); then the same checkpoint spoilt one way at a time and refused. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/config.h"
#include "model/int4.h"
#include "model/shard.h"
#include "model/wgen.h"
#include "st_write.h"
#include "tap.h"
#include "tiny_ckpt.h"
#include "weights/index.h"
#include "weights/int4_ct.h"
#include "weights/names.h"
#include "weights/quant.h"
#include "weights/slice.h"

static char why[2048];

/* Every element of this rank's block of s against the generator; returns mismatches. */
static uint64_t compare_block(const arb_wspec_t *s, const uint8_t *d)
{
    uint64_t bad = 0, rows = s->ndim == 1 ? 1 : s->shape[0], cols = s->ndim == 1 ? s->shape[0] : s->shape[1];
    uint64_t r0 = s->split == ARB_WSPLIT_ROWS ? s->first : 0, nr = s->split == ARB_WSPLIT_ROWS ? s->count : rows;
    uint64_t c0 = s->split == ARB_WSPLIT_COLS ? s->first : 0, nc = s->split == ARB_WSPLIT_COLS ? s->count : cols;
    size_t es = tiny_elem_size(s);
    for (uint64_t r = 0; r < nr; r++)
        for (uint64_t c = 0; c < nc; c++) {
            const uint8_t *got = d + (r * nc + c) * es;
            uint64_t row = r0 + r, col = c0 + c;
            if (s->part == ARB_WPART_PACKED) {
                int32_t word;
                memcpy(&word, got, 4);
                for (int j = 0; j < 8; j++)
                    bad += arb_int4_unpack(word, j) != tiny_q_of(s, row, col * 8 + (uint64_t)j);
            } else {
                uint64_t k = tiny_key_of(s, row * cols + col);
                bad += memcmp(got, &k, es) != 0;
            }
        }
    return bad;
}

/* Loads every rank of tp-shape k and checks every block; returns the bytes of rank 0. */
static uint64_t check_ranks(const char *dir, const arb_ckpt_t *ck, const arb_model_config_t *c, unsigned k,
                            arb_weight_format_t wf, const char *prefix)
{
    uint64_t bytes0 = 0;
    for (unsigned r = 0; r < k; r++) {
        arb_shard_t sh;
        arb_wplan_t p;
        uint64_t bytes = 0, bad = 0, read = 0;
        if (arb_shard_make(c, k, r, wf, &sh, why, sizeof why) != ARB_OK ||
            arb_wplan_make(c, wf, &sh, prefix, &p, why, sizeof why) != ARB_OK) {
            TAP_FAIL_("plan: %s", why);
            return 0;
        }
        if (arb_wplan_check(&p, ck, &bytes, why, sizeof why) != ARB_OK)
            TAP_FAIL_("%s: %s", dir, why);
        for (size_t i = 0; i < p.n; i++) {
            const arb_wspec_t *s = &p.specs[i];
            if (s->part == ARB_WPART_SHAPE)
                continue;
            size_t n = (size_t)(arb_wspec_rank_numel(s) * tiny_elem_size(s));
            uint8_t *d = malloc(n);
            if (!d || arb_wspec_read(ck, s, d, n, why, sizeof why) != ARB_OK) {
                TAP_FAIL_("read %s: %s", s->name, why);
                free(d);
                continue;
            }
            uint64_t b = compare_block(s, d);
            if (b && bad == 0)
                tap_diag("tp %u rank %u: %s: %llu elements differ", k, r, s->name, (unsigned long long)b);
            bad += b;
            read += n;
            free(d);
        }
        TAP_EQ_U64(bad, 0);
        TAP_EQ_U64(read, bytes);
        if (r == 0)
            bytes0 = bytes;
        arb_wplan_free(&p);
    }
    return bytes0;
}

static void roundtrip(arb_weight_format_t wf, const char *prefix)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    char dir[] = "/tmp/arb-ckpt-XXXXXX";
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    if (tiny_write(dir, &c, wf, prefix, TINY_SPOIL_NONE, why, sizeof why) != 0) {
        TAP_FAIL_("writing the checkpoint in %s: %s", dir, why);
        tiny_remove(dir);
        return;
    }
    char path[1200];
    arb_weight_format_t got = (arb_weight_format_t)-1;
    snprintf(path, sizeof path, "%s/config.json", dir);
    TAP_EQ_INT(arb_weights_format_load(path, &got, why, sizeof why), ARB_OK);
    TAP_EQ_INT(got, wf);
    arb_ckpt_t ck;
    if (arb_ckpt_open(dir, &ck, why, sizeof why) != ARB_OK) {
        TAP_FAIL_("%s", why);
        tiny_remove(dir);
        return;
    }
    TAP_EQ_INT(ck.nshards, 2);
    const char *found = arb_wplan_detect_prefix(&ck);
    TAP_REQUIRE(found != NULL);
    TAP_EQ_STR(found, prefix);
    if (prefix[0]) { /* Kimi-K2.5's layout: the config read back from under text_config */
        arb_model_config_t nested;
        TAP_REQUIRE(arb_config_load(path, &nested, why, sizeof why) == ARB_OK);
        TAP_EQ_INT(nested.nested_text_config, 1);
        TAP_EQ_INT(nested.hidden_size, c.hidden_size);
        TAP_EQ_INT(nested.n_routed_experts, c.n_routed_experts);
    }
    uint64_t whole = check_ranks(dir, &ck, &c, 1, wf, found);
    uint64_t half = check_ranks(dir, &ck, &c, 2, wf, found);
    TAP_CHECK(half < whole && 2 * half > whole); /* sharded blocks halve, replicated ones stay */
    tap_diag("%s: tp 1 reads %llu bytes, each rank of tp 2 %llu", wf == ARB_WEIGHTS_INT4 ? "int4" : "bf16",
             (unsigned long long)whole, (unsigned long long)half);
    arb_ckpt_close(&ck);
    tiny_remove(dir);
}

static void t_bf16(void) { roundtrip(ARB_WEIGHTS_BF16, ""); }
static void t_int4(void) { roundtrip(ARB_WEIGHTS_INT4, ""); }
static void t_k25(void) { roundtrip(ARB_WEIGHTS_INT4, "language_model."); }

/* The spoilt checkpoint: open (or the check) refused with a message holding s1 and s2. */
static void spoilt(tiny_spoil_t spoil, arb_weight_format_t wf, int at_open, const char *s1, const char *s2)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    char dir[] = "/tmp/arb-ckpt-XXXXXX";
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    TAP_REQUIRE(tiny_write(dir, &c, wf, "", spoil, why, sizeof why) == 0);
    arb_ckpt_t ck;
    arb_status_t st = arb_ckpt_open(dir, &ck, why, sizeof why);
    if (at_open) {
        TAP_EQ_INT(st, ARB_ERR_INVALID);
        if (st == ARB_OK)
            arb_ckpt_close(&ck);
    } else {
        TAP_EQ_INT(st, ARB_OK);
        if (st == ARB_OK) {
            arb_shard_t sh;
            arb_wplan_t p;
            TAP_REQUIRE(arb_shard_make(&c, 2, 1, wf, &sh, why, sizeof why) == ARB_OK);
            TAP_REQUIRE(arb_wplan_make(&c, wf, &sh, "", &p, why, sizeof why) == ARB_OK);
            TAP_EQ_INT(arb_wplan_check(&p, &ck, NULL, why, sizeof why), ARB_ERR_INVALID);
            arb_wplan_free(&p);
            arb_ckpt_close(&ck);
        }
    }
    TAP_HAS_STR(why, s1);
    TAP_HAS_STR(why, s2);
    tiny_remove(dir);
}

static void t_shape_disagrees(void)
{
    spoilt(TINY_SPOIL_SHAPE, ARB_WEIGHTS_BF16, 0,
           "model-00001-of-00002.safetensors: tensor 'model.layers.1.self_attn.kv_a_layernorm.weight' has shape [33]",
           "tiny.json gives [32] (kv_lora_rank)");
}

static void t_dtype_wrong(void)
{
    tiny_spoil_t s = TINY_SPOIL_DTYPE;
    spoilt(s, ARB_WEIGHTS_BF16, 0, "tensor 'lm_head.weight' has dtype F16", "(expected BF16)");
}

static void t_missing(void)
{
    spoilt(TINY_SPOIL_MISSING, ARB_WEIGHTS_INT4, 0, "tensor 'model.norm.weight' is missing",
           "expected BF16 [64]: hidden_size, from");
}

static void t_index_phantom(void)
{
    spoilt(TINY_SPOIL_INDEX_PHANTOM, ARB_WEIGHTS_BF16, 1,
           "model.safetensors.index.json: tensor 'model.layers.0.mlp.phantom.weight' is mapped to",
           "model-00002-of-00002.safetensors, which has no such tensor");
}

static void t_weight_shape(void)
{
    spoilt(TINY_SPOIL_WEIGHT_SHAPE, ARB_WEIGHTS_INT4, 0,
           "'model.layers.2.mlp.experts.3.up_proj.weight_shape' holds {128, 96}", "gives {128, 64}");
}

static void t_index_errors(void)
{
    char dir[] = "/tmp/arb-ckpt-XXXXXX", path[1200];
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    arb_ckpt_t ck;
    TAP_EQ_INT(arb_ckpt_open(dir, &ck, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "neither model.safetensors.index.json nor model.safetensors");
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    TAP_REQUIRE(st_write_text(path, "{\"weight_map\":{\"a\":\"../elsewhere.safetensors\"}}") == 0);
    TAP_EQ_INT(arb_ckpt_open(dir, &ck, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "must be a plain file name");
    TAP_REQUIRE(st_write_text(path, "{\"weight_map\":{\"a\":\"model.safetensors\"}}") == 0);
    TAP_EQ_INT(arb_ckpt_open(dir, &ck, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "model.safetensors: cannot open");
    TAP_REQUIRE(st_write_text(path, "{\"metadata\":{}}") == 0);
    TAP_EQ_INT(arb_ckpt_open(dir, &ck, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "missing or empty 'weight_map'");
    unlink(path);
    /* one file without an index */
    uint16_t v[4] = {1, 2, 3, 4};
    st_w_tensor_t t = {"model.norm.weight", "BF16", 1, {4}, v, sizeof v};
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    TAP_REQUIRE(st_write(path, &t, 1) == 0);
    TAP_REQUIRE(arb_ckpt_open(dir, &ck, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(ck.nshards, 1);
    const arb_ckpt_entry_t *e = arb_ckpt_find(&ck, "model.norm.weight");
    TAP_REQUIRE(e != NULL);
    TAP_CHECK(memcmp(arb_st_data(arb_ckpt_file(&ck, e), e->t), v, sizeof v) == 0);
    TAP_CHECK(arb_ckpt_find(&ck, "lm_head.weight") == NULL);
    arb_ckpt_close(&ck);
    tiny_remove(dir);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"bf16_two_shards_tp1_tp2", t_bf16},
        {"int4_two_shards_tp1_tp2", t_int4},
        {"kimi_k25_layout_int4", t_k25},
        {"shape_disagrees_with_config", t_shape_disagrees},
        {"dtype_wrong", t_dtype_wrong},
        {"tensor_missing", t_missing},
        {"index_name_missing_from_shard", t_index_phantom},
        {"int4_weight_shape_wrong", t_weight_shape},
        {"index_errors", t_index_errors},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
