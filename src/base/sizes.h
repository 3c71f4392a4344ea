/* SPDX-License-Identifier: MIT */
/* Size lists: "43008,42K,1M", ranges "4K:1M:x2" (factor) and "32K:56K:+2K" (step). */
#ifndef ARB_SIZES_H
#define ARB_SIZES_H

#include <stddef.h>

#include "arbench/plugin.h"

#define ARB_MAX_SIZES 4096

/* Parses one size: digits with an optional K, M or G suffix (powers of 1024) and an
 * optional trailing B. Returns ARB_OK and sets *bytes, or ARB_ERR_INVALID. */
arb_status_t arb_parse_size(const char *s, size_t *bytes);

/* Parses a comma-separated list of sizes and ranges into out[0..*n) in the order
 * given, duplicates removed. On error writes a message naming the bad item into
 * err and returns ARB_ERR_INVALID. */
arb_status_t arb_parse_size_list(const char *list, size_t *out, size_t cap, size_t *n, char *err, size_t err_len);

/* Parses a comma-separated list of positive integers with ranges "a:b" (step 1),
 * "a:b:+s" and "a:b:xf", e.g. token counts. */
arb_status_t arb_parse_uint_list(const char *list, unsigned *out, size_t cap, size_t *n, char *err, size_t err_len);

/* Formats bytes as "42K", "1M" or "43000". */
void arb_format_size(size_t bytes, char *buf, size_t len);

#endif
