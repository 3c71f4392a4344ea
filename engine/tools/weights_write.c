/* SPDX-License-Identifier: MIT */
/*
 * arb-weights-write DIR [--config NAME|PATH] [--weights bf16|int4] [--seed S] [--layers L]
 *                       [--experts E] [--topk K] [--vocab V] [--shards N] [--force]:
 * the engine's synthetic weights (engine/model/wgen.h, as `arbench engine --seed S` builds
 * them) written out as a Hugging Face checkpoint in the published DeepSeek-V3 names
 * (engine/weights/names.h): DIR/config.json (the config after the overrides; with int4 a
 * compressed-tensors pack-quantized quantization_config), model.safetensors.index.json and
 * N shard files (default 2) model-0000i-of-0000N.safetensors, tensors in plan order split by
 * bytes. bf16 tensors, the router bias F32, INT4 experts as weight_packed (I32, nibble
 * q + 8), weight_scale (BF16), weight_shape (I64). `arbench engine --weights-dir DIR` then
 * computes what `--config ... --seed S` computes, bit for bit. --fp8 (bf16 only) stores the
 * linear weights as DeepSeek-V3's FP8 checkpoint does (F8_E4M3 with an F32 weight_scale_inv
 * per 128x128 block, scale = amax / 448; embed_tokens, lm_head and the router stay bf16) and
 * says so in quantization_config; --fp8-dequantized stores the same rounded values as bf16
 * (bf16(float(code) * scale)), what the loader must turn an --fp8 checkpoint into.
 * --kimi-k25: Kimi-K2.5's layout, every name under language_model. and config.json's model
 * under text_config.
 * Exit 0: written; 1: failed (the reason on stderr); 2: bad usage. An existing
 * DIR/config.json is refused unless --force.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arbench/status.h"
#include "base/outfile.h"
#include "cpu/cpu_ref.h"
#include "model/config.h"
#include "model/shard.h"
#include "model/wgen.h"
#include "rmsnorm/rmsnorm.h"
#include "weights/fp8.h"
#include "weights/int4_ct.h"
#include "weights/quant.h"
#include "weights/names.h"
#include "weights/st_writer.h"

typedef struct wopts {
    const char *dir, *config;
    const char *prefix; /* "" or "language_model." (--kimi-k25: Kimi-K2.5's layout) */
    arb_weight_format_t wf;
    uint64_t seed;
    unsigned shards;
    int force;
    int fp8; /* 1: FP8 blocks (weight_scale_inv), 2: the same values dequantized, stored bf16 */
    arb_config_overrides_t ov;
} wopts_t;

static int usage(void)
{
    fprintf(stderr, "usage: arb-weights-write DIR [--config NAME|PATH] [--weights bf16|int4] [--seed S] [--layers L] "
                    "[--experts E] [--topk K] [--vocab V] [--shards N] [--fp8|--fp8-dequantized] [--kimi-k25] [--force]\n");
    return 2;
}

static int parse_u(const char *opt, const char *v, unsigned long long max, unsigned long long *out)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 0);
    if (!*v || *end || v[0] == '-' || x > max) {
        fprintf(stderr, "arb-weights-write: %s '%s': expected an integer in 0..%llu\n", opt, v, max);
        return -1;
    }
    *out = x;
    return 0;
}

