/* SPDX-License-Identifier: MIT */
#include "sweep.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "loader.h"
#include "meta.h"
#include "report.h"
#include "results.h"
#include "runner.h"
#include "stats.h"
#include "topo.h"

/* Samples written per row: 4096 x ~8 characters stays far below the readers' 1 MiB field limit. */
#define ARB_MAX_STORED_SAMPLES ARB_RESULTS_MAX_STORED_SAMPLES

static volatile sig_atomic_t interrupted;
static void on_signal(int sig) { interrupted = sig; }

typedef struct sweep {
    arb_plan_t *plan;
    arb_mpi_t *m;
    arb_meta_t meta;
    const arb_runner_ops_t *runner;
    arb_results_writer_t *out; /* rank 0 only */
    arb_report_t report;
    int device;
    size_t max_bytes;
    unsigned max_tokens;
    double floor[ARB_MAX_SIZES][ARB_MODE_COUNT]; /* the highest reference median (role.h) */
    char floor_name[ARB_MAX_SIZES][ARB_MODE_COUNT][24];
    double *maxbuf;
    size_t maxcap;
    size_t npass, nfail, nskip;
    unsigned salt;
    arb_role_t cur_role; /* of the variant being run, from its plugin's capabilities */
} sweep_t;

/* ------------------------------------------------------------------ rows */

typedef struct rowbuf {
    char ranks[16], nodes[16], bytes[32], count[32], tokens[16], hidden[16], warmup[16], iters[16];
    char med[32], p10[32], p90[32], p99[32], mean[32], sd[32], mn[32], mx[32], alg[32], bus[32], wrong[32], tol[32];
    char time[32], sch[8];
    char *samples;
} rowbuf_t;

static void fmt_d(char *b, size_t n, double v) { snprintf(b, n, "%.3f", v); }

