/* SPDX-License-Identifier: MIT */
/*
 * check_csv FILE [--where COL=VAL]... [--rows N] [--min-rows N] [--all COL=VAL]...
 *                [--positive COL]... [--graph-below-eager]
 * Asserts facts about a results CSV (read with the library's reader); exit 0 when all
 * hold, 1 with a message naming the first that does not, 2 for a bad command line (an
 * option it does not know, a missing value: a typo must not drop an assertion).
 * --where filters rows first (every --where applies); --all and --positive fail when no
 * row is selected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

#define MAX_CHECKS 64

typedef enum { C_WHERE, C_ROWS, C_MIN_ROWS, C_ALL, C_POSITIVE, C_GRAPH_BELOW_EAGER } kind_t;

typedef struct check {
    kind_t kind;
    char col[128];
    const char *val; /* after '=' for --where/--all; the number for --rows/--min-rows */
    size_t n;
} check_t;

static const struct {
    const char *name;
    kind_t kind;
    int value; /* 0 none, 1 COL=VAL, 2 COL, 3 N */
} options[] = {
    {"--where", C_WHERE, 1}, {"--rows", C_ROWS, 3}, {"--min-rows", C_MIN_ROWS, 3}, {"--all", C_ALL, 1},
    {"--positive", C_POSITIVE, 2}, {"--graph-below-eager", C_GRAPH_BELOW_EAGER, 0},
};

static void usage(void)
{
    fprintf(stderr, "usage: check_csv FILE [--where COL=VAL]... [--rows N] [--min-rows N] [--all COL=VAL]... [--positive COL]... [--graph-below-eager]\n");
}

/* Parses argv[2..] into checks; -1 with a message on a bad command line. */
static int parse(int argc, char **argv, check_t *cs, size_t *ncs)
{
    *ncs = 0;
    for (int i = 2; i < argc; i++) {
        size_t o = 0;
        while (o < sizeof options / sizeof options[0] && strcmp(argv[i], options[o].name))
            o++;
        if (o == sizeof options / sizeof options[0]) {
            fprintf(stderr, "check_csv: unknown option '%s'\n", argv[i]);
            usage();
            return -1;
        }
        if (*ncs == MAX_CHECKS) {
            fprintf(stderr, "check_csv: more than %d checks\n", MAX_CHECKS);
            return -1;
        }
        check_t *c = &cs[(*ncs)++];
        memset(c, 0, sizeof *c);
        c->kind = options[o].kind;
        if (options[o].value == 0)
            continue;
        if (i + 1 >= argc) {
            fprintf(stderr, "check_csv: %s needs a value\n", argv[i]);
            return -1;
        }
        const char *v = argv[++i];
        if (options[o].value == 3) {
            char *end;
            c->n = strtoul(v, &end, 10);
            if (!*v || *end) {
                fprintf(stderr, "check_csv: %s '%s': expected a row count\n", options[o].name, v);
                return -1;
            }
            continue;
        }
        const char *eq = strchr(v, '=');
        if ((options[o].value == 1) != (eq != NULL) || eq == v || strlen(v) >= sizeof c->col) {
            fprintf(stderr, "check_csv: %s '%s': expected %s\n", options[o].name, v,
                    options[o].value == 1 ? "COL=VALUE" : "a column name");
            return -1;
        }
        size_t len = eq ? (size_t)(eq - v) : strlen(v);
        memcpy(c->col, v, len);
        c->col[len] = '\0';
        c->val = eq ? eq + 1 : NULL;
    }
    return 0;
}

static int column(const arb_table_t *t, const char *path, const char *col)
{
    int c = arb_table_col(t, col);
    if (c < 0)
        fprintf(stderr, "check_csv: %s: no column '%s'\n", path, col);
    return c;
}

/* For every selected graph row, the eager row of the same impl, params and bytes has a
 * larger median (replay removes launch gaps). */
