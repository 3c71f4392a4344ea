/* SPDX-License-Identifier: MIT */
/* Speculative cycles of the run driver; see run_spec.h. */
#include "run/run_spec.h"

#include <stdlib.h>
#include <string.h>

#include "analysis/resample.h"
#include "arbench/status.h"
#include "model/wgen.h"
#include "run/run_draft.h"

/* Draw j of cycle c in [0, 1). */
static double accept_draw(const arb_engine_run_t *r, unsigned cycle, unsigned j)
{
    return ((double)arb_wgen_uniform(r->o->seed, ARB_W_ACCEPT, 0, (uint64_t)cycle * 64 + j) + 1.0) / 2.0;
}

static double median_of(const double *v, unsigned n, double *scratch)
{
    memcpy(scratch, v, n * sizeof *v);
    return arb_median_inplace(scratch, n);
}

arb_status_t arb_run_spec_phase(arb_stepper_t *target, const uint32_t *g, double p, arb_phase_result_t *pr, char *why,
                                size_t len)
{
    arb_engine_run_t *r = target->r;
    const unsigned S = r->o->steps, k = r->o->spec_k, T = k + 1, P0 = r->o->context, V = r->cfg.vocab_size;
    double bsum = 0, esum = 0;
    pr->T = T, pr->nsteps = 0; /* counts the cycles run */
    pr->accept_rate = p;
    pr->us = calloc(S, sizeof *pr->us);
    pr->tokens = calloc((size_t)S * T, sizeof *pr->tokens);
    double *dus = calloc(3 * (size_t)S, sizeof *dus), *vus = dus ? dus + S : NULL, *scratch = dus ? dus + 2 * S : NULL;
    if (!pr->us || !pr->tokens || !dus) {
        free(dus);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    }
    char what[64];
    snprintf(what, sizeof what, "%s %s: spec p=%.2f", arb_cfg_role_names[target->c->role],
             arb_mode_names[target->mode], p);
    arb_run_draft_t draft;
    arb_status_t st = arb_run_draft_open(r, target->c, target->mode, &draft, why, len);
    unsigned i = 0; /* tokens produced so far: the chain position of the next input */
    uint32_t in[ARB_STEP_MAX_T];
    for (unsigned cyc = 0; cyc < S && i < S && st == ARB_OK; cyc++) {
        in[0] = g[i];
        for (unsigned j = 1; j <= k; j++) /* the chain has S + k + 1 tokens: g[i + j] exists */
            in[j] = accept_draw(r, cyc, j) < p ? g[i + j] : (g[i + j] + 1) % V;
        arb_step_t out;
        double d = 0;
        st = arb_run_draft_cycle(&draft, in, k, P0 + i, &d, why, len);
        if (st == ARB_OK)
            st = arb_step_once(target, in, T, P0 + i, ARB_STEP_GREEDY | ARB_STEP_BYTES, &out, why, len);
        if (st != ARB_OK)
            break;
        unsigned acc = 0;
        while (acc < k && in[acc + 1] == out.greedy[acc]) /* draft d_{acc+1} is what the target predicted */
            acc++;
        for (unsigned j = 0; j <= acc; j++) { /* the accepted drafts' predictions and the bonus token */
            pr->tokens[pr->produced] = out.greedy[j];
            pr->agree += out.greedy[j] == g[i + j + 1];
            pr->produced++, pr->compared++;
        }
        arb_run_draft_accept(&draft, in, acc + 1, P0 + i);
        dus[cyc] = d, vus[cyc] = out.us;
        pr->us[cyc] = d + out.us, bsum += out.bytes, esum += out.experts;
        pr->nsteps++;
        i += acc + 1;
        arb_run_progress(r, what, i < S ? i : S, S);
    }
    if (st == ARB_OK) {
        pr->bytes = bsum / pr->nsteps, pr->experts = esum / pr->nsteps;
        pr->draft_us = median_of(dus, pr->nsteps, scratch);
        pr->verify_us = median_of(vus, pr->nsteps, scratch);
        pr->total_us = 0;
        for (unsigned j = 0; j < pr->nsteps; j++)
            pr->total_us += pr->us[j];
        if (arb_stats_compute(pr->us, pr->nsteps, &pr->st) != 0)
            st = ARB_ERR_SYSTEM, snprintf(why, len, "cycle times are not finite");
        pr->ran = st == ARB_OK;
    }
    arb_run_draft_close(&draft);
    free(dus);
    return st;
}
