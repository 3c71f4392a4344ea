/* SPDX-License-Identifier: MIT */
/*
 * `arbench engine --accept-rate LIST`: speculative decoding cycles in the run driver
 * (docs/engine-e2e.md). After a configuration's decode phase in a mode, a draft model
 * (arb_draft_config: one dense decoder layer at the target's hidden size, on the same
 * call-site instances) is built and prefilled, and for each acceptance value --steps
 * cycles of --spec-k drafts and one verify run from the end of the context, through
 * engine/spec.h and engine/spec_pair.h. Every step's time is the maximum over ranks.
 */
#ifndef ARB_ENGINE_RUN_SPEC_H
#define ARB_ENGINE_RUN_SPEC_H

#include "plan.h"
#include "spec.h"

typedef struct arb_spec_result {
    int ran;
    double accept_rate;        /* < 0: greedy */
    arb_spec_summary_t sum;    /* medians, mean accepted, tok/s, ratio, break-even */
    double *cycle_us;          /* [sum.cycles] */
    uint32_t *tokens;          /* [ntokens] emitted */
    size_t ntokens;
} arb_spec_result_t;

struct arb_engine_run;
struct arb_runcfg;
struct arb_phase_result;

/* Runs every --accept-rate value for configuration c in `mode`; `decode` is the same
 * mode's decode phase (its median is the plain step, its first input the first token).
 * Results in c->specdec[mode][i]. Positions: the setup must hold context + steps * (k + 1)
 * + k + 1 (run.c sizes it when --accept-rate is given). */
arb_status_t arb_run_spec(struct arb_engine_run *r, struct arb_runcfg *c, void *model, arb_mode_t mode,
                          const struct arb_phase_result *decode, char *why, size_t len);
void arb_spec_result_free(arb_spec_result_t *s);

#endif