static void write_row(sweep_t *s, const char *impl, const char *params, const arb_point_t *pt, const char *fusion,
                      const char *check, unsigned long long wrong, const char *note, const arb_stats_t *st,
                      const double *samples, size_t nsamples, const char *timing, double tol)
{
    if (s->m->rank != 0)
        return;
    rowbuf_t b = {0};
    arb_row_t row = {{0}};
    const arb_meta_t *mt = &s->meta;
    snprintf(b.sch, sizeof b.sch, "%d", ARB_RESULTS_SCHEMA);
    arb_utc_now(b.time, sizeof b.time);
    snprintf(b.ranks, sizeof b.ranks, "%d", s->m->nranks);
    snprintf(b.nodes, sizeof b.nodes, "%d", s->m->nnodes);
    snprintf(b.bytes, sizeof b.bytes, "%zu", pt->bytes);
    snprintf(b.count, sizeof b.count, "%zu", pt->count);
    if (pt->tokens)
        snprintf(b.tokens, sizeof b.tokens, "%u", pt->tokens);
    snprintf(b.hidden, sizeof b.hidden, "%u", pt->tokens ? pt->hidden : 0);
    snprintf(b.warmup, sizeof b.warmup, "%u", pt->warmup);
    snprintf(b.iters, sizeof b.iters, "%zu", nsamples ? nsamples : (size_t)pt->iters);
    snprintf(b.wrong, sizeof b.wrong, "%llu", wrong);
    if (tol > 0)
        snprintf(b.tol, sizeof b.tol, "%g", tol);
    else if (!strcmp(check, "pass") || !strcmp(check, "fail"))
        snprintf(b.tol, sizeof b.tol, "exact");
    if (st && st->n) {
        fmt_d(b.med, sizeof b.med, st->median);
        fmt_d(b.p10, sizeof b.p10, st->p10);
        fmt_d(b.p90, sizeof b.p90, st->p90);
        fmt_d(b.p99, sizeof b.p99, st->p99);
        fmt_d(b.mean, sizeof b.mean, st->mean);
        fmt_d(b.sd, sizeof b.sd, st->stdev);
        fmt_d(b.mn, sizeof b.mn, st->min);
        fmt_d(b.mx, sizeof b.mx, st->max);
        fmt_d(b.alg, sizeof b.alg, arb_algbw_gbs(pt->bytes, st->median));
        fmt_d(b.bus, sizeof b.bus, arb_busbw_gbs(pt->bytes, st->median, s->m->nranks));
        /* At most ARB_MAX_STORED_SAMPLES, evenly strided, keep rows readable (docs/results.md). */
        size_t stride = (nsamples + ARB_MAX_STORED_SAMPLES - 1) / ARB_MAX_STORED_SAMPLES;
        b.samples = malloc((nsamples / stride + 1) * 16 + 1);
        if (b.samples) {
            size_t used = 0;
            b.samples[0] = '\0';
            for (size_t i = 0; i < nsamples; i += stride)
                used += (size_t)snprintf(b.samples + used, 16, "%s%.3f", i ? " " : "", samples[i]);
        }
    }
    const char **f = row.f;
    f[ARB_COL_schema] = b.sch;
    f[ARB_COL_run_id] = mt->run_id;
    f[ARB_COL_time] = b.time;
    f[ARB_COL_git_rev] = mt->git_rev;
    f[ARB_COL_arbench_version] = mt->version;
    f[ARB_COL_host] = mt->host;
    f[ARB_COL_argv] = mt->argv;
    f[ARB_COL_gpu] = mt->gpu;
    f[ARB_COL_sm] = mt->sm;
    f[ARB_COL_driver] = mt->driver;
    f[ARB_COL_cuda] = mt->cuda;
    f[ARB_COL_nccl] = mt->nccl;
    f[ARB_COL_nccl_header] = mt->nccl_header;
    f[ARB_COL_mpi] = mt->mpi;
    f[ARB_COL_fabric] = mt->fabric;
    f[ARB_COL_binding] = mt->binding;
    f[ARB_COL_ranks] = b.ranks;
    f[ARB_COL_nodes] = b.nodes;
    f[ARB_COL_impl] = impl;
    f[ARB_COL_params] = params;
    f[ARB_COL_backend] = s->runner->backend;
    f[ARB_COL_env] = mt->env;
    f[ARB_COL_op] = arb_op_name(pt->op);
    f[ARB_COL_fusion] = fusion;
    f[ARB_COL_dtype] = arb_dtype_name(pt->dtype);
    f[ARB_COL_bytes] = b.bytes;
    f[ARB_COL_count] = b.count;
    f[ARB_COL_tokens] = b.tokens;
    f[ARB_COL_hidden] = b.hidden;
    f[ARB_COL_mode] = arb_mode_names[pt->mode];
    f[ARB_COL_timing] = timing;
    f[ARB_COL_warmup] = b.warmup;
    f[ARB_COL_iters] = b.iters;
    f[ARB_COL_median_us] = b.med;
    f[ARB_COL_p10_us] = b.p10;
    f[ARB_COL_p90_us] = b.p90;
    f[ARB_COL_p99_us] = b.p99;
    f[ARB_COL_mean_us] = b.mean;
    f[ARB_COL_stdev_us] = b.sd;
    f[ARB_COL_min_us] = b.mn;
    f[ARB_COL_max_us] = b.mx;
    f[ARB_COL_algbw_gbs] = b.alg;
    f[ARB_COL_busbw_gbs] = b.bus;
    f[ARB_COL_check] = check;
    f[ARB_COL_wrong] = b.wrong;
    f[ARB_COL_tolerance] = b.tol;
    f[ARB_COL_note] = note;
    f[ARB_COL_samples_us] = b.samples;
    f[ARB_COL_source] = "measured";
    f[ARB_COL_role] = arb_role_name(s->cur_role);
    if (arb_results_append(s->out, &row))
        arb_err("cannot append to the results file (disk full?): the row for %s %s %zu B is lost", impl,
                arb_mode_names[pt->mode], pt->bytes);
    free(b.samples);

    if (!strcmp(check, "pass"))
        s->npass++;
    else if (!strcmp(check, "fail"))
        s->nfail++;
    else
        s->nskip++;
    arb_report_line_t l = {.impl = impl, .params = params, .mode = arb_mode_names[pt->mode], .check = check,
                           .note = note, .bytes = pt->bytes, .tokens = pt->tokens, .fusion = fusion,
                           .role = s->cur_role};
    if (st && st->n) {
        l.median = st->median;
        l.p10 = st->p10;
        l.p90 = st->p90;
        l.busbw = arb_busbw_gbs(pt->bytes, st->median, s->m->nranks);
        /* Read each result as a ratio to the floor measured in this run (the highest reference). */
        for (size_t si = 0; si < s->plan->nsizes; si++)
            if (s->plan->sizes[si] == pt->bytes && s->floor[si][pt->mode] > 0 && strcmp(check, "skip")) {
                l.floor_ratio = arb_ratio(st->median, s->floor[si][pt->mode]);
                l.floor_name = s->floor_name[si][pt->mode];
            }
    }
    arb_report_line(&s->report, &l);
}

