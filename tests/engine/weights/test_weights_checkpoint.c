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
#include "weights/index.h"
#include "weights/int4_ct.h"
#include "weights/names.h"
#include "weights/quant.h"
#include "weights/slice.h"

#define SEED 20261201ull

static char why[2048];

typedef enum spoil {
    SPOIL_NONE = 0,
    SPOIL_SHAPE,          /* kv_a_layernorm of layer 1 one element longer than config.json says */
    SPOIL_DTYPE,          /* lm_head stored as F16 */
    SPOIL_MISSING,        /* model.norm.weight absent from the index and the shards */
    SPOIL_INDEX_PHANTOM,  /* the index names a tensor its shard does not hold */
    SPOIL_WEIGHT_SHAPE,   /* an INT4 expert's weight_shape says {out, in + 32} */
} spoil_t;

/* Key of stored element `elem` (row-major in the unsharded tensor) of spec s. */
static uint64_t key_of(const arb_wspec_t *s, uint64_t elem)
{
    return arb_wgen_key(SEED, s->tensor * 4u + (uint32_t)s->part, s->layer,
                        ((uint64_t)(s->expert + 1) << 40) + elem);
}

/* The INT4 value of logical element (row, col) of an expert projection. */
static int q_of(const arb_wspec_t *s, uint64_t row, uint64_t col)
{
    return (int)(key_of(s, row * (s->shape[1] * ARB_INT4_PER_WORD) + col) >> 60) - 8;
}

static size_t elem_size(const arb_wspec_t *s)
{
    return s->part == ARB_WPART_SHAPE ? 8 : s->part == ARB_WPART_PACKED || s->dtype == ARB_ST_F32 ? 4 : 2;
}

/* The stored bytes of a whole tensor (tp-shape 1). */
static void *make_data(const arb_wspec_t *s, size_t *bytes)
{
    uint64_t n = s->ndim == 1 ? s->shape[0] : s->shape[0] * s->shape[1];
    size_t es = elem_size(s);
    uint8_t *d = malloc(n * es);
    if (!d)
        return NULL;
    for (uint64_t i = 0; i < n; i++) {
        if (s->part == ARB_WPART_SHAPE) {
            int64_t v = (int64_t)s->logical[i];
            memcpy(d + 8 * i, &v, 8);
        } else if (s->part == ARB_WPART_PACKED) {
            uint64_t row = i / s->shape[1], w = i % s->shape[1];
            int q[8];
            for (int j = 0; j < 8; j++)
                q[j] = q_of(s, row, w * 8 + (uint64_t)j);
            int32_t word = arb_int4_ct_pack8(q);
            memcpy(d + 4 * i, &word, 4);
        } else {
            uint64_t k = key_of(s, i);
            memcpy(d + es * i, &k, es); /* the low bytes of the key (little-endian host) */
        }
    }
    *bytes = n * es;
    return d;
}

static const char *dtype_str(const arb_wspec_t *s)
{
    return s->part == ARB_WPART_SHAPE ? "I64" : arb_st_dtype_name(s->dtype);
}

