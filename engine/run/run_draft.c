/* SPDX-License-Identifier: MIT */
/* The speculative cycles' draft model in the run driver; see run_draft.h. */
#include "run/run_draft.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "run/run.h"
#include "run/spec_pair.h"

arb_status_t arb_run_draft_open(arb_engine_run_t *r, arb_runcfg_t *c, arb_run_draft_t *d, char *why, size_t len)
{
    memset(d, 0, sizeof *d);
    static arb_model_config_t dcfg; /* the setup points at it while the draft lives (one run per process) */
    arb_draft_config(&r->cfg, &dcfg);
    arb_engine_setup_t ds = r->s;
    ds.cfg = &dcfg;
    ARB_TRY(arb_shard_make_range(&dcfg, ds.tp_shape, ds.shard_first, ds.shard_count, r->o->weights, &ds.shard, why, len));
    d->cap = r->s.positions;
    d->hist = calloc(d->cap, sizeof *d->hist);
    if (!d->hist)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    for (unsigned p = 0; p < r->o->context && p < d->cap; p++)
        d->hist[p] = arb_prompt_token(r, p);
    ARB_TRY(arb_run_agree(r, r->be->create(&ds, c->sites, c->sites_t1, &d->model, why, len), why, len));
    uint32_t g0;
    ARB_TRY(arb_run_prefill(r, r->be, c, d->model, &g0, why, len));
    d->len = r->o->context;
    return ARB_OK;
}

arb_status_t arb_run_draft_cycle(arb_engine_run_t *r, arb_runcfg_t *c, arb_run_draft_t *d, arb_mode_t mode,
                                 const uint32_t *in, unsigned k, unsigned pos, double *us, char *why, size_t len)
{
    double total = 0, t;
    uint32_t out[64];
    if (pos + k > d->cap)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "draft: position %u past the cache capacity %u", pos + k - 1, d->cap);
    while (d->len < pos) { /* catch up on what the target accepted */
        unsigned T = pos - d->len < r->s.max_tokens ? pos - d->len : r->s.max_tokens;
        ARB_TRY(arb_run_step(r, r->be, c, d->model, d->hist + d->len, T, d->len, mode, &t, why, len));
        ARB_TRY(arb_run_greedy(r, r->be, d->model, T, out, why, len));
        total += t;
        d->len += T;
    }
    for (unsigned j = 0; j < k; j++) { /* k draft steps: what an EAGLE draft costs per cycle */
        ARB_TRY(arb_run_step(r, r->be, c, d->model, &in[j], 1, pos + j, mode, &t, why, len));
        ARB_TRY(arb_run_greedy(r, r->be, d->model, 1, out, why, len));
        total += t;
        d->hist[pos + j] = in[j];
    }
    d->len = pos + k;
    *us = total;
    return ARB_OK;
}

void arb_run_draft_accept(arb_run_draft_t *d, const uint32_t *tokens, unsigned n, unsigned pos)
{
    for (unsigned j = 0; j < n && pos + j < d->cap; j++)
        d->hist[pos + j] = tokens[j];
    if (d->len > pos + n)
        d->len = pos + n;
}

void arb_run_draft_close(arb_engine_run_t *r, arb_run_draft_t *d)
{
    if (d->model)
        r->be->destroy(d->model);
    free(d->hist);
    memset(d, 0, sizeof *d);
}