/* ------------------------------------------------------------------ points */

static void fill_point(const sweep_t *s, size_t si, arb_mode_t mode, int fused, arb_point_t *pt)
{
    const arb_plan_t *p = s->plan;
    memset(pt, 0, sizeof *pt);
    pt->op = p->op;
    pt->fused = fused;
    pt->dtype = p->dtype;
    pt->mode = mode;
    pt->bytes = p->sizes[si];
    pt->count = p->sizes[si] / arb_dtype_size(p->dtype);
    pt->tokens = p->tokens[si];
    pt->hidden = p->hidden;
    pt->eps = p->eps;
    pt->iters = p->iters;
    pt->warmup = p->warmup;
    pt->graph_ops = p->graph_ops;
    pt->graph_replays = p->graph_replays;
    pt->context_us = p->context_us;
    pt->check = p->check;
}

/* Each (size, mode, fusion) of one variant, in plan order. */
#define FOR_EACH_POINT(s, si, mode, fz)                                                               \
    for (size_t si = 0; si < (s)->plan->nsizes; si++)                                                 \
        for (int mode = 0; mode < ARB_MODE_COUNT; mode++)                                             \
            if ((s)->plan->modes & (1u << mode))                                                      \
                for (int fz = 0; fz < ((s)->plan->op == ARB_OP_ALLREDUCE_RMSNORM ? 2 : 1); fz++)

static const char *fusion_name(const arb_plan_t *p, int fz)
{
    if (p->op != ARB_OP_ALLREDUCE_RMSNORM)
        return "";
    return fz ? "fused" : "unfused";
}

static void skip_all(sweep_t *s, const char *impl, const char *params, const char *why)
{
    FOR_EACH_POINT(s, si, mode, fz)
    {
        arb_point_t pt;
        fill_point(s, si, (arb_mode_t)mode, fz, &pt);
        write_row(s, impl, params, &pt, fusion_name(s->plan, fz), "skip", 0, why, NULL, NULL, 0, "", 0);
    }
}

static void fail_all(sweep_t *s, const char *impl, const char *params, const char *why)
{
    FOR_EACH_POINT(s, si, mode, fz)
    {
        arb_point_t pt;
        fill_point(s, si, (arb_mode_t)mode, fz, &pt);
        write_row(s, impl, params, &pt, fusion_name(s->plan, fz), "fail", 0, why, NULL, NULL, 0, "", 0);
    }
}

/* Max over ranks of each sample: a collective is as slow as its slowest rank. */
static double *max_over_ranks(sweep_t *s, const double *samples, size_t n)
{
    if (s->maxcap < n) {
        free(s->maxbuf);
        s->maxbuf = malloc(n * sizeof(double));
        s->maxcap = s->maxbuf ? n : 0;
        if (!s->maxbuf)
            return NULL;
    }
    MPI_Allreduce(samples, s->maxbuf, (int)n, MPI_DOUBLE, MPI_MAX, s->m->world);
    return s->maxbuf;
}

