/* SPDX-License-Identifier: MIT */
/* TAP output for the symm tests: "ok N - what" per check, the plan at the end. */
#ifndef ARB_SYMM_TAP_H
#define ARB_SYMM_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static void tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    tap_failed += !cond;
    fflush(stdout);
}

static void tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static void tap_skip(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("ok %d - # SKIP ", ++tap_n);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
    printf("1..%d\n", tap_n);
    return tap_failed ? 1 : 0;
}

#endif
