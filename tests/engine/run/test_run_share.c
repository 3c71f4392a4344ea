/* SPDX-License-Identifier: MIT */
/* The engine table's all-reduce share (run/run_rows.h): its figure, and parentheses where the
 * run's p10..p90 range overlaps the compute-only replay's (a difference inside the spread: a
 * 1-rank CPU-backend run printed -1.5% for an all-reduce that cannot take negative time). */
#include <math.h>

#include "run/run_rows.h"
#include "tap.h"

static arb_stats_t st(double p10, double median, double p90)
{
    return (arb_stats_t){.n = 32, .median = median, .p10 = p10, .p90 = p90};
}

static void t_apart(void)
{
    char b[16];
    arb_stats_t run = st(4100, 4200, 4300), noop = st(3900, 3950, 4000); /* apart: run's p10 past noop's p90 */
    TAP_EQ_INT(arb_run_share_text(&run, &noop, b, sizeof b), 1);
    TAP_EQ_STR(b, "6.0%");
    /* apart the other way (the replay slower throughout): a negative share, shown as it is */
    arb_stats_t slow = st(4400, 4500, 4600);
    TAP_EQ_INT(arb_run_share_text(&run, &slow, b, sizeof b), 1);
    TAP_EQ_STR(b, "-7.1%");
}

static void t_overlap(void)
{
    char b[16];
    /* synthetic figures of that shape: a run's eager decode (2574.9, p10 2549.6, p90 2600.2) against
     * a replay 1.5% slower at the median whose range overlaps it */
    arb_stats_t run = st(2549.6, 2574.9, 2600.2), noop = st(2560.0, 2613.5, 2650.0);
    TAP_EQ_INT(arb_run_share_text(&run, &noop, b, sizeof b), 0);
    TAP_EQ_STR(b, "(-1.5%)");
    /* touching ranges are not apart */
    arb_stats_t a = st(100, 110, 120), c = st(120, 125, 130);
    TAP_EQ_INT(arb_run_share_text(&c, &a, b, sizeof b), 0);
    TAP_EQ_STR(b, "(12.0%)");
}

static void t_degenerate(void)
{
    char b[16] = "x";
    arb_stats_t run = st(1, 0, 2), noop = st(1, 1, 2);
    TAP_EQ_INT(arb_run_share_text(&run, &noop, b, sizeof b), -1);
    TAP_EQ_STR(b, "-");
    run = st(1, NAN, 2);
    TAP_EQ_INT(arb_run_share_text(&run, &noop, b, sizeof b), -1);
    run = st(1, 1.5, 2), noop = st(1, INFINITY, 2);
    TAP_EQ_INT(arb_run_share_text(&run, &noop, b, sizeof b), -1);
    TAP_EQ_STR(b, "-");
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"apart", t_apart}, {"overlap", t_overlap}, {"degenerate", t_degenerate}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
