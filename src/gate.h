/* SPDX-License-Identifier: MIT */
/*
 * The CI regression gate: compares a candidate results file with a baseline point by
 * point with a noise-aware test. docs/gate.md defines matching, the test and the exit
 * status precisely.
 */
#ifndef ARB_GATE_H
#define ARB_GATE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "points.h"

typedef struct arb_gate_opts {
    double threshold;  /* relative slowdown tolerated, e.g. 0.05 = 5% */
    double alpha;      /* the bootstrap interval is (1 - alpha) two-sided */
    unsigned reps;     /* bootstrap resamples */
    uint64_t seed;     /* mixed with each point's key: reports are reproducible */
    size_t min_samples; /* fewer samples_us than this on either side: p10/p90 fallback */
    const char *const *volatile_params; /* params keys ignored when matching, NULL-terminated */
} arb_gate_opts_t;

void arb_gate_opts_default(arb_gate_opts_t *o);

typedef enum arb_gate_verdict {
    ARB_GATE_OK,           /* within the threshold, or the difference is noise */
    ARB_GATE_IMPROVED,     /* faster by more than the threshold, beyond noise */
    ARB_GATE_REGRESSION,   /* slower by more than the threshold, beyond noise */
    ARB_GATE_FAILED,       /* the candidate's correctness check failed */
    ARB_GATE_NOT_COMPARED, /* the baseline did not pass, or the candidate skipped */
} arb_gate_verdict_t;

typedef struct arb_gate_point {
    const arb_point_t *base, *cand;
    arb_gate_verdict_t verdict;
    double ratio, lo, hi; /* candidate/baseline medians and its interval; NAN if absent */
    const char *method;   /* "bootstrap", "p10/p90" or "" (not compared) */
} arb_gate_point_t;

typedef struct arb_gate_result {
    size_t n;
    arb_gate_point_t *pts; /* points present in both files */
    size_t nonly_base, nonly_cand;
    const arb_point_t **only_base, **only_cand;
    size_t ndup_base, ndup_cand; /* rows shadowed by a later row with the same key */
    size_t count[ARB_GATE_NOT_COMPARED + 1];
    size_t nfallback;            /* compared with the p10/p90 rule */
} arb_gate_result_t;

/* Returns 0, or -1 with err set when the files have no point in common. */
int arb_gate_compare(const arb_pointset_t *base, const arb_pointset_t *cand,
                     const arb_gate_opts_t *o, arb_gate_result_t *r, char *err, size_t err_len);
void arb_gate_free(arb_gate_result_t *r);
/* 1 when any point regressed or failed its check, else 0. */
int arb_gate_exit_status(const arb_gate_result_t *r);
const char *arb_gate_verdict_str(arb_gate_verdict_t v);

/* Reports (gate_report.c): plain text, and markdown written atomically to path. */
void arb_gate_report_text(FILE *f, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                          const arb_pointset_t *base, const arb_pointset_t *cand);
int arb_gate_report_md(const char *path, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                       const arb_pointset_t *base, const arb_pointset_t *cand, char *err,
                       size_t err_len);

#endif
