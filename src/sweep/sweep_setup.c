/* SPDX-License-Identifier: MIT */
/* The sweep's setup, every step collective: the same plan on every rank, one GPU per
 * rank (or the host backend), topology and binding, the run id, the results file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/common.h"
#include "sweep/sweep_priv.h"
#include "topo/topo.h"

arb_status_t sweep_agree_plan(sweep_t *s)
{
    /* Compare hashes of the canonical plan text. */
    arb_mpi_t *m = s->m;
    unsigned long long h = arb_plan_hash(s->plan), *all = malloc(sizeof(*all) * (size_t)m->nranks);
    int bad = !all;
    if (all) {
        MPI_Allgather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, m->world);
        for (int r = 1; r < m->nranks && !bad; r++)
            if (all[r] != all[0]) {
                bad = 1;
                if (m->rank == 0)
                    arb_err("ranks were started with different arguments: rank %d's plan differs from rank 0's (every rank must get the same options)", r);
                if (m->rank == r) {
                    char canon[2048];
                    arb_plan_canonical(s->plan, canon, sizeof canon);
                    arb_err("this rank's plan: %s", canon);
                }
            }
    }
    free(all);
    return arb_allmax_int(m, bad) ? ARB_ERR_INVALID : ARB_OK;
}

arb_status_t sweep_setup_device(sweep_t *s, char *msg, size_t len)
{
    arb_gpu_info_t gi;
    char why[512] = "";
    int ngpu = s->plan->host_only ? 0 : arb_gpu_count(why, sizeof why);
    int all_have = !arb_allmax_int(s->m, ngpu == 0);
    s->device = -1;
    s->runner = &arb_runner_host;
    if (!all_have) {
        if (s->m->rank == 0) {
            if (s->plan->host_only)
                printf("# --host: running the host backends only\n");
            else
                printf("# %s: running the host backends only\n", why[0] ? why : "no CUDA device visible on some rank");
        }
        return ARB_OK;
    }
    int bad = s->m->local_nranks > ngpu;
    if (bad)
        snprintf(msg, len, "%d ranks on node %d but only %d GPU(s) visible: start one rank per GPU (mpirun -np %d) or give --host", s->m->local_nranks, s->m->node, ngpu, ngpu);
    if (arb_agree_failure(s->m, bad, msg, len) >= 0)
        return ARB_ERR_INVALID;
    s->device = s->m->local_rank;
    arb_status_t st = arb_gpu_select(s->device, &gi, msg, len);
    if (arb_agree_failure(s->m, st != ARB_OK, msg, len) >= 0)
        return ARB_ERR_INVALID;
    snprintf(s->meta.gpu, sizeof s->meta.gpu, "%s", gi.name);
    snprintf(s->meta.sm, sizeof s->meta.sm, "%s", gi.sm);
    snprintf(s->meta.driver, sizeof s->meta.driver, "%s", gi.driver);
    snprintf(s->meta.cuda, sizeof s->meta.cuda, "%s", gi.cuda);
    s->runner = &arb_runner_gpu;
    return ARB_OK;
}

/* The host backend runs eager mode only: a host plan leaves the other modes out, said
 * once, instead of one skip row per point. Every rank decides alike (the device
 * choice is agreed). */
arb_status_t sweep_trim_host_modes(sweep_t *s, char *msg, size_t len)
{
    arb_plan_t *p = s->plan;
    unsigned eager = 1u << ARB_MODE_EAGER, left_out = p->modes & ~eager;
    if (s->device >= 0 || !left_out)
        return ARB_OK;
    char names[64] = "";
    for (int md = 0; md < ARB_MODE_COUNT; md++)
        if (left_out & (1u << md))
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? "," : "", arb_mode_names[md]);
    if (!(p->modes & eager)) {
        ARB_RAISE(ARB_ERR_INVALID, msg, len, "--modes %s: the host backend runs eager mode only (no GPU in this run); give --modes eager", names);
    }
    p->modes = eager;
    if (s->m->rank == 0)
        printf("# host backend: eager mode only; left out: %s (they need a GPU)\n", names);
    return ARB_OK;
}

arb_status_t sweep_setup_topology(sweep_t *s, char *msg, size_t len)
{
    arb_mpi_t *m = s->m;
    arb_topo_result_t topo;
    int bad = arb_topo_setup(&m->world, s->device, s->plan->bind, &topo, msg, len) != 0;
    if (arb_agree_failure(m, bad, msg, len) >= 0) {
        char t[1024];
        snprintf(t, sizeof t, "topology: %s", msg);
        ARB_RAISE(ARB_ERR_INVALID, msg, len, "%s", t);
    }
    snprintf(s->meta.fabric, sizeof s->meta.fabric, "%s", topo.fabric);
    /* every rank's binding, '|'-separated in rank order */
    char *bind_all = malloc(256 * (size_t)m->nranks);
    if (arb_allmax_int(m, !bind_all)) {
        free(bind_all);
        ARB_RAISE(ARB_ERR_INVALID, msg, len, "out of host memory for the ranks' bindings");
    }
    MPI_Gather(topo.binding, 256, MPI_CHAR, bind_all, 256, MPI_CHAR, 0, m->world);
    if (m->rank == 0) {
        size_t used = 0;
        for (int r = 0; r < m->nranks && used < sizeof s->meta.binding; r++)
            used += (size_t)snprintf(s->meta.binding + used, sizeof s->meta.binding - used, "%s%s", r ? "|" : "",
                                     bind_all + 256 * (size_t)r);
    }
    free(bind_all);
    if (m->rank == 0 && topo.warnings[0])
        printf("# topology warnings: %s\n", topo.warnings);

    char t[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
    snprintf(s->meta.run_id, sizeof s->meta.run_id, "%.20s-%.20s-%ld", t, s->meta.host, (long)getpid());
    MPI_Bcast(s->meta.run_id, sizeof s->meta.run_id, MPI_CHAR, 0, m->world);
    return ARB_OK;
}

/* Rank 0 creates the file, or appends to an existing one only when --append says so:
 * rows of two runs in one file are told apart by run_id, but a reader counting rows
 * would be misled by a silent append. */
arb_status_t sweep_open_results(sweep_t *s, char *msg, size_t len)
{
    const arb_plan_t *p = s->plan;
    int bad = 0;
    if (s->m->rank == 0) {
        struct stat st;
        int exists = stat(p->out, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
        if (exists && !p->append) {
            snprintf(msg, len, "--out '%s' exists: give --append to add this run's rows to it (told apart by run_id), or choose a new file", p->out);
            bad = 1;
        } else if (!(s->out = arb_results_open(p->out, msg, len))) {
            bad = 1;
        } else if (exists) {
            printf("# appending to %s (its rows are kept; this run's run_id is %s)\n", p->out, s->meta.run_id);
        }
    }
    return arb_agree_failure(s->m, bad, msg, len) >= 0 ? ARB_ERR_INVALID : ARB_OK;
}
