/* SPDX-License-Identifier: MIT */
/*
 * A runner owns one plugin instance's buffers and streams and measures points:
 * check first (exact for allreduce, float64 reference for the fused op), then time
 * in the point's mode. Host and GPU runners share this interface; everything
 * cross-rank (max over ranks, agreement) happens in sweep.c.
 */
#ifndef ARB_RUNNER_H
#define ARB_RUNNER_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct arb_instance {
    const arb_plugin_t *plugin;
    void *state;
    const arb_comm_info_t *info;
    const arb_host_ops_t *ops;
} arb_instance_t;

typedef struct arb_point {
    arb_op_t op;
    int fused;           /* op == ALLREDUCE_RMSNORM: 1 = the plugin's fused callback, 0 = allreduce + our kernel */
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
    /* Allocates buffers for points up to max_bytes (allreduce) or max_tokens x hidden (fused). */
    arb_status_t (*create)(const arb_instance_t *inst, const arb_plan_t *plan, size_t max_bytes,
                           arb_runner_t **out, char *why, size_t why_len);
    arb_status_t (*run)(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *out);
    void (*destroy)(arb_runner_t *r);
} arb_runner_ops_t;

extern const arb_runner_ops_t arb_runner_host;
extern const arb_runner_ops_t arb_runner_gpu; /* create returns ARB_DECLINE without CUDA */

/* GPU discovery for the harness. Returns the number of visible devices, 0 with a
 * reason in why when none (no driver, no device, CUDA not built). */
int arb_gpu_count(char *why, size_t why_len);

typedef struct arb_gpu_info {
    char name[128];
    char sm[16];       /* "9.0" */
    char driver[64];   /* "580.159.04 (CUDA 13.0)" */
    char cuda[32];     /* runtime version "13.0" */
    char bus_id[32];
    int sm_count;
} arb_gpu_info_t;

/* Makes `device` current and describes it. */
arb_status_t arb_gpu_select(int device, arb_gpu_info_t *info, char *why, size_t why_len);

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
