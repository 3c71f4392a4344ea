/* SPDX-License-Identifier: MIT */
/* The sweep's rows: one CSV row and one table line per point, and the verdict counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "sweep/sweep_priv.h"

typedef struct rowbuf {
    char ranks[16], nodes[16], bytes[32], count[32], tokens[16], hidden[16], warmup[16], iters[16];
    char med[32], p10[32], p90[32], p99[32], mean[32], sd[32], mn[32], mx[32], alg[32], bus[32], wrong[32], tol[32];
    char time[32], sch[8];
    char *samples;
} rowbuf_t;

static void fmt_d(char *b, size_t n, double v) { snprintf(b, n, "%.3f", v); }

void sweep_write_row(sweep_t *s, const char *impl, const char *params, const arb_point_t *pt, const char *fusion,
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
        if (strcmp(check, "skip"))
            l.floor_ratio = sweep_floor_ratio(s, pt->bytes, pt->mode, st->median, &l.floor_name);
    }
    arb_report_line(&s->report, &l);
}

void sweep_fill_point(const sweep_t *s, size_t si, arb_mode_t mode, int fz, arb_point_t *pt)
{
    const arb_plan_t *p = s->plan;
    memset(pt, 0, sizeof *pt);
    pt->op = p->op;
    pt->fusion = fz ? ARB_FUSION_PLUGIN : ARB_FUSION_COMPOSED;
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

const char *sweep_fusion_name(const arb_plan_t *p, int fz)
{
    if (p->op != ARB_OP_ALLREDUCE_RMSNORM)
        return "";
    return fz ? "fused" : "unfused";
}

void sweep_rows_all(sweep_t *s, const char *impl, const char *params, const char *check, const char *why)
{
    SWEEP_FOR_EACH_POINT(s, si, mode, fz)
    {
        arb_point_t pt;
        sweep_fill_point(s, si, (arb_mode_t)mode, fz, &pt);
        sweep_write_row(s, impl, params, &pt, sweep_fusion_name(s->plan, fz), check, 0, why, NULL, NULL, 0, "", 0);
    }
}