typedef struct variant {
    arb_loaded_plugin_t *lp;
    const char *params;
    char described[512];
    void *state;
    arb_runner_t *runner;
    arb_comm_info_t info;
    arb_host_ops_t ops;
    arb_hostops_ctx_t ctx;
} variant_t;

static void variant_close(sweep_t *s, variant_t *v)
{
    if (v->runner)
        s->runner->destroy(v->runner);
    v->runner = NULL;
    if (v->state)
        v->lp->plugin->finalize(v->state);
    v->state = NULL;
}

/* Collective init + runner creation. Returns ARB_OK, ARB_DECLINE or an error, the
 * same on every rank, with the first failing rank's reason in why. */
static arb_status_t variant_open(sweep_t *s, variant_t *v, char *why, size_t why_len)
{
    const arb_plugin_t *p = v->lp->plugin;
    why[0] = '\0';
    arb_status_t st = p->init(&v->info, &v->ops, v->params, &v->state, why, why_len);
    if (st != ARB_OK)
        v->state = NULL;
    int worst = arb_allmax_int(s->m, (int)st);
    if (arb_agree_failure(s->m, st != ARB_OK, why, why_len) >= 0 || worst != ARB_OK) {
        variant_close(s, v);
        return (arb_status_t)worst;
    }
    st = s->runner->create(&(arb_instance_t){p, v->state, &v->info, &v->ops}, s->plan,
                           s->plan->op == ARB_OP_ALLREDUCE ? s->max_bytes : (size_t)s->max_tokens * s->plan->hidden * 2,
                           &v->runner, why, why_len);
    if (st != ARB_OK)
        v->runner = NULL;
    worst = arb_allmax_int(s->m, (int)st);
    if (arb_agree_failure(s->m, st != ARB_OK, why, why_len) >= 0 || worst != ARB_OK) {
        variant_close(s, v);
        return (arb_status_t)worst;
    }
    const char *d = p->describe ? p->describe(v->state) : NULL;
    snprintf(v->described, sizeof v->described, "%s", d ? d : v->params);
    return ARB_OK;
}

