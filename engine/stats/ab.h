/* SPDX-License-Identifier: MIT */
/*
 * A/B in one run: the baseline (A) and the candidate (B) run the same steps interleaved
 * A, B, A, B, ... so that drift (clocks, temperature, other tenants) lands on both
 * alike; per-step times are kept for each and compared by the ratio of medians with a
 * seeded percentile-bootstrap interval (src/analysis/resample.h). Token agreement compares the
 * greedy tokens of both runs step by step and, at the first difference, reports the
 * logit margin (top-1 minus top-2) of each run there: a near-zero margin means rounding
 * chose between two almost equal logits; a large one means the runs compute different
 * functions. docs/engine-e2e.md.
 */
#ifndef ARB_ENGINE_AB_H
#define ARB_ENGINE_AB_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"
#include "base/stats.h"

enum { ARB_AB_A = 0, ARB_AB_B = 1 }; /* A = baseline, B = candidate */

typedef struct arb_ab {
    unsigned steps;   /* per configuration */
    double *us[2];    /* [steps] per configuration, in run order, microseconds */
    size_t n[2];
} arb_ab_t;

arb_status_t arb_ab_init(arb_ab_t *ab, unsigned steps, char *why, size_t why_len);
void arb_ab_free(arb_ab_t *ab);

/* The schedule: slot i in [0, 2 * steps) runs configuration arb_ab_which(i). */
static inline int arb_ab_which(size_t slot) { return (int)(slot & 1u); }
static inline size_t arb_ab_slots(const arb_ab_t *ab) { return 2u * ab->steps; }

/* Records one step time (us, finite and > 0) of configuration `which`. */
arb_status_t arb_ab_record(arb_ab_t *ab, int which, double us, char *why, size_t why_len);

/* Runs the whole schedule: step(ctx, which, slot, &us) for each slot in order, recording
 * each time. Stops at the first step that does not return ARB_OK (its reason in why). */
typedef arb_status_t (*arb_ab_step_fn)(void *ctx, int which, size_t slot, double *us, char *why, size_t why_len);
arb_status_t arb_ab_run(arb_ab_t *ab, arb_ab_step_fn step, void *ctx, char *why, size_t why_len);

typedef struct arb_ab_result {
    arb_stats_t a, b;     /* per-step statistics, us */
    double speedup;       /* median(A) / median(B): > 1 when the candidate is faster (= tok/s ratio) */
    double lo, hi;        /* bootstrap interval of speedup, two-sided level 1 - alpha */
    double alpha;
    unsigned reps;
} arb_ab_result_t;

/* ARB_ERR_INVALID when either side has fewer than 2 steps. */
arb_status_t arb_ab_compare(const arb_ab_t *ab, double alpha, unsigned reps, uint64_t seed, arb_ab_result_t *out,
                            char *why, size_t why_len);

/* One run's greedy output: per step `per_step` tokens (1 for decode, k + 1 for verify),
 * and for each token its top-1 and top-2 logits. Arrays of steps * per_step entries. */
typedef struct arb_token_trace {
    const int32_t *tokens;
    const float *top1, *top2;
    size_t steps;
    unsigned per_step;
} arb_token_trace_t;

typedef struct arb_agreement {
    int identical;       /* 1: every token of every compared step is the same */
    size_t steps;        /* steps compared (the shorter trace) */
    size_t first_step;   /* first step that differs (when !identical) */
    unsigned first_pos;  /* token index within that step */
    int32_t token_a, token_b;
    double margin_a, margin_b; /* top1 - top2 there, each run's own logits */
} arb_agreement_t;

/* ARB_ERR_INVALID for traces of different per_step, an empty trace or a NaN logit. */
arb_status_t arb_ab_agreement(const arb_token_trace_t *a, const arb_token_trace_t *b, arb_agreement_t *out,
                              char *why, size_t why_len);
/* "identical over N steps" or "first differs at step S token P (A 123 margin 0.0312, B 77 margin 0.0040)". */
void arb_agreement_text(const arb_agreement_t *g, char *buf, size_t len);

#endif
