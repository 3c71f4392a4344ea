/* SPDX-License-Identifier: MIT */
/* --tune: a sweep of the engine's own call-site shapes, turned into the profile it uses. */
#include "sites/tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arbench/status.h"
#include "sweep/plan.h"
#include "analysis/points.h"
#include "sites/site_choice.h"
#include "sweep/sweep.h"

void arb_tune_paths(const char *results, char *sweep_csv, size_t sweep_len, char *profile_csv, size_t profile_len)
{
    size_t n = strlen(results);
    int has_csv = n >= 4 && strcmp(results + n - 4, ".csv") == 0;
    int stem = (int)(has_csv ? n - 4 : n);
    snprintf(sweep_csv, sweep_len, "%.*s.tune.csv", stem, results);
    snprintf(profile_csv, profile_len, "%.*s.profile.csv", stem, results);
}

/* Rank 0: the sweep's rows -> profile CSV. */
static int build_profile(const char *sweep_csv, const char *profile_csv, char *err, size_t err_len)
{
    arb_pointset_t ps;
    memset(&ps, 0, sizeof ps);
    arb_profile_t p;
    memset(&p, 0, sizeof p);
    arb_profile_opts_t o;
    arb_profile_opts_default(&o);
    int rc = arb_points_load(&ps, sweep_csv, err, err_len) || arb_profile_build(&ps, &o, &p, err, err_len) ||
             arb_profile_write_csv(&p, profile_csv, err, err_len);
    arb_profile_free(&p);
    arb_points_free(&ps);
    return rc ? -1 : 0;
}

arb_status_t arb_engine_tune(arb_mpi_t *m, const arb_tune_request_t *rq, int argc, char **argv, arb_profile_t *out,
                             char *profile_path, size_t profile_path_len, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (!rq->ntokens || !rq->hidden || !rq->modes || !rq->results || !*rq->results)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "--tune: expected call-site token counts, a hidden size, modes and a results path");
    arb_plan_t *plan = calloc(1, sizeof *plan);
    if (!plan)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "--tune: out of memory");
    arb_status_t st = ARB_OK;
    char list[512] = "", err[1024] = "", sweep_csv[4096];
    size_t used = 0;
    for (size_t i = 0; i < rq->ntokens && used < sizeof list; i++)
        used += (size_t)snprintf(list + used, sizeof list - used, "%s%u", i ? "," : "", rq->tokens[i]);
    arb_plan_defaults(plan);
    plan->op = rq->op;
    plan->dtype = ARB_DTYPE_BF16;
    plan->hidden = rq->hidden;
    plan->modes = rq->modes;
    plan->host_only = rq->host_only;
    if (arb_plan_set_tokens(plan, list, err, sizeof err) || arb_plan_finish(plan, err, sizeof err))
        ARB_RAISE_GOTO(st, ARB_ERR_INVALID, out_plan, why, why_len, "--tune: call-site shapes %s x %u: %s", list, rq->hidden, err);
    arb_tune_paths(rq->results, sweep_csv, sizeof sweep_csv, profile_path, profile_path_len);
    snprintf(plan->out, sizeof plan->out, "%s", sweep_csv);
    if (m->rank == 0)
        unlink(sweep_csv); /* our own derived file: a rerun must not append to the last one */
    MPI_Barrier(m->world);
    arb_sweep_result_t res;
    memset(&res, 0, sizeof res);
    arb_status_t sst = arb_sweep(plan, m, argc, argv, &res);
    if (sst != ARB_OK || res.interrupted) /* failed points are fine: the passing ones still make a profile */
        ARB_RAISE_GOTO(st, sst != ARB_OK ? sst : ARB_ERR_SYSTEM, out_plan, why, why_len, "--tune: the sweep of the call-site shapes (%s tokens x %u) %s; see its messages above", list, rq->hidden, res.interrupted ? "was interrupted" : "could not run");
    int bad = m->rank == 0 && build_profile(sweep_csv, profile_path, err, sizeof err) != 0;
    if (arb_agree_failure(m, bad, err, sizeof err) >= 0)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out_plan, why, why_len, "--tune: profile from %s: %s", sweep_csv, err);
    char lwhy[1024] = "";
    bad = arb_site_profile_load(profile_path, out, lwhy, sizeof lwhy) != ARB_OK;
    if (arb_agree_failure(m, bad, lwhy, sizeof lwhy) >= 0) {
        if (!bad)
            arb_profile_free(out);
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out_plan, why, why_len, "--tune: reading back %s: %s", profile_path, lwhy);
    }
out_plan:
    free(plan);
    return st;
}
