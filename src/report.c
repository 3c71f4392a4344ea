/* SPDX-License-Identifier: MIT */
#include "report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sizes.h"

void arb_report_init(arb_report_t *r, size_t total)
{
    memset(r, 0, sizeof *r);
    const char *ci = getenv("CI");
    /* stdout, not stderr: under mpirun only stdout reaches the terminal as a tty. */
    r->progress = isatty(STDOUT_FILENO) && !(ci && *ci);
    r->total = total;
}

static void clear_progress(arb_report_t *r)
{
    if (r->progress)
        fputs("\r\033[K", stdout);
}

void arb_report_progress(arb_report_t *r, const char *what)
{
    if (!r->progress)
        return;
    printf("\r\033[K[%zu/%zu] %s", r->done, r->total, what);
    fflush(stdout);
}

void arb_report_line(arb_report_t *r, const arb_report_line_t *l)
{
    clear_progress(r);
    if (!r->header_printed) {
        printf("%-10s %-44s %-7s %9s %4s %10s %10s %10s %8s %10s  %s\n", "impl", "params", "mode", "bytes", "tok",
               "median_us", "p10_us", "p90_us", "busbw", "/floor", "check");
        r->header_printed = 1;
    }
    char params[45];
    snprintf(params, sizeof params, "%s", l->params && *l->params ? l->params : "-");
    if (l->params && strlen(l->params) > 44)
        memcpy(params + 41, "...", 4);
    if (!strcmp(l->check, "skip") && l->median <= 0) {
        printf("%-10s %-44s %-7s %9zu %4s %10s %10s %10s %8s %10s  skip: %s\n", l->impl, params, l->mode, l->bytes,
               "", "-", "-", "-", "-", "-", l->note ? l->note : "");
    } else {
        char tok[16] = "", ratio[24] = "-";
        if (l->tokens)
            snprintf(tok, sizeof tok, "%u", l->tokens);
        if (l->floor_ratio > 0)
            snprintf(ratio, sizeof ratio, "%.2fx%s", l->floor_ratio, l->floor_name ? l->floor_name : "");
        printf("%-10s %-44s %-7s %9zu %4s %10.2f %10.2f %10.2f %8.2f %10s  %s%s%s\n", l->impl, params, l->mode,
               l->bytes, tok, l->median, l->p10, l->p90, l->busbw, ratio, l->check,
               l->note && *l->note ? ": " : "", l->note ? l->note : "");
    }
    fflush(stdout);
    r->done++;
}

void arb_report_done(arb_report_t *r) { clear_progress(r); }
