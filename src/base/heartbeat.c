/* SPDX-License-Identifier: MIT */
/* The heartbeat of long work in logs (base/heartbeat.h). */
#include "base/heartbeat.h"

#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double interval_s(void)
{
    const char *e = getenv("ARBENCH_HEARTBEAT_S");
    char *end;
    double v = e && *e ? strtod(e, &end) : 30;
    return e && *e && (*end || !(v >= 0)) ? 30 : v;
}

void arb_heartbeat(FILE *f, const char *what, unsigned long long done, unsigned long long total)
{
    static double start = -1, last = -1;
    static int printed;
    double t = now_s();
    if (start < 0)
        start = last = t;
    if (t - last < interval_s() && !(done == total && printed))
        return;
    fprintf(f, "# heartbeat: %s %llu/%llu after %.0f s\n", what, done, total, t - start);
    fflush(f);
    last = t;
    printed = done != total;
}
