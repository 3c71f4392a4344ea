/* SPDX-License-Identifier: MIT */
/*
 * A heartbeat for long work whose progress line is not shown (stderr is not a terminal:
 * a log, a batch job): one line every ARBENCH_HEARTBEAT_S seconds (default 30; 0: at every
 * progress update), so a log shows the run is alive and how far it got.
 */
#ifndef ARB_HEARTBEAT_H
#define ARB_HEARTBEAT_H

#include <stdio.h>

/* Called at each progress update of `what` (done of total): prints "# heartbeat: WHAT
 * DONE/TOTAL after S s" to f when the interval has passed since the last line (or since
 * the first call), and always when done == total after an earlier line. */
void arb_heartbeat(FILE *f, const char *what, unsigned long long done, unsigned long long total);

#endif