static int run_variant(sweep_t *s, arb_loaded_plugin_t *lp, const char *params)
{
    const arb_plugin_t *p = lp->plugin;
    const arb_plan_t *plan = s->plan;
    char why[1024] = "";
    s->cur_role = arb_role_of_caps(p->caps);
    uint32_t need = plan->dtype == ARB_DTYPE_BF16 ? ARB_CAP_BF16 : ARB_CAP_FP32;
    if (!(p->caps & need)) {
        snprintf(why, sizeof why, "%s does not support %s", p->name, arb_dtype_name(plan->dtype));
        skip_all(s, p->name, params, why);
        return 0;
    }
    if ((p->caps & ARB_CAP_SINGLE_NODE) && s->m->nnodes > 1) {
        snprintf(why, sizeof why, "%s runs on a single node; the ranks span %d nodes", p->name, s->m->nnodes);
        skip_all(s, p->name, params, why);
        return 0;
    }
    variant_t v = {.lp = lp, .params = params};
    v.info = (arb_comm_info_t){.rank = s->m->rank, .nranks = s->m->nranks, .local_rank = s->m->local_rank,
                               .local_nranks = s->m->local_nranks, .node = s->m->node, .nnodes = s->m->nnodes,
                               .cuda_device = s->device, .max_bytes = s->max_bytes, .max_tokens = s->max_tokens,
                               .hidden = plan->hidden, .mpi_comm = &s->m->world};
    if (plan->op == ARB_OP_ALLREDUCE_RMSNORM)
        v.info.max_bytes = (size_t)s->max_tokens * plan->hidden * 2;
    arb_hostops_init(&v.ops, &v.ctx, s->m, p->name);

    arb_status_t st = variant_open(s, &v, why, sizeof why);
    if (st == ARB_DECLINE) {
        skip_all(s, p->name, params, why);
        return 0;
    }
    if (st != ARB_OK) {
        char msg[1100];
        snprintf(msg, sizeof msg, "init failed: %s", why);
        fail_all(s, p->name, params, msg);
        return 0;
    }

    int broken = 0; /* re-init failed after an error: the rest is not run */
    FOR_EACH_POINT(s, si, mode, fz)
    {
        arb_point_t pt;
        fill_point(s, si, (arb_mode_t)mode, fz, &pt);
        pt.salt = ++s->salt;
        const char *fusion = fusion_name(plan, fz);
        if (arb_allmax_int(s->m, interrupted != 0)) {
            variant_close(s, &v);
            return 130;
        }
        if (broken) {
            write_row(s, p->name, v.described, &pt, fusion, "fail", 0, why, NULL, NULL, 0, "", 0);
            continue;
        }
        if (s->m->rank == 0) {
            char what[1024];
            snprintf(what, sizeof what, "%s %s %s %zu B", p->name, v.described, arb_mode_names[mode], pt.bytes);
            arb_report_progress(&s->report, what);
        }
        MPI_Barrier(s->m->world);
        arb_point_out_t o = {0};
        s->runner->run(v.runner, &pt, &o);
        int fatal = arb_allmax_int(s->m, o.fatal);
        int worst = arb_allmax_int(s->m, (int)o.status);
        char note[1024];
        snprintf(note, sizeof note, "%s", o.why);
        arb_agree_failure(s->m, o.status != ARB_OK, note, sizeof note);
        if (worst == ARB_DECLINE) {
            write_row(s, p->name, v.described, &pt, fusion, "skip", 0, note, NULL, NULL, 0, o.timing, 0);
            continue;
        }
        if (worst != ARB_OK) {
            write_row(s, p->name, v.described, &pt, fusion, "fail", 0, note, NULL, NULL, 0, o.timing, 0);
            if (fatal) {
                arb_err("the GPU is unusable after %s %s %zu B (%s): stopping; the results file keeps every finished row", p->name, arb_mode_names[mode], pt.bytes, note);
                variant_close(s, &v);
                return -1;
            }
            /* The plugin's cross-rank state may be out of step: start it afresh. */
            variant_close(s, &v);
            if (variant_open(s, &v, why, sizeof why) != ARB_OK) {
                char msg[sizeof why];
                snprintf(msg, sizeof msg, "not run: re-initialising after a failure failed: %.900s", why);
                memcpy(why, msg, sizeof why);
                broken = 1;
            }
            continue;
        }
        unsigned long long wrong = (unsigned long long)arb_allsum_ll(s->m, (long long)o.wrong);
        int checked = arb_allmax_int(s->m, o.checked);
        note[0] = '\0';
        if (o.out_hash) { /* every rank must hold the same fused outputs */
            unsigned long long h0 = o.out_hash;
            MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, s->m->world);
            int differ = (int)arb_allsum_ll(s->m, h0 != o.out_hash);
            if (differ) {
                wrong += (unsigned long long)differ;
                snprintf(note, sizeof note, "outputs differ from rank 0's on %d rank(s)", differ);
            }
        }
        size_t n = o.nsamples;
        double *mx = max_over_ranks(s, o.samples, n);
        arb_stats_t stt = {0};
        int stats_ok = mx && arb_stats_compute(mx, n, &stt) == 0;
        const char *check = !checked ? "skip" : wrong ? "fail" : "pass";
        if (!checked && !note[0])
            snprintf(note, sizeof note, "%s", (p->caps & ARB_CAP_REFERENCE) ? "reference floor: no payload, not checked" : "--no-check");
        if (wrong && !note[0])
            snprintf(note, sizeof note, "%llu wrong elements over all ranks", wrong);
        if (!stats_ok && !wrong) {
            check = "fail";
            snprintf(note, sizeof note, "no valid timing samples");
        }
        if (stats_ok && s->cur_role == ARB_ROLE_REFERENCE && !strcmp(check, "skip") &&
            arb_floor_raise(&s->floor[si][mode], stt.median)) /* the tightest floor (role.h) */
            snprintf(s->floor_name[si][mode], sizeof s->floor_name[si][mode], " %s", p->name);
        /* A failed check is never reported as a good time: its statistics are withheld. */
        int show = stats_ok && strcmp(check, "fail") != 0;
        write_row(s, p->name, v.described, &pt, fusion, check, wrong, note, show ? &stt : NULL, mx, show ? n : 0,
                  o.timing, o.tolerance);
    }
    variant_close(s, &v);
    return 0;
}

