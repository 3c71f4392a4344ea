/* SPDX-License-Identifier: MIT */
#include "sweep/report.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sizes.h"
#include "base/stats.h"

static void remember(arb_report_t *r, const arb_report_line_t *l);

struct arb_report_best {
    char fusion[16], mode[16];
    size_t bytes;
    unsigned tokens;
    char impl[64], params[160];
    double median;      /* fastest passing non-reference point, 0 if none */
    double p10, p90;    /* its spread */
    char base_impl[64], base_params[160];
    double base_p10, base_p90; /* the baseline's spread */
    arb_refs_t refs;    /* floor and baseline (names copied into the arrays above) */
};

int arb_progress_rule(const char *force, const char *ci, int under_launcher, int stdout_tty,
                      const char *launcher_stdout)
{
    if (force && (!strcmp(force, "0") || !strcmp(force, "1")))
        return force[0] == '1';
    if (ci && *ci)
        return 0;
    if (under_launcher)
        return launcher_stdout && (!strncmp(launcher_stdout, "/dev/pts/", 9) || !strncmp(launcher_stdout, "/dev/tty", 8));
    return stdout_tty;
}

int arb_progress_wanted(void)
{
    const char *launcher_vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"};
    int under = 0;
    for (size_t i = 0; i < sizeof launcher_vars / sizeof launcher_vars[0]; i++)
        under |= getenv(launcher_vars[i]) != NULL;
    char link[64], target[512];
    const char *launcher_stdout = NULL;
    snprintf(link, sizeof link, "/proc/%ld/fd/1", (long)getppid());
    ssize_t n = under ? readlink(link, target, sizeof target - 1) : -1;
    if (n > 0) {
        target[n] = '\0';
        launcher_stdout = target;
    }
    return arb_progress_rule(getenv("ARBENCH_PROGRESS"), getenv("CI"), under, isatty(STDOUT_FILENO), launcher_stdout);
}

void arb_report_init(arb_report_t *r, size_t total)
{
    memset(r, 0, sizeof *r);
    r->progress = arb_progress_wanted();
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
    if (!(l->median > 0)) { /* skipped, or failed with its statistics withheld */
        printf("%-10s %-44s %-7s %9zu %4s %10s %10s %10s %8s %10s  %s: %s\n", l->impl, params, l->mode, l->bytes,
               "", "-", "-", "-", "-", "-", l->check, l->note ? l->note : "");
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
    remember(r, l);
}

static arb_report_best_t *best_slot(arb_report_t *r, const arb_report_line_t *l)
{
    const char *fz = l->fusion ? l->fusion : "";
    for (size_t i = 0; i < r->nbest; i++)
        if (r->best[i].bytes == l->bytes && !strcmp(r->best[i].mode, l->mode) && !strcmp(r->best[i].fusion, fz))
            return &r->best[i];
    if (r->nbest == r->capbest) {
        size_t nc = r->capbest ? 2 * r->capbest : 64;
        arb_report_best_t *p = realloc(r->best, nc * sizeof *p);
        if (!p)
            return NULL;
        r->best = p;
        r->capbest = nc;
    }
    arb_report_best_t *b = &r->best[r->nbest++];
    memset(b, 0, sizeof *b);
    snprintf(b->fusion, sizeof b->fusion, "%s", fz);
    snprintf(b->mode, sizeof b->mode, "%s", l->mode);
    b->bytes = l->bytes;
    b->tokens = l->tokens;
    return b;
}

static void remember(arb_report_t *r, const arb_report_line_t *l)
{
    if (!(l->median > 0))
        return;
    int pass = !strcmp(l->check, "pass");
    if (!pass && l->role != ARB_ROLE_REFERENCE)
        return;
    arb_report_best_t *b = best_slot(r, l);
    if (!b)
        return;
    double base = b->refs.baseline_us;
    arb_refs_add(&b->refs, l->role, pass, l->median, l->impl, l->params);
    if (b->refs.baseline_us != base) { /* the strings are the caller's: keep copies */
        snprintf(b->base_impl, sizeof b->base_impl, "%s", l->impl);
        snprintf(b->base_params, sizeof b->base_params, "%s", l->params ? l->params : "");
        b->base_p10 = l->p10, b->base_p90 = l->p90;
    }
    b->refs.baseline_impl = b->base_impl, b->refs.baseline_params = b->base_params;
    b->refs.floor_impl = NULL; /* not shown in the summary */
    if (l->role != ARB_ROLE_REFERENCE && (!b->median || l->median < b->median)) {
        b->median = l->median;
        b->p10 = l->p10, b->p90 = l->p90;
        snprintf(b->impl, sizeof b->impl, "%s", l->impl);
        snprintf(b->params, sizeof b->params, "%s", l->params ? l->params : "");
    }
}

/* The summary's x base: in parentheses where the best (not the baseline itself) has a p10..p90
 * range that overlaps the baseline's: its lead or lag is inside their spread. 1 when so. */
static int x_base_text(const arb_report_best_t *b, char *buf, size_t len)
{
    const double x = arb_ratio(b->median, b->refs.baseline_us);
    const int known = b->p10 > 0 && b->p90 > 0 && b->base_p10 > 0 && b->base_p90 > 0;
    const int apart = arb_spreads_apart(b->p10, b->p90, b->base_p10, b->base_p90);
    const int itself = !strcmp(b->impl, b->base_impl) && !strcmp(b->params, b->base_params);
    const int overlap = known && !apart && !itself;
    snprintf(buf, len, overlap ? "(%.2f)" : "%.2f", x);
    return overlap;
}

void arb_report_done(arb_report_t *r)
{
    clear_progress(r);
    size_t shown = 0;
    int overlap = 0;
    for (size_t i = 0; i < r->nbest; i++) {
        const arb_report_best_t *b = &r->best[i];
        if (!b->median)
            continue;
        if (!shown++)
            printf("# summary: fastest passing implementation per point; x base = its median / the fastest baseline (NCCL) variant's, x floor = / the highest reference floor (ping's flag round)\n"
                   "# %-8s %-7s %9s %4s  %-10s %-44s %10s %8s %8s\n", "fusion", "mode", "bytes", "tok", "best", "params",
                   "median_us", "x base", "x floor");
        char tok[16] = "", xn[16] = "-", xp[16] = "-", params[45];
        if (b->tokens)
            snprintf(tok, sizeof tok, "%u", b->tokens);
        if (b->refs.baseline_us > 0)
            overlap |= x_base_text(b, xn, sizeof xn);
        if (b->refs.floor_us > 0)
            snprintf(xp, sizeof xp, "%.2f", arb_ratio(b->median, b->refs.floor_us));
        snprintf(params, sizeof params, "%.44s", b->params[0] ? b->params : "-");
        if (strlen(b->params) > 44)
            memcpy(params + 41, "...", 4);
        printf("# %-8s %-7s %9zu %4s  %-10s %-44s %10.2f %8s %8s\n", b->fusion[0] ? b->fusion : "-", b->mode,
               b->bytes, tok, b->impl, params, b->median, xn, xp);
    }
    if (overlap)
        printf("# x base in parentheses: the best's p10..p90 range overlaps the baseline's (its lead or lag is "
               "inside their spread: not shown)\n");
    fflush(stdout);
    free(r->best);
    r->best = NULL;
    r->nbest = r->capbest = 0;
}
