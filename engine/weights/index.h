/* SPDX-License-Identifier: MIT */
/*
 * A checkpoint directory as Hugging Face writes it: model.safetensors.index.json
 *   {"metadata": {...}, "weight_map": {"model.norm.weight": "model-00001-of-00002.safetensors", ...}}
 * naming the shard file of every tensor, or a single model.safetensors without an index.
 * Every shard is opened (mapped and validated, engine/weights/safetensors.h) once; a name
 * the index places in a shard that lacks it, a shard name with a '/', or an index that is
 * not that JSON is refused naming the index, the shard and the tensor.
 */
#ifndef ARB_ENGINE_WEIGHTS_INDEX_H
#define ARB_ENGINE_WEIGHTS_INDEX_H

#include <stddef.h>

#include "weights/safetensors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_ckpt_entry {
    const char *name;         /* the tensor's name (owned by its shard's tensor list) */
    unsigned shard;           /* index into arb_ckpt_t.shards */
    const arb_st_tensor_t *t; /* its header entry in that shard */
} arb_ckpt_entry_t;

typedef struct arb_ckpt {
    char dir[1024];
    size_t nshards;
    arb_st_file_t *shards;
    size_t n; /* entries, sorted by name */
    arb_ckpt_entry_t *entries;
} arb_ckpt_t;

/* Opens the checkpoint in `dir`. On error nothing stays open. */
arb_status_t arb_ckpt_open(const char *dir, arb_ckpt_t *c, char *why, size_t why_len);

void arb_ckpt_close(arb_ckpt_t *c);

/* The entry called `name`, NULL when the checkpoint has no such tensor. */
const arb_ckpt_entry_t *arb_ckpt_find(const arb_ckpt_t *c, const char *name);

/* The shard file holding entry e. */
static inline const arb_st_file_t *arb_ckpt_file(const arb_ckpt_t *c, const arb_ckpt_entry_t *e)
{
    return &c->shards[e->shard];
}

#ifdef __cplusplus
}
#endif

#endif
