/* SPDX-License-Identifier: MIT */
/* engine/model/rope.c against values computed by hand from HF's YaRN formulas. */
#include <math.h>

#include "tap.h"
#include "model/config.h"
#include "model/rope.h"

static char why[1024];

/* Kimi-K2: dr 64, theta 50000, factor 32, beta_fast = beta_slow = 1, orig 4096.
 * d(1) = 64 ln(4096 / 2pi) / (2 ln 50000) = 64 * 6.47997 / 21.6396 = 19.165, so
 * low = floor = 19, high = ceil = 20: pairs 0..19 keep theta^(-2i/64), 20..31 are
 * divided by 32. m = yarn(32, 1) / yarn(32, 1) = 1. softmax_scale = 192^-0.5 *
 * (0.1 ln 32 + 1)^2 = 0.0721688 * 1.34657^2 = 0.1308608. */
static void t_kimi(void)
{
    arb_model_config_t c;
    arb_rope_t r;
    TAP_REQUIRE(arb_config_load("kimi-k2", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_rope_make(&c, &r, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(r.pairs, 32);
    TAP_NEAR(r.yarn_low, 19, 0);
    TAP_NEAR(r.yarn_high, 20, 0);
    TAP_NEAR(r.inv_freq[0], 1.0, 1e-15);
    TAP_NEAR(r.inv_freq[1], 0.71311108491193198, 1e-15); /* 50000^(-1/32) */
    TAP_NEAR(r.inv_freq[19], 0.0016217599081159522, 1e-17); /* 50000^(-38/64) */
    TAP_NEAR(r.inv_freq[20], 3.6140467735726306e-05, 1e-19); /* 50000^(-40/64) / 32 */
    TAP_NEAR(r.inv_freq[31], 8.764412911589874e-07, 1e-20);
    TAP_NEAR(r.mscale, 1.0, 1e-15);
    TAP_NEAR(r.softmax_scale, 0.13086079996295005, 1e-15);
}

/* tiny: dr 8, theta 1e4, factor 4, beta 32/1, orig 64: d(32) = 8 ln(64/(64 pi)) /
 * (2 ln 1e4) = -0.497 -> low 0; d(1) = 8 ln(64/2pi)/18.42 = 1.008 -> high 2. Pair 1:
 * ramp 0.5, (0.1 + 0.1/4)/2 = 0.0625; pair 2: ramp 1, 0.01/4 = 0.0025.
 * m = yarn(4, 1) / yarn(4, 0.707) = 1.138629 / 1.098010 = 1.0369927;
 * softmax_scale = 24^-0.5 * 1.098010^2 = 0.2460978. */
static void t_tiny(void)
{
    arb_model_config_t c;
    arb_rope_t r;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_rope_make(&c, &r, why, sizeof why) == ARB_OK);
    TAP_NEAR(r.yarn_low, 0, 0);
    TAP_NEAR(r.yarn_high, 2, 0);
    TAP_NEAR(r.inv_freq[0], 1.0, 1e-15);
    TAP_NEAR(r.inv_freq[1], 0.0625, 1e-15);
    TAP_NEAR(r.inv_freq[2], 0.0025, 1e-16);
    TAP_NEAR(r.inv_freq[3], 0.00025, 1e-17);
    TAP_NEAR(r.mscale, 1.036992729910394, 1e-14);
    TAP_NEAR(r.softmax_scale, 0.24609782191507454, 1e-14);
}

static void t_plain_and_helpers(void)
{
    arb_model_config_t c;
    arb_rope_t r;
    TAP_REQUIRE(arb_config_load("tiny", &c, why, sizeof why) == ARB_OK);
    c.rope_scaling.kind = ARB_ROPE_PLAIN;
    TAP_REQUIRE(arb_rope_make(&c, &r, why, sizeof why) == ARB_OK);
    TAP_NEAR(r.inv_freq[1], 0.1, 1e-16); /* 1e4^(-2/8) */
    TAP_NEAR(r.mscale, 1.0, 0);
    TAP_NEAR(r.softmax_scale, 1.0 / sqrt(24.0), 1e-16);
    TAP_NEAR(arb_yarn_mscale(1.0, 1.0), 1.0, 0);
    TAP_NEAR(arb_yarn_mscale(40.0, 1.0), 0.1 * log(40.0) + 1.0, 1e-15);
    double lo, hi; /* DeepSeek-V3: beta 32/1, dim 64, theta 1e4, orig 4096 -> [10, 23] */
    arb_yarn_correction_range(32, 1, 64, 10000, 4096, &lo, &hi);
    TAP_NEAR(lo, 10, 0);
    TAP_NEAR(hi, 23, 0);
    c.qk_rope_head_dim = 7;
    TAP_EQ_INT(arb_rope_make(&c, &r, why, sizeof why), ARB_ERR_INVALID);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi_k2", t_kimi}, {"tiny", t_tiny}, {"plain_and_helpers", t_plain_and_helpers}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
