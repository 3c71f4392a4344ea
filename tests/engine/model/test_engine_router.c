/* SPDX-License-Identifier: MIT */
/* engine/model/router.c on hand-made scores: the bias selects but does not weight, group
 * limiting drops the experts of weak groups, ties go to the lower index. INT4 packing. */
#include "tap.h"
#include "model/int4.h"
#include "model/router.h"

static void t_flat_bias(void)
{
    /* 4 experts, top 2, no groups: bias moves expert 3 ahead of 0, weights from scores */
    float s[4] = {0.9f, 0.5f, 0.3f, 0.2f}, b[4] = {-1.0f, 0.0f, 0.0f, 1.0f};
    arb_router_cfg_t rc = {4, 2, 1, 1, 2.0, 1};
    unsigned idx[2];
    double w[2];
    TAP_REQUIRE(arb_route(&rc, s, b, idx, w) == 0);
    TAP_EQ_INT(idx[0], 3); /* choice 1.2 */
    TAP_EQ_INT(idx[1], 1); /* choice 0.5 (0 is -0.1) */
    TAP_NEAR(w[0], 0.2 / 0.7 * 2.0, 1e-7);
    TAP_NEAR(w[1], 0.5 / 0.7 * 2.0, 1e-7);
    rc.norm_topk_prob = 0;
    TAP_REQUIRE(arb_route(&rc, s, b, idx, w) == 0);
    TAP_NEAR(w[0], 0.2 * 2.0, 1e-7);
}

static void t_groups(void)
{
    /* 8 experts in 4 groups of 2, keep 2 groups, top 2. Group scores (sum of the two):
     * g0 = 0.9+0.0 = 0.9, g1 = 0.5+0.5 = 1.0, g2 = 0.45+0.45 = 0.9, g3 = 0.1+0.1.
     * Kept: g1 and (tie 0.9) g0, the lower index. Expert 0 (0.9) is best overall,
     * then experts 2 and 3 tie at 0.5: the lower index, 2. g2's 0.45s are dropped
     * although 0.45 > 0.0. */
    float s[8] = {0.9f, 0.0f, 0.5f, 0.5f, 0.45f, 0.45f, 0.1f, 0.1f}, b[8] = {0};
    arb_router_cfg_t rc = {8, 3, 4, 2, 1.0, 1};
    unsigned idx[3];
    double w[3];
    TAP_REQUIRE(arb_route(&rc, s, b, idx, w) == 0);
    TAP_EQ_INT(idx[0], 0);
    TAP_EQ_INT(idx[1], 2);
    TAP_EQ_INT(idx[2], 3);
    TAP_NEAR(w[0] + w[1] + w[2], 1.0, 1e-12);
    /* without group limiting the third pick would be expert 2/3 then 4 */
    rc.n_group = 1, rc.topk_group = 1;
    TAP_REQUIRE(arb_route(&rc, s, b, idx, w) == 0);
    TAP_EQ_INT(idx[2], 3);
    rc.topk = 4;
    unsigned idx4[4];
    double w4[4];
    TAP_REQUIRE(arb_route(&rc, s, b, idx4, w4) == 0);
    TAP_EQ_INT(idx4[3], 4);
    /* more experts than the kept groups hold: refused */
    rc = (arb_router_cfg_t){8, 5, 4, 2, 1.0, 1};
    unsigned idx5[5];
    double w5[5];
    TAP_EQ_INT(arb_route(&rc, s, b, idx5, w5), -1);
}

static void t_int4(void)
{
    int q[8] = {-8, -1, 0, 1, 7, 3, -5, 2};
    int32_t w = arb_int4_pack8(q);
    for (int j = 0; j < 8; j++)
        TAP_EQ_INT(arb_int4_unpack(w, j), q[j]);
    /* value j in bits [4j, 4j+4): -8 = 0x8 at the bottom, 2 = 0x2 at the top */
    TAP_EQ_INT((uint32_t)w & 0xfu, 0x8);
    TAP_EQ_INT((uint32_t)w >> 28, 0x2);
    TAP_EQ_INT(((uint32_t)w >> 4) & 0xfu, 0xf); /* -1 */
    for (int v = -8; v <= 7; v++) {
        int all[8] = {v, v, v, v, v, v, v, v};
        int32_t x = arb_int4_pack8(all);
        for (int j = 0; j < 8; j++)
            TAP_EQ_INT(arb_int4_unpack(x, j), v);
    }
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"flat_bias", t_flat_bias}, {"groups", t_groups}, {"int4_pack", t_int4}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
