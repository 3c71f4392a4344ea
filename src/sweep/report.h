/* SPDX-License-Identifier: MIT */
/* Rank 0's terminal output: a table line per point, live progress on a terminal. */
#ifndef ARB_REPORT_H
#define ARB_REPORT_H

#include <stddef.h>

#include "results/role.h"

typedef struct arb_report_best arb_report_best_t;

typedef struct arb_report {
    int progress;     /* live progress on stdout: arb_progress_wanted() */
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

/*
 * Live progress ("\r", ESC[K) only where a person watches a terminal, so that a log
 * file never gets escape sequences. The rule, first match wins:
 *  - ARBENCH_PROGRESS=1 or 0 forces it on or off;
 *  - CI set and not empty: off;
 *  - under an MPI launcher (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_RANK set): the rank's
 *    own stdout is a pseudo-terminal that Open MPI creates and forwards to wherever
 *    mpirun's output goes, so it says nothing; what counts is the launcher's stdout,
 *    the parent process's fd 1 (/proc/PPID/fd/1; Open MPI 4 starts local ranks as
 *    mpirun's children): on only when that is a terminal device (/dev/pts/N, /dev/ttyN);
 *    unknown (a remote daemon, no /proc) is off;
 *  - otherwise: on when stdout is a terminal.
 */
int arb_progress_wanted(void);
/* The rule on given facts (tests): force and ci are the variables' values or NULL;
 * launcher_stdout is what /proc/PPID/fd/1 links to, NULL when unknown. */
int arb_progress_rule(const char *force, const char *ci, int under_launcher, int stdout_tty,
                      const char *launcher_stdout);

void arb_report_init(arb_report_t *r, size_t total);
void arb_report_progress(arb_report_t *r, const char *what);
void arb_report_line(arb_report_t *r, const arb_report_line_t *l);
/* Clears the progress line; prints, per (fusion, mode, size), the fastest passing
 * implementation with its ratios to the fastest baseline variant and to the floor; the
 * baseline ratio in parentheses where the two p10..p90 ranges overlap (not the baseline
 * itself; both spreads known), with a legend line after the summary. */
void arb_report_done(arb_report_t *r);

#endif
