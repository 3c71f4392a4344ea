/* SPDX-License-Identifier: MIT */
/*
 * The MoE router of DeepSeek-V3 (noaux_tc), as engine/forward.md states it, on the
 * host: scores = sigmoid(logits) (fp32); choice = score + e_score_correction_bias;
 * with n_group > 1 a group's score is the sum of its two largest choice values and
 * only the topk_group best groups stay; the top-k experts by choice among them
 * (ties: the lower index, for groups and experts alike); weights score[e_j] / sum_j
 * score[e_j] * routed_scaling_factor (norm_topk_prob), else score[e_j] * factor.
 */
#ifndef ARB_ENGINE_ROUTER_H
#define ARB_ENGINE_ROUTER_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_ROUTER_MAX_EXPERTS 1024u
#define ARB_ROUTER_MAX_TOPK 64u

typedef struct arb_router_cfg {
    unsigned experts, topk, n_group, topk_group;
    double routed_scaling_factor;
    int norm_topk_prob;
} arb_router_cfg_t;

/* For one token: scores[E] (already sigmoid, fp32 values), bias[E]. Writes idx[topk]
 * (in selection order: decreasing choice) and weight[topk]. Returns 0, or -1 when the
 * configuration is out of range (experts > ARB_ROUTER_MAX_EXPERTS, ...). */
int arb_route(const arb_router_cfg_t *rc, const float *scores, const float *bias, unsigned *idx, double *weight);

#ifdef __cplusplus
}
#endif

#endif
