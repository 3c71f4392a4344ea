/* SPDX-License-Identifier: MIT */
/* Rank 0's terminal output: a table line per point, live progress on a terminal. */
#ifndef ARB_REPORT_H
#define ARB_REPORT_H

#include <stddef.h>

#include "role.h"

typedef struct arb_report_best arb_report_best_t;

typedef struct arb_report {
    int progress;     /* stdout is a terminal and not CI */
    size_t done, total;
    int header_printed;
    arb_report_best_t *best; /* per (fusion, mode, bytes): for the closing summary */
    size_t nbest, capbest;
} arb_report_t;

typedef struct arb_report_line {
    const char *impl, *params, *mode, *check, *note;
    const char *fusion;  /* "" for allreduce */
    arb_role_t role;     /* from the plugin's capabilities */
    size_t bytes;
    unsigned tokens;
    double median, p10, p90, busbw;
    double floor_ratio; /* median / floor median, 0 when no floor */
    const char *floor_name;
} arb_report_line_t;

void arb_report_init(arb_report_t *r, size_t total);
void arb_report_progress(arb_report_t *r, const char *what);
void arb_report_line(arb_report_t *r, const arb_report_line_t *l);
/* Clears the progress line; prints, per (fusion, mode, size), the fastest passing
 * implementation with its ratios to the fastest baseline variant and to the floor. */
void arb_report_done(arb_report_t *r);

#endif
