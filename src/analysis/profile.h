/* SPDX-License-Identifier: MIT */
/*
 * Tuning profiles: which all-reduce (implementation + params) to use for each
 * (fabric, ranks, nodes, dtype, op, mode) and range of message sizes, built from
 * results files. docs/profile.md documents the CSV and JSON formats and the rules.
 */
#ifndef ARB_PROFILE_H
#define ARB_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/points.h"

#define ARB_PROFILE_SCHEMA 1

typedef struct arb_profile_opts {
    double min_speedup;   /* a candidate must beat the baseline (NCCL) by this ratio (>= 1) */
    double alpha;         /* the bootstrap interval is (1 - alpha) two-sided */
    unsigned reps;        /* bootstrap resamples */
    uint64_t seed;        /* mixed with each point's key */
    size_t min_samples;   /* fewer samples than this on either side: p10/p90 rule */
    const char *const *exclude; /* impls never chosen besides the reference floors (role.h), NULL-terminated; NULL: none */
} arb_profile_opts_t;

void arb_profile_opts_default(arb_profile_opts_t *o);

typedef struct arb_profile_entry {
    char *fabric, *dtype, *op, *mode;
    int ranks, nodes;             /* nodes 0 = not recorded */
    size_t min_bytes, max_bytes;  /* inclusive, message bytes per rank */
    char *impl, *params, *fusion;
    arb_role_t role;              /* the winner's: baseline (NCCL keeps the range) or candidate */
    double median_us;             /* winner at rep_bytes */
    size_t rep_bytes, points;     /* representative measured size; sizes measured in range */
    char *baseline_impl, *baseline_params; /* "" when no NCCL row was measured */
    double baseline_median_us, speedup;    /* NAN when no baseline */
    char *confidence;
    char *sources;
} arb_profile_entry_t;

typedef struct arb_profile {
    size_t n;
    arb_profile_entry_t *e;
    size_t nsources;
    char **source_files;  /* [nsources] */
    char **source_runs;   /* [nsources] run_ids of that file, space-separated */
} arb_profile_t;

/* Builds the profile of every passing point in ps. Returns 0, or -1 with err set
 * (no passing rows, out of memory). */
int arb_profile_build(const arb_pointset_t *ps, const arb_profile_opts_t *o, arb_profile_t *out,
                      char *err, size_t err_len);
void arb_profile_free(arb_profile_t *p);

/* Written atomically (PATH.tmp.PID, fsync, rename). */
int arb_profile_write_csv(const arb_profile_t *p, const char *path, char *err, size_t err_len);
int arb_profile_write_json(const arb_profile_t *p, const char *path, char *err, size_t err_len);
/* A human-readable table. */
void arb_profile_print(const arb_profile_t *p, FILE *f);

/* Reads a profile CSV (columns by name; extra columns ignored). Rejects a file cut off
 * mid-row, a schema other than ARB_PROFILE_SCHEMA, bad numbers, min_bytes > max_bytes, a
 * row whose figures disagree (profile_row.h) and overlapping ranges within one (fabric,
 * ranks, nodes, dtype, op, mode). A file without the role column (older profiles) gets
 * the role derived from impl (role.h). */
int arb_profile_read(const char *path, arb_profile_t *p, char *err, size_t err_len);
int arb_profile_read_mem(const char *data, size_t len, const char *name, arb_profile_t *p,
                         char *err, size_t err_len);

/* The entry covering bytes, or NULL. nodes 0 matches any entry; an entry with nodes 0
 * matches any nodes. */
const arb_profile_entry_t *arb_profile_lookup(const arb_profile_t *p, const char *fabric, int ranks,
                                              int nodes, const char *dtype, const char *op,
                                              const char *mode, size_t bytes);

#endif
