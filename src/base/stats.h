/* SPDX-License-Identifier: MIT */
/* Summary statistics of per-iteration times (microseconds). */
#ifndef ARB_STATS_H
#define ARB_STATS_H

#include <stddef.h>

typedef struct arb_stats {
    size_t n;
    double median, p10, p90, p99, mean, stdev, min, max; /* us */
} arb_stats_t;

/* Computes the statistics of samples[0..n); percentiles interpolate linearly between
 * order statistics. Returns -1 when n is 0 or a sample is not finite. */
int arb_stats_compute(const double *samples, size_t n, arb_stats_t *out);

/* 1 when two measurements' p10..p90 ranges [a10, a90] and [b10, b90] do not overlap (touching
 * ranges overlap): the rule the tables use to show a difference of medians as apart from both
 * spreads (the sweep's summary, the engine's all-reduce share). */
static inline int arb_spreads_apart(double a10, double a90, double b10, double b90) { return a90 < b10 || b90 < a10; }

/* Quantile q in [0,1] of sorted[0..n) with linear interpolation. */
double arb_quantile_sorted(const double *sorted, size_t n, double q);

/* Algorithm and bus bandwidth in GB/s (1e9 B/s) for an all-reduce of `bytes` per rank
 * taking `us`: algbw = bytes / time; busbw = algbw * 2 (n - 1) / n (nccl-tests). */
double arb_algbw_gbs(size_t bytes, double us);
double arb_busbw_gbs(size_t bytes, double us, int nranks);

#endif
