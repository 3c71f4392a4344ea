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
 * computes what `--config ... --seed S` computes, bit for bit.
 * Exit 0: written; 1: failed (the reason on stderr); 2: bad usage. An existing
 * DIR/config.json is refused unless --force.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arbench/status.h"
#include "base/outfile.h"
#include "cpu/cpu_ref.h"
#include "model/config.h"
#include "model/shard.h"
#include "weights/int4_ct.h"
#include "weights/names.h"
#include "weights/st_writer.h"

typedef struct wopts {
    const char *dir, *config;
    arb_weight_format_t wf;
    uint64_t seed;
    unsigned shards;
    int force;
    arb_config_overrides_t ov;
} wopts_t;

static int usage(void)
{
    fprintf(stderr, "usage: arb-weights-write DIR [--config NAME|PATH] [--weights bf16|int4] [--seed S] [--layers L] "
                    "[--experts E] [--topk K] [--vocab V] [--shards N] [--force]\n");
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
    o->config = "tiny", o->seed = 1, o->shards = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long x = 0;
        if (strcmp(a, "--force") == 0) {
            o->force = 1;
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
    if (o->wf == ARB_WEIGHTS_INT4) {
        json_t *q = json_pack("{s:s, s:s, s:{s:{s:[s], s:{s:i, s:s, s:b, s:s, s:i}}}}", "quant_method",
                              "compressed-tensors", "format", "pack-quantized", "config_groups", "group_0", "targets",
                              "Linear", "weights", "num_bits", 4, "type", "int", "symmetric", 1, "strategy", "group",
                              "group_size", (int)ARB_INT4_GROUP);
        json_object_set_new(tc, "quantization_config", q);
    }
    json_object_set_new(root, "arbench_synthetic_seed", json_integer((json_int_t)o->seed));
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

static int write_shards(const wopts_t *o, arb_cpu_model_t *m, const arb_wplan_t *plan, char *why, size_t len)
{
    arb_st_out_tensor_t *t = calloc(plan->n, sizeof *t);
    void **owned = calloc(plan->n, sizeof *owned);
    unsigned *file = calloc(plan->n, sizeof *file);
    int rc = -1;
    uint64_t total = 0, cum = 0;
    if (!t || !owned || !file) {
        snprintf(why, len, "out of host memory");
        goto out;
    }
    for (size_t i = 0; i < plan->n; i++) {
        if (tensor_of(m, &plan->specs[i], &t[i], &owned[i], why, len))
            goto out;
        total += t[i].bytes;
    }
    json_t *map = json_object();
    size_t first = 0;
    for (unsigned f = 0; f < o->shards; f++) {
        size_t last = first;
        while (last < plan->n && (f + 1 == o->shards || cum + t[last].bytes / 2 < total * (f + 1) / o->shards))
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
    printf("%s: %zu tensors, %.3f GB in %u shard file(s), routed experts %s, seed %llu\n", o->dir, plan->n,
           (double)total / 1e9, o->shards, o->wf == ARB_WEIGHTS_INT4 ? "int4 (compressed-tensors)" : "bf16",
           (unsigned long long)o->seed);
    rc = 0;
out:
    for (size_t i = 0; owned && i < plan->n; i++)
        free(owned[i]);
    free(owned), free(t), free(file);
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
        arb_wplan_make(&cfg, o.wf, &sh, "", &plan, why, sizeof why) != ARB_OK) {
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
