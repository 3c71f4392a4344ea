/* SPDX-License-Identifier: MIT */
/* Logging shared by the library and the harness (errors: include/arbench/status.h). */
#ifndef ARB_COMMON_H
#define ARB_COMMON_H

#include <stdarg.h>
#include <stddef.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log levels: errors always print; info unless quiet; debug with ARBENCH_DEBUG=1. */
void arb_set_log_rank(int rank);
void arb_set_quiet(int quiet);
void arb_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void arb_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void arb_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
const char *arb_status_str(arb_status_t s);

/* Bounded formatting into a fixed buffer; never overflows, always terminates. */
void arb_snprintf(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#ifdef __cplusplus
}
#endif

#endif
