/* SPDX-License-Identifier: MIT */
/* engine/cpu/cpu_ref_budget.c: the reference's host budget from MemAvailable, by hand. */
#include "tap.h"
#include "cpu/cpu_ref.h"

static void t_margin_fraction(void)
{
    double m = -1;
    /* 128 GB free, one rank: 10% margin (12.8 GB) over the 4 GB floor, 115.2 GB left */
    TAP_NEAR(arb_cpu_ref_host_budget(128e9, 1, &m), 115.2e9, 1);
    TAP_NEAR(m, 12.8e9, 1);
    /* eight ranks of one node share it: 14.4 GB each */
    TAP_NEAR(arb_cpu_ref_host_budget(128e9, 8, NULL), 14.4e9, 1);
}

static void t_margin_floor(void)
{
    double m = -1;
    /* 20 GB free: 10% is 2 GB, under the 4 GB floor; 16 GB over two ranks */
    TAP_NEAR(arb_cpu_ref_host_budget(20e9, 2, &m), 8e9, 1);
    TAP_NEAR(m, 4e9, 1);
    /* the margin takes everything */
    TAP_NEAR(arb_cpu_ref_host_budget(3e9, 1, &m), 0, 0);
    TAP_NEAR(arb_cpu_ref_host_budget(4e9, 1, NULL), 0, 0);
    /* zero local ranks counts as one */
    TAP_NEAR(arb_cpu_ref_host_budget(20e9, 0, NULL), 16e9, 1);
}

static void t_unknown(void)
{
    double m = -1;
    TAP_NEAR(arb_cpu_ref_host_budget(-1, 4, &m), ARB_CPU_REF_BUDGET_UNKNOWN, 0);
    TAP_NEAR(m, 0, 0);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"margin_fraction", t_margin_fraction}, {"margin_floor", t_margin_floor}, {"unknown", t_unknown}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