/* ------------------------------------------------------------------ setup */

static int load_impls(sweep_t *s, arb_loaded_plugin_t *loaded, size_t *nloaded, const char **params_of, int *has_params)
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
            return -1;
        }
        /* By role, stable: floors first (later rows are read against them), baseline, candidates. */
        for (size_t i = 1; i < *nloaded; i++)
            for (size_t j = i; j > 0 && arb_role_of_caps(loaded[j - 1].plugin->caps) < arb_role_of_caps(loaded[j].plugin->caps); j--) {
                arb_loaded_plugin_t t = loaded[j];
                loaded[j] = loaded[j - 1], loaded[j - 1] = t;
            }
        return 0;
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
            return -1;
        }
        params_of[i] = plan->impls[i].params;
        has_params[i] = plan->impls[i].has_params;
        (*nloaded)++;
    }
    return 0;
}

static int setup_device(sweep_t *s, char *msg, size_t len)
{
    arb_gpu_info_t gi;
    char why[512] = "";
    int ngpu = s->plan->host_only ? 0 : arb_gpu_count(why, sizeof why);
    int all_have = !arb_allmax_int(s->m, ngpu == 0);
    s->device = -1;
    if (!all_have) {
        if (s->m->rank == 0) {
            if (s->plan->host_only)
                printf("# --host: running the host backends only\n");
            else
                printf("# %s: running the host backends only\n", why[0] ? why : "no CUDA device visible on some rank");
        }
        return 0;
    }
    int bad = s->m->local_nranks > ngpu;
    if (bad)
        snprintf(msg, len, "%d ranks on node %d but only %d GPU(s) visible: start one rank per GPU (mpirun -np %d) or give --host", s->m->local_nranks, s->m->node, ngpu, ngpu);
    if (arb_agree_failure(s->m, bad, msg, len) >= 0)
        return -1;
    s->device = s->m->local_rank;
    arb_status_t st = arb_gpu_select(s->device, &gi, msg, len);
    if (arb_agree_failure(s->m, st != ARB_OK, msg, len) >= 0)
        return -1;
    snprintf(s->meta.gpu, sizeof s->meta.gpu, "%s", gi.name);
    snprintf(s->meta.sm, sizeof s->meta.sm, "%s", gi.sm);
    snprintf(s->meta.driver, sizeof s->meta.driver, "%s", gi.driver);
    snprintf(s->meta.cuda, sizeof s->meta.cuda, "%s", gi.cuda);
    s->runner = &arb_runner_gpu;
    return 0;
}

