/* SPDX-License-Identifier: MIT */
/* The host runner: host buffers, eager mode only, wall-clock timing per call. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"
#include "runner.h"

#define ROT 4 /* buffer slots the calls rotate through */

struct arb_runner {
    arb_instance_t inst;
    size_t stride; /* bytes between slots */
    unsigned char *send, *recv;
    double *samples;
    size_t cap_samples;
};

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

/* Slot k sits at k * stride + 16 * (k % 4): pointers shift between calls. */
static size_t slot_off(const struct arb_runner *r, unsigned k) { return (size_t)k * r->stride + 16u * (k % 4u); }

static void *host_alloc(struct arb_runner *r, size_t bytes)
{
    if (r->inst.plugin->caps & ARB_CAP_NEEDS_ALLOC)
        return r->inst.plugin->mem_alloc(r->inst.state, bytes);
    void *p = NULL;
    return posix_memalign(&p, 64, bytes) == 0 ? p : NULL;
}

static void host_free(struct arb_runner *r, void *p)
{
    if (!p)
        return;
    if (r->inst.plugin->caps & ARB_CAP_NEEDS_ALLOC)
        r->inst.plugin->mem_free(r->inst.state, p);
    else
        free(p);
}

static arb_status_t host_create(const arb_instance_t *inst, const arb_plan_t *plan, size_t max_bytes,
                                arb_runner_t **out, char *why, size_t why_len)
{
    if (!(inst->plugin->caps & ARB_CAP_HOST_MEMORY)) {
        arb_snprintf(why, why_len, "%s works on device memory; the host runner needs a host plugin", inst->plugin->name);
        return ARB_DECLINE;
    }
    (void)plan;
    struct arb_runner *r = calloc(1, sizeof *r);
    if (!r)
        return ARB_ERR_SYSTEM;
    r->inst = *inst;
    r->stride = (max_bytes + 64 + 255) & ~(size_t)255;
    r->send = host_alloc(r, r->stride * ROT);
    r->recv = host_alloc(r, r->stride * ROT);
    if (!r->send || !r->recv) {
        arb_snprintf(why, why_len, "cannot allocate 2 x %zu bytes of host buffers", r->stride * ROT);
        host_free(r, r->send);
        host_free(r, r->recv);
        free(r);
        return ARB_ERR_SYSTEM;
    }
    *out = r;
    return ARB_OK;
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

static arb_status_t host_check(struct arb_runner *r, const arb_point_t *pt, arb_point_out_t *out)
{
    const arb_comm_info_t *info = r->inst.info;
    for (unsigned k = 0; k < 2; k++) {
        unsigned char *s = r->send + slot_off(r, k), *d = r->recv + slot_off(r, k);
        for (size_t i = 0; i < pt->count; i++) {
            put(s, i, pt->dtype, (float)arb_pattern(i, info->rank, pt->salt + k));
            put(d, i, pt->dtype, NAN);
        }
        arb_status_t st = r->inst.plugin->allreduce(r->inst.state, s, d, pt->count, pt->dtype, NULL, out->why, sizeof out->why);
        if (st != ARB_OK)
            return st;
        for (size_t i = 0; i < pt->count; i++) {
            int expect = 0;
            for (int q = 0; q < info->nranks; q++)
                expect += arb_pattern(i, q, pt->salt + k);
            float got = get(d, i, pt->dtype);
            if (!(got == (float)expect)) /* NaN never passes */
                out->wrong++;
        }
    }
    out->checked = 1;
    return ARB_OK;
}

static arb_status_t host_run(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *out)
{
    if (pt->mode != ARB_MODE_EAGER) {
        arb_snprintf(out->why, sizeof out->why, "%s mode needs a GPU backend (host backend: eager only)", arb_mode_names[pt->mode]);
        return out->status = ARB_DECLINE;
    }
    if (pt->op != ARB_OP_ALLREDUCE) {
        arb_snprintf(out->why, sizeof out->why, "%s needs a GPU backend", arb_op_name(pt->op));
        return out->status = ARB_DECLINE;
    }
    if (pt->check) {
        arb_status_t st = host_check(r, pt, out);
        if (st != ARB_OK) {
            arb_snprintf(out->why, sizeof out->why, "allreduce failed during the check: %s", arb_status_str(st));
            return out->status = st;
        }
    }
    if (r->cap_samples < pt->iters) {
        free(r->samples);
        r->samples = malloc(pt->iters * sizeof *r->samples);
        if (!r->samples) {
            r->cap_samples = 0;
            return out->status = ARB_ERR_SYSTEM;
        }
        r->cap_samples = pt->iters;
    }
    for (unsigned i = 0; i < pt->warmup + pt->iters; i++) {
        unsigned k = i % ROT;
        double t0 = now_us();
        char call_why[400] = "";
        arb_status_t st = r->inst.plugin->allreduce(r->inst.state, r->send + slot_off(r, k), r->recv + slot_off(r, k),
                                                    pt->count, pt->dtype, NULL, call_why, sizeof call_why);
        double t1 = now_us();
        if (st != ARB_OK) {
            arb_snprintf(out->why, sizeof out->why, "allreduce failed at iteration %u: %s: %s", i, arb_status_str(st), call_why);
            return out->status = st;
        }
        if (i >= pt->warmup)
            r->samples[i - pt->warmup] = t1 - t0;
    }
    out->samples = r->samples;
    out->nsamples = pt->iters;
    arb_snprintf(out->timing, sizeof out->timing, "wallclock_per_call");
    return out->status = ARB_OK;
}

static void host_destroy(arb_runner_t *r)
{
    if (!r)
        return;
    host_free(r, r->send);
    host_free(r, r->recv);
    free(r->samples);
    free(r);
}

const arb_runner_ops_t arb_runner_host = {
    .backend = "host",
    .create = host_create,
    .run = host_run,
    .destroy = host_destroy,
};
