/* SPDX-License-Identifier: MIT */
/* Unit tests of the library: sizes, plan, statistics, results CSV round trip. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep/plan.h"
#include "sweep/report.h"
#include "results/results.h"
#include "base/sizes.h"
#include "base/stats.h"
#include "tap.h"

static void t_size_single(void)
{
    size_t b;
    TAP_CHECK(arb_parse_size("43008", &b) == 0 && b == 43008);
    TAP_CHECK(arb_parse_size("42K", &b) == 0 && b == 43008);
    TAP_CHECK(arb_parse_size("42k", &b) == 0 && b == 43008);
    TAP_CHECK(arb_parse_size("1M", &b) == 0 && b == 1048576);
    TAP_CHECK(arb_parse_size("1MiB", &b) == 0 && b == 1048576);
    TAP_CHECK(arb_parse_size("2G", &b) == 0 && b == 2147483648ull);
    TAP_CHECK(arb_parse_size("12B", &b) == 0 && b == 12);
    TAP_CHECK(arb_parse_size("", &b) != 0);
    TAP_CHECK(arb_parse_size("-5", &b) != 0);
    TAP_CHECK(arb_parse_size("4X", &b) != 0);
    TAP_CHECK(arb_parse_size("K", &b) != 0);
    TAP_CHECK(arb_parse_size("99999999999999999999999", &b) != 0);
}

static void t_size_lists(void)
{
    size_t v[64], n;
    char err[256];
    TAP_CHECK(arb_parse_size_list("4K:64K:x2", v, 64, &n, err, sizeof err) == 0 && n == 5 && v[0] == 4096 && v[4] == 65536);
    TAP_CHECK(arb_parse_size_list("32K:36K:+2K", v, 64, &n, err, sizeof err) == 0 && n == 3 && v[1] == 34816);
    TAP_CHECK(arb_parse_size_list("1K,42K,1K", v, 64, &n, err, sizeof err) == 0 && n == 2);
    TAP_CHECK(arb_parse_size_list("1K,,2K", v, 64, &n, err, sizeof err) == 0 && n == 2);
    TAP_CHECK(arb_parse_size_list("1K,abc", v, 64, &n, err, sizeof err) != 0 && strstr(err, "abc"));
    TAP_CHECK(arb_parse_size_list("8K:4K", v, 64, &n, err, sizeof err) != 0);
    TAP_CHECK(arb_parse_size_list("1:10:x1", v, 64, &n, err, sizeof err) != 0);
    TAP_CHECK(arb_parse_size_list("1:100000", v, 64, &n, err, sizeof err) != 0 && strstr(err, "more than"));
    TAP_CHECK(arb_parse_size_list("", v, 64, &n, err, sizeof err) != 0);
    TAP_CHECK(arb_parse_size_list("0", v, 64, &n, err, sizeof err) != 0);
    unsigned u[64];
    TAP_CHECK(arb_parse_uint_list("1,2,3,4:16:x2", u, 64, &n, err, sizeof err) == 0 && n == 6 && u[5] == 16);
    TAP_CHECK(arb_parse_uint_list("1K", u, 64, &n, err, sizeof err) != 0);
}

static void t_plan_defaults(void)
{
    arb_plan_t *p = calloc(1, sizeof *p);
    char err[256];
    arb_plan_defaults(p);
    TAP_CHECK(arb_plan_finish(p, err, sizeof err) == 0);
    int has_42k = 0, sorted = 1;
    for (size_t i = 0; i < p->nsizes; i++) {
        has_42k |= p->sizes[i] == 43008 && p->tokens[i] == 3;
        if (i)
            sorted &= p->sizes[i] > p->sizes[i - 1];
    }
    TAP_CHECK(has_42k);
    TAP_CHECK(sorted);
    TAP_CHECK(p->sizes[0] == 14336 && p->tokens[0] == 1);
    TAP_CHECK(p->sizes[p->nsizes - 1] == 64u * 7168 * 2);
    TAP_CHECK(p->modes == 7);
    free(p);
}

static void t_plan_parse(void)
{
    arb_plan_t *p = calloc(1, sizeof *p);
    char err[256];
    arb_plan_defaults(p);
    TAP_CHECK(arb_plan_parse_impls("nccl,p2p:variant=oneshot-push,blocks=8,noop", p, err, sizeof err) == 0);
    TAP_CHECK(p->nimpls == 3);
    TAP_CHECK(!strcmp(p->impls[1].name, "p2p") && !strcmp(p->impls[1].params, "variant=oneshot-push,blocks=8"));
    TAP_CHECK(!strcmp(p->impls[2].name, "noop") && !p->impls[2].has_params);
    TAP_CHECK(arb_plan_parse_impls("nccl:algo=Ring,proto=LL,nccl:algo=Tree,proto=LL", p, err, sizeof err) == 0 && p->nimpls == 2);
    TAP_CHECK(!strcmp(p->impls[1].params, "algo=Tree,proto=LL"));
    /* A tuning grid: every combination of the '|' alternatives, first key slowest. */
    TAP_CHECK(arb_plan_parse_impls("noop,p2p:variant=oneshot-push|oneshot-pull,blocks=8|16,threads=256", p, err, sizeof err) == 0);
    TAP_CHECK(p->nimpls == 5);
    TAP_CHECK(!strcmp(p->impls[1].params, "variant=oneshot-push,blocks=8,threads=256"));
    TAP_CHECK(!strcmp(p->impls[2].params, "variant=oneshot-push,blocks=16,threads=256"));
    TAP_CHECK(!strcmp(p->impls[4].params, "variant=oneshot-pull,blocks=16,threads=256"));
    TAP_CHECK(arb_plan_parse_impls("p2p:blocks=8||16", p, err, sizeof err) != 0 && strstr(err, "empty alternative"));
    TAP_CHECK(arb_plan_parse_impls("p2p:a|b=1", p, err, sizeof err) != 0 && strstr(err, "alternatives go in a value"));
    TAP_CHECK(arb_plan_parse_impls("p2p:a=1|2|3|4|5|6|7|8,b=1|2|3|4|5|6|7|8,c=1|2|3", p, err, sizeof err) != 0 &&
              strstr(err, "more than"));
    unsigned modes;
    TAP_CHECK(arb_plan_parse_modes("eager,graph", &modes, err, sizeof err) == 0 && modes == 3);
    TAP_CHECK(arb_plan_parse_modes("eager,warp", &modes, err, sizeof err) != 0 && strstr(err, "warp"));
    arb_dtype_t d;
    TAP_CHECK(arb_plan_parse_dtype("fp16", &d, err, sizeof err) != 0 && strstr(err, "fp16"));
    TAP_CHECK(arb_plan_set_sizes(p, "3", err, sizeof err) == 0);
    TAP_CHECK(arb_plan_finish(p, err, sizeof err) != 0 && strstr(err, "whole number"));
    p->dtype = ARB_DTYPE_FP32;
    TAP_CHECK(arb_plan_set_sizes(p, "6", err, sizeof err) == 0 && arb_plan_finish(p, err, sizeof err) != 0);
    TAP_CHECK(arb_plan_set_tokens(p, "1,3", err, sizeof err) == 0 && arb_plan_finish(p, err, sizeof err) == 0);
    TAP_CHECK(p->nsizes == 2 && p->sizes[1] == 3u * 7168 * 4);
    free(p);
}

