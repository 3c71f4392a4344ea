/* SPDX-License-Identifier: MIT */
/* A/B interleaving, ratio of medians with a bootstrap interval, token agreement. */
#include "stats/ab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "analysis/resample.h"

arb_status_t arb_ab_init(arb_ab_t *ab, unsigned steps, char *why, size_t why_len)
{
    memset(ab, 0, sizeof *ab);
    if (steps == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: steps 0; expected at least 1 step per configuration");
    ab->steps = steps;
    ab->us[0] = calloc(steps, sizeof(double));
    ab->us[1] = calloc(steps, sizeof(double));
    if (!ab->us[0] || !ab->us[1]) {
        arb_ab_free(ab);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "A/B: out of memory for %u steps", steps);
    }
    return ARB_OK;
}

void arb_ab_free(arb_ab_t *ab)
{
    free(ab->us[0]);
    free(ab->us[1]);
    memset(ab, 0, sizeof *ab);
}

arb_status_t arb_ab_record(arb_ab_t *ab, int which, double us, char *why, size_t why_len)
{
    if (which != ARB_AB_A && which != ARB_AB_B)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: configuration %d; expected 0 (A) or 1 (B)", which);
    if (!isfinite(us) || us <= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: step time %g us of %c; expected a finite time > 0", us, "AB"[which]);
    if (ab->n[which] == ab->steps)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: more than %u steps recorded for %c", ab->steps, "AB"[which]);
    ab->us[which][ab->n[which]++] = us;
    return ARB_OK;
}

arb_status_t arb_ab_run(arb_ab_t *ab, arb_ab_step_fn step, void *ctx, char *why, size_t why_len)
{
    for (size_t slot = 0; slot < arb_ab_slots(ab); slot++) {
        int which = arb_ab_which(slot);
        double us = NAN;
        ARB_TRY(step(ctx, which, slot, &us, why, why_len));
        ARB_TRY(arb_ab_record(ab, which, us, why, why_len));
    }
    return ARB_OK;
}

arb_status_t arb_ab_compare(const arb_ab_t *ab, double alpha, unsigned reps, uint64_t seed, arb_ab_result_t *out,
                            char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (ab->n[0] < 2 || ab->n[1] < 2)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: %zu baseline and %zu candidate steps; expected at least 2 of each", ab->n[0], ab->n[1]);
    if (!(alpha > 0 && alpha < 1) || reps == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: alpha %g, reps %u; expected 0 < alpha < 1 and reps >= 1", alpha, reps);
    if (arb_stats_compute(ab->us[0], ab->n[0], &out->a) || arb_stats_compute(ab->us[1], ab->n[1], &out->b))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: a step time is not finite");
    out->speedup = out->a.median / out->b.median;
    out->alpha = alpha;
    out->reps = reps;
    /* The interval of median(A)/median(B): A is the numerator. The two sets are resampled
     * independently (interleaving cancels drift between them, it does not pair them). */
    if (arb_bootstrap_ratio_ci(ab->us[0], ab->n[0], ab->us[1], ab->n[1], alpha, reps, seed, &out->lo, &out->hi))
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "A/B: bootstrap failed (out of memory)");
    return ARB_OK;
}

arb_status_t arb_ab_agreement(const arb_token_trace_t *a, const arb_token_trace_t *b, arb_agreement_t *out,
                              char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (a->per_step == 0 || a->per_step != b->per_step)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "token agreement: %u and %u tokens per step; expected the same step shape, >= 1", a->per_step, b->per_step);
    size_t steps = a->steps < b->steps ? a->steps : b->steps;
    if (steps == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "token agreement: an empty trace (%zu and %zu steps)", a->steps, b->steps);
    out->steps = steps;
    out->identical = 1;
    for (size_t s = 0; s < steps && out->identical; s++)
        for (unsigned j = 0; j < a->per_step; j++) {
            size_t i = s * a->per_step + j;
            if (a->tokens[i] == b->tokens[i])
                continue;
            if (isnan(a->top1[i]) || isnan(a->top2[i]) || isnan(b->top1[i]) || isnan(b->top2[i]))
                ARB_RAISE(ARB_ERR_INVALID, why, why_len, "token agreement: a NaN logit at step %zu token %u", s, j);
            out->identical = 0;
            out->first_step = s;
            out->first_pos = j;
            out->token_a = a->tokens[i];
            out->token_b = b->tokens[i];
            out->margin_a = (double)a->top1[i] - a->top2[i];
            out->margin_b = (double)b->top1[i] - b->top2[i];
            break;
        }
    return ARB_OK;
}

void arb_agreement_text(const arb_agreement_t *g, char *buf, size_t len)
{
    if (g->identical)
        snprintf(buf, len, "identical over %zu steps", g->steps);
    else
        snprintf(buf, len, "first differs at step %zu token %u (A %d margin %.4g, B %d margin %.4g)", g->first_step,
                 g->first_pos, (int)g->token_a, g->margin_a, (int)g->token_b, g->margin_b);
}
