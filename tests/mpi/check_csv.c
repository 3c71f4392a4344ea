/* SPDX-License-Identifier: MIT */
/* check_csv FILE [--rows N] [--min-rows N] [--all COL=VAL]... [--positive COL]... [--where COL=VAL]
 * Asserts facts about a results CSV (read with the library's reader); exit 0 when all
 * hold, 1 with a message naming the first that does not. --where filters rows first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: check_csv FILE [--rows N] [--min-rows N] [--all COL=VAL] [--positive COL] [--where COL=VAL]\n");
        return 2;
    }
    arb_table_t t;
    char err[1024];
    if (arb_table_read(argv[1], &t, err, sizeof err)) {
        fprintf(stderr, "check_csv: %s\n", err);
        return 1;
    }
    /* Rows selected by every --where. */
    char *sel = calloc(t.nrows + 1, 1);
    for (size_t r = 0; r < t.nrows; r++)
        sel[r] = 1;
    for (int i = 2; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--where")) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", argv[i + 1]);
            char *eq = strchr(kv, '=');
            if (!eq)
                return 2;
            *eq = '\0';
            int c = arb_table_col(&t, kv);
            if (c < 0) {
                fprintf(stderr, "check_csv: no column '%s'\n", kv);
                return 1;
            }
            for (size_t r = 0; r < t.nrows; r++)
                sel[r] &= !strcmp(t.rows[r][c], eq + 1);
        }
    size_t n = 0;
    for (size_t r = 0; r < t.nrows; r++)
        n += sel[r];
    int bad = 0;
    for (int i = 2; i + 1 < argc && !bad; i += 2) {
        if (!strcmp(argv[i], "--graph-below-eager")) {
            i--;
            continue;
        }
        const char *opt = argv[i], *val = argv[i + 1];
        if (!strcmp(opt, "--rows") && n != strtoul(val, NULL, 10)) {
            fprintf(stderr, "check_csv: %s: %zu rows selected, expected %s\n", argv[1], n, val);
            bad = 1;
        } else if (!strcmp(opt, "--min-rows") && n < strtoul(val, NULL, 10)) {
            fprintf(stderr, "check_csv: %s: %zu rows selected, expected at least %s\n", argv[1], n, val);
            bad = 1;
        } else if (!strcmp(opt, "--all") || !strcmp(opt, "--positive")) {
            char kv[256];
            snprintf(kv, sizeof kv, "%s", val);
            char *eq = strchr(kv, '=');
            if (eq)
                *eq = '\0';
            int c = arb_table_col(&t, kv);
            if (c < 0) {
                fprintf(stderr, "check_csv: no column '%s'\n", kv);
                bad = 1;
                break;
            }
            for (size_t r = 0; r < t.nrows && !bad; r++) {
                if (!sel[r])
                    continue;
                const char *f = t.rows[r][c];
                if (!strcmp(opt, "--all") && eq && strcmp(f, eq + 1)) {
                    fprintf(stderr, "check_csv: %s: row %zu has %s='%s', expected '%s'\n", argv[1], r + 1, kv, f, eq + 1);
                    bad = 1;
                } else if (!strcmp(opt, "--positive") && !(strtod(f, NULL) > 0)) {
                    fprintf(stderr, "check_csv: %s: row %zu has %s='%s', expected a positive number\n", argv[1], r + 1, kv, f);
                    bad = 1;
                }
            }
        }
    }
    /* --graph-below-eager: for every selected graph row, the eager row of the same impl,
     * params and bytes has a larger median (replay removes launch gaps). */
    for (int i = 2; i < argc && !bad; i++) {
        if (strcmp(argv[i], "--graph-below-eager"))
            continue;
        int ci = arb_table_col(&t, "impl"), cp = arb_table_col(&t, "params"), cb = arb_table_col(&t, "bytes"),
            cm = arb_table_col(&t, "mode"), cmed = arb_table_col(&t, "median_us");
        for (size_t r = 0; r < t.nrows && !bad; r++) {
            if (!sel[r] || strcmp(t.rows[r][cm], "graph"))
                continue;
            for (size_t q = 0; q < t.nrows; q++)
                if (sel[q] && !strcmp(t.rows[q][cm], "eager") && !strcmp(t.rows[q][ci], t.rows[r][ci]) &&
                    !strcmp(t.rows[q][cp], t.rows[r][cp]) && !strcmp(t.rows[q][cb], t.rows[r][cb]) &&
                    !(strtod(t.rows[r][cmed], NULL) < strtod(t.rows[q][cmed], NULL))) {
                    fprintf(stderr, "check_csv: %s %s %s B: graph median %s us is not below eager %s us\n",
                            t.rows[r][ci], t.rows[r][cp], t.rows[r][cb], t.rows[r][cmed], t.rows[q][cmed]);
                    bad = 1;
                }
        }
    }
    if (!bad)
        printf("check_csv: %s: %zu rows selected, all checks hold\n", argv[1], n);
    free(sel);
    arb_table_free(&t);
    return bad;
}
