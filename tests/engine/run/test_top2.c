/* SPDX-License-Identifier: MIT */
/* Top-two logits over shards: local scan, merge across shards equals the scan of the whole. */
#include <math.h>
#include <stdlib.h>

#include "analysis/resample.h"
#include "tap.h"
#include "run/top2.h"

static void t_local(void)
{
    const float v[6] = {1.0f, 5.0f, NAN, 5.0f, 4.5f, -2.0f};
    arb_top2_t t = arb_top2_local(v, 6, 100);
    TAP_EQ_INT(t.i1, 101); /* tie with 103: the lower index */
    TAP_EQ_INT(t.i2, 103);
    TAP_NEAR(t.v1 - t.v2, 0.0, 0.0);
    t = arb_top2_local(v, 1, 7);
    TAP_EQ_INT(t.i1, 7);
    TAP_EQ_INT(t.i2, -1);
    TAP_CHECK(isinf(t.v2));
}

static void t_merge_equals_whole(void)
{
    enum { V = 1000 };
    float v[V];
    arb_rng_t rng;
    arb_rng_seed(&rng, 3);
    for (int trial = 0; trial < 50; trial++) {
        for (int j = 0; j < V; j++)
            v[j] = (float)(int)(arb_rng_uniform(&rng) * 200); /* many ties */
        arb_top2_t whole = arb_top2_local(v, V, 0), parts[8];
        size_t cut[9] = {0, 1, 2, 125, 400, 401, 777, 900, V}; /* uneven shards, one of size 1 */
        for (int p = 0; p < 8; p++)
            parts[p] = arb_top2_local(v + cut[p], cut[p + 1] - cut[p], (int32_t)cut[p]);
        arb_top2_t merged = arb_top2_merge(parts, 8);
        TAP_CHECK(merged.i1 == whole.i1 && merged.i2 == whole.i2 && merged.v1 == whole.v1 && merged.v2 == whole.v2);
    }
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"local", t_local}, {"merge_equals_whole", t_merge_equals_whole}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