static void t_plan_hash(void)
{
    arb_plan_t *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    char err[256];
    arb_plan_defaults(a);
    arb_plan_defaults(b);
    arb_plan_finish(a, err, sizeof err);
    arb_plan_finish(b, err, sizeof err);
    TAP_CHECK(arb_plan_hash(a) == arb_plan_hash(b));
    b->iters = 7;
    TAP_CHECK(arb_plan_hash(a) != arb_plan_hash(b));
    free(a);
    free(b);
}

static void t_stats(void)
{
    double s[] = {5, 1, 4, 2, 3};
    arb_stats_t st;
    TAP_CHECK(arb_stats_compute(s, 5, &st) == 0);
    TAP_CHECK(st.n == 5 && st.median == 3 && st.min == 1 && st.max == 5 && st.mean == 3);
    TAP_CHECK(fabs(st.p10 - 1.4) < 1e-12 && fabs(st.p90 - 4.6) < 1e-12);
    TAP_CHECK(fabs(st.stdev - sqrt(2.5)) < 1e-12);
    double one = 7;
    TAP_CHECK(arb_stats_compute(&one, 1, &st) == 0 && st.median == 7 && st.stdev == 0);
    double bad[] = {1, NAN};
    TAP_CHECK(arb_stats_compute(bad, 2, &st) != 0);
    TAP_CHECK(arb_stats_compute(s, 0, &st) != 0);
    TAP_CHECK(fabs(arb_algbw_gbs(43008, 10.0) - 4.3008) < 1e-9);
    TAP_CHECK(fabs(arb_busbw_gbs(43008, 10.0, 2) - 4.3008) < 1e-9);
    TAP_CHECK(fabs(arb_busbw_gbs(43008, 10.0, 8) - 4.3008 * 1.75) < 1e-9);
}

