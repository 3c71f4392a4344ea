/* SPDX-License-Identifier: MIT */
/*
 * spec_rows_check ENGINE.csv K STEPS RATE...: checks the speculative rows of an
 * `arbench engine --accept-rate` run (TAP): one spec row per rate and mode, T = k + 1,
 * the emitted tokens number cycles x (1 + mean accepted), the statistics are consistent
 * (tok/s = tokens / total cycle time within rounding, ratio = tok/s over the decode row's),
 * and greedy speculation emits the decode row's own greedy chain.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "results.h"

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

static size_t count_words(const char *s, unsigned long *out, size_t max)
{
    size_t k = 0;
    char *end;
    while (*s && k < max) {
        out[k++] = strtoul(s, &end, 10);
        if (end == s)
            break;
        s = end;
    }
    return k;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: spec_rows_check ENGINE.csv K STEPS RATE...\n");
        return 2;
    }
    arb_table_t t;
    char err[1024];
    if (arb_table_read(argv[1], &t, err, sizeof err)) {
        printf("Bail out! %s\n", err);
        return 1;
    }
    unsigned k = (unsigned)atoi(argv[2]), steps = (unsigned)atoi(argv[3]);
    static unsigned long chain[100000], emitted[100000];
    size_t nchain = 0;
    double plain_tok_s = NAN;
    for (size_t r = 0; r < t.nrows; r++)
        if (!strcmp(get(&t, r, "phase"), "decode")) {
            nchain = count_words(get(&t, r, "greedy"), chain, 100000);
            plain_tok_s = atof(get(&t, r, "tok_s"));
        }
    ok(nchain == steps + 1, "the decode row has its greedy chain", NULL);
    for (int a = 4; a < argc; a++) {
        size_t r = 0;
        for (; r < t.nrows; r++)
            if (!strcmp(get(&t, r, "phase"), "spec") && !strcmp(get(&t, r, "accept_rate"), argv[a]))
                break;
        char d[256];
        snprintf(d, sizeof d, "accept_rate %s", argv[a]);
        ok(r < t.nrows, "a spec row per --accept-rate value", d);
        if (r == t.nrows)
            continue;
        unsigned T = (unsigned)atoi(get(&t, r, "tokens")), cycles = (unsigned)atoi(get(&t, r, "steps"));
        double mean = atof(get(&t, r, "mean_accepted")), tok_s = atof(get(&t, r, "tok_s"));
        double ratio = atof(get(&t, r, "spec_ratio"));
        size_t ne = count_words(get(&t, r, "greedy"), emitted, 100000);
        ok(T == k + 1 && cycles == steps && (unsigned)atoi(get(&t, r, "spec_k")) == k, "T = k + 1, one cycle per step", d);
        ok(mean >= 0 && mean <= k && fabs((double)ne - cycles * (1 + mean)) < 0.01 * cycles, "tokens = cycles x (1 + mean accepted)", d);
        /* total cycle time from the samples */
        const char *sm = get(&t, r, "samples_us");
        double total = 0, v;
        int used;
        while (sscanf(sm, "%lf%n", &v, &used) == 1)
            total += v, sm += used;
        ok(total > 0 && fabs(tok_s - ne / total * 1e6) < 0.01 * tok_s + 0.01, "tok/s = tokens / total cycle time", d);
        ok(isfinite(plain_tok_s) && fabs(ratio - tok_s / plain_tok_s) < 0.01 * ratio + 1e-3, "spec_ratio = tok/s over plain decode", d);
        if (!strcmp(argv[a], "1.000"))
            ok(fabs(mean - k) < 1e-9, "acceptance 1 accepts every draft", d);
        const char *be = get(&t, r, "break_even");
        ok(*be && (!strcmp(be, "inf") || (atof(be) >= 0 && atof(be) <= 1)), "break_even is a probability or inf", be);
        if (!strcmp(argv[a], "greedy")) {
            size_t same = 0, m = ne < nchain - 1 ? ne : nchain - 1;
            for (size_t i = 0; i < m; i++)
                same += emitted[i] == chain[i + 1];
            snprintf(d, sizeof d, "%zu of %zu", same, m);
            ok(m >= steps && same == m, "greedy speculation emits the plain greedy chain", d);
        }
    }
    arb_table_free(&t);
    printf("1..%d\n", n);
    return failed;
}
