/* SPDX-License-Identifier: MIT */
/* Minimal TAP output for the nccl tests: one "ok N - what" line per check, the plan
 * at the end, exit status 1 if any check failed. */
#ifndef ARB_NCCL_TAP_H
#define ARB_NCCL_TAP_H

#include <stdarg.h>
#include <stdio.h>

static int tap_count, tap_failed;

static void tap_ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3), unused));
static void tap_ok(int cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", cond ? "ok" : "not ok", ++tap_count);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!cond)
        tap_failed++;
    fflush(stdout);
}

static int tap_done(void) __attribute__((unused));
static int tap_done(void)
{
    printf("1..%d\n", tap_count);
    return tap_failed ? 1 : 0;
}

#endif
