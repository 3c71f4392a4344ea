/* SPDX-License-Identifier: MIT */
/*
 * A safetensors file, memory-mapped and validated before any tensor is used. The format:
 * an 8-byte little-endian header length N, N bytes of JSON
 *   {"NAME": {"dtype": "BF16", "shape": [rows, cols], "data_offsets": [begin, end]}, ...,
 *    "__metadata__": {"key": "string", ...}}
 * (optionally padded with spaces), then the data; offsets are bytes from the data's start.
 * Refused, with a message naming the file, the tensor and what was expected: a header
 * length past the end of the file or over ARB_ST_MAX_HEADER bytes, JSON that does not
 * parse or repeats a name, an unknown dtype, a shape whose bytes disagree with
 * end - begin (or overflow 64 bits), data outside the file, two tensors sharing bytes.
 * Gaps between tensors are allowed (no writer needs them, none is harmed by them).
 */
#ifndef ARB_ENGINE_SAFETENSORS_H
#define ARB_ENGINE_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_ST_MAX_HEADER (100u * 1000u * 1000u) /* bytes; the reference implementation's limit too */
#define ARB_ST_MAX_DIMS 8u

typedef enum arb_st_dtype {
    ARB_ST_BF16 = 1,
    ARB_ST_F16,
    ARB_ST_F32,
    ARB_ST_I64, /* compressed-tensors writes weight_shape from torch.tensor(shape): int64 */
    ARB_ST_I32,
    ARB_ST_U8,
    ARB_ST_I8,
    ARB_ST_F8_E4M3,
    ARB_ST_BOOL, /* an EAGLE-3 head's t2d */
} arb_st_dtype_t;

typedef struct arb_st_tensor {
    char *name;
    arb_st_dtype_t dtype;
    unsigned ndim;
    uint64_t shape[ARB_ST_MAX_DIMS];
    uint64_t begin, end; /* bytes from the data's start */
} arb_st_tensor_t;

typedef struct arb_st_file {
    char path[1024];
    const uint8_t *base; /* the whole file (mapped) or the caller's buffer */
    uint64_t size;       /* bytes of base */
    uint64_t data_start; /* 8 + N */
    size_t n;            /* tensors, sorted by name */
    arb_st_tensor_t *tensors;
    int mapped; /* 1: base is our mmap, unmapped by arb_st_close */
} arb_st_file_t;

/* Bytes per element, 0 for an invalid dtype. */
size_t arb_st_dtype_size(arb_st_dtype_t dt);
/* "BF16", ...; "?" for an invalid dtype. */
const char *arb_st_dtype_name(arb_st_dtype_t dt);
/* Parses a header dtype string; ARB_ERR_INVALID for one not listed above. */
arb_status_t arb_st_dtype_parse(const char *s, arb_st_dtype_t *dt);

/* Maps and validates `path`. On error nothing stays open. */
arb_status_t arb_st_open(const char *path, arb_st_file_t *f, char *why, size_t why_len);

/* Validates `size` bytes at `buf` (kept by reference, not copied); `origin` names them in
 * messages. arb_st_close frees the tensor list and leaves buf alone. */
arb_status_t arb_st_parse(const uint8_t *buf, uint64_t size, const char *origin, arb_st_file_t *f, char *why,
                          size_t why_len);

void arb_st_close(arb_st_file_t *f);

/* The tensor called `name`, NULL when absent (binary search). */
const arb_st_tensor_t *arb_st_find(const arb_st_file_t *f, const char *name);

/* Its first byte (end - begin bytes follow). */
static inline const void *arb_st_data(const arb_st_file_t *f, const arb_st_tensor_t *t)
{
    return f->base + f->data_start + t->begin;
}

/* Elements of t (product of its shape; 1 for a scalar). */
uint64_t arb_st_numel(const arb_st_tensor_t *t);

#ifdef __cplusplus
}
#endif

#endif
