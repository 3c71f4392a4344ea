/* SPDX-License-Identifier: MIT */
/* A/B interleaving on synthetic timings with known ratios and drift; token agreement. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "stats/ab.h"
#include "analysis/resample.h"
#include "tap.h"

/* A synthetic engine: step time = base * (1 + drift * slot) * lognormal noise, with the
 * baseline (A) `ratio` times slower than the candidate (B). */
typedef struct synth {
    double base_us, ratio, drift, sigma;
    arb_rng_t rng;
    size_t calls;
} synth_t;

static double gauss(arb_rng_t *r)
{
    double u1 = arb_rng_uniform(r), u2 = arb_rng_uniform(r);
    return sqrt(-2.0 * log(1.0 - u1)) * cos(2.0 * M_PI * u2);
}

static arb_status_t synth_step(void *ctx, int which, size_t slot, double *us, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    synth_t *s = ctx;
    s->calls++;
    double t = s->base_us * (1.0 + s->drift * (double)slot) * exp(s->sigma * gauss(&s->rng));
    *us = which == ARB_AB_A ? t * s->ratio : t;
    return ARB_OK;
}

static arb_ab_result_t run_synth(double ratio, double drift, double sigma, unsigned steps, uint64_t seed)
{
    synth_t s = {.base_us = 11000, .ratio = ratio, .drift = drift, .sigma = sigma};
    arb_rng_seed(&s.rng, seed);
    arb_ab_t ab;
    arb_ab_result_t res = {0};
    char why[256];
    TAP_CHECK(arb_ab_init(&ab, steps, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_ab_run(&ab, synth_step, &s, why, sizeof why) == ARB_OK);
    TAP_CHECK(s.calls == 2u * steps && ab.n[0] == steps && ab.n[1] == steps);
    TAP_CHECK(arb_ab_compare(&ab, 0.05, 2000, seed, &res, why, sizeof why) == ARB_OK);
    arb_ab_free(&ab);
    return res;
}

static void test_schedule(void)
{
    arb_ab_t ab;
    char why[128];
    TAP_CHECK(arb_ab_init(&ab, 5, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_ab_slots(&ab) == 10);
    int seq[10];
    for (size_t i = 0; i < 10; i++)
        seq[i] = arb_ab_which(i);
    static const int want[10] = {0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
    TAP_CHECK(memcmp(seq, want, sizeof want) == 0);
    TAP_CHECK(arb_ab_record(&ab, ARB_AB_A, NAN, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(arb_ab_record(&ab, ARB_AB_A, -1, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(arb_ab_record(&ab, 2, 1, why, sizeof why) == ARB_ERR_INVALID);
    for (int i = 0; i < 5; i++)
        TAP_CHECK(arb_ab_record(&ab, ARB_AB_B, 10 + i, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_ab_record(&ab, ARB_AB_B, 10, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "more than 5"));
    arb_ab_result_t r;
    TAP_CHECK(arb_ab_compare(&ab, 0.05, 100, 1, &r, why, sizeof why) == ARB_ERR_INVALID); /* no A steps */
    arb_ab_free(&ab);
    TAP_CHECK(arb_ab_init(&ab, 0, why, sizeof why) == ARB_ERR_INVALID);
}

static void test_known_speedup(void)
{
    /* 1.25x with 3% noise and 10% drift over the run: recovered, inside a tight interval. */
    arb_ab_result_t r = run_synth(1.25, 0.10 / 400, 0.03, 200, 7);
    printf("# 1.25x: speedup %.4f [%.4f, %.4f]\n", r.speedup, r.lo, r.hi);
    TAP_CHECK(r.lo <= 1.25 && 1.25 <= r.hi);
    TAP_CHECK(fabs(r.speedup - 1.25) < 0.03);
    TAP_CHECK(r.hi - r.lo < 0.1 && r.lo > 1.15); /* and it tells 1.25 from a tie */
    TAP_CHECK(r.a.median > r.b.median);
    /* the other way round: a candidate slower by 1.25x gives 0.8 */
    r = run_synth(0.8, 0, 0.03, 200, 8);
    TAP_CHECK(r.lo <= 0.8 && 0.8 <= r.hi && r.hi < 1);
}

static void test_equal_contains_one(void)
{
    int contained = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        arb_ab_result_t r = run_synth(1.0, 0.2 / 200, 0.05, 100, seed);
        contained += r.lo <= 1.0 && 1.0 <= r.hi;
    }
    printf("# equal timings: 1 inside %d of 20 intervals (95%% level)\n", contained);
    TAP_CHECK(contained >= 17); /* P(< 17 of 20 | 95% coverage) ~ 1.6% */
}

static void test_interleaving_cancels_drift(void)
{
    /* Equal configurations, 30% drift over the run: interleaved the interval holds 1;
     * run in blocks (all A, then all B) the same drift would fake a speedup. */
    arb_ab_result_t r = run_synth(1.0, 0.3 / 200, 0.01, 100, 3);
    TAP_CHECK(r.lo <= 1.0 && 1.0 <= r.hi);
    arb_ab_t ab;
    char why[128];
    TAP_CHECK(arb_ab_init(&ab, 100, why, sizeof why) == ARB_OK);
    synth_t s = {.base_us = 11000, .ratio = 1.0, .drift = 0.3 / 200, .sigma = 0.01};
    arb_rng_seed(&s.rng, 3);
    for (size_t slot = 0; slot < 200; slot++) {
        int which = slot < 100 ? ARB_AB_A : ARB_AB_B;
        double us;
        synth_step(&s, which, slot, &us, why, sizeof why);
        TAP_CHECK(arb_ab_record(&ab, which, us, why, sizeof why) == ARB_OK);
    }
    arb_ab_result_t blocked;
    TAP_CHECK(arb_ab_compare(&ab, 0.05, 2000, 3, &blocked, why, sizeof why) == ARB_OK);
    printf("# drift: interleaved %.4f [%.4f, %.4f], blocked %.4f [%.4f, %.4f]\n", r.speedup, r.lo, r.hi,
           blocked.speedup, blocked.lo, blocked.hi);
    TAP_CHECK(blocked.hi < 1.0);
    arb_ab_free(&ab);
}

static void test_agreement(void)
{
    enum { STEPS = 8, T = 3 };
    int32_t ta[STEPS * T], tb[STEPS * T];
    float a1[STEPS * T], a2[STEPS * T], b1[STEPS * T], b2[STEPS * T];
    for (int i = 0; i < STEPS * T; i++) {
        ta[i] = tb[i] = (i * 7919) % 163840;
        a1[i] = b1[i] = 10.0f + i, a2[i] = b2[i] = 9.0f + i;
    }
    arb_token_trace_t A = {ta, a1, a2, STEPS, T}, B = {tb, b1, b2, STEPS, T};
    arb_agreement_t g;
    char why[256], text[256];
    TAP_CHECK(arb_ab_agreement(&A, &B, &g, why, sizeof why) == ARB_OK && g.identical && g.steps == STEPS);
    arb_agreement_text(&g, text, sizeof text);
    TAP_CHECK(strcmp(text, "identical over 8 steps") == 0);
    /* step 5, token 2 differs, a near tie in B; a later difference is not the first */
    tb[5 * T + 2] = 42;
    b1[5 * T + 2] = 3.5f, b2[5 * T + 2] = 3.49f;
    a1[5 * T + 2] = 4.0f, a2[5 * T + 2] = 3.75f;
    tb[7 * T] = 43;
    TAP_CHECK(arb_ab_agreement(&A, &B, &g, why, sizeof why) == ARB_OK);
    TAP_CHECK(!g.identical && g.first_step == 5 && g.first_pos == 2 && g.token_b == 42 && g.token_a == ta[5 * T + 2]);
    TAP_CHECK(fabs(g.margin_a - 0.25) < 1e-6 && fabs(g.margin_b - 0.01) < 1e-5);
    arb_agreement_text(&g, text, sizeof text);
    TAP_CHECK(strstr(text, "step 5 token 2") && strstr(text, "margin 0.25"));
    /* a shorter trace compares the common steps */
    B.steps = 5;
    TAP_CHECK(arb_ab_agreement(&A, &B, &g, why, sizeof why) == ARB_OK && g.identical && g.steps == 5);
    B.per_step = 1;
    TAP_CHECK(arb_ab_agreement(&A, &B, &g, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "tokens per step"));
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"schedule", test_schedule},
        {"known_speedup", test_known_speedup},
        {"equal_contains_one", test_equal_contains_one},
        {"interleaving_cancels_drift", test_interleaving_cancels_drift},
        {"agreement", test_agreement},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
