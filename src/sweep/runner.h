/* SPDX-License-Identifier: MIT */
/*
 * A runner measures points on one plugin instance (instance.h): it allocates its
 * buffers through the instance, checks first (exact for allreduce, float64 reference
 * for the fused op), then times in the point's mode. Capability gating is the
 * instance's (arb_inst_gate, before run); everything cross-rank (max over ranks,
 * agreement) happens in the sweep. Host and GPU runners share this interface.
 */
#ifndef ARB_RUNNER_H
#define ARB_RUNNER_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "runtime/gpu_device.h"
#include "runtime/instance.h"
#include "sweep/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_point {
    arb_op_t op;
    arb_fusion_t fusion; /* op == ALLREDUCE_RMSNORM: ARB_FUSION_PLUGIN (the plugin's fused kernel) or
                          * ARB_FUSION_COMPOSED (allreduce + our kernel) */
    arb_dtype_t dtype;
    arb_mode_t mode;
    size_t bytes;        /* per rank */
    size_t count;        /* elements */
    unsigned tokens, hidden;
    float eps;
    unsigned iters, warmup, graph_ops, graph_replays;
    double context_us;
    int check;
    unsigned salt;       /* varies the check pattern between points */
} arb_point_t;

typedef struct arb_point_out {
    arb_status_t status; /* ARB_DECLINE: mode/op not supported here (why says so) */
    int fatal;           /* the device is unusable (hung stream, sticky CUDA error): stop the job */
    char why[512];
    int checked;         /* a check ran */
    unsigned long long wrong; /* wrong elements on this rank */
    unsigned long long out_hash; /* FNV-1a of this rank's outputs (fused check), 0 if unused */
    double tolerance;    /* relative tolerance used by the check, 0 = exact */
    double *samples;     /* this rank's per-iteration times, us (runner-owned) */
    size_t nsamples;
    char timing[128];    /* how it was timed, e.g. "events" or "ops_per_graph=20,replays=50" */
} arb_point_out_t;

typedef struct arb_runner arb_runner_t;

typedef struct arb_runner_ops {
    const char *backend; /* "host" or "cuda" */
    /* Collective: allocates buffers (arb_inst_alloc) for points up to max_bytes per rank. */
    arb_status_t (*create)(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_t **out,
                           char *why, size_t why_len);
    arb_status_t (*run)(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *out);
    void (*destroy)(arb_runner_t *r);
} arb_runner_ops_t;

extern const arb_runner_ops_t arb_runner_host;
extern const arb_runner_ops_t arb_runner_gpu; /* create returns ARB_DECLINE without CUDA */

/* The buffers of a runner's points, from arb_inst_alloc: ARB_ROT slots of `stride` bytes
 * each for send/recv (allreduce) or x/res/out (fused op, plus one weight row). */
typedef struct arb_runner_bufs {
    size_t stride;
    unsigned char *send, *recv;            /* allreduce; NULL for the fused op */
    unsigned char *x, *res, *out, *weight; /* fused op; NULL for allreduce */
} arb_runner_bufs_t;

/* Collective (every rank the same sizes in the same order). x first: the composed
 * path's scratch mirrors its layout (instance.h). On failure frees what it got. */
arb_status_t arb_runner_bufs_alloc(arb_inst_t *inst, const arb_plan_t *plan, size_t max_bytes, arb_runner_bufs_t *b,
                                   char *why, size_t why_len);
/* Collective. */
void arb_runner_bufs_free(arb_inst_t *inst, arb_runner_bufs_t *b);

/* Buffer slots the calls rotate through; slot k sits at k * stride + 16 * (k % 4), so
 * pointers shift between calls (both runners). */
#define ARB_ROT 4u
static inline size_t arb_slot_off(size_t stride, unsigned k) { return (size_t)k * stride + 16u * (k % 4u); }
/* Bytes between slots for payloads up to max_bytes. */
static inline size_t arb_slot_stride(size_t max_bytes) { return (max_bytes + 64 + 255) & ~(size_t)255; }

/* Exact-check pattern: rank r's element i for a given salt, a small integer in [-4, 4];
 * the sum over n ranks is exact in bf16 for n <= 64. */
static inline int arb_pattern(size_t i, int rank, unsigned salt)
{
    return (int)((i * 7u + (size_t)rank * 13u + (size_t)salt * 5u) % 9u) - 4;
}

#ifdef __cplusplus
}
#endif

#endif