static const char *shard_name[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
static const char *qc = ",\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
                        "\"pack-quantized\",\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":"
                        "{\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"group\",\"group_size\":32}}}}";

/* Writes dir/{config.json, the index, two shards}; 0 on success. */
static int write_ckpt(const char *dir, const arb_model_config_t *c, arb_weight_format_t wf, spoil_t spoil)
{
    arb_shard_t sh;
    arb_wplan_t p;
    if (arb_shard_make(c, 1, 0, wf, &sh, why, sizeof why) || arb_wplan_make(c, wf, &sh, &p, why, sizeof why))
        return -1;
    st_w_tensor_t *t[2] = {calloc(p.n, sizeof **t), calloc(p.n, sizeof **t)};
    size_t nt[2] = {0, 0}, icap = p.n * 160 + 4096, iused = 0;
    char *index = malloc(icap);
    int rc = -1;
    if (!t[0] || !t[1] || !index)
        goto out;
    iused += (size_t)snprintf(index, icap, "{\"metadata\":{\"total_size\":0},\"weight_map\":{");
    for (size_t i = 0; i < p.n; i++) {
        arb_wspec_t *s = &p.specs[i];
        if (spoil == SPOIL_MISSING && strcmp(s->name, "model.norm.weight") == 0)
            continue;
        unsigned f = (unsigned)(i % 2);
        st_w_tensor_t *w = &t[f][nt[f]++];
        size_t bytes = 0;
        w->name = s->name;
        w->dtype = dtype_str(s);
        w->ndim = s->ndim;
        w->shape[0] = s->shape[0];
        w->shape[1] = s->shape[1];
        if (spoil == SPOIL_SHAPE && strcmp(s->name, "model.layers.1.self_attn.kv_a_layernorm.weight") == 0)
            s->shape[0]++;
        if (spoil == SPOIL_WEIGHT_SHAPE && strcmp(s->name, "model.layers.2.mlp.experts.3.up_proj.weight_shape") == 0)
            s->logical[1] += 32;
        w->shape[0] = s->shape[0];
        w->data = make_data(s, &bytes);
        w->bytes = bytes;
        if (spoil == SPOIL_DTYPE && strcmp(s->name, "lm_head.weight") == 0)
            w->dtype = "F16";
        iused += (size_t)snprintf(index + iused, icap - iused, "%s\"%s\":\"%s\"", i ? "," : "", s->name, shard_name[f]);
    }
    if (spoil == SPOIL_INDEX_PHANTOM)
        iused += (size_t)snprintf(index + iused, icap - iused, ",\"model.layers.0.mlp.phantom.weight\":\"%s\"",
                                  shard_name[1]);
    snprintf(index + iused, icap - iused, "}}");
    char path[1200], cfgtext[4096];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (st_write_text(path, index))
        goto out;
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, shard_name[f]);
        if (st_write(path, t[f], nt[f]))
            goto out;
    }
    snprintf(cfgtext, sizeof cfgtext, "{\"model_type\":\"deepseek_v3\"%s}", wf == ARB_WEIGHTS_INT4 ? qc : "");
    snprintf(path, sizeof path, "%s/config.json", dir);
    rc = st_write_text(path, cfgtext);
out:
    for (int f = 0; f < 2; f++) {
        for (size_t i = 0; t[f] && i < nt[f]; i++)
            free((void *)t[f][i].data);
        free(t[f]);
    }
    free(index);
    arb_wplan_free(&p);
    return rc;
}

static void remove_ckpt(const char *dir)
{
    static const char *files[] = {"model.safetensors.index.json", "config.json", "model.safetensors"};
    char path[1200];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, shard_name[f]);
        unlink(path);
    }
    rmdir(dir);
}

/* Every element of this rank's block of s against the generator; returns mismatches. */
static uint64_t compare_block(const arb_wspec_t *s, const uint8_t *d)
{
    uint64_t bad = 0, rows = s->ndim == 1 ? 1 : s->shape[0], cols = s->ndim == 1 ? s->shape[0] : s->shape[1];
    uint64_t r0 = s->split == ARB_WSPLIT_ROWS ? s->first : 0, nr = s->split == ARB_WSPLIT_ROWS ? s->count : rows;
    uint64_t c0 = s->split == ARB_WSPLIT_COLS ? s->first : 0, nc = s->split == ARB_WSPLIT_COLS ? s->count : cols;
    size_t es = elem_size(s);
    for (uint64_t r = 0; r < nr; r++)
        for (uint64_t c = 0; c < nc; c++) {
            const uint8_t *got = d + (r * nc + c) * es;
            uint64_t row = r0 + r, col = c0 + c;
            if (s->part == ARB_WPART_PACKED) {
                int32_t word;
                memcpy(&word, got, 4);
                for (int j = 0; j < 8; j++)
                    bad += arb_int4_unpack(word, j) != q_of(s, row, col * 8 + (uint64_t)j);
            } else {
                uint64_t k = key_of(s, row * cols + col);
                bad += memcmp(got, &k, es) != 0;
            }
        }
    return bad;
}

