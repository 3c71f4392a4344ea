/* SPDX-License-Identifier: MIT */
/*
 * arb-engine-shape [--slow LABEL --fast LABEL] ENGINE.csv[=LABEL]...: does speculative
 * decoding win or lose, per implementation choice (docs/engine-e2e.md, "The seed's shape").
 *
 * Per (choice, mode, k) it prints plain decode tok/s, R = (k draft steps + verify) / plain
 * step (the cycle's cost in plain steps), the break-even acceptance p* (engine/stats/spec.h), and
 * at every acceptance rate the runs have, the ratio of speculative to plain tok/s twice:
 * at the expected accepted length (1 + E[n]) / R, from the medians alone, and as measured
 * (the draws of a finite run; the spec row's spec_ratio).
 *
 * With --slow and --fast it checks the seed's shape: speculation loses with the slow
 * choice and wins with the fast one, at the same acceptance. It holds for p in
 * (p*_fast, p*_slow), so it needs p*_fast < p*_slow; it is reported at each rate run (by
 * the expected-length ratio) and as that interval. Exit 0: it holds at one rate or more
 * for every (mode, k) the two choices share; 1: it does not; 2: bad input.
 *
 * Labels: FILE=LABEL names every row of FILE, else the `choice` column, else impl[:params].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/points.h"
#include "results/results.h"
#include "stats/spec.h"

#define MAX_G 256
#define MAX_P 32

typedef struct group {
    char label[256], mode[16];
    unsigned k;
    double plain_us, draft_us, verify_us; /* medians (draft: all k steps) */
    double p[MAX_P], measured[MAX_P];     /* rates and measured spec/plain ratio */
    unsigned np;
} group_t;

static group_t g[MAX_G];
static unsigned ng;

static const char *get(const arb_table_t *t, size_t r, const char *col)
{
    int c = arb_table_col(t, col);
    return c >= 0 ? t->rows[r][c] : "";
}

static int number(const char *file, size_t line, const char *col, const char *s, double *out)
{
    if (arb_parse_double_field(s, out) || !(*out >= 0)) {
        fprintf(stderr, "arb-engine-shape: %s: line %zu: bad %s '%s', expected a number >= 0\n", file, line, col, s);
        return -1;
    }
    return 0;
}

static group_t *find(const char *label, const char *mode, unsigned k, int add)
{
    for (unsigned i = 0; i < ng; i++)
        if (!strcmp(g[i].label, label) && !strcmp(g[i].mode, mode) && g[i].k == k)
            return &g[i];
    if (!add || ng == MAX_G)
        return NULL;
    group_t *x = &g[ng++];
    memset(x, 0, sizeof *x);
    snprintf(x->label, sizeof x->label, "%s", label);
    snprintf(x->mode, sizeof x->mode, "%s", mode);
    x->k = k;
    x->plain_us = x->draft_us = x->verify_us = NAN;
    return x;
}

