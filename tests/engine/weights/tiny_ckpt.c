/* SPDX-License-Identifier: MIT */
/* For the tests: a tiny checkpoint written from its config (tests/engine/weights/tiny_ckpt.h). */
#include "tiny_ckpt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/wgen.h"
#include "st_write.h"
#include "weights/int4_ct.h"

#define SEED 20261201ull

/* Key of stored element `elem` (row-major in the unsharded tensor) of spec s. */
uint64_t tiny_key_of(const arb_wspec_t *s, uint64_t elem)
{
    return arb_wgen_key(SEED, s->tensor * 4u + (uint32_t)s->part, s->layer, ((uint64_t)(s->expert + 1) << 40) + elem);
}

/* The INT4 value of logical element (row, col) of an expert projection. */
int tiny_q_of(const arb_wspec_t *s, uint64_t row, uint64_t col)
{
    return (int)(tiny_key_of(s, row * (s->shape[1] * ARB_INT4_PER_WORD) + col) >> 60) - 8;
}

size_t tiny_elem_size(const arb_wspec_t *s)
{
    return s->part == ARB_WPART_SHAPE ? 8 : s->part == ARB_WPART_PACKED || s->dtype == ARB_ST_F32 ? 4 : 2;
}

/* The stored bytes of a whole tensor (tp-shape 1). */
static void *make_data(const arb_wspec_t *s, size_t *bytes)
{
    uint64_t n = s->ndim == 1 ? s->shape[0] : s->shape[0] * s->shape[1];
    size_t es = tiny_elem_size(s);
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
                q[j] = tiny_q_of(s, row, w * 8 + (uint64_t)j);
            int32_t word = arb_int4_ct_pack8(q);
            memcpy(d + 4 * i, &word, 4);
        } else {
            uint64_t k = tiny_key_of(s, i);
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

const char *const tiny_shard_name[2] = {"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"};
static const char *qc =
    ",\"quantization_config\":{\"quant_method\":\"compressed-tensors\",\"format\":"
    "\"pack-quantized\",\"config_groups\":{\"group_0\":{\"targets\":[\"Linear\"],\"weights\":"
    "{\"num_bits\":4,\"type\":\"int\",\"symmetric\":true,\"strategy\":\"group\",\"group_size\":32}}}}";

/* Writes dir/{config.json, the index, two shards}; 0 on success. */
int tiny_write(const char *dir, const arb_model_config_t *c, arb_weight_format_t wf, const char *prefix,
               tiny_spoil_t spoil, char *why, size_t why_len)
{
    arb_shard_t sh;
    arb_wplan_t p;
    if (arb_shard_make(c, 1, 0, wf, &sh, why, why_len) || arb_wplan_make(c, wf, &sh, prefix, &p, why, why_len))
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
        const char *nm = s->name + strlen(p.prefix);
        if (spoil == TINY_SPOIL_MISSING && strcmp(nm, "model.norm.weight") == 0)
            continue;
        unsigned f = (unsigned)(i % 2);
        st_w_tensor_t *w = &t[f][nt[f]++];
        size_t bytes = 0;
        w->name = s->name;
        w->dtype = dtype_str(s);
        w->ndim = s->ndim;
        w->shape[0] = s->shape[0];
        w->shape[1] = s->shape[1];
        if (spoil == TINY_SPOIL_SHAPE && strcmp(nm, "model.layers.1.self_attn.kv_a_layernorm.weight") == 0)
            s->shape[0]++;
        if (spoil == TINY_SPOIL_WEIGHT_SHAPE && strcmp(nm, "model.layers.2.mlp.experts.3.up_proj.weight_shape") == 0)
            s->logical[1] += 32;
        w->shape[0] = s->shape[0];
        w->data = make_data(s, &bytes);
        w->bytes = bytes;
        if (spoil == TINY_SPOIL_DTYPE && strcmp(nm, "lm_head.weight") == 0)
            w->dtype = "F16";
        iused +=
            (size_t)snprintf(index + iused, icap - iused, "%s\"%s\":\"%s\"", i ? "," : "", s->name, tiny_shard_name[f]);
    }
    if (spoil == TINY_SPOIL_INDEX_PHANTOM)
        iused += (size_t)snprintf(index + iused, icap - iused, ",\"%smodel.layers.0.mlp.phantom.weight\":\"%s\"",
                                  p.prefix, tiny_shard_name[1]);
    snprintf(index + iused, icap - iused, "}}");
    char path[1200], cfgtext[8192];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    if (st_write_text(path, index))
        goto out;
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, tiny_shard_name[f]);
        if (st_write(path, t[f], nt[f]))
            goto out;
    }
    FILE *cf = fopen(c->source, "r");
    size_t got = cf ? fread(cfgtext, 1, sizeof cfgtext - 600, cf) : 0;
    if (cf)
        fclose(cf);
    while (got && cfgtext[got - 1] != '}')
        got--;
    if (!got)
        goto out;
    const char *q = wf == ARB_WEIGHTS_INT4 ? qc : "";
    if (p.prefix[0]) { /* Kimi-K2.5's layout: the text model's config under text_config */
        memmove(cfgtext + 64, cfgtext, got);
        int n = snprintf(cfgtext, 64, "{\"model_type\":\"kimi_k25\",\"text_config\":");
        memmove(cfgtext + n, cfgtext + 64, got);
        snprintf(cfgtext + n + got, sizeof cfgtext - (size_t)n - got, "%s}\n", q);
    } else {
        snprintf(cfgtext + got - 1, sizeof cfgtext - got + 1, "%s}\n", q);
    }
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

void tiny_remove(const char *dir)
{
    static const char *files[] = {"model.safetensors.index.json", "config.json", "model.safetensors"};
    char path[1200];
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    for (int f = 0; f < 2; f++) {
        snprintf(path, sizeof path, "%s/%s", dir, tiny_shard_name[f]);
        unlink(path);
    }
    rmdir(dir);
}
