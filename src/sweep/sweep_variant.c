/* SPDX-License-Identifier: MIT */
/*
 * One variant of the sweep: open an instance (instance.h) for the plan's use, a runner
 * on it, then every point: gate, check and time on every rank, agree on the verdict
 * (max over ranks), write the row. A point that failed restarts the instance, since the
 * plugin's cross-rank state may be out of step.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/common.h"
#include "sweep/sweep_priv.h"
#include "sweep/sweep_stop.h"

typedef struct variant {
    arb_loaded_plugin_t *lp;
    const char *params;
    arb_inst_t *inst;
    arb_runner_t *runner;
} variant_t;

static void variant_close(sweep_t *s, variant_t *v)
{
    if (v->runner)
        s->runner->destroy(v->runner);
    v->runner = NULL;
    arb_inst_close(v->inst);
    v->inst = NULL;
}

/* The plan as an instance's use. A plan of several modes opens for its first mode and
 * gates the others point by point (arb_inst_gate). */
static arb_use_t use_of(const sweep_t *s)
{
    const arb_plan_t *p = s->plan;
    arb_mode_t first = ARB_MODE_EAGER;
    while (first < ARB_MODE_COUNT - 1 && !(p->modes & (1u << first)))
        first++;
    return (arb_use_t){.op = p->op, .dtype = p->dtype, .mode = first, .max_bytes = s->max_bytes,
                       .max_tokens = s->max_tokens, .hidden = p->hidden, .cuda_device = s->device};
}

/* Collective instance + runner. ARB_OK, ARB_DECLINE or an error, the same on every rank,
 * with the first failing rank's reason in why. */
static arb_status_t variant_open(sweep_t *s, variant_t *v, char *why, size_t why_len)
{
    arb_use_t use = use_of(s);
    why[0] = '\0';
    arb_status_t st = arb_inst_open(s->m, v->lp, v->params, &use, &v->inst, why, why_len);
    if (st != ARB_OK)
        return st;
    size_t max_bytes = s->plan->op == ARB_OP_ALLREDUCE ? s->max_bytes : (size_t)s->max_tokens * s->plan->hidden * 2;
    st = s->runner->create(v->inst, s->plan, max_bytes, &v->runner, why, why_len);
    if (st != ARB_OK)
        v->runner = NULL;
    int worst = arb_allmax_int(s->m, (int)st);
    if (arb_agree_failure(s->m, st != ARB_OK, why, why_len) >= 0 || worst != ARB_OK) {
        variant_close(s, v);
        return (arb_status_t)worst;
    }
    return ARB_OK;
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

/* The verdict of a point that ran on every rank: check, statistics, row. */
static void point_verdict(sweep_t *s, const arb_plugin_t *p, const char *params, size_t si, const arb_point_t *pt,
                          const char *fusion, const arb_point_out_t *o)
{
    char note[1024] = "";
    unsigned long long wrong = (unsigned long long)arb_allsum_ll(s->m, (long long)o->wrong);
    int checked = arb_allmax_int(s->m, o->checked);
    if (o->out_hash) { /* every rank must hold the same fused outputs */
        unsigned long long h0 = o->out_hash;
        MPI_Bcast(&h0, 1, MPI_UNSIGNED_LONG_LONG, 0, s->m->world);
        int differ = (int)arb_allsum_ll(s->m, h0 != o->out_hash);
        if (differ) {
            wrong += (unsigned long long)differ;
            snprintf(note, sizeof note, "outputs differ from rank 0's on %d rank(s)", differ);
        }
    }
    size_t n = o->nsamples;
    double *mx = max_over_ranks(s, o->samples, n);
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
    if (stats_ok && s->cur_role == ARB_ROLE_REFERENCE && !strcmp(check, "skip"))
        sweep_floor_record(s, p->name, si, pt->mode, stt.median);
    /* A failed check is never reported as a good time: its statistics are withheld. */
    int show = stats_ok && strcmp(check, "fail") != 0;
    sweep_write_row(s, p->name, params, pt, fusion, check, wrong, note, show ? &stt : NULL, mx, show ? n : 0,
                    o->timing, o->tolerance);
}

arb_status_t sweep_run_variant(sweep_t *s, arb_loaded_plugin_t *lp, const char *params)
{
    const arb_plugin_t *p = lp->plugin;
    char why[1024] = "";
    s->cur_role = arb_role_of_caps(p->caps);
    variant_t v = {.lp = lp, .params = params};

    arb_status_t st = variant_open(s, &v, why, sizeof why);
    if (st == ARB_DECLINE) {
        sweep_rows_all(s, p->name, params, "skip", why);
        return ARB_OK;
    }
    if (st != ARB_OK) {
        char msg[1100];
        snprintf(msg, sizeof msg, "init failed: %s", why);
        sweep_rows_all(s, p->name, params, "fail", msg);
        return ARB_OK;
    }
    /* The described parameters of the first open name the rows, also after a restart. */
    char described[512];
    snprintf(described, sizeof described, "%s", arb_inst_describe(v.inst));

    int broken = 0; /* re-opening after an error failed: the rest is not run */
    SWEEP_FOR_EACH_POINT(s, si, mode, fz)
    {
        arb_point_t pt;
        sweep_fill_point(s, si, (arb_mode_t)mode, fz, &pt);
        pt.salt = ++s->salt;
        const char *fusion = sweep_fusion_name(s->plan, fz);
        if (arb_allmax_int(s->m, sweep_stop_requested() != 0)) {
            s->interrupted = 1;
            variant_close(s, &v);
            return ARB_OK;
        }
        if (broken) {
            sweep_write_row(s, p->name, described, &pt, fusion, "fail", 0, why, NULL, NULL, 0, "", 0);
            continue;
        }
        char gate_why[512];
        if (arb_inst_gate(v.inst, pt.mode, pt.op == ARB_OP_ALLREDUCE_RMSNORM ? pt.fusion : ARB_FUSION_AUTO, gate_why,
                          sizeof gate_why) != ARB_OK) {
            sweep_write_row(s, p->name, described, &pt, fusion, "skip", 0, gate_why, NULL, NULL, 0, "", 0);
            continue;
        }
        if (s->m->rank == 0) {
            char what[1024];
            snprintf(what, sizeof what, "%s %s %s %zu B", p->name, described, arb_mode_names[mode], pt.bytes);
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
            sweep_write_row(s, p->name, described, &pt, fusion, "skip", 0, note, NULL, NULL, 0, o.timing, 0);
            continue;
        }
        if (worst != ARB_OK) {
            sweep_write_row(s, p->name, described, &pt, fusion, "fail", 0, note, NULL, NULL, 0, o.timing, 0);
            if (fatal) {
                arb_err("the GPU is unusable after %s %s %zu B (%s): stopping; the results file keeps every finished row", p->name, arb_mode_names[mode], pt.bytes, note);
                variant_close(s, &v);
                return ARB_ERR_SYSTEM;
            }
            variant_close(s, &v);
            if (variant_open(s, &v, why, sizeof why) != ARB_OK) {
                char msg[sizeof why];
                snprintf(msg, sizeof msg, "not run: re-initialising after a failure failed: %.900s", why);
                memcpy(why, msg, sizeof why);
                broken = 1;
            }
            continue;
        }
        point_verdict(s, p, described, si, &pt, fusion, &o);
    }
    variant_close(s, &v);
    return ARB_OK;
}
