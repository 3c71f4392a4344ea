/* SPDX-License-Identifier: MIT */
/* A/B of the baseline and the implementation in one run; see run_ab.h. */
#include "run/run_ab.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "run/ab_run.h"
#include "run/run_profile.h"
#include "run/step.h"
#include "sites/site_registry_inst.h"

typedef struct baseline_state {
    arb_site_registry_t reg;
    arb_reg_plugins_t pl;
} baseline_state_t;

static baseline_state_t *g_base;

arb_status_t arb_run_open_baseline(arb_engine_run_t *r, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    if (r->ncfgs == ARB_ENGINE_MAX_CFGS)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--baseline: too many run configurations");
    g_base = calloc(1, sizeof *g_base);
    if (!g_base)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    char spec[400];
    snprintf(spec, sizeof spec, "%s%s%s", o->baseline.name, o->baseline.has_params ? ":" : "", o->baseline.params);
    arb_choice_t c;
    ARB_TRY(arb_choice_parse(spec, &c, why, len));
    arb_site_registry_init(&g_base->reg, o->backend == ARB_ENGINE_CPU ? "mpi-host" : ARB_SITE_FALLBACK);
    /* one instance at every site for every step shape: sized for the largest */
    arb_site_t s = {.name = "baseline", .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = r->s.max_tokens,
                    .hidden = r->cfg.hidden_size,
                    .mode = (r->modes & (1u << ARB_MODE_GRAPH)) ? ARB_MODE_GRAPH : ARB_MODE_EAGER,
                    .ranks = r->m->nranks, .nodes = r->m->nnodes, .fabric = r->meta.fabric};
    size_t slot;
    ARB_TRY(arb_site_registry_add(&g_base->reg, &s, &c, &slot, why, len));
    arb_inst_backend_t b;
    arb_reg_plugins_init(&g_base->pl, r->m, &b);
    ARB_TRY(arb_site_registry_open(&g_base->reg, &b, r->s.cuda_device, why, len));
    ARB_TRY(arb_site_registry_require(&g_base->reg, slot, "--baseline", c.impl, why, len));
    ARB_TRY(arb_run_borrow_config(r, &r->cfgs[r->ncfgs], ARB_CFG_BASELINE, &g_base->reg, slot, why, len));
    r->ncfgs++;
    return ARB_OK;
}

void arb_run_close_baseline(arb_engine_run_t *r)
{
    (void)r;
    if (!g_base)
        return;
    arb_site_registry_close(&g_base->reg);
    arb_reg_plugins_unload(&g_base->pl);
    free(g_base);
    g_base = NULL;
}

/* One A/B side's step: the driver's step with the greedy pick and the top two logits. */
static arb_status_t side_step(void *ctx, const uint32_t *tokens, unsigned T, unsigned pos0, double *us, uint32_t *greedy,
                              arb_top2_t *top2, char *why, size_t len)
{
    arb_stepper_t *s = ctx;
    arb_step_t out;
    ARB_TRY(arb_step_once(s, tokens, T, pos0, ARB_STEP_GREEDY | ARB_STEP_TOP2, &out, why, len));
    memcpy(greedy, out.greedy, T * sizeof *greedy);
    memcpy(top2, out.top2, T * sizeof *top2);
    *us = out.us;
    return ARB_OK;
}

/* Each side's row of one A/B phase to the sink. */
static void ab_rows(arb_engine_run_t *r, arb_runcfg_t *c[2], int mode, const arb_ab_phase_t *ph, int phase)
{
    for (int s = 0; s < 2; s++) {
        arb_run_ab_row_t ab = {.side = s, .baseline = c[ARB_AB_A], .T = ph->T, .us = ph->times.us[s], .n = ph->times.n[s],
                           .cmp = &ph->cmp, .agree = &ph->agree};
        arb_run_row_t row = {.c = c[s], .mode = mode, .phase = phase, .ab = &ab};
        arb_run_emit(r, &row);
    }
}

arb_status_t arb_run_ab(arb_engine_run_t *r, char *why, size_t len)
{
    arb_runcfg_t *c[2] = {arb_run_find(r, ARB_CFG_BASELINE), arb_run_find(r, ARB_CFG_IMPL)};
    if (!c[0] || !c[1])
        ARB_RAISE(ARB_ERR_INVALID, why, len, "--baseline: no implementation configuration to compare with");
    arb_stepper_t sd[2] = {{0}, {0}};
    arb_status_t st = ARB_OK;
    uint32_t g0[2] = {0, 0};
    for (int s = 0; s < 2 && st == ARB_OK; s++) {
        void *model = NULL;
        st = arb_run_agree(r, r->be->create(&r->s, c[s]->sites, c[s]->sites_t1, &model, why, len), why, len);
        if (st == ARB_OK)
            st = arb_stepper_init(&sd[s], r, r->be, c[s], model, ARB_MODE_EAGER, ARB_STEP_TOP2, why, len);
        sd[s].model = model; /* destroyed below whatever failed */
        if (st != ARB_OK) {
            size_t n = strlen(why);
            snprintf(why + n, len - n, " (A/B holds two models at once)");
            goto out;
        }
        st = arb_step_prefill(&sd[s], &g0[s], why, len);
    }
    for (int mode = 0; mode < ARB_MODE_COUNT && st == ARB_OK; mode++) {
        if (!(r->modes & (1u << mode)))
            continue;
        sd[0].mode = sd[1].mode = (arb_mode_t)mode;
        arb_ab_side_t side[2] = {{side_step, &sd[0]}, {side_step, &sd[1]}};
        arb_ab_opts_t o = {.steps = r->o->steps, .k = r->o->spec_k, .pos0 = r->o->context, .g0 = {g0[0], g0[1]},
                           .alpha = 0.05, .reps = 2000, .seed = r->o->seed};
        arb_ab_phase_t d, v;
        st = arb_ab_run_phases(side, &o, &d, &v, why, len);
        if (st == ARB_OK && r->m->rank == 0) {
            ab_rows(r, c, mode, &d, ARB_PHASE_DECODE);
            ab_rows(r, c, mode, &v, ARB_PHASE_VERIFY);
            char ta[200], tv[200];
            arb_agreement_text(&d.agree, ta, sizeof ta);
            arb_agreement_text(&v.agree, tv, sizeof tv);
            printf("# A/B %s: %s vs %s: decode x%.3f [%.3f, %.3f] (%s); verify x%.3f [%.3f, %.3f] (%s)\n",
                   arb_mode_names[mode], c[0]->spec.name, c[1]->spec.name, d.cmp.speedup, d.cmp.lo, d.cmp.hi, ta,
                   v.cmp.speedup, v.cmp.lo, v.cmp.hi, tv);
        }
        if (st == ARB_OK) {
            arb_ab_phase_free(&d);
            arb_ab_phase_free(&v);
        }
    }
out:
    for (int s = 0; s < 2; s++) {
        if (sd[s].model)
            r->be->destroy(sd[s].model);
        arb_stepper_free(&sd[s]);
    }
    return st;
}