static int load(const char *arg)
{
    char path[4096], err[1024];
    const char *label = NULL, *eq = strstr(arg, ".csv=");
    snprintf(path, sizeof path, "%s", arg);
    if (eq) {
        path[eq - arg + 4] = '\0';
        label = eq + 5;
        if (!*label) {
            fprintf(stderr, "arb-engine-shape: %s: empty label after '=' (expected PATH.csv=LABEL)\n", arg);
            return -1;
        }
    }
    arb_table_t t;
    if (arb_table_read(path, &t, err, sizeof err)) {
        fprintf(stderr, "arb-engine-shape: %s\n", err);
        return -1;
    }
    static const char *const required[] = {"mode", "phase", "median_us", "tokens", NULL};
    if (arb_table_require(&t, required, path, err, sizeof err)) {
        fprintf(stderr, "arb-engine-shape: %s\n", err);
        arb_table_free(&t);
        return -1;
    }
    int rc = 0;
    /* two passes: plain decode medians first (a spec row's group needs its decode) */
    for (int pass = 0; pass < 2 && !rc; pass++)
        for (size_t r = 0; r < t.nrows && !rc; r++) {
            const char *phase = get(&t, r, "phase"), *mode = get(&t, r, "mode"), *choice = get(&t, r, "choice");
            char lab[256];
            if (label)
                snprintf(lab, sizeof lab, "%s", label);
            else if (*choice)
                snprintf(lab, sizeof lab, "%s", choice);
            else
                snprintf(lab, sizeof lab, "%s%s%s", get(&t, r, "impl"), *get(&t, r, "params") ? ":" : "",
                         get(&t, r, "params"));
            const size_t line = r + 2;
            if (pass == 0 && !strcmp(phase, "decode")) {
                double us;
                if ((rc = number(path, line, "median_us", get(&t, r, "median_us"), &us)))
                    break;
                group_t *x = find(lab, mode, 0, 1); /* k = 0: holds the decode until spec rows come */
                if (x)
                    x->plain_us = us;
            } else if (pass == 1 && !strcmp(phase, "spec")) {
                if (!strcmp(get(&t, r, "accept_rate"), "greedy"))
                    continue;
                double k, p, d, v, tok;
                const char *ks = *get(&t, r, "spec_k") ? get(&t, r, "spec_k") : NULL;
                if (ks ? number(path, line, "spec_k", ks, &k) : number(path, line, "tokens", get(&t, r, "tokens"), &k)) {
                    rc = -1;
                    break;
                }
                if (!ks)
                    k -= 1; /* the engine's own rows: tokens = k + 1 */
                if (!(k >= 1 && k == floor(k))) {
                    fprintf(stderr, "arb-engine-shape: %s: line %zu: k = %g, expected a whole number >= 1\n", path, line, k);
                    rc = -1;
                    break;
                }
                if ((rc = number(path, line, "accept_rate", get(&t, r, "accept_rate"), &p)) ||
                    (rc = number(path, line, "draft_us", get(&t, r, "draft_us"), &d)) ||
                    (rc = number(path, line, "verify_us", get(&t, r, "verify_us"), &v)) ||
                    (rc = number(path, line, "tok_s", get(&t, r, "tok_s"), &tok)))
                    break;
                group_t *base = find(lab, mode, 0, 0), *x = find(lab, mode, (unsigned)k, 1);
                if (!base || !(base->plain_us > 0)) {
                    fprintf(stderr, "arb-engine-shape: %s: line %zu: spec row of '%s' (%s) without a decode row of the same choice and mode\n",
                            path, line, lab, mode);
                    rc = -1;
                    break;
                }
                if (!x || x->np == MAX_P) {
                    fprintf(stderr, "arb-engine-shape: %s: more than %d choices or %d rates\n", path, MAX_G, MAX_P);
                    rc = -1;
                    break;
                }
                unsigned j = 0;
                while (j < x->np && x->p[j] != p)
                    j++;
                x->plain_us = base->plain_us, x->draft_us = d, x->verify_us = v; /* a later row replaces */
                x->p[j] = p, x->measured[j] = tok * base->plain_us / 1e6;
                x->np += j == x->np;
            }
        }
    arb_table_free(&t);
    return rc;
}

static double ratio_at(const group_t *x, double p)
{
    return (1 + arb_spec_expected_accepted(p, x->k)) * x->plain_us / (x->draft_us + x->verify_us);
}

static double break_even(const group_t *x)
{
    double be = NAN;
    char why[256];
    if (arb_spec_break_even(x->k, x->draft_us / x->k, x->verify_us, x->plain_us, &be, why, sizeof why) != ARB_OK)
        return NAN;
    return be;
}

