/* SPDX-License-Identifier: MIT */
/*
 * A/B of two engine configurations in one run (docs/engine-e2e.md): both models are
 * built and prefilled, then their steps alternate A, B, A, B, ... (engine/stats/ab.h's
 * schedule). Decode: each configuration feeds back its own greedy token, so the two
 * token streams can be compared; verify: both verify the same blocks (the baseline's
 * decode continuation, as the single-configuration verify does), so their outputs can.
 * The caller supplies one step function per configuration; times are what the step
 * reports (the driver's: the maximum over ranks), tokens are the distributed greedy
 * argmax, top-2 the distributed two largest logits (engine/run/top2.h).
 */
#ifndef ARB_ENGINE_AB_RUN_H
#define ARB_ENGINE_AB_RUN_H

#include <stdint.h>

#include "stats/ab.h"
#include "run/top2.h"

#define ARB_AB_MAX_T 64 /* tokens per step */

typedef struct arb_ab_side {
    /* One step of T tokens at positions pos0 .. pos0 + T - 1: *us its time, greedy[T]
     * the argmax after each token, top2[T] the two largest logits there. */
    arb_status_t (*step)(void *ctx, const uint32_t *tokens, unsigned T, unsigned pos0, double *us, uint32_t *greedy,
                         arb_top2_t *top2, char *why, size_t why_len);
    void *ctx;
} arb_ab_side_t;

typedef struct arb_ab_phase {
    unsigned T, steps;
    arb_ab_t times;          /* per-step times of A and B */
    uint32_t *tokens[2];     /* [steps * T] greedy outputs */
    float *top1[2], *top2[2];/* [steps * T] */
    arb_ab_result_t cmp;     /* speedup = median(A) / median(B) with its interval */
    arb_agreement_t agree;
} arb_ab_phase_t;

typedef struct arb_ab_opts {
    unsigned steps;  /* per configuration and phase */
    unsigned k;      /* verify T = k + 1 */
    unsigned pos0;   /* first decode position (the context length) */
    uint32_t g0[2];  /* each configuration's first decode input (its prefill's last greedy token) */
    double alpha;    /* bootstrap level 1 - alpha */
    unsigned reps;
    uint64_t seed;
} arb_ab_opts_t;

/* Runs the interleaved decode phase, then the interleaved verify phase, and compares
 * each. Free with arb_ab_phase_free. */
arb_status_t arb_ab_run_phases(const arb_ab_side_t side[2], const arb_ab_opts_t *o, arb_ab_phase_t *decode,
                               arb_ab_phase_t *verify, char *why, size_t why_len);
void arb_ab_phase_free(arb_ab_phase_t *p);

#endif
