/* SPDX-License-Identifier: MIT */
/*
 * The options `arbench profile` and `arbench gate` share: the bootstrap (--alpha, --reps,
 * --seed, each with its accepted range), bounded numbers, comma lists, and reading the
 * results files. Every message starts with "arbench CMD:" (CMD "profile" or "gate") and
 * names the option and the accepted form; the caller prints its usage and exits 2.
 */
#ifndef ARB_ANALYSIS_OPTS_H
#define ARB_ANALYSIS_OPTS_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

#include "analysis/points.h"

/* The bootstrap's entries of a getopt_long table; their values are 'a', 'r' and 's'. */
#define ANALYSIS_BOOTSTRAP_OPTIONS                                                       \
    {"alpha", required_argument, NULL, 'a'}, {"reps", required_argument, NULL, 'r'},   \
        {"seed", required_argument, NULL, 's'}

/* Option c ('a' --alpha in [1e-6, 0.5], 'r' --reps in [100, 1e6], 's' --seed in
 * [0, 2^53]) from arg into *alpha, *reps or *seed. Returns 0, or -1 with a message. */
int analysis_opt_bootstrap(const char *cmd, int c, const char *arg, double *alpha, unsigned *reps,
                           uint64_t *seed);

/* A number in [lo, hi] for the option `name` ("--threshold"). Returns 0, or -1 with a
 * message. */
int analysis_opt_number(const char *cmd, const char *name, const char *s, double lo, double hi,
                        double *out);

/* Splits the comma list s in place into v, NULL-terminated: at most cap - 1 items
 * (empty items dropped, so "," is the empty list). Returns 0, or -1 when there are more;
 * the caller names the option in its message. */
int analysis_opt_list(char *s, const char **v, size_t cap);

/* Appends the results file at path to ps. Returns 0, or -1 with the reader's message. */
int analysis_load(const char *cmd, arb_pointset_t *ps, const char *path);

#endif
