/* SPDX-License-Identifier: MIT */
/*
 * Speculative cycles (--accept-rate p) on the decode chain g_0, g_1, ... of the same run:
 * a cycle at position P (relative i) verifies [a, d_1 .. d_k] with T = k + 1, where a is
 * the token accepted last and draft d_j is the right token g_{i+j} with probability p
 * (draw j of cycle c: arb_wgen ARB_W_ACCEPT, index c * 64 + j) or a wrong one. Accepted
 * is the longest prefix of drafts equal to the target's greedy outputs; the cycle
 * produces accepted + 1 tokens (the target's output after the last accepted draft is
 * the bonus token) and the next cycle starts after them: the rejected drafts' cache
 * rows are rolled back by being overwritten. Greedy speculative decoding must produce
 * exactly the decode chain: `agree` counts the produced tokens equal to it.
 * The draft model (engine/run/run_draft.h: one dense layer on the same call sites) runs its
 * k steps before each verify; a cycle's time is the draft's plus the verify's (each the
 * maximum over ranks), and their medians go to the row (draft_us, verify_us).
 */
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "analysis/resample.h"
#include "run/run.h"
#include "run/run_draft.h"
#include "model/wgen.h"

/* Draw j of cycle c in [0, 1). */
static double accept_draw(const arb_engine_run_t *r, unsigned cycle, unsigned j)
{
    return ((double)arb_wgen_uniform(r->o->seed, ARB_W_ACCEPT, 0, (uint64_t)cycle * 64 + j) + 1.0) / 2.0;
}

arb_status_t arb_run_spec_phase(arb_engine_run_t *r, arb_runcfg_t *c, void *model, arb_mode_t mode, const uint32_t *g,
                                double p, arb_phase_result_t *pr, int32_t *ebuf, char *why, size_t len)
{
    const unsigned S = r->o->steps, k = r->o->spec_k, T = k + 1, P0 = r->o->context, V = r->cfg.vocab_size;
    double *mine = NULL, bsum = 0, esum = 0;
    ARB_TRY(arb_run_phase_alloc(pr, T, S, (size_t)S * T, &mine, why, len));
    double *dmine = calloc(2 * (size_t)S, sizeof *dmine), *vmine = dmine ? dmine + S : NULL; /* draft, verify */
    arb_run_draft_t draft;
    memset(&draft, 0, sizeof draft);
    if (!dmine) {
        free(mine);
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    }
    pr->nsteps = 0; /* counts the cycles run */
    pr->accept_rate = p;
    char what[64];
    snprintf(what, sizeof what, "%s %s: spec p=%.2f", c->label, arb_mode_names[mode], p);
    arb_status_t st = arb_run_draft_open(r, c, &draft, why, len);
    unsigned i = 0; /* tokens produced so far: the chain position of the next input */
    uint32_t in[64], out[64];
    for (unsigned cyc = 0; cyc < S && i < S && st == ARB_OK; cyc++) {
        in[0] = g[i];
        for (unsigned j = 1; j <= k; j++) /* the chain has S + k + 1 tokens: g[i + j] exists */
            in[j] = accept_draw(r, cyc, j) < p ? g[i + j] : (g[i + j] + 1) % V;
        double us = 0, dus = 0, b = 0, e = 0;
        st = arb_run_draft_cycle(r, c, &draft, mode, in, k, P0 + i, &dus, why, len);
        if (st == ARB_OK)
            st = arb_run_step(r, r->be, c, model, in, T, P0 + i, mode, &us, why, len);
        if (st == ARB_OK)
            st = arb_run_greedy(r, r->be, model, T, out, why, len);
        if (st == ARB_OK)
            st = arb_run_step_bytes(r, model, T, P0 + i, &b, &e, ebuf, why, len);
        if (st != ARB_OK)
            break;
        unsigned acc = 0;
        while (acc < k && in[acc + 1] == out[acc]) /* draft d_{acc+1} is what the target predicted */
            acc++;
        for (unsigned j = 0; j <= acc; j++) { /* the accepted drafts' predictions and the bonus token */
            pr->tokens[pr->produced] = out[j];
            pr->agree += out[j] == g[i + j + 1];
            pr->produced++, pr->compared++;
        }
        arb_run_draft_accept(&draft, in, acc + 1, P0 + i);
        dmine[cyc] = dus, vmine[cyc] = us;
        mine[cyc] = dus + us, bsum += b, esum += e;
        pr->nsteps++;
        i += acc + 1;
        arb_run_progress(r, what, i < S ? i : S, S);
    }
    if (st == ARB_OK && pr->nsteps) {
        pr->bytes = bsum / pr->nsteps, pr->experts = esum / pr->nsteps;
        /* the draft's and the verify's medians, each step the maximum over ranks */
        double *mx = calloc(2 * (size_t)S, sizeof *mx);
        if (!mx)
            st = ARB_ERR_SYSTEM;
        if (mx) {
            MPI_Allreduce(dmine, mx, 2 * (int)S, MPI_DOUBLE, MPI_MAX, r->m->world);
            memmove(mx + pr->nsteps, mx + S, pr->nsteps * sizeof *mx);
            pr->draft_us = arb_median_inplace(mx, pr->nsteps);
            pr->verify_us = arb_median_inplace(mx + pr->nsteps, pr->nsteps);
            free(mx);
        }
    }
    if (st == ARB_OK && pr->nsteps) {
        st = arb_run_finish_times(r, pr, mine, why, len);
        pr->total_us = 0;
        for (unsigned j = 0; j < pr->nsteps; j++)
            pr->total_us += pr->us[j];
    }
    arb_run_draft_close(r, &draft);
    free(dmine);
    free(mine);
    return st;
}
