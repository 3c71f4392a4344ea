/* SPDX-License-Identifier: MIT */
/* Per-site choice from a profile (or --tune) for the run driver; see run_profile.h. */
#include "run/run_profile.h"

#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "sites/site_registry_inst.h"
#include "base/outfile.h"
#include "sites/tune.h"

typedef struct profile_state {
    arb_profile_t prof;
    arb_site_registry_t reg;
    arb_reg_plugins_t pl;
    char path[4096];
} profile_state_t;

static profile_state_t *g_state; /* one run per process */

enum { SHAPE_DECODE, SHAPE_VERIFY, SHAPE_PREFILL, SHAPES };

arb_status_t arb_run_borrow_config(arb_engine_run_t *r, arb_runcfg_t *c, arb_cfg_role_t role,
                                   const arb_site_registry_t *reg, size_t slot, char *why, size_t len)
{
    memset(c, 0, sizeof *c);
    const arb_choice_t *ch = arb_site_registry_choice(reg, slot);
    arb_fusion_t fz;
    arb_inst_t *in = arb_site_registry_instance(reg, slot, &fz);
    unsigned nsites = 2 * r->cfg.num_hidden_layers;
    if (!in)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "site %s has no instance", reg->sites[slot].name);
    c->sites = calloc(nsites, sizeof *c->sites);
    if (!c->sites)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    for (unsigned s = 0; s < nsites; s++)
        c->sites[s] = in;
    c->role = role;
    snprintf(c->spec.name, sizeof c->spec.name, "%s", ch->impl);
    snprintf(c->spec.params, sizeof c->spec.params, "%s", ch->params);
    c->spec.has_params = ch->params[0] != 0;
    snprintf(c->describe, sizeof c->describe, "%s", arb_inst_describe(in));
    /* the backends call every site with ARB_FUSION_AUTO: the plugin's own kernel when it has one */
    snprintf(c->fusion, sizeof c->fusion, "%s", arb_inst_has_fused(in) ? "plugin" : "composed");
    c->inst[0] = in, c->ninst = 1; /* for the per-step error query */
    c->borrowed = 1;
    return ARB_OK;
}

static arb_status_t load_or_tune(arb_engine_run_t *r, profile_state_t *ps, const unsigned *T, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    if (!o->tune) {
        snprintf(ps->path, sizeof ps->path, "%s", o->profile);
        char lwhy[1024] = "";
        int bad = arb_site_profile_load(o->profile, &ps->prof, lwhy, sizeof lwhy) != ARB_OK;
        if (arb_agree_failure(r->m, bad, lwhy, sizeof lwhy) >= 0) {
            if (!bad)
                arb_profile_free(&ps->prof);
            ARB_RAISE(ARB_ERR_INVALID, why, len, "--profile: %s", lwhy);
        }
        return ARB_OK;
    }
    char results[4096];
    arb_out_side_path(r->out, "", r->meta.run_id, ".csv", results, sizeof results); /* a rerun keeps the last one's */
    MPI_Bcast(results, sizeof results, MPI_CHAR, 0, r->m->world); /* rank 0 named the output */
    unsigned toks[SHAPES], n = 0;
    for (int i = 0; i < SHAPES; i++) {
        int dup = 0;
        for (unsigned j = 0; j < n; j++)
            dup |= toks[j] == T[i];
        if (!dup)
            toks[n++] = T[i];
    }
    int cpu = o->backend == ARB_ENGINE_CPU;
    arb_tune_request_t rq = {.tokens = toks, .ntokens = n, .hidden = r->cfg.hidden_size,
                             .modes = cpu ? 1u << ARB_MODE_EAGER : (r->modes & (1u << ARB_MODE_GRAPH) ? 1u << ARB_MODE_GRAPH : r->modes),
                             .op = cpu ? ARB_OP_ALLREDUCE : ARB_OP_ALLREDUCE_RMSNORM, .host_only = cpu,
                             .results = results};
    return arb_engine_tune(r->m, &rq, r->argc, r->argv, &ps->prof, ps->path, sizeof ps->path, why, len);
}

