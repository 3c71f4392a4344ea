/* SPDX-License-Identifier: MIT */
/* The host runner: host buffers from the instance, eager mode only, wall-clock timing
 * per call; allreduce checked exactly, the fused op against the float64 reference. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arbench/status.h"
#include "rmsnorm/check_fused.h"
#include "base/common.h"
#include "rmsnorm/rmsnorm.h"
#include "sweep/runner.h"

struct arb_runner {
    arb_inst_t *inst;
    const arb_comm_info_t *info;
    arb_runner_bufs_t b; /* slotted buffers (runner.h) */
    double *samples;
    size_t cap_samples;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static size_t slot(const struct arb_runner *r, unsigned k) { return arb_slot_off(r->b.stride, k); }

static void host_destroy(arb_runner_t *r)
{
    if (!r)
        return;
    arb_runner_bufs_free(r->inst, &r->b);
    free(r->samples);
    free(r);
}

static arb_status_t host_create(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_t **out,
                                char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    struct arb_runner *r = calloc(1, sizeof *r);
    if (!r)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the host runner");
    r->inst = inst;
    r->info = arb_inst_info(inst);
    ARB_TRY_GOTO(st, arb_runner_bufs_alloc(inst, plan, max_bytes, &r->b, why, why_len), err_destroy);
    *out = r;
    return ARB_OK;
err_destroy:
    host_destroy(r);
    return st;
}

static void put(unsigned char *buf, size_t i, arb_dtype_t dt, float v)
{
    if (dt == ARB_DTYPE_FP32) {
        memcpy(buf + 4 * i, &v, 4);
    } else { /* small integers are exact in bf16: the upper half of the float */
        uint32_t b;
        memcpy(&b, &v, 4);
        uint16_t h = (uint16_t)(b >> 16);
        memcpy(buf + 2 * i, &h, 2);
    }
}

static float get(const unsigned char *buf, size_t i, arb_dtype_t dt)
{
    float v;
    if (dt == ARB_DTYPE_FP32) {
        memcpy(&v, buf + 4 * i, 4);
    } else {
        uint16_t h;
        memcpy(&h, buf + 2 * i, 2);
        uint32_t b = (uint32_t)h << 16;
        memcpy(&v, &b, 4);
    }
    return v;
}

/* One call on slot k; the plugin's reason in why. */
static arb_status_t call(struct arb_runner *r, const arb_point_t *pt, unsigned k, char *why, size_t why_len)
{
    size_t off = slot(r, k);
    if (pt->op == ARB_OP_ALLREDUCE)
        return arb_inst_allreduce(r->inst, r->b.send + off, r->b.recv + off, pt->count, pt->dtype, NULL, why, why_len);
    arb_rmsnorm_args_t a = {r->b.x + off, r->b.res + off, r->b.weight, r->b.out + off, pt->tokens, pt->hidden, pt->eps};
    return arb_inst_allreduce_rmsnorm(r->inst, &a, pt->fusion, NULL, NULL, why, why_len);
}

static arb_status_t check_allreduce(struct arb_runner *r, const arb_point_t *pt, arb_point_out_t *out)
{
    for (unsigned k = 0; k < 2; k++) {
        unsigned char *s = r->b.send + slot(r, k), *d = r->b.recv + slot(r, k);
        for (size_t i = 0; i < pt->count; i++) {
            put(s, i, pt->dtype, (float)arb_pattern(i, r->info->rank, pt->salt + k));
            put(d, i, pt->dtype, NAN);
        }
        ARB_TRY(call(r, pt, k, out->why, sizeof out->why));
        for (size_t i = 0; i < pt->count; i++) {
            int expect = 0;
            for (int q = 0; q < r->info->nranks; q++)
                expect += arb_pattern(i, q, pt->salt + k);
            float got = get(d, i, pt->dtype);
            if (!(got == (float)expect)) /* NaN never passes */
                out->wrong++;
        }
    }
    return ARB_OK;
}

static arb_status_t check_fused(struct arb_runner *r, const arb_point_t *pt, arb_point_out_t *out)
{
    size_t n = (size_t)pt->tokens * pt->hidden;
    arb_fused_check_t c;
    ARB_TRY(arb_fused_check_init(&c, r->info->nranks, pt->tokens, pt->hidden, pt->eps, out->why, sizeof out->why));
    arb_status_t st = ARB_OK;
    arb_fused_fill_weight((uint16_t *)r->b.weight, pt->hidden, pt->salt);
    for (unsigned k = 0; k < 2 && st == ARB_OK; k++) {
        uint16_t *x = (uint16_t *)(r->b.x + slot(r, k)), *res = (uint16_t *)(r->b.res + slot(r, k));
        uint16_t *o = (uint16_t *)(r->b.out + slot(r, k));
        arb_fused_fill_x(x, n, pt->salt, k, r->info->rank);
        arb_fused_fill_residual(res, n, pt->salt, k);
        for (size_t i = 0; i < n; i++)
            o[i] = 0x7fc0u; /* NaN: an output never written fails */
        st = call(r, pt, k, out->why, sizeof out->why);
        if (st == ARB_OK)
            out->wrong += arb_fused_check_slot(&c, pt->salt, k, res, o, &out->out_hash);
    }
    out->tolerance = ARB_RMSNORM_RTOL;
    arb_fused_check_free(&c);
    return st;
}

static arb_status_t host_run(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *out)
{
    out->why[0] = '\0';
    if (pt->check && !(arb_inst_caps(r->inst) & ARB_CAP_REFERENCE)) {
        arb_status_t st = pt->op == ARB_OP_ALLREDUCE ? check_allreduce(r, pt, out) : check_fused(r, pt, out);
        if (st != ARB_OK) {
            if (st != ARB_DECLINE) {
                char call_why[400];
                snprintf(call_why, sizeof call_why, "%.399s", out->why);
                snprintf(out->why, sizeof out->why, "%s failed during the check: %s: %.400s", arb_op_name(pt->op),
                         arb_status_str(st), call_why);
            }
            return out->status = st;
        }
        out->checked = 1;
    }
    if (r->cap_samples < pt->iters) {
        free(r->samples);
        r->samples = malloc(pt->iters * sizeof *r->samples);
        if (!r->samples) {
            r->cap_samples = 0;
            snprintf(out->why, sizeof out->why, "out of host memory for %u samples", pt->iters);
            return out->status = ARB_ERR_SYSTEM;
        }
        r->cap_samples = pt->iters;
    }
    for (unsigned i = 0; i < pt->warmup + pt->iters; i++) {
        unsigned k = i % ARB_ROT;
        double t0 = now_us();
        char call_why[400] = "";
        arb_status_t st = call(r, pt, k, call_why, sizeof call_why);
        double t1 = now_us();
        if (st != ARB_OK) {
            snprintf(out->why, sizeof out->why, "%s failed at iteration %u: %s: %s", arb_op_name(pt->op), i,
                     arb_status_str(st), call_why);
            return out->status = st;
        }
        if (i >= pt->warmup)
            r->samples[i - pt->warmup] = t1 - t0;
    }
    out->samples = r->samples;
    out->nsamples = pt->iters;
    snprintf(out->timing, sizeof out->timing, "wallclock_per_call");
    return out->status = ARB_OK;
}

const arb_runner_ops_t arb_runner_host = {
    .backend = "host",
    .create = host_create,
    .run = host_run,
    .destroy = host_destroy,
};