static int parse_args(int argc, char **argv, wopts_t *o)
{
    memset(o, 0, sizeof *o);
    o->config = "tiny", o->seed = 1, o->shards = 2, o->prefix = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long x = 0;
        if (strcmp(a, "--kimi-k25") == 0) {
            o->prefix = "language_model.";
            continue;
        }
        if (strcmp(a, "--force") == 0 || strcmp(a, "--fp8") == 0 || strcmp(a, "--fp8-dequantized") == 0) {
            if (a[2] == 'f' && a[3] == 'o')
                o->force = 1;
            else
                o->fp8 = a[5] ? 2 : 1;
            continue;
        }
        if (a[0] != '-') {
            if (o->dir)
                return usage();
            o->dir = a;
            continue;
        }
        if (!v)
            return usage();
        i++;
        if (strcmp(a, "--config") == 0)
            o->config = v;
        else if (strcmp(a, "--weights") == 0) {
            if (strcmp(v, "bf16") != 0 && strcmp(v, "int4") != 0) {
                fprintf(stderr, "arb-weights-write: --weights '%s': expected bf16 or int4\n", v);
                return 2;
            }
            o->wf = strcmp(v, "int4") == 0 ? ARB_WEIGHTS_INT4 : ARB_WEIGHTS_BF16;
        } else if (strcmp(a, "--seed") == 0) {
            if (parse_u(a, v, ~0ull, &x))
                return 2;
            o->seed = x;
        } else if (strcmp(a, "--shards") == 0) {
            if (parse_u(a, v, 99, &x) || x == 0)
                return x == 0 ? (fprintf(stderr, "arb-weights-write: --shards: expected 1..99\n"), 2) : 2;
            o->shards = (unsigned)x;
        } else if (strcmp(a, "--layers") == 0 || strcmp(a, "--experts") == 0 || strcmp(a, "--topk") == 0 ||
                   strcmp(a, "--vocab") == 0) {
            if (parse_u(a, v, 1u << 24, &x))
                return 2;
            unsigned *dst = a[2] == 'l' ? &o->ov.layers : a[2] == 'e' ? &o->ov.experts : a[2] == 't' ? &o->ov.topk
                                                                                                  : &o->ov.vocab;
            *dst = (unsigned)x;
        } else {
            return usage();
        }
    }
    if (o->fp8 && o->wf == ARB_WEIGHTS_INT4) {
        fprintf(stderr, "arb-weights-write: --fp8 with --weights int4: an FP8 checkpoint's experts are FP8 too (give one)\n");
        return 2;
    }
    return o->dir ? 0 : usage();
}

/* DIR/name from root (consumed), written whole. */
static int write_json(const char *dir, const char *name, json_t *root, char *why, size_t len)
{
    char *s = root ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(root);
    char path[1200], err[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    arb_outfile_t of;
    FILE *f = s ? arb_outfile_open(&of, name, path, err, sizeof err) : NULL;
    if (!f) {
        snprintf(why, len, "%s", s ? err : "out of host memory");
        free(s);
        return -1;
    }
    fputs(s, f);
    fputc('\n', f);
    free(s);
    if (arb_outfile_commit(&of, err, sizeof err) != 0) {
        snprintf(why, len, "%s", err);
        return -1;
    }
    return 0;
}

/* config.json: the source file with the overridden fields set and the quantization stated. */
static int write_config(const wopts_t *o, const arb_model_config_t *c, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root = json_load_file(c->source, 0, &jerr);
    if (!root) {
        snprintf(why, len, "%s: %s at line %d", c->source, jerr.text, jerr.line);
        return -1;
    }
    json_t *text = json_object_get(root, "text_config");
    json_t *tc = json_is_object(text) ? text : root;
    json_object_set_new(tc, "num_hidden_layers", json_integer(c->num_hidden_layers));
    json_object_set_new(tc, "n_routed_experts", json_integer(c->n_routed_experts));
    json_object_set_new(tc, "num_experts_per_tok", json_integer(c->num_experts_per_tok));
    json_object_set_new(tc, "vocab_size", json_integer(c->vocab_size));
    json_object_set_new(tc, "first_k_dense_replace", json_integer(c->first_k_dense_replace));
    json_object_del(root, "quantization_config");
    json_object_del(tc, "quantization_config");
    if (o->fp8 == 1)
        json_object_set_new(tc, "quantization_config",
                            json_pack("{s:s, s:s, s:s, s:[i, i]}", "quant_method", "fp8", "fmt", "e4m3",
                                      "activation_scheme", "dynamic", "weight_block_size", (int)ARB_FP8_BLOCK,
                                      (int)ARB_FP8_BLOCK));
    if (o->wf == ARB_WEIGHTS_INT4) {
        json_t *q = json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:b, s:s, s:i}}}}", "quant_method",
                              "compressed-tensors", "format", "pack-quantized", "config_groups", "group_0", "targets",
                              "Linear", "weights", "num_bits", 4, "type", "int", "symmetric", 1, "strategy", "group",
                              "group_size", (int)ARB_INT4_GROUP);
        json_object_set_new(tc, "quantization_config", q);
    }
    json_object_set_new(root, "arbench_synthetic_seed", json_integer((json_int_t)o->seed));
    if (o->prefix[0] && !json_is_object(text)) /* Kimi-K2.5: the text model's config under text_config */
        root = json_pack("{s:s, s:o}", "model_type", "kimi_k25", "text_config", root);
    return write_json(o->dir, "config.json", root, why, len);
}