arb_status_t arb_run_open_profile(arb_engine_run_t *r, char *why, size_t len)
{
    const arb_engine_opts_t *o = r->o;
    profile_state_t *ps = calloc(1, sizeof *ps);
    if (!ps)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    g_state = ps;
    const unsigned T[SHAPES] = {1, o->spec_k + 1, o->prefill_chunk};
    static const char *const names[SHAPES] = {"decode", "verify", "prefill"};
    ARB_TRY(load_or_tune(r, ps, T, why, len));
    const char *fallback = o->backend == ARB_ENGINE_CPU ? "mpi-host" : ARB_SITE_FALLBACK;
    /* the instances serve both modes; their choice is the graph mode's when graph steps run */
    arb_mode_t mode = (r->modes & (1u << ARB_MODE_GRAPH)) ? ARB_MODE_GRAPH : ARB_MODE_EAGER;
    arb_site_registry_init(&ps->reg, fallback);
    size_t slot[SHAPES];
    arb_choice_t ch[SHAPES];
    arb_site_t site[SHAPES];
    for (int i = 0; i < SHAPES; i++)
        site[i] = (arb_site_t){.name = names[i], .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = T[i],
                               .hidden = r->cfg.hidden_size, .mode = mode, .ranks = r->m->nranks,
                               .nodes = r->m->nnodes, .fabric = r->meta.fabric};
    for (int i = SHAPE_DECODE; i <= SHAPE_VERIFY; i++) {
        ARB_TRY(arb_site_choose(&ps->prof, ps->path, &site[i], fallback, &ch[i], why, len));
        ARB_TRY(arb_site_registry_add(&ps->reg, &site[i], &ch[i], &slot[i], why, len));
    }
    /* The untimed prefill chunks (T > 1) run on the verify choice's instance, sized for them too. */
    {
        arb_choice_t pc = ch[SHAPE_VERIFY];
        snprintf(pc.note, sizeof pc.note, "prefill chunk (untimed) on the verify choice");
        size_t ps_slot;
        ARB_TRY(arb_site_registry_add(&ps->reg, &site[SHAPE_PREFILL], &pc, &ps_slot, why, len));
    }
    arb_inst_backend_t b;
    arb_reg_plugins_init(&ps->pl, r->m, &b);
    ARB_TRY(arb_site_registry_open(&ps->reg, &b, r->s.cuda_device, why, len));
    if (r->m->rank == 0) {
        printf("# call sites from %s:\n", ps->path);
        arb_site_registry_print(&ps->reg, stdout);
        fflush(stdout);
    }
    /* after open: a declined choice may have moved both shapes onto the fallback */
    arb_inst_t *idec = arb_site_registry_instance(&ps->reg, slot[SHAPE_DECODE], NULL);
    arb_inst_t *iver = arb_site_registry_instance(&ps->reg, slot[SHAPE_VERIFY], NULL);
    arb_runcfg_t *c = &r->cfgs[r->ncfgs++];
    ARB_TRY(arb_run_borrow_config(r, c, ARB_CFG_IMPL, &ps->reg, slot[SHAPE_VERIFY], why, len));
    for (int i = SHAPE_VERIFY; i >= SHAPE_DECODE && !c->note[0]; i--) /* recorded in every row (no silent stand-in) */
        arb_site_registry_fallback_note(&ps->reg, slot[i], c->note, sizeof c->note);
    if (idec == iver)
        return ARB_OK;
    /* One configuration, as a server dispatches by shape: one-token steps (decode, the
     * draft's steps) on the decode choice, every other step on the verify choice. */
    const unsigned nsites = 2 * r->cfg.num_hidden_layers;
    const arb_choice_t *dch = arb_site_registry_choice(&ps->reg, slot[SHAPE_DECODE]);
    c->sites_t1 = calloc(nsites, sizeof *c->sites_t1);
    if (!c->sites_t1)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    for (unsigned s = 0; s < nsites; s++)
        c->sites_t1[s] = idec;
    snprintf(c->spec_t1.name, sizeof c->spec_t1.name, "%s", dch->impl);
    snprintf(c->spec_t1.params, sizeof c->spec_t1.params, "%s", dch->params);
    c->spec_t1.has_params = dch->params[0] != 0;
    snprintf(c->describe_t1, sizeof c->describe_t1, "%s", arb_inst_describe(idec));
    c->inst[c->ninst++] = idec; /* for the per-step error query */
    return ARB_OK;
}

void arb_run_close_profile(arb_engine_run_t *r)
{
    (void)r;
    if (!g_state)
        return;
    arb_site_registry_close(&g_state->reg);
    arb_reg_plugins_unload(&g_state->pl);
    arb_profile_free(&g_state->prof);
    free(g_state);
    g_state = NULL;
}
