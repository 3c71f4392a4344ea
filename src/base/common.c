/* SPDX-License-Identifier: MIT */
#include "base/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int log_rank = -1;
static int log_quiet;

void arb_set_log_rank(int rank) { log_rank = rank; }
void arb_set_quiet(int quiet) { log_quiet = quiet; }

static void vlog(const char *tag, const char *fmt, va_list ap)
{
    char line[2048];
    vsnprintf(line, sizeof line, fmt, ap);
    if (log_rank >= 0)
        fprintf(stderr, "arbench[%d]: %s%s\n", log_rank, tag, line);
    else
        fprintf(stderr, "arbench: %s%s\n", tag, line);
}

void arb_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vlog("error: ", fmt, ap);
    va_end(ap);
}

void arb_info(const char *fmt, ...)
{
    if (log_quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog("", fmt, ap);
    va_end(ap);
}

void arb_debug(const char *fmt, ...)
{
    static int enabled = -1;
    if (enabled < 0) {
        const char *e = getenv("ARBENCH_DEBUG");
        enabled = e && *e && strcmp(e, "0") != 0;
    }
    if (!enabled)
        return;
    va_list ap;
    va_start(ap, fmt);
    vlog("debug: ", fmt, ap);
    va_end(ap);
}

const char *arb_status_str(arb_status_t s)
{
    switch (s) {
    case ARB_OK: return "ok";
    case ARB_DECLINE: return "declined";
    case ARB_ERR_INVALID: return "invalid argument";
    case ARB_ERR_SYSTEM: return "system error";
    case ARB_ERR_TIMEOUT: return "timeout";
    }
    return "unknown status";
}

void arb_snprintf(char *buf, size_t len, const char *fmt, ...)
{
    if (!len)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}
