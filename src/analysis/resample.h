/* SPDX-License-Identifier: MIT */
/*
 * Seeded bootstrap statistics for comparing two sets of per-iteration times.
 * Deterministic: the same inputs and seed give the same interval on every machine
 * (splitmix64 generator, no libc rand), so gate reports and profiles are reproducible.
 */
#ifndef ARB_RESAMPLE_H
#define ARB_RESAMPLE_H

#include <stddef.h>
#include <stdint.h>

typedef struct arb_rng {
    uint64_t state;
} arb_rng_t;

void arb_rng_seed(arb_rng_t *r, uint64_t seed);
uint64_t arb_rng_next(arb_rng_t *r);
/* Uniform integer in [0, n), n > 0 (rejection sampling, no modulo bias). */
size_t arb_rng_below(arb_rng_t *r, size_t n);
/* Uniform double in [0, 1). */
double arb_rng_uniform(arb_rng_t *r);

/* FNV-1a of s folded into h (start with ARB_HASH_INIT): seeds derived from a point's
 * key, so a point's interval does not depend on which other points are in the file. */
#define ARB_HASH_INIT 14695981039346656037ull
uint64_t arb_hash_str(uint64_t h, const char *s);

/* Median of v[0..n) (n > 0); v is reordered. */
double arb_median_inplace(double *v, size_t n);

/* Percentile bootstrap interval of median(num) / median(den): `reps` times, resample
 * both sets with replacement (independently: they are separate runs) and take the
 * ratio of the resampled medians; lo/hi are the alpha/2 and 1 - alpha/2 quantiles of
 * those ratios. Returns 0, or -1 when a set is empty, a median is 0 or out of memory. */
int arb_bootstrap_ratio_ci(const double *num, size_t nnum, const double *den, size_t nden,
                           double alpha, unsigned reps, uint64_t seed, double *lo, double *hi);
/* The same with several baseline runs: the denominator is the geometric mean of the
 * resampled medians of den[0..nsets) (each run resampled on its own, in order, after
 * num). With nsets = 1 it draws exactly what arb_bootstrap_ratio_ci draws. */
int arb_bootstrap_ratio_ci_runs(const double *num, size_t nnum, const double *const *den,
                                const size_t *nden, size_t nsets, double alpha, unsigned reps,
                                uint64_t seed, double *lo, double *hi);

#endif