static void t_csv_roundtrip(void)
{
    char path[] = "/tmp/arbench-csv-XXXXXX";
    int fd = mkstemp(path);
    TAP_CHECK(fd >= 0);
    close(fd);
    unlink(path);
    char err[512];
    arb_results_writer_t *w = arb_results_open(path, err, sizeof err);
    TAP_CHECK(w != NULL);
    if (!w)
        return;
    arb_row_t row = {{0}};
    row.f[ARB_COL_impl] = "nccl";
    row.f[ARB_COL_params] = "algo=Ring,proto=LL";
    row.f[ARB_COL_note] = "a \"quoted\" note\nover two lines";
    row.f[ARB_COL_bytes] = "43008";
    TAP_CHECK(arb_results_append(w, &row) == 0);
    row.f[ARB_COL_impl] = " padded ";
    TAP_CHECK(arb_results_append(w, &row) == 0);
    TAP_CHECK(arb_results_close(w) == 0);
    /* Reopening appends under the same header. */
    w = arb_results_open(path, err, sizeof err);
    TAP_CHECK(w && arb_results_append(w, &row) == 0 && arb_results_close(w) == 0);
    arb_table_t t;
    TAP_CHECK(arb_table_read(path, &t, err, sizeof err) == 0);
    TAP_CHECK(t.ncols == ARB_COL_COUNT && t.nrows == 3);
    int ci = arb_table_col(&t, "impl"), cp = arb_table_col(&t, "params"), cn = arb_table_col(&t, "note");
    TAP_CHECK(ci >= 0 && cp >= 0 && cn >= 0);
    if (t.nrows == 3 && ci >= 0 && cp >= 0 && cn >= 0) {
        TAP_CHECK(!strcmp(t.rows[0][ci], "nccl"));
        TAP_CHECK(!strcmp(t.rows[0][cp], "algo=Ring,proto=LL"));
        TAP_CHECK(!strcmp(t.rows[0][cn], "a \"quoted\" note\nover two lines"));
        TAP_CHECK(!strcmp(t.rows[1][ci], " padded "));
    }
    static const char *const req[] = {"impl", "nonexistent_column", NULL};
    TAP_CHECK(arb_table_require(&t, req, path, err, sizeof err) != 0 && strstr(err, "nonexistent_column"));
    arb_table_free(&t);
    unlink(path);
}

static void t_csv_rejects(void)
{
    arb_table_t t;
    char err[512];
    TAP_CHECK(arb_table_read_mem("", 0, "empty", &t, err, sizeof err) != 0 && strstr(err, "empty"));
    const char *ragged = "a,b\n1,2\n3\n";
    TAP_CHECK(arb_table_read_mem(ragged, strlen(ragged), "ragged", &t, err, sizeof err) != 0 && strstr(err, "line 3"));
    const char *dup = "a,a\n1,2\n";
    TAP_CHECK(arb_table_read_mem(dup, strlen(dup), "dup", &t, err, sizeof err) != 0 && strstr(err, "twice"));
    const char *cut = "a,b\n1,\"unterminated\n";
    TAP_CHECK(arb_table_read_mem(cut, strlen(cut), "cut", &t, err, sizeof err) != 0);
    TAP_CHECK(arb_table_read("/nonexistent/file.csv", &t, err, sizeof err) != 0 && strstr(err, "/nonexistent/file.csv"));
    char err2[512];
    TAP_CHECK(arb_results_open("/nonexistent-dir/x.csv", err2, sizeof err2) == NULL && strstr(err2, "/nonexistent-dir/x.csv"));
}

