/* SPDX-License-Identifier: MIT */
/* --check-steps' verdict (engine/run/run_check.h): a run whose GPU disagrees with the CPU
 * reference (a greedy token, or a logit beyond ARB_ENGINE_LOGIT_TOL) fails, and says so;
 * differing experts alone are reported, not judged; no check, no verdict. */
#include <string.h>

#include "tap.h"
#include "run/run_check.h"
#include "run/run_state.h"

static arb_engine_run_t r; /* large: static */
static char why[512];

static void agreeing(void)
{
    memset(&r, 0, sizeof r);
    r.check_agree = r.check_compared = 3;
    r.check_max_logit_diff = 0.02, r.check_rel_diff = 0.01;
    r.check_experts_total = 48, r.check_first_layer = -1;
    why[0] = 0;
}

static void t_agree(void)
{
    agreeing();
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 0);
    TAP_CHECK(why[0] == 0);
    r.check_max_logit_diff = ARB_ENGINE_LOGIT_TOL; /* at the tolerance: agrees */
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 0);
    r.check_max_logit_diff = -1; /* not checked: no verdict */
    r.check_agree = 0;
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 0);
}

static void t_logits(void)
{
    agreeing();
    r.check_max_logit_diff = ARB_ENGINE_LOGIT_TOL * 1.01;
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 1);
    TAP_CHECK(strstr(why, "--check-steps: the GPU disagrees with the CPU reference") != NULL);
    TAP_CHECK(strstr(why, "3 of 3 greedy tokens equal") != NULL);
}

static void t_token(void)
{
    agreeing();
    r.check_agree = 2; /* one token differs, logits within the tolerance */
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 1);
    TAP_CHECK(strstr(why, "2 of 3 greedy tokens equal") != NULL);
}

static void t_experts(void)
{
    agreeing();
    r.check_experts_differ = 1, r.check_first_layer = 2; /* reported, not judged */
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 0);
    r.check_agree = 0, r.check_max_logit_diff = 2.4;
    TAP_EQ_INT(arb_run_check_failed(&r, why, sizeof why), 1);
    TAP_CHECK(strstr(why, "1 of 48 selected experts differ") != NULL);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"agree", t_agree}, {"logits", t_logits}, {"token", t_token}, {"experts", t_experts}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
