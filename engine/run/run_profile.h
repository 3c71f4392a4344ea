/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine --profile FILE` / `--tune` in the run driver (docs/engine-e2e.md): the
 * engine's call-site shapes (decode T = 1, verify T = k + 1, the prefill chunk) are
 * described as sites of this run (fabric, ranks, nodes, mode) and each gets its choice
 * from the profile (site_choice.h); the registry opens each distinct choice once.
 * When the decode and the verify shapes choose differently, the one configuration holds
 * both: its one-token steps (decode, the draft's steps) call the decode choice's instance
 * (arb_runcfg_t.sites_t1), every other step (verify, prefill chunks, the draft's catch-up)
 * the verify choice's, as a server dispatches by batch-size bucket; so a speculative
 * cycle runs its drafts and its verify each on its own shape's choice.
 */
#ifndef ARB_ENGINE_RUN_PROFILE_H
#define ARB_ENGINE_RUN_PROFILE_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "run/run_state.h"

/* (the registry declared only: run.c also includes src/sweep/runner.h, whose arb_point_t is
 * not src/analysis/points.h's, which the registry's header includes) */
struct arb_site_registry;

/* Collective. Appends the implementation's configuration to r->cfgs (role ARB_CFG_IMPL),
 * prints each site's choice on rank 0. */
arb_status_t arb_run_open_profile(arb_engine_run_t *r, char *why, size_t len);
/* Fills c as a configuration serving registry slot `slot`'s instance at every site (the
 * registry keeps ownership: c->borrowed). */
arb_status_t arb_run_borrow_config(arb_engine_run_t *r, arb_runcfg_t *c, arb_cfg_role_t role,
                                   const struct arb_site_registry *reg, size_t slot, char *why,
                                   size_t len);
/* Collective. Closes what arb_run_open_profile opened (the configurations borrow it). */
void arb_run_close_profile(arb_engine_run_t *r);

#endif