/* Loads every rank of tp-shape k and checks every block; returns the bytes of rank 0. */
static uint64_t check_ranks(const char *dir, const arb_ckpt_t *ck, const arb_model_config_t *c, unsigned k,
                            arb_weight_format_t wf)
{
    uint64_t bytes0 = 0;
    for (unsigned r = 0; r < k; r++) {
        arb_shard_t sh;
        arb_wplan_t p;
        uint64_t bytes = 0, bad = 0, read = 0;
        if (arb_shard_make(c, k, r, wf, &sh, why, sizeof why) != ARB_OK ||
            arb_wplan_make(c, wf, &sh, &p, why, sizeof why) != ARB_OK) {
            TAP_FAIL_("plan: %s", why);
            return 0;
        }
        if (arb_wplan_check(&p, ck, &bytes, why, sizeof why) != ARB_OK)
            TAP_FAIL_("%s: %s", dir, why);
        for (size_t i = 0; i < p.n; i++) {
            const arb_wspec_t *s = &p.specs[i];
            if (s->part == ARB_WPART_SHAPE)
                continue;
            size_t n = (size_t)(arb_wspec_rank_numel(s) * elem_size(s));
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

static void roundtrip(arb_weight_format_t wf)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    char dir[] = "/tmp/arb-ckpt-XXXXXX";
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    if (write_ckpt(dir, &c, wf, SPOIL_NONE) != 0) {
        TAP_FAIL_("writing the checkpoint in %s: %s", dir, why);
        remove_ckpt(dir);
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
        remove_ckpt(dir);
        return;
    }
    TAP_EQ_INT(ck.nshards, 2);
    uint64_t whole = check_ranks(dir, &ck, &c, 1, wf);
    uint64_t half = check_ranks(dir, &ck, &c, 2, wf);
    TAP_CHECK(half < whole && 2 * half > whole); /* sharded blocks halve, replicated ones stay */
    tap_diag("%s: tp 1 reads %llu bytes, each rank of tp 2 %llu", wf == ARB_WEIGHTS_INT4 ? "int4" : "bf16",
             (unsigned long long)whole, (unsigned long long)half);
    arb_ckpt_close(&ck);
    remove_ckpt(dir);
}

static void t_bf16(void) { roundtrip(ARB_WEIGHTS_BF16); }
static void t_int4(void) { roundtrip(ARB_WEIGHTS_INT4); }

/* The spoilt checkpoint: open (or the check) refused with a message holding s1 and s2. */
static void spoilt(spoil_t spoil, arb_weight_format_t wf, int at_open, const char *s1, const char *s2)
{
    arb_model_config_t c;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    char dir[] = "/tmp/arb-ckpt-XXXXXX";
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    TAP_REQUIRE(write_ckpt(dir, &c, wf, spoil) == 0);
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
            TAP_REQUIRE(arb_wplan_make(&c, wf, &sh, &p, why, sizeof why) == ARB_OK);
            TAP_EQ_INT(arb_wplan_check(&p, &ck, NULL, why, sizeof why), ARB_ERR_INVALID);
            arb_wplan_free(&p);
            arb_ckpt_close(&ck);
        }
    }
    TAP_HAS_STR(why, s1);
    TAP_HAS_STR(why, s2);
    remove_ckpt(dir);
}

static void t_shape_disagrees(void)
{
    spoilt(SPOIL_SHAPE, ARB_WEIGHTS_BF16, 0,
           "model-00001-of-00002.safetensors: tensor 'model.layers.1.self_attn.kv_a_layernorm.weight' has shape [33]",
           "tiny.json gives [32] (kv_lora_rank)");
}

static void t_dtype_wrong(void)
{
    spoil_t s = SPOIL_DTYPE;
    spoilt(s, ARB_WEIGHTS_BF16, 0, "tensor 'lm_head.weight' has dtype F16", "(expected BF16)");
}

static void t_missing(void)
{
    spoilt(SPOIL_MISSING, ARB_WEIGHTS_INT4, 0, "tensor 'model.norm.weight' is missing",
           "expected BF16 [64]: hidden_size, from");
}

static void t_index_phantom(void)
{
    spoilt(SPOIL_INDEX_PHANTOM, ARB_WEIGHTS_BF16, 1,
           "model.safetensors.index.json: tensor 'model.layers.0.mlp.phantom.weight' is mapped to",
           "model-00002-of-00002.safetensors, which has no such tensor");
}

static void t_weight_shape(void)
{
    spoilt(SPOIL_WEIGHT_SHAPE, ARB_WEIGHTS_INT4, 0, "'model.layers.2.mlp.experts.3.up_proj.weight_shape' holds {128, 96}",
           "gives {128, 64}");
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
    remove_ckpt(dir);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"bf16_two_shards_tp1_tp2", t_bf16}, {"int4_two_shards_tp1_tp2", t_int4},
        {"shape_disagrees_with_config", t_shape_disagrees}, {"dtype_wrong", t_dtype_wrong},
        {"tensor_missing", t_missing},       {"index_name_missing_from_shard", t_index_phantom},
        {"int4_weight_shape_wrong", t_weight_shape}, {"index_errors", t_index_errors},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
