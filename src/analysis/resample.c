/* SPDX-License-Identifier: MIT */
#include "analysis/resample.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/stats.h"

void arb_rng_seed(arb_rng_t *r, uint64_t seed) { r->state = seed; }

uint64_t arb_rng_next(arb_rng_t *r)
{
    /* splitmix64 (Steele, Lea, Flood 2014): good enough for resampling indices. */
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

size_t arb_rng_below(arb_rng_t *r, size_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = arb_rng_next(r);
    while (x >= limit);
    return (size_t)(x % n);
}

double arb_rng_uniform(arb_rng_t *r) { return (double)(arb_rng_next(r) >> 11) * 0x1.0p-53; }

uint64_t arb_hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return (h ^ 0xff) * 1099511628211ull; /* a terminator, so "ab"+"c" != "a"+"bc" */
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void swap_double(double *a, double *b)
{
    double t = *a;
    *a = *b;
    *b = t;
}

/* k-th smallest of v[0..n) by quickselect with a three-way partition; afterwards
 * v[0..k) holds values <= v[k]. v is reordered. */
static double select_kth(double *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* the k-th value is in v[lo..hi) */
    while (hi - lo > 1) {
        double pivot = v[lo + (hi - lo) / 2];
        size_t lt = lo, i = lo, gt = hi;
        while (i < gt) {
            if (v[i] < pivot)
                swap_double(&v[lt++], &v[i++]);
            else if (v[i] > pivot)
                swap_double(&v[i], &v[--gt]);
            else
                i++;
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return pivot;
    }
    return v[k];
}

double arb_median_inplace(double *v, size_t n)
{
    /* Same convention as arb_stats_compute: mean of the two middle values when n is even. */
    double upper = select_kth(v, n, n / 2);
    if (n % 2)
        return upper;
    double lower = v[0];
    for (size_t i = 1; i < n / 2; i++) /* after selection v[0..n/2) holds the smaller half */
        if (v[i] > lower)
            lower = v[i];
    return 0.5 * (lower + upper);
}

static double resampled_median(arb_rng_t *r, const double *v, size_t n, double *scratch)
{
    for (size_t i = 0; i < n; i++)
        scratch[i] = v[arb_rng_below(r, n)];
    return arb_median_inplace(scratch, n);
}

int arb_bootstrap_ratio_ci_runs(const double *num, size_t nnum, const double *const *den,
                                const size_t *nden, size_t nsets, double alpha, unsigned reps,
                                uint64_t seed, double *lo, double *hi)
{
    if (!nnum || !nsets || reps < 2)
        return -1;
    size_t most = nnum;
    for (size_t k = 0; k < nsets; k++) {
        if (!nden[k])
            return -1;
        most = nden[k] > most ? nden[k] : most;
    }
    double *scratch = malloc(most * sizeof *scratch);
    double *ratios = malloc(reps * sizeof *ratios);
    int rc = -1;
    if (!scratch || !ratios)
        goto err_free_buffers;
    arb_rng_t r;
    arb_rng_seed(&r, seed);
    for (unsigned i = 0; i < reps; i++) {
        double mn = resampled_median(&r, num, nnum, scratch);
        double logsum = 0, md = 0;
        for (size_t k = 0; k < nsets; k++) {
            md = resampled_median(&r, den[k], nden[k], scratch);
            if (!(md > 0))
                goto err_free_buffers;
            logsum += log(md);
        }
        /* One run: md itself, not exp(log(md)), which can differ in the last bit, so
         * single-baseline intervals stay what they were. */
        ratios[i] = mn / (nsets == 1 ? md : exp(logsum / (double)nsets));
    }
    qsort(ratios, reps, sizeof *ratios, cmp_double);
    *lo = arb_quantile_sorted(ratios, reps, alpha / 2);
    *hi = arb_quantile_sorted(ratios, reps, 1 - alpha / 2);
    rc = 0;
err_free_buffers:
    free(ratios);
    free(scratch);
    return rc;
}

int arb_bootstrap_ratio_ci(const double *num, size_t nnum, const double *den, size_t nden,
                           double alpha, unsigned reps, uint64_t seed, double *lo, double *hi)
{
    return arb_bootstrap_ratio_ci_runs(num, nnum, &den, &nden, 1, alpha, reps, seed, lo, hi);
}
