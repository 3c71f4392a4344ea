/* SPDX-License-Identifier: MIT */
/* `arbench sweep`: set up (sweep_setup.c), load the implementations, run every variant
 * (sweep_variant.c), close with the summary. */
#include "sweep/sweep.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "sweep/sweep_priv.h"
#include "sweep/sweep_stop.h"

static arb_status_t load_impls(sweep_t *s, arb_loaded_plugin_t *loaded, size_t *nloaded, const char **params_of, int *has_params)
{
    const arb_plan_t *plan = s->plan;
    char err[8192];
    *nloaded = 0;
    if (plan->impls_default) {
        uint32_t want = s->device >= 0 ? ARB_CAP_DEVICE_MEMORY : ARB_CAP_HOST_MEMORY;
        for (size_t i = 0; arb_default_plugins[i]; i++) {
            arb_loaded_plugin_t lp;
            int ok = arb_plugin_load(arb_default_plugins[i], &lp, err, sizeof err) == 0;
            int agreed = !arb_allmax_int(s->m, !ok); /* use it only where every rank has it */
            if (!agreed) {
                arb_debug("%s", err);
                if (ok)
                    arb_plugin_unload(&lp);
                continue;
            }
            if (!(lp.plugin->caps & want)) {
                arb_plugin_unload(&lp);
                continue;
            }
            params_of[*nloaded] = "";
            has_params[*nloaded] = 0;
            loaded[(*nloaded)++] = lp;
        }
        if (*nloaded == 0) {
            if (s->m->rank == 0)
                arb_err("no implementation could be loaded for a %s run (set ARBENCH_DEBUG=1 to see the paths tried)", s->device >= 0 ? "GPU" : "host");
            return ARB_ERR_INVALID;
        }
        /* By role, stable: floors first (later rows are read against them), baseline, candidates. */
        for (size_t i = 1; i < *nloaded; i++)
            for (size_t j = i; j > 0 && arb_role_of_caps(loaded[j - 1].plugin->caps) < arb_role_of_caps(loaded[j].plugin->caps); j--) {
                arb_loaded_plugin_t t = loaded[j];
                loaded[j] = loaded[j - 1], loaded[j - 1] = t;
            }
        return ARB_OK;
    }
    for (size_t i = 0; i < plan->nimpls; i++) {
        err[0] = '\0';
        int bad = arb_plugin_load(plan->impls[i].name, &loaded[i], err, sizeof err) != 0;
        if (arb_agree_failure(s->m, bad, err, sizeof err) >= 0) {
            if (s->m->rank == 0)
                arb_err("--impl %s: %s", plan->impls[i].name, err);
            for (size_t j = 0; j <= i; j++)
                if (loaded[j].handle)
                    arb_plugin_unload(&loaded[j]);
            return ARB_ERR_INVALID;
        }
        params_of[i] = plan->impls[i].params;
        has_params[i] = plan->impls[i].has_params;
        (*nloaded)++;
    }
    return ARB_OK;
}

