/* SPDX-License-Identifier: MIT */
/*
 * spec_rows_check ENGINE.csv K [P,P...]: the speculative rows of an `arbench engine
 * --accept-rate` run (TAP): each has the draft's and the verify's medians (the draft model
 * ran), the ratio to the same mode's plain decode tok/s, the break-even acceptance of
 * engine/stats/spec.h recomputed from the row's own medians, and greedy agreement with the
 * decode chain (n/n). With a list of rates: every mode that has spec rows has exactly
 * one per listed rate, and the accept path ran for real at the ends: p = 0 accepts no
 * draft in any cycle (accepted_per_cycle 0), p = 1 every draft (accepted_per_cycle K).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"
#include "stats/spec.h"

static int n, failed;
static void ok(int c, const char *what, const char *detail)
{
    printf("%sok %d - %s%s%s\n", c ? "" : "not ", ++n, what, detail && *detail ? ": " : "", detail ? detail : "");
    failed |= !c;
}

static const char *get(const arb_table_t *t, size_t r, const char *col)
{
    int c = arb_table_col(t, col);
    return c >= 0 ? t->rows[r][c] : "";
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: spec_rows_check ENGINE.csv K [P,P...]\n");
        return 2;
    }
    arb_table_t t;
    char err[1024];
    if (arb_table_read(argv[1], &t, err, sizeof err)) {
        printf("Bail out! %s\n", err);
        return 1;
    }
    unsigned k = (unsigned)atoi(argv[2]);
    size_t nspec = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        if (strcmp(get(&t, r, "phase"), "spec"))
            continue;
        nspec++;
        const char *mode = get(&t, r, "mode");
        double plain_us = NAN;
        for (size_t q = 0; q < t.nrows; q++)
            if (!strcmp(get(&t, q, "phase"), "decode") && !strcmp(get(&t, q, "mode"), mode))
                plain_us = atof(get(&t, q, "median_us"));
        double d = atof(get(&t, r, "draft_us")), v = atof(get(&t, r, "verify_us")), tok_s = atof(get(&t, r, "tok_s"));
        double ratio = atof(get(&t, r, "spec_ratio"));
        char detail[256];
        snprintf(detail, sizeof detail, "%s: draft %.1f us, verify %.1f us", mode, d, v);
        ok(d > 0 && v > 0, "the draft and the verify were timed", detail);
        snprintf(detail, sizeof detail, "%s: %.4f vs %.2f / %.2f", mode, ratio, tok_s, 1e6 / plain_us);
        ok(isfinite(plain_us) && fabs(ratio - tok_s * plain_us / 1e6) < 1e-3 * ratio + 1e-4, "spec_ratio = tok/s over plain decode", detail);
        double be;
        char why[256];
        const char *got = get(&t, r, "break_even");
        int bok = arb_spec_break_even(k, d / k, v, plain_us, &be, why, sizeof why) == ARB_OK &&
                  (isinf(be) ? !strcmp(got, "inf") : fabs(atof(got) - be) < 1e-3);
        snprintf(detail, sizeof detail, "%s: row %s, recomputed %.4f", mode, got, be);
        ok(bok, "break_even from the row's medians (engine/stats/spec.h)", detail);
        const char *ag = get(&t, r, "agree");
        unsigned a = 0, b = 1;
        ok(sscanf(ag, "%u/%u", &a, &b) == 2 && a == b && b > 0, "greedy speculation reproduces the decode chain", ag);
    }
    ok(nspec > 0, "spec rows present", NULL);
    if (argc == 4) { /* one row per (mode with spec rows, listed rate); the ends accept 0 and K */
        const char *modes[] = {"graph", "eager"};
        for (int m = 0; m < 2; m++) {
            size_t inmode = 0;
            for (size_t r = 0; r < t.nrows; r++)
                inmode += !strcmp(get(&t, r, "phase"), "spec") && !strcmp(get(&t, r, "mode"), modes[m]);
            if (!inmode)
                continue;
            size_t listed = 0;
            for (const char *s = argv[3]; *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ',')) {
                double p = atof(s);
                listed++;
                size_t hits = 0;
                double acc = NAN;
                for (size_t r = 0; r < t.nrows; r++)
                    if (!strcmp(get(&t, r, "phase"), "spec") && !strcmp(get(&t, r, "mode"), modes[m]) &&
                        fabs(atof(get(&t, r, "accept_rate")) - p) < 5e-4)
                        hits++, acc = atof(get(&t, r, "accepted_per_cycle"));
                char detail[128];
                snprintf(detail, sizeof detail, "%s p=%g: %zu rows, accepted_per_cycle %.3f", modes[m], p, hits, acc);
                ok(hits == 1, "one spec row per listed acceptance rate", detail);
                if (p == 0 || p == 1)
                    ok(hits == 1 && fabs(acc - (p == 0 ? 0.0 : (double)k)) < 1e-9,
                       p == 0 ? "p = 0 accepts no draft" : "p = 1 accepts every draft", detail);
            }
            char detail[96];
            snprintf(detail, sizeof detail, "%s: %zu spec rows, %zu rates listed", modes[m], inmode, listed);
            ok(inmode == listed, "no spec rows beyond the listed rates", detail);
        }
    }
    arb_table_free(&t);
    printf("1..%d\n", n);
    return failed;
}
