/* SPDX-License-Identifier: MIT */
/* Error handling and logging shared by the library and the harness. */
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

/* Evaluate an arb_status_t expression; on failure log file:line and return it. */
#define ARB_CHECK(call)                                                             \
    do {                                                                            \
        arb_status_t arb_check_s_ = (call);                                         \
        if (arb_check_s_ != ARB_OK) {                                               \
            arb_debug("%s:%d: %s -> %s", __FILE__, __LINE__, #call,                 \
                      arb_status_str(arb_check_s_));                                \
            return arb_check_s_;                                                    \
        }                                                                           \
    } while (0)

/* The same, for functions that clean up: store the status in `st` and jump. */
#define ARB_CHECK_GOTO(call, st, label)                                             \
    do {                                                                            \
        (st) = (call);                                                              \
        if ((st) != ARB_OK) {                                                       \
            arb_debug("%s:%d: %s -> %s", __FILE__, __LINE__, #call,                 \
                      arb_status_str(st));                                          \
            goto label;                                                             \
        }                                                                           \
    } while (0)

#endif
