/* SPDX-License-Identifier: MIT */
/*
 * The chain profile's plan (gpu_profile.cu, arb_gpu_model_profile_chain), built on the host:
 * which windows of a captured step to replay and how their times become each kind's share
 * of the step. A captured step is a sequence of marks (gpu_step.cu: one after each launch,
 * its kind); the head's marks (the embedding) come before layer 0, layer l ends at its
 * layer-end mark (site B), the tail (lm_head) follows the last layer.
 *
 * For a measured layer l, the windows keep marks [first, last] with first = layer l - lead's
 * first mark (the head's first when l < lead) and last = every mark from the one before
 * layer l's first to layer l's last. A window replayed alone ends when its last kernel
 * does, so window(j) - window(j - 1) is what mark j adds to the chain's end: its segment of
 * the critical path (PDL overlap, launch latency and waits included). A layer's segments
 * add up to what the layer adds, and nothing comes out negative unless noise does.
 *
 * The step's per-kind estimate: the segments of the measured layers of a class (dense or
 * MoE), averaged over those layers and multiplied by the class's layer count, plus the
 * tail's segments once. The head is not measured (its window would start from nothing).
 * Plain C (the plan is tested without a GPU).
 */
#ifndef ARB_ENGINE_GPU_CHAIN_PLAN_H
#define ARB_ENGINE_GPU_CHAIN_PLAN_H

#include <stddef.h>

#include "arbench/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_CHAIN_NO_VAR (~0u)    /* a segment's base when its window starts the graph: 0 us */
#define ARB_CHAIN_MAX_MEASURED 3u /* a dense layer, two MoE layers */

typedef struct arb_chain_var {
    unsigned first, last; /* the marks kept, inclusive */
} arb_chain_var_t;

typedef struct arb_chain_seg {
    unsigned var, base; /* segment = t[var] - t[base] (base ARB_CHAIN_NO_VAR: t[var]) */
    int kind;           /* the mark's kind */
    int layer;          /* its layer, -1 for the tail */
    double weight;      /* per-step weight: layers of the class / measured layers of it; 1 for the tail */
} arb_chain_seg_t;

typedef struct arb_chain_plan {
    unsigned nvar, nseg;
    arb_chain_var_t *var;
    arb_chain_seg_t *seg;
    unsigned nmeasured;                        /* layers measured */
    unsigned measured[ARB_CHAIN_MAX_MEASURED]; /* which, ascending */
    int tail;                                  /* 1: the tail's marks are measured */
} arb_chain_plan_t;

/* The plan for a step of nmarks marks of kinds[] over nlayers layers (dense[l] nonzero for a
 * dense layer), head_kind the embedding's kind (the marks before the first other kind),
 * end_kind the kind that ends a layer, lead the layers replayed before a measured one
 * (>= 1). The measured layers: the last dense layer, and the MoE layers at a third and two
 * thirds of the MoE layers (one when there is only one). Refuses, naming what it found: no
 * marks, no layers, a count of end_kind marks other than nlayers, a layer with no mark
 * before its end, lead 0. On success the plan owns two allocations (arb_chain_plan_free). */
arb_status_t arb_chain_plan_build(const int *kinds, unsigned nmarks, const int *dense, unsigned nlayers, int head_kind,
                                  int end_kind, unsigned lead, arb_chain_plan_t *p, char *why, size_t why_len);

/* From the windows' times t[nvar] (microseconds): us[kind] the step's estimate per kind
 * (kinds 0 .. nkinds - 1; NAN for a kind with no measured segment), layer_us[i] the sum of
 * measured layer i's segments (the layer's share of the chain, i < nmeasured). */
void arb_chain_plan_eval(const arb_chain_plan_t *p, const double *t, double *us, unsigned nkinds, double *layer_us);

void arb_chain_plan_free(arb_chain_plan_t *p);

#ifdef __cplusplus
}
#endif

#endif
