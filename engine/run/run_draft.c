/* SPDX-License-Identifier: MIT */
/* The speculative cycles' draft in the run driver; see run_draft.h. */
#include "run/run_draft.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arbench/status.h"

void arb_draft_config(const arb_model_config_t *target, arb_model_config_t *draft)
{
    *draft = *target;
    draft->num_hidden_layers = 1;
    draft->first_k_dense_replace = 1; /* a dense decoder layer */
    size_t n = strlen(draft->overrides);
    snprintf(draft->overrides + n, sizeof draft->overrides - n, "%sdraft=1 dense layer", n ? "," : "");
}

arb_status_t arb_run_draft_setup(arb_engine_run_t *r, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    if (!o->draft_dir[0])
        return ARB_OK;
    if (o->context == 0)
        ARB_RAISE(
            ARB_ERR_INVALID, why, len,
            "--draft-dir with --context 0: the draft head needs the target's hidden state of at least one position (give --context 1 or more)");
    char path[4200];
    snprintf(path, sizeof path, "%s/config.json", o->draft_dir);
    ARB_TRY(arb_draft_config_load(path, &r->cfg, &r->dcfg, why, len));
    ARB_TRY(arb_draft_shard_make(&r->dcfg, r->s.tp_shape, r->s.shard_first, r->s.shard_count, &r->dshard, why, len));
    ARB_TRY(arb_draft_weights_check(o->draft_dir, &r->dcfg, &r->dshard, why, len));
    r->s.naux = ARB_DRAFT_AUX;
    memcpy(r->s.aux_layers, r->dcfg.aux_layers, sizeof r->dcfg.aux_layers);
    return ARB_OK;
}

static arb_status_t open_stand_in(arb_stepper_t *target, arb_run_draft_t *d, char *why, size_t len)
{
    arb_engine_run_t *r = target->r;
    static arb_model_config_t dcfg; /* the setup points at it while the draft lives (one run per process) */
    arb_draft_config(&r->cfg, &dcfg);
    arb_engine_setup_t ds = r->s;
    ds.cfg = &dcfg;
    ds.naux = 0;
    ARB_TRY(
        arb_shard_make_range(&dcfg, ds.tp_shape, ds.shard_first, ds.shard_count, r->o->weights, &ds.shard, why, len));
    void *model = NULL;
    arb_status_t st = r->be->create(&ds, target->c->sites, target->c->sites_t1, &model, why, len);
    d->step = (arb_stepper_t){.r = r, .be = r->be, .c = target->c, .model = model, .mode = target->mode};
    ARB_TRY(arb_run_agree(r, st, why, len));
    uint32_t g0;
    ARB_TRY(arb_step_prefill(&d->step, &g0, why, len));
    d->len = r->o->context;
    return ARB_OK;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* Collective: one head step of T rows at pos0 and its greedy target token after the last
 * row; *us += the step's time (wall clock, the GPU head's stream synchronized), max over
 * ranks. fused: from the target's states; else one row from the last step's output row
 * `last`. The head on the GPU where the backend keeps the target's states there. */
static arb_status_t head_step(arb_run_draft_t *d, int fused, unsigned last, const uint32_t *next, unsigned T,
                              unsigned pos0, uint32_t *token, double *us, char *why, size_t len)
{
    arb_engine_run_t *r = d->target->r;
    const arb_backend_ops_t *be = r->be;
    const unsigned H = r->cfg.hidden_size;
    double t0 = now_us();
    arb_status_t st = ARB_OK;
    if (d->ghead) {
        const void *aux = NULL, *embed = NULL;
        void *stream = NULL;
        st = be->device_inputs(d->target->model, &aux, &embed, &stream, why, len);
        if (st == ARB_OK)
            st = arb_draft_gpu_step(d->ghead, fused ? aux : NULL, last, embed, next, T, pos0, stream, why, len);
    } else {
        st = be->embed(d->target->model, next, T, d->embed, why, len);
        if (st == ARB_OK && fused)
            st = be->aux_hidden(d->target->model, pos0, T, d->aux, why, len);
        if (st == ARB_OK && !fused) /* row pos0: the previous row's pre-norm output */
            memcpy(d->hidden, arb_draft_cpu_out(d->head) + (size_t)last * H, H * sizeof *d->hidden);
        if (st == ARB_OK)
            st = arb_draft_cpu_step(d->head, fused ? d->aux : d->hidden, fused, d->embed, T, pos0, why, len);
    }
    double mine = now_us() - t0, mx = 0;
    ARB_TRY(arb_run_agree(r, st, why, len));
    struct {
        float v;
        int i;
    } in, best;
    uint32_t id;
    if (d->ghead)
        arb_draft_gpu_argmax(d->ghead, T - 1, &in.v, &id);
    else
        arb_draft_cpu_argmax(d->head, T - 1, &in.v, &id);
    in.i = (int)id;
    MPI_Allreduce(&mine, &mx, 1, MPI_DOUBLE, MPI_MAX, r->m->world);
    MPI_Allreduce(&in, &best, 1, MPI_FLOAT_INT, MPI_MAXLOC, r->m->world);
    *token = d->ghead ? arb_draft_gpu_target_id(d->ghead, (uint32_t)best.i)
                      : arb_draft_cpu_target_id(d->head, (uint32_t)best.i);
    *us += mx;
    return ARB_OK;
}