static int graph_below_eager(const arb_table_t *t, const char *path, const char *sel)
{
    int ci = column(t, path, "impl"), cp = column(t, path, "params"), cb = column(t, path, "bytes"),
        cm = column(t, path, "mode"), cmed = column(t, path, "median_us");
    if (ci < 0 || cp < 0 || cb < 0 || cm < 0 || cmed < 0)
        return 1;
    size_t compared = 0;
    for (size_t r = 0; r < t->nrows; r++) {
        if (!sel[r] || strcmp(t->rows[r][cm], "graph"))
            continue;
        for (size_t q = 0; q < t->nrows; q++) {
            if (!sel[q] || strcmp(t->rows[q][cm], "eager") || strcmp(t->rows[q][ci], t->rows[r][ci]) ||
                strcmp(t->rows[q][cp], t->rows[r][cp]) || strcmp(t->rows[q][cb], t->rows[r][cb]))
                continue;
            compared++;
            if (!(strtod(t->rows[r][cmed], NULL) < strtod(t->rows[q][cmed], NULL))) {
                fprintf(stderr, "check_csv: %s %s %s B: graph median %s us is not below eager %s us\n",
                        t->rows[r][ci], t->rows[r][cp], t->rows[r][cb], t->rows[r][cmed], t->rows[q][cmed]);
                return 1;
            }
        }
    }
    if (!compared) {
        fprintf(stderr, "check_csv: %s: --graph-below-eager found no graph row with an eager twin\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    check_t cs[MAX_CHECKS];
    size_t ncs;
    if (argc < 2 || argv[1][0] == '-') {
        usage();
        return 2;
    }
    if (parse(argc, argv, cs, &ncs))
        return 2;
    const char *path = argv[1];
    arb_table_t t;
    char err[1024];
    if (arb_table_read(path, &t, err, sizeof err)) {
        fprintf(stderr, "check_csv: %s\n", err);
        return 1;
    }
    char *sel = calloc(t.nrows + 1, 1);
    int bad = !sel;
    for (size_t r = 0; r < t.nrows && sel; r++)
        sel[r] = 1;
    for (size_t k = 0; k < ncs && !bad; k++) {
        if (cs[k].kind != C_WHERE)
            continue;
        int c = column(&t, path, cs[k].col);
        bad = c < 0;
        for (size_t r = 0; r < t.nrows && !bad; r++)
            sel[r] &= !strcmp(t.rows[r][c], cs[k].val);
    }
    size_t n = 0;
    for (size_t r = 0; r < t.nrows && sel; r++)
        n += sel[r];
    for (size_t k = 0; k < ncs && !bad; k++) {
        const check_t *c = &cs[k];
        if (c->kind == C_ROWS && n != c->n) {
            fprintf(stderr, "check_csv: %s: %zu rows selected, expected %zu\n", path, n, c->n);
            bad = 1;
        } else if (c->kind == C_MIN_ROWS && n < c->n) {
            fprintf(stderr, "check_csv: %s: %zu rows selected, expected at least %zu\n", path, n, c->n);
            bad = 1;
        } else if ((c->kind == C_ALL || c->kind == C_POSITIVE) && n == 0) {
            fprintf(stderr, "check_csv: %s: no rows selected for --%s %s (an assertion over no rows holds for nothing)\n",
                    path, c->kind == C_ALL ? "all" : "positive", c->col);
            bad = 1;
        } else if (c->kind == C_ALL || c->kind == C_POSITIVE) {
            int col = column(&t, path, c->col);
            bad = col < 0;
            for (size_t r = 0; r < t.nrows && !bad; r++) {
                if (!sel[r])
                    continue;
                const char *f = t.rows[r][col];
                if (c->kind == C_ALL && strcmp(f, c->val)) {
                    fprintf(stderr, "check_csv: %s: row %zu has %s='%s', expected '%s'\n", path, r + 1, c->col, f, c->val);
                    bad = 1;
                } else if (c->kind == C_POSITIVE && !(strtod(f, NULL) > 0)) {
                    fprintf(stderr, "check_csv: %s: row %zu has %s='%s', expected a positive number\n", path, r + 1, c->col, f);
                    bad = 1;
                }
            }
        } else if (c->kind == C_GRAPH_BELOW_EAGER) {
            bad = graph_below_eager(&t, path, sel);
        }
    }
    if (!bad)
        printf("check_csv: %s: %zu rows selected, all checks hold\n", path, n);
    free(sel);
    arb_table_free(&t);
    return bad;
}