arb_status_t arb_sweep(arb_plan_t *plan, arb_mpi_t *m, int argc, char **argv, arb_sweep_result_t *res)
{
    sweep_t *s = calloc(1, sizeof *s);
    char msg[2048] = "";
    arb_status_t rc = ARB_ERR_INVALID;
    memset(res, 0, sizeof *res);
    if (!s)
        return ARB_ERR_SYSTEM;
    s->plan = plan;
    s->m = m;
    s->runner = &arb_runner_host;

    if (sweep_agree_plan(s))
        goto out;
    arb_meta_collect(&s->meta, argc, argv);
    s->meta.ranks = m->nranks;
    s->meta.nodes = m->nnodes;
    if (sweep_setup_device(s, msg, sizeof msg) || sweep_trim_host_modes(s, msg, sizeof msg) ||
        sweep_setup_topology(s, msg, sizeof msg)) {
        if (m->rank == 0)
            arb_err("%s", msg);
        goto out;
    }

    for (size_t i = 0; i < plan->nsizes; i++) {
        if (plan->sizes[i] > s->max_bytes)
            s->max_bytes = plan->sizes[i];
        if (plan->tokens[i] > s->max_tokens)
            s->max_tokens = plan->tokens[i];
    }

    if (sweep_open_results(s, msg, sizeof msg)) {
        if (m->rank == 0)
            arb_err("%s", msg);
        goto out;
    }

    arb_loaded_plugin_t loaded[ARB_MAX_IMPLS + 16];
    const char *params_of[ARB_MAX_IMPLS + 16];
    int has_params[ARB_MAX_IMPLS + 16];
    size_t nloaded = 0;
    memset(loaded, 0, sizeof loaded);
    if (load_impls(s, loaded, &nloaded, params_of, has_params))
        goto out_close;

    size_t nvariants = 0;
    for (size_t i = 0; i < nloaded; i++) {
        size_t nv = 1;
        if (!has_params[i] && loaded[i].plugin->variants)
            for (nv = 0; loaded[i].plugin->variants[nv]; nv++)
                ;
        nvariants += nv ? nv : 1;
    }
    size_t nmodes = 0;
    for (int md = 0; md < ARB_MODE_COUNT; md++)
        nmodes += (plan->modes >> md) & 1u;
    if (m->rank == 0) {
        arb_report_init(&s->report, nvariants * plan->nsizes * nmodes * (plan->op == ARB_OP_ALLREDUCE_RMSNORM ? 2 : 1));
        printf("# arbench %s (%s): %d rank(s) on %d node(s), %s backend, gpu %s, fabric %s, %s %s\n", s->meta.version,
               s->meta.git_rev, m->nranks, m->nnodes, s->runner->backend, s->meta.gpu, s->meta.fabric,
               arb_op_name(plan->op), arb_dtype_name(plan->dtype));
        printf("# nccl %s (headers %s), %s; results -> %s\n", s->meta.nccl, s->meta.nccl_header, s->meta.mpi, plan->out);
        if (strcmp(s->meta.nccl, s->meta.nccl_header) && strcmp(s->meta.nccl, "none"))
            printf("# warning: NCCL library %s differs from the headers %s this arbench was built with: plugins on NCCL's device API will decline; rebuild against the library in use (-Dnccl_home)\n",
                   s->meta.nccl, s->meta.nccl_header);
        fflush(stdout);
    }
    sweep_stop_on_signals();

    rc = ARB_OK;
    for (size_t i = 0; i < nloaded && rc == ARB_OK && !s->interrupted; i++) {
        const arb_plugin_t *p = loaded[i].plugin;
        if (has_params[i] || !p->variants || !p->variants[0]) {
            rc = sweep_run_variant(s, &loaded[i], has_params[i] ? params_of[i] : "");
        } else {
            for (size_t k = 0; p->variants[k] && rc == ARB_OK && !s->interrupted; k++)
                rc = sweep_run_variant(s, &loaded[i], p->variants[k]);
        }
    }
    for (size_t i = 0; i < nloaded; i++)
        arb_plugin_unload(&loaded[i]);
    if (m->rank == 0) {
        arb_report_done(&s->report);
        printf("# %zu points: %zu passed, %zu failed, %zu skipped; results in %s\n", s->npass + s->nfail + s->nskip,
               s->npass, s->nfail, s->nskip, plan->out);
    }
    if (s->interrupted && m->rank == 0)
        arb_err("interrupted: the results file keeps every finished point");
    /* Rank 0 counted the rows; every rank returns the same counts. */
    unsigned long long counts[3] = {s->npass, s->nfail, s->nskip};
    MPI_Bcast(counts, 3, MPI_UNSIGNED_LONG_LONG, 0, m->world);
    res->npass = counts[0];
    res->nfail = counts[1];
    res->nskip = counts[2];
    res->interrupted = s->interrupted;
out_close:
    if (m->rank == 0 && arb_results_close(s->out))
        arb_err("closing %s failed", plan->out);
out:
    free(s->maxbuf);
    free(s);
    return rc;
}
