/* SPDX-License-Identifier: MIT */
/*
 * Results files as typed points, for the analysis commands (profile, gate, plots).
 * Every row is validated on load; a malformed file is rejected with a message that
 * names the file, the line and the field, never half-used.
 */
#ifndef ARB_POINTS_H
#define ARB_POINTS_H

#include <stddef.h>

#include "results.h"

typedef struct arb_point {
    /* Strings are borrowed from the owning set's tables. */
    const char *fabric, *impl, *params, *op, *fusion, *dtype, *mode, *check;
    const char *run_id, *gpu, *git_rev;
    const char *source; /* the results file it came from */
    size_t line;        /* its line in that file (the header is line 1) */
    int ranks, nodes;   /* nodes 0 = not recorded */
    size_t bytes;       /* message bytes per rank */
    int pass;           /* check == "pass": only these rows are measurements */
    /* Times in microseconds; NAN unless pass. */
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
 * Rejects: missing columns, a schema other than ARB_RESULTS_SCHEMA, non-numeric or
 * out-of-range ranks/nodes/bytes, and on passing rows a median/p10/p90 that is not a
 * finite positive number, p10 > median > p90, or a malformed samples_us list. On error
 * ps keeps the files loaded before and err names the file, line and column; free ps with
 * arb_points_free either way. */
int arb_points_load(arb_pointset_t *ps, const char *path, char *err, size_t err_len);
/* The same for CSV text in memory; `name` stands for the file in messages. */
int arb_points_load_mem(arb_pointset_t *ps, const char *data, size_t len, const char *name,
                        char *err, size_t err_len);
void arb_points_free(arb_pointset_t *ps);

/* Strict number parsers for CSV fields: the whole field must be the number. */
int arb_parse_u64_field(const char *s, unsigned long long max, unsigned long long *out);
int arb_parse_double_field(const char *s, double *out); /* finite values only */

/* params without its volatile items (the key=value items named in `drop`,
 * NULL-terminated), e.g. "algo=Ring,proto=LL,nccl=2.28.3" minus {"nccl"} ->
 * "algo=Ring,proto=LL". Writes at most len bytes, always terminated. */
void arb_params_strip(const char *params, const char *const *drop, char *out, size_t len);

#endif
