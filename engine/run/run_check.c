/* SPDX-License-Identifier: MIT */
/* --check-steps against the CPU reference; see run_check.h. */
#include "run/run_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "cpu/cpu_ref.h"
#include "model/memplan.h"


static arb_status_t open_host_sites(arb_engine_run_t *r, arb_loaded_plugin_t *lp, arb_inst_t **inst,
                                    arb_inst_t **sites, char *why, size_t len)
{
    unsigned nsites = 2 * r->cfg.num_hidden_layers;
    *inst = NULL;
    if (r->m->nranks == 1)
        return ARB_OK; /* one rank: no communication, the reference's local residual + RMSNorm */
    char err[1024];
    if (arb_plugin_load("mpi-host", lp, err, sizeof err) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "--check-steps: cannot load mpi-host: %s", err);
    arb_use_t use = {.op = ARB_OP_ALLREDUCE_RMSNORM, .dtype = ARB_DTYPE_BF16, .mode = ARB_MODE_EAGER,
                     .max_bytes = (size_t)r->s.max_tokens * r->cfg.hidden_size * 2, .max_tokens = r->s.max_tokens,
                     .hidden = r->cfg.hidden_size, .cuda_device = -1};
    ARB_TRY(arb_inst_open(r->m, lp, "", &use, inst, why, len));
    for (unsigned s = 0; s < nsites; s++)
        sites[s] = *inst;
    return ARB_OK;
}

/* One layer's k selected experts (-1: a dense layer's slots): how many there are, and how
 * many of the GPU's are not among the reference's (the experts compared as sets). */
static unsigned layer_experts(const int32_t *e, unsigned k)
{
    unsigned n = 0;
    for (unsigned j = 0; j < k; j++)
        n += e[j] >= 0;
    return n;
}

static unsigned experts_missing(const int32_t *gpu, const int32_t *ref, unsigned k)
{
    unsigned n = 0;
    for (unsigned j = 0; j < k; j++) {
        int found = 0;
        for (unsigned q = 0; q < k && !found; q++)
            found = ref[q] == gpu[j];
        n += gpu[j] >= 0 && !found;
    }
    return n;
}

