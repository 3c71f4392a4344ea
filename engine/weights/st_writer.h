/* SPDX-License-Identifier: MIT */
/*
 * Writing safetensors files (the reader's format, engine/weights/safetensors.h): the
 * header JSON in the given tensor order with back-to-back data_offsets, padded with spaces
 * to a multiple of 8 bytes, then the data. The file is written under a temporary name in
 * the same folder and renamed into place (src/base/outfile.h's rule for files written whole).
 */
#ifndef ARB_ENGINE_WEIGHTS_ST_WRITER_H
#define ARB_ENGINE_WEIGHTS_ST_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_st_out_tensor {
    const char *name;
    const char *dtype; /* as the header spells it: "BF16", "I32", ... */
    unsigned ndim;     /* 1 or 2 */
    uint64_t shape[2];
    const void *data;
    size_t bytes;
} arb_st_out_tensor_t;

/* Writes the n tensors to path (an existing file is replaced). */
arb_status_t arb_st_write(const char *path, const arb_st_out_tensor_t *t, size_t n, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
