/* SPDX-License-Identifier: MIT */
/*
 * Results files as typed points, for the analysis commands (profile, gate, plots).
 * Every row is validated on load; a malformed file is rejected with a message that
 * names the file, the line and the field, never half-used.
 */
#ifndef ARB_POINTS_H
#define ARB_POINTS_H

#include <stddef.h>

#include "results/results.h"
#include "results/role.h"

typedef struct arb_point {
    /* Strings are borrowed from the owning set's tables. */
    const char *fabric, *impl, *params, *op, *fusion, *dtype, *mode, *check;
    const char *run_id, *gpu, *git_rev, *env; /* env "" when the file has no such column */
    const char *source; /* the results file it came from */
    size_t line;        /* its line in that file (the header is line 1) */
    int ranks, nodes;   /* nodes 0 = not recorded */
    size_t bytes;       /* message bytes per rank */
    int pass;           /* check == "pass": only these rows are measurements */
    arb_role_t role;    /* the `role` column, or derived for files written before it */
    int timed;          /* has statistics: every passing row, and reference floors */
    /* Times in microseconds; NAN unless timed. */
    double median_us, p10_us, p90_us;
    double *samples_us; /* per-iteration times (max over ranks), owned; may be NULL */
    size_t nsamples;
} arb_point_t;

typedef struct arb_pointset {
    size_t n;
    arb_point_t *p;
    size_t nfiles;
    char **paths;        /* [nfiles] */
    arb_table_t *tables; /* [nfiles] */
} arb_pointset_t;

/* Columns a results file must have for the analysis commands. */
extern const char *const arb_points_required[];

/* Reads one results file and appends its rows to ps (zero-initialise ps first).
 * Rejects: a file cut off mid-row (results.h), missing columns, a schema other than
 * ARB_RESULTS_SCHEMA, non-numeric or out-of-range ranks/nodes/bytes, an unknown role,
 * and on passing rows (and any row with a median) a median/p10/p90 that is not a finite
 * positive number, p10 > median > p90, a malformed samples_us list, or statistics the
 * row's own samples contradict (arb_points_check_samples). On error
 * ps keeps the files loaded before and err names the file, line and column; free ps with
 * arb_points_free either way. */
int arb_points_load(arb_pointset_t *ps, const char *path, char *err, size_t err_len);
/* The same for CSV text in memory; `name` stands for the file in messages. */
int arb_points_load_mem(arb_pointset_t *ps, const char *data, size_t len, const char *name,
                        char *err, size_t err_len);
void arb_points_free(arb_pointset_t *ps);

/* Do the statistics of a row agree with its stored samples? n_total: the `iters` column
 * (all samples taken; 0 = unknown). With n_total <= ARB_RESULTS_MAX_STORED_SAMPLES every
 * sample is stored and median/p10/p90 (and min, max, mean where given: NAN = absent)
 * must equal those of the samples up to the writer's 3-decimal rounding. With more,
 * the writer stored every ceil(n/4096)-th sample: their count must be what that stride
 * gives, min/max must bound them, and median/p10/p90 must sit at their quantile among
 * them within +-0.05 (the strided quantile's spread at 4096 samples is ~0.008).
 * Returns NULL, or what disagrees (written into why). */
const char *arb_points_check_samples(const double *samples, size_t n, size_t n_total, double median,
                                     double p10, double p90, double min, double max, double mean,
                                     char *why, size_t why_len);

/* Where a point was measured: (fabric, ranks, nodes, dtype, op, mode). One figure, one
 * profile group (its size ranges), one plot: within a key only the implementation
 * (impl, params, fusion) and the size vary. Strings borrowed from the point. */
typedef struct arb_point_key {
    const char *fabric;
    int ranks, nodes; /* nodes 0 = not recorded: a value of its own, not a wildcard */
    const char *dtype, *op, *mode;
} arb_point_key_t;

arb_point_key_t arb_point_key(const arb_point_t *p);
/* Orders keys by fabric, ranks, nodes, dtype, op, mode (strings by strcmp): < 0, 0 (the
 * same key) or > 0. */
int arb_point_key_cmp(arb_point_key_t a, arb_point_key_t b);

/* Strict number parsers for CSV fields: the whole field must be the number. */
int arb_parse_u64_field(const char *s, unsigned long long max, unsigned long long *out);
int arb_parse_double_field(const char *s, double *out); /* finite values only */

/* params without its volatile items (the key=value items named in `drop`,
 * NULL-terminated), e.g. "algo=Ring,proto=LL,nccl=2.28.3" minus {"nccl"} ->
 * "algo=Ring,proto=LL". Writes at most len bytes, always terminated. */
void arb_params_strip(const char *params, const char *const *drop, char *out, size_t len);

#endif
