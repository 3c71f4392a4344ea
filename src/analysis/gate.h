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

#include "analysis/points.h"

/* Modes with a default run-to-run noise allowance (used when the baseline holds one
 * run and so cannot show its own between-run spread); any other mode gets eager's. */
enum { ARB_GATE_MODE_EAGER, ARB_GATE_MODE_GRAPH, ARB_GATE_MODE_CONTEXT, ARB_GATE_NMODES };
extern const char *const arb_gate_mode_names[ARB_GATE_NMODES];

typedef struct arb_gate_opts {
    double threshold;  /* relative slowdown tolerated, e.g. 0.05 = 5% */
    double alpha;      /* the bootstrap interval is (1 - alpha) two-sided */
    unsigned reps;     /* bootstrap resamples */
    uint64_t seed;     /* mixed with each point's key: reports are reproducible */
    size_t min_samples; /* fewer samples_us than this on either side: p10/p90 fallback */
    const char *const *volatile_params; /* params keys ignored when matching, NULL-terminated */
    double noise_k;    /* allowance = exp(noise_k * sd of log run medians * sqrt(1 + 1/runs)) */
    double default_noise[ARB_GATE_NMODES]; /* allowance (a ratio >= 1) with one baseline run */
    int allow_missing; /* lost coverage and zero comparisons do not fail the gate */
} arb_gate_opts_t;

void arb_gate_opts_default(arb_gate_opts_t *o);

typedef enum arb_gate_verdict {
    ARB_GATE_OK,           /* within the threshold, or the difference is noise */
    ARB_GATE_IMPROVED,     /* faster by more than the threshold, beyond noise */
    ARB_GATE_REGRESSION,   /* slower by more than the threshold, beyond noise */
    ARB_GATE_FAILED,       /* the candidate's correctness check failed */
    ARB_GATE_NOT_COMPARED, /* the baseline did not pass, or the candidate skipped */
} arb_gate_verdict_t;

/* Where a point's run-to-run noise allowance came from. */
typedef enum arb_gate_noise_src {
    ARB_GATE_NOISE_NONE,    /* not compared */
    ARB_GATE_NOISE_RUNS,    /* this point's baseline runs (and its mode's pooled spread) */
    ARB_GATE_NOISE_POOLED,  /* one run here; the pooled spread of its mode's other points */
    ARB_GATE_NOISE_DEFAULT, /* no baseline point of its mode has 2+ runs: the mode default */
} arb_gate_noise_src_t;

typedef struct arb_gate_point {
    const arb_point_t *base, *cand; /* base: the last passing baseline run's row */
    arb_gate_verdict_t verdict;
    double base_us;       /* geometric mean of the baseline runs' medians (us) */
    double ratio, lo, hi; /* candidate median / base_us and its interval; NAN if absent */
    const char *method;   /* "bootstrap", "p10/p90" or "" (not compared) */
    size_t nruns;         /* passing baseline runs of this point */
    double spread;        /* max / min of those runs' medians; NAN with one run */
    double noise_sd;      /* sd of log run medians used (this point's or its mode's pooled) */
    double allow;         /* run-to-run noise allowance, a ratio >= 1 */
    double bar;           /* max(1 + threshold, allow): the ratio a regression must exceed */
    arb_gate_noise_src_t noise_src;
} arb_gate_point_t;

/* Between-run spread of one mode, pooled over the baseline points with 2+ runs. */
typedef struct arb_gate_mode_noise {
    char mode[32];
    double sd;     /* sqrt(sum of squared deviations of log run medians / dof) */
    size_t dof;    /* sum over points of (runs - 1); 0: nothing to pool */
    size_t points; /* baseline points of this mode with 2+ runs */
} arb_gate_mode_noise_t;

typedef struct arb_gate_result {
    size_t n;
    arb_gate_point_t *pts; /* points present in both files */
    size_t nonly_base, nonly_cand;
    const arb_point_t **only_base, **only_cand;
    size_t ndup_base, ndup_cand; /* rows shadowed by a later row with the same key and run */
    size_t count[ARB_GATE_NOT_COMPARED + 1];
    /* Lost coverage: baseline points measured (passing, or a timed reference floor) that
     * the candidate lacks (missing) or did not pass without failing (skipped). */
    size_t nmissing, nskipped;
    size_t ncompared;            /* ok + improved + regression: points actually judged */
    int allow_missing;           /* the opts' flag, for the exit status and the report */
    size_t nfallback;            /* compared with the p10/p90 rule */
    size_t nruns_base;           /* distinct baseline runs (run_id, or the file without one) */
    size_t nruns_cand;           /* distinct candidate runs: more than 1 is worth a warning */
    int cand_run_in_base;        /* the candidate's (first) run is also a baseline run */
    size_t nnoise[ARB_GATE_NOISE_DEFAULT + 1]; /* compared points by noise source */
    size_t nmodes;
    arb_gate_mode_noise_t modes[8]; /* pooled spread per mode (the first 8 modes seen) */
} arb_gate_result_t;

/* base may hold several runs (several files, or several run_ids in one file): each is
 * one baseline run. Returns 0, or -1 with err set when the files have no point in common. */
int arb_gate_compare(const arb_pointset_t *base, const arb_pointset_t *cand,
                     const arb_gate_opts_t *o, arb_gate_result_t *r, char *err, size_t err_len);
void arb_gate_free(arb_gate_result_t *r);
/* 1 when any point regressed or failed its check, or (unless allow_missing) coverage was
 * lost or nothing was compared; else 0. */
int arb_gate_exit_status(const arb_gate_result_t *r);
const char *arb_gate_verdict_str(arb_gate_verdict_t v);
const char *arb_gate_noise_src_str(arb_gate_noise_src_t s);

/* Reports (gate_report.c): plain text, and markdown written atomically to path. */
void arb_gate_report_text(FILE *f, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                          const arb_pointset_t *base, const arb_pointset_t *cand);
int arb_gate_report_md(const char *path, const arb_gate_result_t *r, const arb_gate_opts_t *o,
                       const arb_pointset_t *base, const arb_pointset_t *cand, char *err,
                       size_t err_len);

#endif
