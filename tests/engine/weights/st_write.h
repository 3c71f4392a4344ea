/* SPDX-License-Identifier: MIT */
/* For the tests: writes safetensors files (well-formed through engine/weights/st_writer.h, or a raw
 * header of the test's choosing). */
#ifndef ARB_TESTS_ST_WRITE_H
#define ARB_TESTS_ST_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "weights/st_writer.h"

/* The library's writer (engine/weights/st_writer.h) for well-formed files. */
typedef arb_st_out_tensor_t st_w_tensor_t;

/* The tensors back to back in the given order; 0 on success. */
int st_write(const char *path, const st_w_tensor_t *t, size_t n);

/* 8-byte length of `header`, the header, then `data_len` bytes of data; 0 on success. */
int st_write_raw(const char *path, const char *header, const void *data, size_t data_len);

/* Writes `text` to path; 0 on success. */
int st_write_text(const char *path, const char *text);

#endif