static void print_groups(void)
{
    printf("# %-28s %-5s %2s %9s %9s %10s  %s\n", "choice", "mode", "k", "plain/s", "R", "break_even",
           "p: spec/plain at E[n] (measured)");
    for (unsigned i = 0; i < ng; i++) {
        const group_t *x = &g[i];
        if (!x->k)
            continue;
        double be = break_even(x);
        char bes[16];
        snprintf(bes, sizeof bes, isinf(be) ? "inf" : "%.3f", be);
        printf("  %-28.28s %-5s %2u %9.1f %9.3f %10s ", x->label, x->mode, x->k, 1e6 / x->plain_us,
               (x->draft_us + x->verify_us) / x->plain_us, bes);
        for (unsigned j = 0; j < x->np; j++)
            printf(" %.2f: %.3f (%.3f)", x->p[j], ratio_at(x, x->p[j]), x->measured[j]);
        printf("\n");
    }
}

/* The seed's shape for one (mode, k): 1 holds at some rate, 0 not, -1 not comparable. */
static int shape(const group_t *s, const group_t *f)
{
    double bs = break_even(s), bf = break_even(f);
    printf("# %s k=%u: slow '%s' p* = %.3f, fast '%s' p* = %.3f: ", s->mode, s->k, s->label, bs, f->label, bf);
    if (bf < bs)
        printf("the shape holds for acceptance in (%.3f, %.3f)\n", bf, isinf(bs) ? 1.0 : bs);
    else
        printf("no acceptance gives it (speculation gains at least as much with the slow choice)\n");
    int any = 0, common = 0;
    for (unsigned i = 0; i < s->np; i++)
        for (unsigned j = 0; j < f->np; j++) {
            if (s->p[i] != f->p[j])
                continue;
            common++;
            double rs = ratio_at(s, s->p[i]), rf = ratio_at(f, f->p[j]);
            int ok = rs < 1 && rf > 1;
            any |= ok;
            printf("#   p=%.2f: slow x%.3f (%s), fast x%.3f (%s): %s\n", s->p[i], rs, rs < 1 ? "loses" : "wins", rf,
                   rf > 1 ? "wins" : "loses", ok ? "the seed's shape" : "not the seed's shape");
        }
    if (!common) {
        printf("#   no acceptance rate was run for both\n");
        return -1;
    }
    return any;
}

int main(int argc, char **argv)
{
    const char *slow = NULL, *fast = NULL;
    int first = 1;
    for (; first < argc && !strncmp(argv[first], "--", 2); first++) {
        if (first + 1 >= argc || (strcmp(argv[first], "--slow") && strcmp(argv[first], "--fast"))) {
            fprintf(stderr, "arb-engine-shape: unknown or incomplete option '%s' (expected --slow LABEL, --fast LABEL)\n",
                    argv[first]);
            return 2;
        }
        *(argv[first][2] == 's' ? &slow : &fast) = argv[first + 1];
        first++;
    }
    if (first >= argc || !slow != !fast) {
        fprintf(stderr, "usage: arb-engine-shape [--slow LABEL --fast LABEL] ENGINE.csv[=LABEL]...\n");
        return 2;
    }
    for (int i = first; i < argc; i++)
        if (load(argv[i]))
            return 2;
    print_groups();
    if (!slow)
        return 0;
    int compared = 0, held = 1;
    const char *missing = NULL;
    for (unsigned i = 0; i < ng; i++) {
        if (!g[i].k || strcmp(g[i].label, slow))
            continue;
        const group_t *f = find(fast, g[i].mode, g[i].k, 0);
        if (!f)
            continue;
        int h = shape(&g[i], f);
        if (h < 0)
            continue;
        compared++;
        held &= h;
    }
    if (!find(slow, "graph", 0, 0) && !find(slow, "eager", 0, 0))
        missing = slow;
    else if (!find(fast, "graph", 0, 0) && !find(fast, "eager", 0, 0))
        missing = fast;
    if (missing || !compared) {
        fprintf(stderr, "arb-engine-shape: %s%s%s: no (mode, k) with spec rows of both --slow and --fast\n",
                missing ? "no rows labelled '" : "", missing ? missing : "", missing ? "'" : "");
        return 2;
    }
    printf("# seed's shape (speculation loses with '%s', wins with '%s'): %s\n", slow, fast,
           held ? "reproduced" : "NOT reproduced");
    return held ? 0 : 1;
}
