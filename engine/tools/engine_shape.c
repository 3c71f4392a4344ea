/* SPDX-License-Identifier: MIT */
/*
 * arb-engine-shape [--slow LABEL --fast LABEL [--k K,...] [--accept LO:HI]] ENGINE.csv[=LABEL]...:
 * does speculative decoding win or lose, per implementation choice (docs/engine-e2e.md,
 * "The seed's shape").
 *
 * Every spec row (one acceptance rate p) is judged on its own medians: R = its median cycle
 * (k draft steps + verify; median_us, else draft_us + verify_us) over the median plain decode
 * step of the same file. Speculation gains (1 + E[n]) / R (engine/stats/spec.h), and the
 * break-even acceptance p* solves 1 + E[n](p*) = R.
 *
 * The spread: a percentile bootstrap of R (2000 resamples of the row's cycle samples and the
 * decode row's step samples, samples_us; 95%; the seed is FNV-1a of label, mode, k and p, so
 * the interval is the same on every machine), widened by the run-to-run spread of the plain
 * decode median of the same choice and mode across the files given ((max - min) / min; 0 with
 * one file). Every ratio and p* is printed with that interval; the measured ratio (the run's
 * own draws: spec_ratio, else tok_s x plain step) next to it.
 *
 * With --slow and --fast: the seed's shape (speculation loses with the slow choice and wins
 * with the fast one at the same acceptance) holds at one (mode, k) over [LO, HI] only when
 *   - both choices ran at least one rate in [LO, HI];
 *   - at every such rate the slow ratio's interval lies below 1 and the fast one's above 1,
 *     and the measured ratios agree (slow < 1 < fast);
 *   - between the rates, by the break-even intervals of those rows: every fast p* upper
 *     bound < LO and every slow p* lower bound > HI.
 * It holds when it holds at every k asked (--k; default every k both ran) in every mode both
 * ran; else it is "not shown". --accept defaults to the lowest to the highest rate both ran.
 * Exit 0: holds; 1: not shown; 2: bad input.
 *
 * Labels: FILE=LABEL names every row of FILE, else the `choice` column, else impl[:params].
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/points.h"
#include "analysis/resample.h"
#include "results/results.h"
#include "stats/spec.h"

#define MAX_G 256
#define MAX_P 32
#define MAX_RUNS 64
#define BOOT_REPS 2000
#define BOOT_ALPHA 0.05

typedef struct rate_row {
    double p, R, R_lo, R_hi; /* R_lo/R_hi: bootstrap only (NAN: no samples) */
    double measured;         /* NAN: not recorded */
} rate_row_t;

typedef struct group {
    char label[256], mode[16];
    unsigned k; /* 0: the plain decode runs of (label, mode) */
    rate_row_t r[MAX_P];
    unsigned np;
    double plain[MAX_RUNS]; /* k = 0: the decode median of each file */
    unsigned nruns;
} group_t;

static group_t g[MAX_G];
static unsigned ng;

typedef struct decode_run { /* one file's decode row of (label, mode) */
    char label[256], mode[16];
    double median, *samples;
    size_t nsamples;
} decode_run_t;

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