arb_status_t arb_run_check(arb_stepper_t *gpu, uint32_t gpu_g0, char *why, size_t len)
{
    arb_engine_run_t *r = gpu->r;
    const unsigned N = r->o->check_steps, P0 = r->o->context, L = r->cfg.num_hidden_layers;
    arb_memplan_t plan;
    /* the reference holds the shard in the run's format (INT4 experts packed as on the GPU) */
    arb_memplan_compute(&r->cfg, &r->s.shard, r->o->weights, r->s.positions, r->s.max_tokens, 0, &plan);
    /* every rank of the node measures before any allocates; the smallest reading counts */
    double avail = arb_memplan_host_available(), margin = 0;
    MPI_Allreduce(MPI_IN_PLACE, &avail, 1, MPI_DOUBLE, MPI_MIN, r->m->local);
    double budget = arb_cpu_ref_host_budget(avail, (unsigned)r->m->local_nranks, &margin);
    int refused = plan.total > budget;
    if (refused)
        snprintf(why, len,
                 "--check-steps: the CPU reference of this shard needs %.0f B (%.1f GB) of host memory, %.0f B (%.1f GB) available to each of this node's %d ranks (%s less a margin of %.1f GB): check a smaller model (--config tiny, --layers, --experts)",
                 plan.total, plan.total / 1e9, budget, budget / 1e9, r->m->local_nranks,
                 avail < 0 ? "MemAvailable unknown: a fixed budget" : "MemAvailable", margin / 1e9);
    ARB_TRY(arb_run_agree(r, refused ? ARB_ERR_INVALID : ARB_OK, why, len));
    arb_loaded_plugin_t lp = {0};
    arb_inst_t *inst = NULL, **sites = calloc(2 * L, sizeof *sites);
    float *lg = NULL, *lc = NULL;
    int32_t *eg = NULL, *ec = NULL;
    const arb_backend_ops_t *cb = &arb_engine_backend_cpu;
    arb_stepper_t cpu = {.r = r, .be = cb, .mode = ARB_MODE_EAGER};
    arb_stepper_t g = *gpu;
    g.mode = ARB_MODE_EAGER;
    arb_engine_setup_t cs = r->s;
    cs.load_stats = NULL; /* the rows keep the checked model's load, not the reference's */
    cs.cuda_device = -1;
    if (!sites)
        ARB_RAISE(ARB_ERR_SYSTEM, why, len, "out of host memory");
    arb_status_t st = arb_run_agree(r, open_host_sites(r, &lp, &inst, sites, why, len), why, len);
    if (st == ARB_OK)
        st = arb_run_agree(r, cb->create(&cs, inst ? sites : NULL, NULL, &cpu.model, why, len), why, len);
    uint32_t g0 = 0;
    if (st == ARB_OK)
        st = arb_step_prefill(&cpu, &g0, why, len);
    r->check_agree = r->check_compared = 0;
    r->check_max_logit_diff = 0, r->check_rel_diff = 0;
    r->check_experts_differ = r->check_experts_total = 0;
    r->check_first_layer = -1;
    if (st == ARB_OK) {
        r->check_agree += g0 == gpu_g0, r->check_compared++;
    }
    unsigned vr = r->s.shard.vocab, vb = 0;
    const unsigned k = r->cfg.num_experts_per_tok;
    lg = calloc(vr, sizeof *lg), lc = calloc(vr, sizeof *lc);
    eg = malloc(sizeof *eg * L * (k ? k : 1)), ec = malloc(sizeof *ec * L * (k ? k : 1));
    if (!lg || !lc || !eg || !ec)
        st = ARB_ERR_SYSTEM;
    uint32_t tok = gpu_g0;
    for (unsigned i = 0; i < N && st == ARB_OK; i++) {
        arb_step_t og, oc;
        st = arb_step_once(&g, &tok, 1, P0 + i, ARB_STEP_GREEDY, &og, why, len);
        if (st == ARB_OK)
            st = arb_step_once(&cpu, &tok, 1, P0 + i, ARB_STEP_GREEDY, &oc, why, len);
        if (st == ARB_OK)
            st = arb_run_agree(r, g.be->logits(g.model, 1, lg, &vr, &vb, why, len), why, len);
        if (st == ARB_OK)
            st = arb_run_agree(r, cb->logits(cpu.model, 1, lc, &vr, &vb, why, len), why, len);
        if (st == ARB_OK && k)
            st = arb_run_agree(r, g.be->experts(g.model, 1, eg, why, len), why, len);
        if (st == ARB_OK && k)
            st = arb_run_agree(r, cb->experts(cpu.model, 1, ec, why, len), why, len);
        if (st != ARB_OK)
            break;
        double sq = 0, maxd = 0;
        for (unsigned v = 0; v < vr; v++) {
            double d = fabs((double)lg[v] - lc[v]);
            d = isnan(d) ? INFINITY : d;
            maxd = d > maxd ? d : maxd;
            sq += (double)lc[v] * lc[v];
        }
        const double rms = vr ? sqrt(sq / vr) : 0;
        r->check_max_logit_diff = maxd > r->check_max_logit_diff ? maxd : r->check_max_logit_diff;
        const double rel = maxd / (rms > 0 ? rms : 1);
        r->check_rel_diff = rel > r->check_rel_diff ? rel : r->check_rel_diff;
        for (unsigned l = 0; l < L && k; l++) {
            const unsigned n = experts_missing(eg + l * k, ec + l * k, k);
            r->check_experts_total += layer_experts(eg + l * k, k);
            r->check_experts_differ += n;
            if (n && (r->check_first_layer < 0 || (int)l < r->check_first_layer))
                r->check_first_layer = (int)l;
        }
        r->check_agree += og.greedy[0] == oc.greedy[0], r->check_compared++;
        tok = og.greedy[0]; /* both follow the GPU's chain, so one disagreement does not cascade */
    }
    double red[4] = {r->check_max_logit_diff, r->check_rel_diff, (double)r->check_experts_differ,
                     r->check_first_layer < 0 ? -1e9 : -(double)r->check_first_layer}; /* MAX of -l: the lowest layer */
    MPI_Allreduce(MPI_IN_PLACE, red, 4, MPI_DOUBLE, MPI_MAX, r->m->world);
    r->check_max_logit_diff = red[0], r->check_rel_diff = red[1], r->check_experts_differ = (size_t)red[2];
    r->check_first_layer = red[3] <= -1e9 ? -1 : (int)-red[3];
    if (cpu.model)
        cb->destroy(cpu.model);
    if (inst) {
        arb_inst_close(inst);
        arb_plugin_unload(&lp);
    }
    free(sites), free(lg), free(lc), free(eg), free(ec);
    if (st == ARB_ERR_SYSTEM && !why[0])
        snprintf(why, len, "out of host memory");
    return st;
}

int arb_run_check_failed(const arb_engine_run_t *r, char *why, size_t len)
{
    if (r->check_max_logit_diff < 0)
        return 0;
    if (r->check_agree == r->check_compared && r->check_max_logit_diff <= ARB_ENGINE_LOGIT_TOL)
        return 0;
    snprintf(why, len,
             "--check-steps: the GPU disagrees with the CPU reference: %u of %u greedy tokens equal, max |logit diff| "
             "%.5f (tolerance %.3f), %zu of %zu selected experts differ",
             r->check_agree, r->check_compared, r->check_max_logit_diff, ARB_ENGINE_LOGIT_TOL, r->check_experts_differ,
             r->check_experts_total);
    return 1;
}