/* The closing summary: fastest passing point per (mode, size), ratios to NCCL and ping. */
static void t_report_summary(void)
{
    char path[] = "/tmp/arbench-report-XXXXXX";
    int fd = mkstemp(path);
    TAP_CHECK(fd >= 0);
    fflush(stdout);
    int saved = dup(1);
    dup2(fd, 1);
    arb_report_t r;
    arb_report_init(&r, 5);
    r.progress = 0;
    arb_report_line_t ping = {.impl = "ping", .params = "", .mode = "graph", .check = "skip", .note = "",
                              .bytes = 43008, .tokens = 3, .median = 3.0, .fusion = "", .role = ARB_ROLE_REFERENCE};
    arb_report_line_t ring = {.impl = "nccl", .params = "algo=Ring", .mode = "graph", .check = "pass", .note = "",
                              .bytes = 43008, .tokens = 3, .median = 8.0, .p10 = 7.8, .p90 = 8.4, .fusion = "",
                              .role = ARB_ROLE_BASELINE};
    arb_report_line_t tree = ring, fast = ring, bad = ring;
    tree.params = "algo=Tree";
    tree.median = 7.0, tree.p10 = 6.8, tree.p90 = 7.3;
    fast.impl = "p2p";
    fast.params = "variant=oneshot-flagfree";
    fast.role = bad.role = ARB_ROLE_CANDIDATE;
    fast.median = 4.0, fast.p10 = 3.9, fast.p90 = 4.2; /* apart from Tree's 6.8 .. 7.3 */
    bad.impl = "p2p";
    bad.params = "variant=broken";
    bad.check = "fail";
    bad.median = 1.0; /* a failed point never wins */
    /* at 64 KB the fastest candidate's lead is inside the spread: its x base in parentheses; at
     * 96 KB the baseline itself is fastest: 1.00 whatever the spread */
    arb_report_line_t ring64 = ring, near64 = fast, ring96 = ring, cand96 = fast;
    ring64.bytes = near64.bytes = 65536;
    near64.median = 7.6, near64.p10 = 7.0, near64.p90 = 8.1; /* overlaps Ring's 7.8 .. 8.4 */
    ring96.bytes = cand96.bytes = 98304;
    cand96.median = 8.5, cand96.p10 = 8.0, cand96.p90 = 9.0;
    arb_report_line(&r, &ping);
    arb_report_line(&r, &ring);
    arb_report_line(&r, &tree);
    arb_report_line(&r, &fast);
    arb_report_line(&r, &bad);
    arb_report_line(&r, &ring64);
    arb_report_line(&r, &near64);
    arb_report_line(&r, &ring96);
    arb_report_line(&r, &cand96);
    arb_report_done(&r);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    FILE *f = fopen(path, "r");
    char line[512];
    int found = 0, near = 0, itself = 0, legend = 0;
    while (f && fgets(line, sizeof line, f)) {
        if (!strncmp(line, "# -", 3) && strstr(line, " 43008 ") && strstr(line, "variant=oneshot-flagfree") &&
            strstr(line, " 0.57 ") && strstr(line, " 1.33"))
            found = 1;
        if (!strncmp(line, "# -", 3) && strstr(line, " 65536 ") && strstr(line, "p2p") && strstr(line, " (0.95) "))
            near = 1;
        if (!strncmp(line, "# -", 3) && strstr(line, " 98304 ") && strstr(line, "nccl") && strstr(line, " 1.00 "))
            itself = 1;
        legend += strstr(line, "x base in parentheses") != NULL;
    }
    if (f)
        fclose(f);
    close(fd);
    unlink(path);
    TAP_CHECK(found);  /* apart: plain */
    TAP_CHECK(near);   /* 7.6 / 8.0 inside the spread: in parentheses */
    TAP_CHECK(itself); /* the baseline is the best: 1.00, plain */
    TAP_EQ_INT(legend, 1);
}

/* Progress escapes only on a terminal a person watches (report.h's rule). */
static void t_progress_rule(void)
{
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 0, 1, NULL), 1);          /* plain run on a terminal */
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 0, 0, NULL), 0);          /* plain run into a file */
    TAP_EQ_INT(arb_progress_rule(NULL, "true", 0, 1, NULL), 0);        /* CI */
    TAP_EQ_INT(arb_progress_rule(NULL, "", 0, 1, NULL), 1);            /* CI set but empty */
    /* Under mpirun rank 0's stdout is a pty either way: mpirun's own stdout decides. */
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 1, 1, "/tmp/sweep.log"), 0);
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 1, 1, "pipe:[4242]"), 0);
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 1, 1, NULL), 0);          /* unknown: a remote daemon */
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 1, 1, "/dev/pts/3"), 1);
    TAP_EQ_INT(arb_progress_rule(NULL, NULL, 1, 0, "/dev/tty1"), 1);
    TAP_EQ_INT(arb_progress_rule(NULL, "1", 1, 1, "/dev/pts/3"), 0);   /* CI wins over a terminal */
    TAP_EQ_INT(arb_progress_rule("1", "1", 1, 0, "/tmp/x"), 1);        /* forced on */
    TAP_EQ_INT(arb_progress_rule("0", NULL, 0, 1, NULL), 0);           /* forced off */
    TAP_EQ_INT(arb_progress_rule("yes", NULL, 0, 1, NULL), 1);         /* not 0/1: the rule decides */
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"size_single", t_size_single}, {"size_lists", t_size_lists}, {"plan_defaults", t_plan_defaults},
        {"plan_parse", t_plan_parse},   {"plan_hash", t_plan_hash},   {"stats", t_stats},
        {"csv_roundtrip", t_csv_roundtrip}, {"csv_rejects", t_csv_rejects},
        {"report_summary", t_report_summary}, {"progress_rule", t_progress_rule},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