/* The stored form of spec s: its bytes from the model (INT4 words back to q + 8). */
static int tensor_of(arb_cpu_model_t *m, const arb_wspec_t *s, arb_st_out_tensor_t *t, void **owned, char *why,
                     size_t len)
{
    *owned = NULL;
    t->name = s->name;
    t->ndim = s->ndim;
    t->shape[0] = s->shape[0];
    t->shape[1] = s->shape[1];
    t->dtype = arb_st_dtype_name(s->dtype);
    if (s->part == ARB_WPART_SHAPE) {
        int64_t *v = malloc(16);
        if (!v)
            return -1;
        v[0] = (int64_t)s->logical[0], v[1] = (int64_t)s->logical[1];
        t->data = *owned = v, t->bytes = 16;
        return 0;
    }
    size_t bytes = 0;
    void *p = arb_cpu_model_weight(m, s, &bytes);
    if (!p) {
        snprintf(why, len, "internal: the model holds no tensor '%s'", s->name);
        return -1;
    }
    t->data = p, t->bytes = bytes;
    if (s->part == ARB_WPART_PACKED) {
        int32_t *w = malloc(bytes);
        if (!w)
            return -1;
        memcpy(w, p, bytes);
        arb_int4_ct_convert(w, bytes / 4); /* its own inverse: the engine's nibbles to q + 8 */
        t->data = *owned = w;
    }
    return 0;
}

/* The linear weights DeepSeek-V3's FP8 checkpoint stores as FP8: every 2-D P.weight but
 * embed_tokens, lm_head and the router. */
static int fp8_quantized(const arb_wspec_t *s)
{
    return s->part == ARB_WPART_WEIGHT && s->ndim == 2 && s->tensor != ARB_W_EMBED && s->tensor != ARB_W_LM_HEAD &&
           s->tensor != ARB_W_ROUTER;
}

/* t (a bf16 [rows x cols] weight) quantized per 128x128 block: scale = amax / 448, code =
 * nearest e4m3 of w / scale; fp8 1: t becomes the codes and *scale_t their F32
 * weight_scale_inv, fp8 2: t becomes bf16(float(code) * scale), the loader's dequantization. */
static int fp8_block_quantize(arb_st_out_tensor_t *t, void **owned, int fp8, arb_st_out_tensor_t *scale_t,
                              void **scale_owned)
{
    const uint64_t rows = t->shape[0], cols = t->shape[1], br = (rows + ARB_FP8_BLOCK - 1) / ARB_FP8_BLOCK,
                   bc = (cols + ARB_FP8_BLOCK - 1) / ARB_FP8_BLOCK;
    const uint16_t *w = t->data;
    float *scale = calloc(br * bc, sizeof *scale);
    uint8_t *q = malloc(rows * cols);
    uint16_t *deq = fp8 == 2 ? malloc(rows * cols * 2) : NULL;
    if (!scale || !q || (fp8 == 2 && !deq)) {
        free(scale), free(q), free(deq);
        return -1;
    }
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            float *sc = &scale[(r / ARB_FP8_BLOCK) * bc + c / ARB_FP8_BLOCK];
            float a = fabsf(arb_bf16_to_f32(w[r * cols + c]));
            *sc = a > *sc ? a : *sc;
        }
    for (uint64_t i = 0; i < br * bc; i++)
        scale[i] = scale[i] > 0 ? scale[i] / ARB_FP8_E4M3_MAX : 1.0f;
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++) {
            float sc = scale[(r / ARB_FP8_BLOCK) * bc + c / ARB_FP8_BLOCK];
            q[r * cols + c] = arb_fp8_e4m3_from_f32(arb_bf16_to_f32(w[r * cols + c]) / sc);
            if (deq)
                deq[r * cols + c] = arb_f32_to_bf16(arb_fp8_e4m3_to_f32(q[r * cols + c]) * sc);
        }
    free(*owned);
    if (deq) {
        free(q), free(scale);
        t->data = *owned = deq;
        return 0;
    }
    t->data = *owned = q, t->bytes = rows * cols, t->dtype = "F8_E4M3";
    char *name = malloc(strlen(t->name) + 12);
    if (!name) {
        free(scale);
        return -1;
    }
    sprintf(name, "%s_scale_inv", t->name);
    *scale_t = (arb_st_out_tensor_t){.name = name, .dtype = "F32", .ndim = 2, .shape = {br, bc}, .data = scale,
                                     .bytes = br * bc * 4};
    *scale_owned = scale;
    return 0;
}