/* samples_us: times in us separated by spaces; empty gives 0 samples. */
static int samples(const char *file, size_t line, const char *s, double **out, size_t *n)
{
    *out = NULL, *n = 0;
    size_t cap = 0;
    while (*s) {
        while (*s == ' ')
            s++;
        if (!*s)
            break;
        char *end;
        double v = strtod(s, &end);
        if (end == s || (*end && *end != ' ') || !(v > 0) || !isfinite(v)) {
            fprintf(stderr, "arb-engine-shape: %s: line %zu: bad samples_us near '%.20s', expected times > 0 separated by spaces\n", file, line, s);
            free(*out);
            return -1;
        }
        if (*n == cap) {
            cap = cap ? 2 * cap : 64;
            double *grown = realloc(*out, cap * sizeof *grown);
            if (!grown) {
                free(*out);
                return -1;
            }
            *out = grown;
        }
        (*out)[(*n)++] = v;
        s = end;
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
    return x;
}

static void row_label(const arb_table_t *t, size_t r, const char *label, char *lab, size_t len)
{
    const char *choice = get(t, r, "choice");
    if (label)
        snprintf(lab, len, "%s", label);
    else if (*choice)
        snprintf(lab, len, "%s", choice);
    else
        snprintf(lab, len, "%s%s%s", get(t, r, "impl"), *get(t, r, "params") ? ":" : "", get(t, r, "params"));
}

/* One spec row: its own R, the bootstrap interval of R, the measured ratio. */
static int spec_row(const char *path, size_t line, const arb_table_t *t, size_t r, const char *lab, const char *mode,
                    const decode_run_t *dec)
{
    double k, p, d, v, cyc;
    const char *ks = *get(t, r, "spec_k") ? get(t, r, "spec_k") : NULL;
    if (ks ? number(path, line, "spec_k", ks, &k) : number(path, line, "tokens", get(t, r, "tokens"), &k))
        return -1;
    if (!ks)
        k -= 1; /* the engine's own rows: tokens = k + 1 */
    if (!(k >= 1 && k <= ARB_SPEC_MAX_K && k == floor(k))) {
        fprintf(stderr, "arb-engine-shape: %s: line %zu: k = %g, expected a whole number from 1 to %d\n", path, line, k, ARB_SPEC_MAX_K);
        return -1;
    }
    if (number(path, line, "accept_rate", get(t, r, "accept_rate"), &p) ||
        number(path, line, "draft_us", get(t, r, "draft_us"), &d) ||
        number(path, line, "verify_us", get(t, r, "verify_us"), &v))
        return -1;
    if (p > 1) {
        fprintf(stderr, "arb-engine-shape: %s: line %zu: accept_rate %g, expected a probability from 0 to 1\n", path, line, p);
        return -1;
    }
    if (!dec) {
        fprintf(stderr, "arb-engine-shape: %s: line %zu: spec row of '%s' (%s) without a decode row of the same choice and mode in that file\n",
                path, line, lab, mode);
        return -1;
    }
    if (*get(t, r, "median_us")) {
        if (number(path, line, "median_us", get(t, r, "median_us"), &cyc))
            return -1;
    } else
        cyc = d + v;
    if (!(cyc > 0)) {
        fprintf(stderr, "arb-engine-shape: %s: line %zu: a cycle of %g us, expected > 0\n", path, line, cyc);
        return -1;
    }
    rate_row_t x = {.p = p, .R = cyc / dec->median, .R_lo = NAN, .R_hi = NAN, .measured = NAN};
    double m;
    if (*get(t, r, "spec_ratio")) {
        if (number(path, line, "spec_ratio", get(t, r, "spec_ratio"), &m))
            return -1;
        x.measured = m;
    } else if (*get(t, r, "tok_s")) {
        if (number(path, line, "tok_s", get(t, r, "tok_s"), &m))
            return -1;
        x.measured = m * dec->median / 1e6;
    }
    double *cs;
    size_t nc;
    if (samples(path, line, get(t, r, "samples_us"), &cs, &nc))
        return -1;
    if (nc && dec->nsamples) {
        char key[64];
        snprintf(key, sizeof key, "/%u/%.6f", (unsigned)k, p);
        uint64_t seed = arb_hash_str(arb_hash_str(arb_hash_str(ARB_HASH_INIT, lab), mode), key);
        if (arb_bootstrap_ratio_ci(cs, nc, dec->samples, dec->nsamples, BOOT_ALPHA, BOOT_REPS, seed, &x.R_lo, &x.R_hi))
            x.R_lo = x.R_hi = NAN;
    }
    free(cs);
    group_t *grp = find(lab, mode, (unsigned)k, 1);
    if (!grp) {
        fprintf(stderr, "arb-engine-shape: %s: more than %d choices\n", path, MAX_G);
        return -1;
    }
    unsigned j = 0;
    while (j < grp->np && grp->r[j].p != p)
        j++;
    if (j == MAX_P) {
        fprintf(stderr, "arb-engine-shape: %s: more than %d rates for '%s'\n", path, MAX_P, lab);
        return -1;
    }
    grp->r[j] = x; /* a later row of the same rate replaces */
    grp->np += j == grp->np;
    return 0;
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
    decode_run_t *dec = calloc(t.nrows + 1, sizeof *dec);
    size_t nd = 0;
    int rc = dec ? 0 : -1;
    /* two passes: this file's decode rows first (a spec row is judged against its own run) */
    for (size_t r = 0; r < t.nrows && !rc; r++) {
        if (strcmp(get(&t, r, "phase"), "decode"))
            continue;
        decode_run_t *x = &dec[nd];
        row_label(&t, r, label, x->label, sizeof x->label);
        snprintf(x->mode, sizeof x->mode, "%s", get(&t, r, "mode"));
        if ((rc = number(path, r + 2, "median_us", get(&t, r, "median_us"), &x->median)) ||
            (rc = samples(path, r + 2, get(&t, r, "samples_us"), &x->samples, &x->nsamples)))
            break;
        nd++;
        group_t *base = find(x->label, x->mode, 0, 1);
        if (base && x->median > 0 && base->nruns < MAX_RUNS)
            base->plain[base->nruns++] = x->median;
    }
    for (size_t r = 0; r < t.nrows && !rc; r++) {
        if (strcmp(get(&t, r, "phase"), "spec") || !strcmp(get(&t, r, "accept_rate"), "greedy"))
            continue;
        char lab[256];
        const char *mode = get(&t, r, "mode");
        row_label(&t, r, label, lab, sizeof lab);
        const decode_run_t *d = NULL;
        for (size_t i = 0; i < nd; i++) /* the last decode row of the file for (label, mode) */
            if (!strcmp(dec[i].label, lab) && !strcmp(dec[i].mode, mode) && dec[i].median > 0)
                d = &dec[i];
        rc = spec_row(path, r + 2, &t, r, lab, mode, d);
    }
    for (size_t i = 0; i < nd; i++)
        free(dec[i].samples);
    free(dec);
    arb_table_free(&t);
    return rc;
}


/* The run-to-run spread of the plain decode median of (label, mode): (max - min) / min. */
static double run_spread(const char *label, const char *mode)
{
    const group_t *b = find(label, mode, 0, 0);
    if (!b || b->nruns < 2)
        return 0;
    double lo = b->plain[0], hi = b->plain[0];
    for (unsigned i = 1; i < b->nruns; i++)
        lo = fmin(lo, b->plain[i]), hi = fmax(hi, b->plain[i]);
    return (hi - lo) / lo;
}

typedef struct judged { /* one row with its margins */
    double ratio, ratio_lo, ratio_hi, pstar, pstar_lo, pstar_hi;
    int have_ci;
} judged_t;

static double pstar_of(unsigned k, double R)
{
    double p = NAN;
    char why[256];
    if (arb_spec_break_even(k, 0, R, 1, &p, why, sizeof why) != ARB_OK)
        return NAN;
    return p;
}

static judged_t judge(const group_t *x, const rate_row_t *r)
{
    const double e = 1 + arb_spec_expected_accepted(r->p, x->k), s = run_spread(x->label, x->mode);
    judged_t j = {.ratio = e / r->R, .pstar = pstar_of(x->k, r->R), .have_ci = isfinite(r->R_lo) && isfinite(r->R_hi)};
    const double lo = j.have_ci ? fmin(r->R_lo, r->R) / (1 + s) : r->R, hi = j.have_ci ? fmax(r->R_hi, r->R) * (1 + s) : r->R;
    j.ratio_lo = e / hi, j.ratio_hi = e / lo;
    j.pstar_lo = pstar_of(x->k, lo), j.pstar_hi = pstar_of(x->k, hi);
    return j;
}

static const char *fmt_p(double p, char *b)
{
    snprintf(b, 16, isinf(p) ? "inf" : "%.3f", p);
    return b;
}

static void print_groups(void)
{
    printf("# per choice, mode, k and acceptance p, from that row's own medians; [intervals]: bootstrap 95%% (%d resamples) of R\n",
           BOOT_REPS);
    printf("# widened by the run-to-run spread of the plain decode median; ratio: spec/plain tok/s at E[n]; measured: the run's draws\n");
    for (unsigned i = 0; i < ng; i++) {
        const group_t *x = &g[i];
        if (!x->k)
            continue;
        const group_t *base = find(x->label, x->mode, 0, 0);
        printf("  %s %s k=%u: plain decode %.1f tok/s (first run), run-to-run spread %.2f%% over %u run(s)\n", x->label,
               x->mode, x->k, 1e6 / base->plain[0], 100 * run_spread(x->label, x->mode), base->nruns);
        for (unsigned r = 0; r < x->np; r++) {
            const judged_t j = judge(x, &x->r[r]);
            char a[16], b[16], c[16];
            printf("    p=%.2f: R %.4f  p* %s [%s, %s]  ratio %.4f [%.4f, %.4f]", x->r[r].p, x->r[r].R, fmt_p(j.pstar, a),
                   fmt_p(j.pstar_lo, b), fmt_p(j.pstar_hi, c), j.ratio, j.ratio_lo, j.ratio_hi);
            if (isfinite(x->r[r].measured))
                printf("  measured %.4f%s", x->r[r].measured,
                       (x->r[r].measured > 1) != (j.ratio > 1) ? " (contradicts the medians)" : "");
            printf("%s\n", j.have_ci ? "" : "  (no samples: spread unknown)");
        }
    }
}

/* The seed's shape at one (mode, k) over [lo, hi]: 1 holds, 0 not shown. */
static int shape(const group_t *s, const group_t *f, double lo, double hi)
{
    double fast_hi = -INFINITY, slow_lo = INFINITY, all_fast = -INFINITY, all_slow = INFINITY;
    for (unsigned i = 0; i < s->np; i++)
        all_slow = fmin(all_slow, judge(s, &s->r[i]).pstar_lo);
    for (unsigned i = 0; i < f->np; i++)
        all_fast = fmax(all_fast, judge(f, &f->r[i]).pstar_hi);
    printf("# %s k=%u: slow '%s' vs fast '%s': ", s->mode, s->k, s->label, f->label);
    if (all_fast < all_slow)
        printf("the break-even intervals of all its rows leave the shape the acceptance range (%.3f, %.3f)\n", all_fast,
               fmin(all_slow, 1.0));
    else
        printf("no acceptance gives it beyond the spread of every row (fast p* up to %.3f, slow p* from %.3f)\n", all_fast,
               all_slow);
    unsigned common = 0, ok_all = 1;
    for (unsigned i = 0; i < s->np; i++)
        for (unsigned j = 0; j < f->np; j++) {
            const double p = s->r[i].p;
            if (p != f->r[j].p || p < lo - 1e-9 || p > hi + 1e-9)
                continue;
            common++;
            const judged_t a = judge(s, &s->r[i]), b = judge(f, &f->r[j]);
            const double ma = s->r[i].measured, mb = f->r[j].measured;
            const char *why = !a.have_ci || !b.have_ci ? "no samples, the spread is unknown"
                              : !(a.ratio_hi < 1)      ? (a.ratio < 1 ? "slow loses within the spread" : "slow wins")
                              : !(b.ratio_lo > 1)      ? (b.ratio > 1 ? "fast wins within the spread" : "fast loses")
                              : !(ma < 1 && mb > 1)    ? "a measured ratio contradicts the medians"
                                                       : NULL;
            ok_all &= !why;
            fast_hi = fmax(fast_hi, b.pstar_hi), slow_lo = fmin(slow_lo, a.pstar_lo);
            printf("#   p=%.2f: slow x%.3f [%.3f, %.3f] measured x%.3f, fast x%.3f [%.3f, %.3f] measured x%.3f: %s%s\n", p,
                   a.ratio, a.ratio_lo, a.ratio_hi, ma, b.ratio, b.ratio_lo, b.ratio_hi, mb,
                   why ? "not shown: " : "the seed's shape", why ? why : "");
        }
    if (!common) {
        printf("#   not shown: no rate in [%.2f, %.2f] was run for both\n", lo, hi);
        return 0;
    }
    int between = fast_hi < lo && slow_lo > hi;
    if (!between)
        printf("#   not shown between the rates: fast p* up to %.3f must be below %.2f and slow p* from %.3f above %.2f\n",
               fast_hi, lo, slow_lo, hi);
    return ok_all && between;
}

static int parse_ks(const char *s, unsigned *ks, unsigned *nk)
{
    *nk = 0;
    while (*s) {
        char *end;
        long k = strtol(s, &end, 10);
        if (end == s || k < 1 || k > ARB_SPEC_MAX_K || (*end && *end != ',') || *nk == MAX_P)
            return -1;
        ks[(*nk)++] = (unsigned)k;
        s = *end ? end + 1 : end;
    }
    return *nk ? 0 : -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: arb-engine-shape [--slow LABEL --fast LABEL [--k K,...] [--accept LO:HI]] ENGINE.csv[=LABEL]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *slow = NULL, *fast = NULL, *ks_arg = NULL, *acc = NULL;
    int first = 1;
    for (; first < argc && !strncmp(argv[first], "--", 2); first += 2) {
        const char *o = argv[first];
        const char **dst = !strcmp(o, "--slow") ? &slow : !strcmp(o, "--fast") ? &fast : !strcmp(o, "--k") ? &ks_arg
                           : !strcmp(o, "--accept") ? &acc : NULL;
        if (!dst || first + 1 >= argc) {
            fprintf(stderr, "arb-engine-shape: unknown or incomplete option '%s' (expected --slow LABEL, --fast LABEL, --k K,..., --accept LO:HI)\n", o);
            return 2;
        }
        *dst = argv[first + 1];
    }
    if (first >= argc || !slow != !fast || (!slow && (ks_arg || acc)))
        return usage();
    unsigned ks[MAX_P], nk = 0;
    if (ks_arg && parse_ks(ks_arg, ks, &nk)) {
        fprintf(stderr, "arb-engine-shape: --k '%s': expected whole numbers from 1 to %d separated by commas\n", ks_arg, ARB_SPEC_MAX_K);
        return 2;
    }
    double lo = NAN, hi = NAN;
    if (acc) {
        char *end;
        lo = strtod(acc, &end);
        if (*end != ':' || (hi = strtod(end + 1, &end), *end) || !(lo >= 0 && lo <= hi && hi <= 1)) {
            fprintf(stderr, "arb-engine-shape: --accept '%s': expected LO:HI with 0 <= LO <= HI <= 1\n", acc);
            return 2;
        }
    }
    for (int i = first; i < argc; i++)
        if (load(argv[i]))
            return 2;
    print_groups();
    if (!slow)
        return 0;
    for (const char *lab = slow; lab; lab = lab == slow ? fast : NULL)
        if (!find(lab, "graph", 0, 0) && !find(lab, "eager", 0, 0)) {
            fprintf(stderr, "arb-engine-shape: no rows labelled '%s'\n", lab);
            return 2;
        }
    if (!acc) { /* every rate both ran */
        lo = INFINITY, hi = -INFINITY;
        for (unsigned i = 0; i < ng; i++)
            for (unsigned r = 0; g[i].k && !strcmp(g[i].label, slow) && r < g[i].np; r++) {
                const group_t *f = find(fast, g[i].mode, g[i].k, 0);
                for (unsigned q = 0; f && q < f->np; q++)
                    if (f->r[q].p == g[i].r[r].p)
                        lo = fmin(lo, f->r[q].p), hi = fmax(hi, f->r[q].p);
            }
    }
    int compared = 0, held = 1;
    char kl[256] = "";
    for (unsigned i = 0; i < ng; i++) {
        const group_t *f = g[i].k && !strcmp(g[i].label, slow) ? find(fast, g[i].mode, g[i].k, 0) : NULL;
        unsigned asked = !nk;
        for (unsigned q = 0; q < nk; q++)
            asked |= ks[q] == g[i].k;
        if (!f || !asked)
            continue;
        compared++;
        held &= shape(&g[i], f, lo, hi);
        snprintf(kl + strlen(kl), sizeof kl - strlen(kl), "%s%s k=%u", *kl ? "," : "", g[i].mode, g[i].k);
    }
    for (unsigned q = 0; q < nk; q++) {
        int seen = 0;
        for (unsigned i = 0; i < ng; i++)
            seen |= g[i].k == ks[q] && !strcmp(g[i].label, slow) && find(fast, g[i].mode, ks[q], 0);
        if (!seen) {
            fprintf(stderr, "arb-engine-shape: --k %u: no spec rows of both '%s' and '%s' at k = %u\n", ks[q], slow, fast, ks[q]);
            return 2;
        }
    }
    if (!compared) {
        fprintf(stderr, "arb-engine-shape: no (mode, k) with spec rows of both '%s' and '%s'\n", slow, fast);
        return 2;
    }
    printf("# seed's shape (speculation loses with '%s', wins with '%s') at %s over acceptance [%.2f, %.2f]%s: %s\n", slow,
           fast, kl, lo, hi, acc ? "" : " (every rate both ran)", held ? "holds" : "not shown");
    return held ? 0 : 1;
}
