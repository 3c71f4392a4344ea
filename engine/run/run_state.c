/* SPDX-License-Identifier: MIT */
/* Names and look-ups of the run driver's state; see run_state.h. */
#include "run/run_state.h"

const char *const arb_phase_names[ARB_PHASES] = {"decode", "verify", "spec"};
const char *const arb_cfg_role_names[ARB_CFG_ROLES] = {"compute-only", "impl", "baseline"};

arb_runcfg_t *arb_run_find(arb_engine_run_t *r, arb_cfg_role_t role)
{
    for (unsigned i = 0; i < r->ncfgs; i++)
        if (r->cfgs[i].role == role)
            return &r->cfgs[i];
    return NULL;
}

const arb_runcfg_t *arb_run_find_const(const arb_engine_run_t *r, arb_cfg_role_t role)
{
    for (unsigned i = 0; i < r->ncfgs; i++)
        if (r->cfgs[i].role == role)
            return &r->cfgs[i];
    return NULL;
}
