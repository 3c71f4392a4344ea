/* SPDX-License-Identifier: MIT */
/* Interleaved A/B decode and verify phases over two engine configurations. */
#include "run/ab_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"

void arb_ab_phase_free(arb_ab_phase_t *p)
{
    arb_ab_free(&p->times);
    for (int s = 0; s < 2; s++) {
        free(p->tokens[s]);
        free(p->top1[s]);
        free(p->top2[s]);
    }
    memset(p, 0, sizeof *p);
}

static arb_status_t phase_alloc(arb_ab_phase_t *p, unsigned T, unsigned steps, char *why, size_t why_len)
{
    memset(p, 0, sizeof *p);
    p->T = T, p->steps = steps;
    ARB_TRY(arb_ab_init(&p->times, steps, why, why_len));
    size_t n = (size_t)steps * T;
    for (int s = 0; s < 2; s++) {
        p->tokens[s] = calloc(n, sizeof *p->tokens[s]);
        p->top1[s] = calloc(n, sizeof *p->top1[s]);
        p->top2[s] = calloc(n, sizeof *p->top2[s]);
        if (!p->tokens[s] || !p->top1[s] || !p->top2[s]) {
            arb_ab_phase_free(p);
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "A/B: out of memory for %u steps of %u tokens", steps, T);
        }
    }
    return ARB_OK;
}

/* The phase's step for engine/stats/ab.h's schedule (arb_ab_run): slot i runs side
 * which = arb_ab_which(i) on its input of step i / 2, its outputs at that step. */
typedef struct phase_run {
    const arb_ab_side_t *side;
    arb_ab_phase_t *p;
    uint32_t *stream[2]; /* decode: each side's greedy stream, fed back; verify: NULL */
    const uint32_t *blocks; /* verify: both sides verify A's stream[i .. i + k] */
    unsigned pos0;
} phase_run_t;

static arb_status_t phase_step(void *ctx, int which, size_t slot, double *us, char *why, size_t why_len)
{
    phase_run_t *x = ctx;
    arb_ab_phase_t *p = x->p;
    const unsigned i = (unsigned)(slot / 2);
    const size_t at = (size_t)i * p->T;
    const uint32_t *in = x->blocks ? &x->blocks[i] : &x->stream[which][i];
    arb_top2_t t2[ARB_AB_MAX_T];
    ARB_TRY(x->side[which].step(x->side[which].ctx, in, p->T, x->pos0 + i, us, p->tokens[which] + at, t2, why,
                                why_len));
    for (unsigned t = 0; t < p->T; t++)
        p->top1[which][at + t] = t2[t].v1, p->top2[which][at + t] = t2[t].v2;
    if (!x->blocks)
        x->stream[which][i + 1] = p->tokens[which][at];
    return ARB_OK;
}

static arb_status_t compare(arb_ab_phase_t *p, const arb_ab_opts_t *o, char *why, size_t why_len)
{
    ARB_TRY(arb_ab_compare(&p->times, o->alpha, o->reps, o->seed, &p->cmp, why, why_len));
    arb_token_trace_t a = {(const int32_t *)p->tokens[0], p->top1[0], p->top2[0], p->steps, p->T};
    arb_token_trace_t b = {(const int32_t *)p->tokens[1], p->top1[1], p->top2[1], p->steps, p->T};
    return arb_ab_agreement(&a, &b, &p->agree, why, why_len);
}

arb_status_t arb_ab_run_phases(const arb_ab_side_t side[2], const arb_ab_opts_t *o, arb_ab_phase_t *decode,
                               arb_ab_phase_t *verify, char *why, size_t why_len)
{
    memset(decode, 0, sizeof *decode);
    memset(verify, 0, sizeof *verify);
    if (o->k == 0 || o->k + 1 > ARB_AB_MAX_T || o->steps < 2)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "A/B: %u steps, k %u; expected at least 2 steps and 1 <= k <= %d", o->steps, o->k, ARB_AB_MAX_T - 1);
    /* Decode: A's stream needs steps + k tokens (the verify blocks' drafts), fed back one by one. */
    const unsigned S = o->steps, k = o->k;
    uint32_t *stream[2] = {calloc(S + k + 1, sizeof(uint32_t)), calloc(S + k + 1, sizeof(uint32_t))};
    arb_status_t st = ARB_OK;
    if (!stream[0] || !stream[1])
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, why_len, "A/B: out of memory");
    ARB_TRY_GOTO(st, phase_alloc(decode, 1, S, why, why_len), out);
    ARB_TRY_GOTO(st, phase_alloc(verify, k + 1, S, why, why_len), out);
    stream[0][0] = o->g0[0], stream[1][0] = o->g0[1];
    phase_run_t dx = {.side = side, .p = decode, .stream = {stream[0], stream[1]}, .pos0 = o->pos0};
    ARB_TRY_GOTO(st, arb_ab_run(&decode->times, phase_step, &dx, why, why_len), out);
    /* k more untimed decode steps of A: the drafts of the last verify blocks */
    for (unsigned i = S; i < S + k; i++) {
        double us;
        uint32_t g;
        arb_top2_t t2;
        ARB_TRY_GOTO(st, side[0].step(side[0].ctx, &stream[0][i], 1, o->pos0 + i, &us, &g, &t2, why, why_len), out);
        stream[0][i + 1] = g;
    }
    ARB_TRY_GOTO(st, compare(decode, o, why, why_len), out);
    /* Verify: block i = A's stream[i .. i + k] at positions pos0 + i .., for both. */
    phase_run_t vx = {.side = side, .p = verify, .blocks = stream[0], .pos0 = o->pos0};
    ARB_TRY_GOTO(st, arb_ab_run(&verify->times, phase_step, &vx, why, why_len), out);
    ARB_TRY_GOTO(st, compare(verify, o, why, why_len), out);
out:
    free(stream[0]);
    free(stream[1]);
    if (st != ARB_OK) {
        arb_ab_phase_free(decode);
        arb_ab_phase_free(verify);
    }
    return st;
}