static arb_status_t open_head(arb_stepper_t *target, arb_run_draft_t *d, char *why, size_t len)
{
    arb_engine_run_t *r = target->r;
    const unsigned H = r->cfg.hidden_size, T = r->s.max_tokens, ctx = r->o->context;
    arb_draft_cpu_opts_t o = {.cfg = &r->dcfg,
                              .shard = r->dshard,
                              .max_tokens = T,
                              .positions = r->s.positions,
                              .sites = {target->c->sites[0], target->c->sites[1]}};
    if (target->c->sites_t1)
        o.sites_t1[0] = target->c->sites_t1[0], o.sites_t1[1] = target->c->sites_t1[1];
    d->aux = calloc((size_t)T * ARB_DRAFT_AUX * H, 2);
    d->embed = calloc((size_t)T * H, 2);
    d->hidden = calloc(H, 2);
    arb_status_t st = d->aux && d->embed && d->hidden ? ARB_OK : ARB_ERR_SYSTEM;
    if (st != ARB_OK)
        snprintf(why, len, "draft head: out of host memory");
    arb_draft_weights_t w;
    if (st == ARB_OK)
        st = arb_draft_weights_load(r->o->draft_dir, &r->dcfg, &r->dshard, &w, why, len);
    ARB_TRY(arb_run_agree(r, st, why, len));
    if (r->be->device_inputs) /* the target's states stay on its device: the head runs there */
        st = arb_draft_gpu_create(&o, &w, &d->ghead, why, len);
    else
        st = arb_draft_cpu_create(&o, &w, &d->head, why, len);
    ARB_TRY(arb_run_agree(r, st, why, len));
    /* rows 0 .. ctx - 2: the prompt's states and next tokens (row ctx - 1 is the first cycle's) */
    double us = 0;
    uint32_t tok;
    for (unsigned p = 0; p + 1 < ctx; p += T) {
        unsigned n = ctx - 1 - p < T ? ctx - 1 - p : T;
        ARB_TRY(head_step(d, 1, 0, d->hist + p + 1, n, p, &tok, &us, why, len));
    }
    d->len = ctx - 1;
    return ARB_OK;
}

arb_status_t arb_run_draft_open(arb_stepper_t *target, arb_run_draft_t *d, char *why, size_t len)
{
    arb_engine_run_t *r = target->r;
    memset(d, 0, sizeof *d);
    d->target = target;
    d->cap = r->s.positions;
    d->hist = calloc(d->cap, sizeof *d->hist);
    if (!d->hist)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    for (unsigned p = 0; p < r->o->context && p < d->cap; p++)
        d->hist[p] = arb_prompt_token(r, p);
    return r->o->draft_dir[0] ? open_head(target, d, why, len) : open_stand_in(target, d, why, len);
}

