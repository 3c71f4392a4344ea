/* SPDX-License-Identifier: MIT */
/*
 * spec_rows_check ENGINE.csv K [P,P...]: the speculative rows of an `arbench engine
 * --accept-rate` run (TAP), each checked against what the row's other columns say
 * independently of engine/stats/spec.c: the draft's and the verify's medians are there
 * (the draft model ran); tok/s is the produced tokens (the greedy column) over the sum of
 * the cycle times (samples_us); spec_ratio is that over the same mode's decode tok/s;
 * break_even is the root of 1 + p + .. + p^K = (draft + verify) / decode median (0 when
 * the cycle is no slower than a decode step, inf when slower than K + 1 of them); the
 * produced tokens are the decode row's greedy chain, and agree says so (n/n). With a
 * list of rates: every mode that has spec rows has exactly one per listed rate, and the
 * accept path ran for real at the ends: p = 0 accepts no draft in any cycle
 * (accepted_per_cycle 0), p = 1 every draft (accepted_per_cycle K). With accepted=X
 * instead (a --draft-dir run): every spec row measured X accepted drafts per cycle.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results/results.h"

static int n, failed;
static void ok(int c, const char *what, const char *detail)
{
    printf("%sok %d - %s%s%s\n", c ? "" : "not ", ++n, what, detail && *detail ? ": " : "", detail ? detail : "");
    failed |= !c;
}

/* Space-separated token ids into out[max]; their count. */
static size_t tokens(const char *s, unsigned *out, size_t max)
{
    size_t cnt = 0;
    for (unsigned v; cnt < max && sscanf(s, "%u", &v) == 1; s += strcspn(s, " "), s += *s == ' ')
        out[cnt++] = v;
    return cnt;
}

static const char *get(const arb_table_t *t, size_t r, const char *col)
{
    int c = arb_table_col(t, col);
    return c >= 0 ? t->rows[r][c] : "";
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 4) {
        fprintf(stderr, "usage: spec_rows_check ENGINE.csv K [P,P... | accepted=X]\n");
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
        /* produced tokens and the cycles' times, from the greedy and samples_us columns */
        unsigned spec_tok[4096], chain[4096];
        size_t produced = tokens(get(&t, r, "greedy"), spec_tok, 4096), nchain = 0;
        double sum_us = 0, us;
        for (const char *q = get(&t, r, "samples_us"); sscanf(q, "%lf", &us) == 1; q += strcspn(q, " "), q += *q == ' ')
            sum_us += us;
        snprintf(detail, sizeof detail, "%s: %.2f vs %zu tokens in %.3f us", mode, tok_s, produced, sum_us);
        ok(produced > 0 && fabs(tok_s - produced / sum_us * 1e6) < 1e-3 * tok_s + 0.01,
           "tok/s = produced tokens / the cycles' total time", detail);
        snprintf(detail, sizeof detail, "%s: %.4f vs %.2f / %.2f", mode, ratio, tok_s, 1e6 / plain_us);
        ok(isfinite(plain_us) && fabs(ratio - tok_s * plain_us / 1e6) < 1e-3 * ratio + 1e-4, "spec_ratio = tok/s over plain decode", detail);
        const char *got = get(&t, r, "break_even");
        double R = (d + v) / plain_us, be = atof(got), poly = 0, pi = 1;
        for (unsigned i = 0; i <= k; i++)
            poly += pi, pi *= be;
        int bok = R <= 1 ? !strcmp(got, "0.0000") : R > k + 1.0 ? !strcmp(got, "inf")
                                                                : be > 0 && be <= 1 && fabs(poly - R) < 1e-3 * R;
        snprintf(detail, sizeof detail, "%s: row %s, R = %.4f, 1 + p + .. + p^%u = %.4f there", mode, got, R, k, poly);
        ok(bok, "break_even solves 1 + p + .. + p^k = t_cycle / t_plain", detail);
        for (size_t q = 0; q < t.nrows; q++)
            if (!strcmp(get(&t, q, "phase"), "decode") && !strcmp(get(&t, q, "mode"), mode))
                nchain = tokens(get(&t, q, "greedy"), chain, 4096);
        size_t same = 0, ncmp = produced < nchain - 1 ? produced : nchain - 1; /* the decode row: g_0 .. g_steps */
        for (size_t i = 0; i < ncmp; i++)
            same += spec_tok[i] == chain[i + 1];
        snprintf(detail, sizeof detail, "%s: %zu of the first %zu", mode, same, ncmp);
        ok(nchain > 1 && same == ncmp, "the produced tokens are the decode chain", detail);
        const char *ag = get(&t, r, "agree");
        unsigned a = 0, bb = 1;
        ok(sscanf(ag, "%u/%u", &a, &bb) == 2 && a == bb && bb == produced, "agree counts every produced token", ag);
    }
    ok(nspec > 0, "spec rows present", NULL);
    if (argc == 4 && strncmp(argv[3], "accepted=", 9) == 0) { /* measured by a draft head */
        for (size_t r = 0; r < t.nrows; r++) {
            if (strcmp(get(&t, r, "phase"), "spec"))
                continue;
            char detail[128];
            snprintf(detail, sizeof detail, "%s: accepted_per_cycle %s, expected %s", get(&t, r, "mode"),
                     get(&t, r, "accepted_per_cycle"), argv[3] + 9);
            ok(fabs(atof(get(&t, r, "accepted_per_cycle")) - atof(argv[3] + 9)) < 5e-4,
               "the draft head's measured acceptance", detail);
        }
    } else if (argc == 4) { /* one row per (mode with spec rows, listed rate); the ends accept 0 and K */
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
