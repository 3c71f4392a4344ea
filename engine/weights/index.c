/* SPDX-License-Identifier: MIT */
/* A checkpoint directory: the index and its shards (engine/weights/index.h). */
#include "weights/index.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "arbench/status.h"

#define INDEX_NAME "model.safetensors.index.json"
#define SINGLE_NAME "model.safetensors"

static int entry_by_name(const void *a, const void *b)
{
    return strcmp(((const arb_ckpt_entry_t *)a)->name, ((const arb_ckpt_entry_t *)b)->name);
}

/* The shard called `file`, opened on first use; its number in *slot. */
static arb_status_t shard_of(arb_ckpt_t *c, const char **names, size_t cap, const char *index_path, const char *file,
                             unsigned *slot, char *why, size_t len)
{
    for (size_t i = 0; i < c->nshards; i++)
        if (strcmp(names[i], file) == 0) {
            *slot = (unsigned)i;
            return ARB_OK;
        }
    if (!file[0] || strchr(file, '/'))
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: shard file '%s' must be a plain file name in the same folder",
                  index_path, file);
    if (c->nshards == cap)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: more shard files than tensors", index_path);
    char path[2100];
    snprintf(path, sizeof path, "%s/%s", c->dir, file);
    ARB_TRY(arb_st_open(path, &c->shards[c->nshards], why, len));
    names[c->nshards] = file;
    *slot = (unsigned)c->nshards++;
    return ARB_OK;
}

static arb_status_t read_index(arb_ckpt_t *c, const char *index_path, char *why, size_t len)
{
    json_error_t jerr;
    json_t *root = json_load_file(index_path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: %s at line %d (expected {\"weight_map\": {name: file}})", index_path,
                  jerr.text, jerr.line);
    arb_status_t st = ARB_OK;
    const char **names = NULL;
    json_t *map = json_object_get(root, "weight_map");
    if (!json_is_object(map) || json_object_size(map) == 0)
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err_free_json, why, len,
                       "%s: missing or empty 'weight_map' (expected an object of tensor name -> shard file)",
                       index_path);
    size_t cap = json_object_size(map);
    c->shards = calloc(cap, sizeof *c->shards);
    c->entries = calloc(cap, sizeof *c->entries);
    names = calloc(cap, sizeof *names);
    if (!c->shards || !c->entries || !names)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_json, why, len, "%s: out of memory", index_path);
    const char *key;
    json_t *val;
    json_object_foreach(map, key, val)
    {
        if (!json_is_string(val))
            ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err_free_json, why, len,
                           "%s: weight_map '%s' must be a shard file name (a string)", index_path, key);
        unsigned slot;
        ARB_TRY_GOTO(st, shard_of(c, names, cap, index_path, json_string_value(val), &slot, why, len), err_free_json);
        const arb_st_tensor_t *t = arb_st_find(&c->shards[slot], key);
        if (!t)
            ARB_RAISE_GOTO(st, ARB_ERR_INVALID, err_free_json, why, len,
                           "%s: tensor '%s' is mapped to %s, which has no such tensor", index_path, key,
                           c->shards[slot].path);
        c->entries[c->n++] = (arb_ckpt_entry_t){.name = t->name, .shard = slot, .t = t};
    }
err_free_json:
    free(names);
    json_decref(root);
    return st;
}

static arb_status_t read_single(arb_ckpt_t *c, const char *path, char *why, size_t len)
{
    c->shards = calloc(1, sizeof *c->shards);
    if (!c->shards)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory", path);
    ARB_TRY(arb_st_open(path, &c->shards[0], why, len));
    c->nshards = 1;
    const arb_st_file_t *f = &c->shards[0];
    c->entries = calloc(f->n ? f->n : 1, sizeof *c->entries);
    if (!c->entries)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "%s: out of memory", path);
    for (size_t i = 0; i < f->n; i++)
        c->entries[c->n++] = (arb_ckpt_entry_t){.name = f->tensors[i].name, .shard = 0, .t = &f->tensors[i]};
    return ARB_OK;
}

arb_status_t arb_ckpt_open(const char *dir, arb_ckpt_t *c, char *why, size_t len)
{
    memset(c, 0, sizeof *c);
    if (strlen(dir) >= sizeof c->dir - 64)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: path too long", dir);
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    char path[1100];
    struct stat sb;
    arb_status_t st;
    snprintf(path, sizeof path, "%s/" INDEX_NAME, dir);
    if (stat(path, &sb) == 0) {
        st = read_index(c, path, why, len);
    } else {
        snprintf(path, sizeof path, "%s/" SINGLE_NAME, dir);
        if (stat(path, &sb) != 0)
            ARB_RAISE(ARB_ERR_INVALID, why, len, "%s: neither %s nor %s is there (expected a Hugging Face checkpoint)",
                      dir, INDEX_NAME, SINGLE_NAME);
        st = read_single(c, path, why, len);
    }
    if (st != ARB_OK) {
        arb_ckpt_close(c);
        return st;
    }
    qsort(c->entries, c->n, sizeof *c->entries, entry_by_name);
    return ARB_OK;
}

void arb_ckpt_close(arb_ckpt_t *c)
{
    for (size_t i = 0; i < c->nshards; i++)
        arb_st_close(&c->shards[i]);
    free(c->shards);
    free(c->entries);
    c->shards = NULL;
    c->entries = NULL;
    c->nshards = c->n = 0;
}

const arb_ckpt_entry_t *arb_ckpt_find(const arb_ckpt_t *c, const char *name)
{
    size_t lo = 0, hi = c->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int r = strcmp(c->entries[mid].name, name);
        if (r == 0)
            return &c->entries[mid];
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}