static arb_status_t propose_head(arb_run_draft_t *d, uint32_t first, unsigned k, unsigned pos,
                                 const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t len)
{
    const unsigned T = d->target->r->s.max_tokens;
    double total = 0;
    uint32_t tok = 0;
    unsigned last = 0; /* the row of the head's last step that the next one continues */
    if (d->len >= pos)
        ARB_RAISE(ARB_ERR_INVALID, why, len,
                  "draft head: no verified row to propose from (its cache holds %u rows, the target's %u)", d->len,
                  pos);
    d->hist[pos] = first;
    for (unsigned p = d->len; p < pos; p += T) { /* catch up on what the target verified; the last row proposes d_1 */
        unsigned n = pos - p < T ? pos - p : T;
        ARB_TRY(head_step(d, 1, 0, d->hist + p + 1, n, p, &tok, &total, why, len));
        last = n - 1;
    }
    for (unsigned j = 1; j <= k; j++) {
        if (j > 1) { /* row pos + j - 2: its own pre-norm output and the last kept draft */
            ARB_TRY(head_step(d, 0, last, &drafts[j - 2], 1, pos + j - 2, &tok, &total, why, len));
            last = 0;
        }
        d->own[j - 1] = tok;
        drafts[j - 1] = arb_spec_plant_apply(plant, j, tok);
        d->hist[pos + j] = drafts[j - 1];
    }
    d->len = pos + k - 1;
    *us = total;
    return ARB_OK;
}

static arb_status_t propose_stand_in(arb_run_draft_t *d, uint32_t first, unsigned k, unsigned pos,
                                     const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t len)
{
    const unsigned max_T = d->step.r->s.max_tokens;
    double total = 0;
    arb_step_t out;
    while (d->len < pos) { /* catch up on what the target accepted */
        unsigned T = pos - d->len < max_T ? pos - d->len : max_T;
        ARB_TRY(arb_step_once(&d->step, d->hist + d->len, T, d->len, ARB_STEP_GREEDY, &out, why, len));
        total += out.us;
        d->len += T;
    }
    for (unsigned j = 1; j <= k; j++) { /* k steps: the proposals, each through the draw */
        uint32_t in = j == 1 ? first : drafts[j - 2];
        ARB_TRY(arb_step_once(&d->step, &in, 1, pos + j - 1, ARB_STEP_GREEDY, &out, why, len));
        total += out.us;
        d->hist[pos + j - 1] = in;
        d->own[j - 1] = out.greedy[0];
        drafts[j - 1] = arb_spec_plant_apply(plant, j, out.greedy[0]);
    }
    d->len = pos + k;
    *us = total;
    return ARB_OK;
}

/* A debug hook for the tests: ARBENCH_DRAFT_TRACE=FILE, rank 0 appends each cycle's
 * position and the draft's own proposals (before any draw) of the implementation's
 * configuration to FILE. */
static void trace(const arb_engine_run_t *r, unsigned pos, const uint32_t *own, unsigned k)
{
    const char *path = getenv("ARBENCH_DRAFT_TRACE");
    FILE *f = path && *path && r->m->rank == 0 ? fopen(path, "a") : NULL;
    if (!f)
        return;
    fprintf(f, "%u", pos);
    for (unsigned j = 0; j < k; j++)
        fprintf(f, " %u", own[j]);
    fputc('\n', f);
    fclose(f);
}

arb_status_t arb_run_draft_propose(arb_run_draft_t *d, uint32_t first, unsigned k, unsigned pos,
                                   const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t len)
{
    arb_engine_run_t *r = d->target->r;
    if (pos + k >= d->cap)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "draft: position %u past the cache capacity %u", pos + k, d->cap);
    if (k > ARB_SPEC_MAX_K)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "draft: %u proposals asked for; at most %d", k, ARB_SPEC_MAX_K);
    arb_status_t st = r->o->draft_dir[0] ? propose_head(d, first, k, pos, plant, drafts, us, why, len)
                                         : propose_stand_in(d, first, k, pos, plant, drafts, us, why, len);
    if (st == ARB_OK && d->target->c->role == ARB_CFG_IMPL)
        trace(r, pos, d->own, k);
    return st;
}

void arb_run_draft_accept(arb_run_draft_t *d, const uint32_t *tokens, unsigned n, unsigned pos)
{
    for (unsigned j = 0; j < n && pos + j < d->cap; j++)
        d->hist[pos + j] = tokens[j];
    unsigned valid = d->head || d->ghead ? pos : pos + n; /* the head's rows past pos read its own states */
    if (d->len > valid)
        d->len = valid;
}

void arb_run_draft_close(arb_run_draft_t *d)
{
    if (d->step.model)
        d->step.be->destroy(d->step.model);
    arb_stepper_free(&d->step);
    arb_draft_cpu_destroy(d->head);
    arb_draft_gpu_destroy(d->ghead);
    free(d->aux), free(d->embed), free(d->hidden), free(d->hist);
    memset(d, 0, sizeof *d);
}
