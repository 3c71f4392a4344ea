/* SPDX-License-Identifier: MIT */
#include "base/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double arb_quantile_sorted(const double *sorted, size_t n, double q)
{
    if (n == 0)
        return NAN;
    if (q <= 0)
        return sorted[0];
    if (q >= 1)
        return sorted[n - 1];
    double pos = q * (double)(n - 1);
    size_t lo = (size_t)pos;
    double frac = pos - (double)lo;
    if (lo + 1 >= n)
        return sorted[n - 1];
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}

int arb_stats_compute(const double *samples, size_t n, arb_stats_t *out)
{
    memset(out, 0, sizeof *out);
    if (n == 0)
        return -1;
    double *s = malloc(n * sizeof *s);
    if (!s)
        return -1;
    double sum = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(samples[i])) {
            free(s);
            return -1;
        }
        s[i] = samples[i];
        sum += s[i];
    }
    qsort(s, n, sizeof *s, cmp_double);
    out->n = n;
    out->min = s[0];
    out->max = s[n - 1];
    out->mean = sum / (double)n;
    double ss = 0;
    for (size_t i = 0; i < n; i++)
        ss += (s[i] - out->mean) * (s[i] - out->mean);
    out->stdev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    out->median = arb_quantile_sorted(s, n, 0.5);
    out->p10 = arb_quantile_sorted(s, n, 0.10);
    out->p90 = arb_quantile_sorted(s, n, 0.90);
    out->p99 = arb_quantile_sorted(s, n, 0.99);
    free(s);
    return 0;
}

double arb_algbw_gbs(size_t bytes, double us)
{
    return us > 0 ? (double)bytes / (us * 1e3) : 0.0;
}

double arb_busbw_gbs(size_t bytes, double us, int nranks)
{
    if (nranks < 1)
        return 0.0;
    return arb_algbw_gbs(bytes, us) * 2.0 * (nranks - 1) / nranks;
}