static int write_shards(const wopts_t *o, arb_cpu_model_t *m, const arb_wplan_t *plan, char *why, size_t len)
{
    const size_t cap = 2 * plan->n; /* with FP8 a weight_scale_inv after each weight */
    arb_st_out_tensor_t *t = calloc(cap, sizeof *t);
    void **owned = calloc(2 * cap, sizeof *owned); /* data, then the scale tensors' names */
    size_t nt = 0;
    int rc = -1;
    uint64_t total = 0, cum = 0;
    if (!t || !owned) {
        snprintf(why, len, "out of host memory");
        goto out;
    }
    for (size_t i = 0; i < plan->n; i++) {
        if (tensor_of(m, &plan->specs[i], &t[nt], &owned[nt], why, len))
            goto out;
        if (o->fp8 && fp8_quantized(&plan->specs[i])) {
            if (fp8_block_quantize(&t[nt], &owned[nt], o->fp8, &t[nt + 1], &owned[nt + 1])) {
                snprintf(why, len, "out of host memory for the FP8 blocks of '%s'", t[nt].name);
                goto out;
            }
            if (o->fp8 == 1) {
                owned[cap + nt + 1] = (void *)t[nt + 1].name;
                total += t[nt++].bytes;
            }
        }
        total += t[nt++].bytes;
    }
    json_t *map = json_object();
    size_t first = 0;
    for (unsigned f = 0; f < o->shards; f++) {
        size_t last = first;
        while (last < nt && (f + 1 == o->shards || cum + t[last].bytes / 2 < total * (f + 1) / o->shards))
            cum += t[last++].bytes;
        char name[64], path[1200];
        snprintf(name, sizeof name, "model-%05u-of-%05u.safetensors", f + 1, o->shards);
        snprintf(path, sizeof path, "%s/%s", o->dir, name);
        for (size_t i = first; i < last; i++)
            json_object_set_new(map, t[i].name, json_string(name));
        if (arb_st_write(path, t + first, last - first, why, len) != ARB_OK) {
            json_decref(map);
            goto out;
        }
        first = last;
    }
    json_t *index = json_pack("{s:{s:I}, s:o}", "metadata", "total_size", (json_int_t)total, "weight_map", map);
    if (write_json(o->dir, "model.safetensors.index.json", index, why, len))
        goto out;
    printf("%s: %zu tensors, %.3f GB in %u shard file(s), routed experts %s%s, seed %llu\n", o->dir, nt,
           (double)total / 1e9, o->shards, o->wf == ARB_WEIGHTS_INT4 ? "int4 (compressed-tensors)" : "bf16",
           o->fp8 == 1   ? "; linear weights FP8 in 128x128 blocks"
           : o->fp8 == 2 ? "; linear weights FP8-rounded, stored bf16"
                         : "",
           (unsigned long long)o->seed);
    rc = 0;
out:
    for (size_t i = 0; owned && i < 2 * cap; i++)
        free(owned[i]);
    free(owned), free(t);
    return rc;
}

int main(int argc, char **argv)
{
    wopts_t o;
    int pr = parse_args(argc, argv, &o);
    if (pr)
        return pr;
    char why[2048], path[1200];
    snprintf(path, sizeof path, "%s/config.json", o.dir);
    struct stat stt;
    if (!o.force && stat(path, &stt) == 0) {
        fprintf(stderr, "arb-weights-write: %s exists (give --force to replace the checkpoint)\n", path);
        return 1;
    }
    if (mkdir(o.dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "arb-weights-write: %s: cannot create the folder (%s)\n", o.dir, strerror(errno));
        return 1;
    }
    arb_model_config_t cfg;
    arb_shard_t sh;
    arb_wplan_t plan;
    if (arb_config_load(o.config, &cfg, why, sizeof why) != ARB_OK ||
        arb_config_override(&cfg, &o.ov, why, sizeof why) != ARB_OK ||
        arb_shard_make(&cfg, 1, 0, o.wf, &sh, why, sizeof why) != ARB_OK ||
        arb_wplan_make(&cfg, o.wf, &sh, o.prefix, &plan, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "arb-weights-write: %s\n", why);
        return 1;
    }
    arb_cpu_model_opts_t mo = {.cfg = &cfg, .format = o.wf, .seed = o.seed, .tp_shape = 1, .shard_first = 0,
                               .shard_count = 1, .max_tokens = 1, .context = 1, .fusion = ARB_FUSION_AUTO,
                               .hold_embed = 1};
    arb_cpu_model_t *m = NULL;
    int rc = 1;
    if (arb_cpu_model_create(&mo, &m, why, sizeof why) == ARB_OK && write_shards(&o, m, &plan, why, sizeof why) == 0 &&
        write_config(&o, &cfg, why, sizeof why) == 0)
        rc = 0;
    else
        fprintf(stderr, "arb-weights-write: %s\n", why);
    arb_cpu_model_destroy(m);
    arb_wplan_free(&plan);
    return rc;
}