int arb_sweep(arb_plan_t *plan, arb_mpi_t *m, int argc, char **argv)
{
    sweep_t *s = calloc(1, sizeof *s);
    char msg[2048] = "";
    int rc = 2;
    if (!s)
        return 2;
    s->plan = plan;
    s->m = m;
    s->runner = &arb_runner_host;

    /* Every rank must run the same plan: compare hashes of the canonical plan text. */
    unsigned long long h = arb_plan_hash(plan), *all = malloc(sizeof(*all) * (size_t)m->nranks);
    if (!all)
        goto out;
    MPI_Allgather(&h, 1, MPI_UNSIGNED_LONG_LONG, all, 1, MPI_UNSIGNED_LONG_LONG, m->world);
    for (int r = 1; r < m->nranks; r++)
        if (all[r] != all[0]) {
            if (m->rank == 0)
                arb_err("ranks were started with different arguments: rank %d's plan differs from rank 0's (every rank must get the same options)", r);
            if (m->rank == r) {
                char canon[2048];
                arb_plan_canonical(plan, canon, sizeof canon);
                arb_err("this rank's plan: %s", canon);
            }
            free(all);
            goto out;
        }
    free(all);

    arb_meta_collect(&s->meta, argc, argv);
    s->meta.ranks = m->nranks;
    s->meta.nodes = m->nnodes;
    if (setup_device(s, msg, sizeof msg)) {
        if (m->rank == 0)
            arb_err("%s", msg);
        goto out;
    }
    arb_topo_result_t topo;
    int tbad = arb_topo_setup(&m->world, s->device, plan->bind, &topo, msg, sizeof msg) != 0;
    if (arb_agree_failure(m, tbad, msg, sizeof msg) >= 0) {
        if (m->rank == 0)
            arb_err("topology: %s", msg);
        goto out;
    }
    snprintf(s->meta.fabric, sizeof s->meta.fabric, "%s", topo.fabric);
    {   /* every rank's binding, '|'-separated in rank order */
        char *bind_all = malloc(256 * (size_t)m->nranks);
        if (!bind_all)
            goto out;
        MPI_Gather(topo.binding, 256, MPI_CHAR, bind_all, 256, MPI_CHAR, 0, m->world);
        if (m->rank == 0) {
            size_t used = 0;
            for (int r = 0; r < m->nranks && used < sizeof s->meta.binding; r++)
                used += (size_t)snprintf(s->meta.binding + used, sizeof s->meta.binding - used, "%s%s", r ? "|" : "",
                                         bind_all + 256 * (size_t)r);
        }
        free(bind_all);
    }
    if (m->rank == 0 && topo.warnings[0])
        printf("# topology warnings: %s\n", topo.warnings);
    {
        char t[32];
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(t, sizeof t, "%Y%m%dT%H%M%SZ", &tm);
        snprintf(s->meta.run_id, sizeof s->meta.run_id, "%.20s-%.20s-%ld", t, s->meta.host, (long)getpid());
        MPI_Bcast(s->meta.run_id, sizeof s->meta.run_id, MPI_CHAR, 0, m->world);
    }

    for (size_t i = 0; i < plan->nsizes; i++) {
        if (plan->sizes[i] > s->max_bytes)
            s->max_bytes = plan->sizes[i];
        if (plan->tokens[i] > s->max_tokens)
            s->max_tokens = plan->tokens[i];
    }

    /* The results file: rank 0 creates it; a failure stops every rank. */
    int obad = 0;
    if (m->rank == 0 && !(s->out = arb_results_open(plan->out, msg, sizeof msg)))
        obad = 1;
    if (arb_agree_failure(m, obad, msg, sizeof msg) >= 0) {
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
    struct sigaction sa = {.sa_handler = on_signal};
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    rc = 0;
    for (size_t i = 0; i < nloaded && rc == 0; i++) {
        const arb_plugin_t *p = loaded[i].plugin;
        if (has_params[i] || !p->variants || !p->variants[0]) {
            rc = run_variant(s, &loaded[i], has_params[i] ? params_of[i] : "");
        } else {
            for (size_t k = 0; p->variants[k] && rc == 0; k++)
                rc = run_variant(s, &loaded[i], p->variants[k]);
        }
    }
    for (size_t i = 0; i < nloaded; i++)
        arb_plugin_unload(&loaded[i]);
    if (m->rank == 0) {
        arb_report_done(&s->report);
        printf("# %zu points: %zu passed, %zu failed, %zu skipped; results in %s\n", s->npass + s->nfail + s->nskip,
               s->npass, s->nfail, s->nskip, plan->out);
    }
    if (rc == 130) {
        if (m->rank == 0)
            arb_err("interrupted: the results file keeps every finished point");
    } else if (rc < 0) {
        rc = 1;
    } else {
        rc = arb_allmax_int(m, m->rank == 0 && s->nfail > 0) ? 1 : 0;
    }
out_close:
    if (m->rank == 0 && arb_results_close(s->out))
        arb_err("closing %s failed", plan->out);
out:
    free(s->maxbuf);
    free(s);
    return rc;
}
