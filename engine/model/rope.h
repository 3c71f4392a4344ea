/* SPDX-License-Identifier: MIT */
/*
 * RoPE tables and the attention softmax scale, computed once on the host in float64 for
 * both the CPU reference and the GPU kernels (engine/forward.md, "RoPE"): inv_freq[i]
 * for i < dr/2, the cos/sin magnitude m (YaRN mscale ratio), and softmax_scale.
 * Rotation of pair i at position P: c = cos(P * inv_freq[i]) * m, s = sin(...) * m,
 * (x[2i], x[2i+1]) -> (x[2i] c - x[2i+1] s, x[2i] s + x[2i+1] c).
 */
#ifndef ARB_ENGINE_ROPE_H
#define ARB_ENGINE_ROPE_H

#include <stddef.h>

#include "model/config.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_ROPE_MAX_PAIRS 256u /* dr / 2 at most */

typedef struct arb_rope {
    unsigned pairs;                      /* dr / 2 */
    double inv_freq[ARB_ROPE_MAX_PAIRS]; /* radians per position */
    double mscale;                       /* m: multiplies cos and sin */
    double softmax_scale;                /* (dn + dr)^-0.5 [* yarn_mscale(factor, mscale_all_dim)^2] */
    double yarn_low, yarn_high;          /* the correction range (YaRN only; 0 otherwise) */
} arb_rope_t;

/* yarn_mscale(s, a) = 0.1 a ln(s) + 1 for s > 1, else 1. */
double arb_yarn_mscale(double scale, double a);

/* HF's yarn_find_correction_range: low = max(floor(d(beta_fast)), 0),
 * high = min(ceil(d(beta_slow)), dim - 1), with
 * d(n) = dim * ln(orig_max / (n * 2 pi)) / (2 ln(base)). */
void arb_yarn_correction_range(double beta_fast, double beta_slow, unsigned dim, double base, unsigned orig_max,
                               double *low, double *high);

/* Tables for cfg (ARB_ERR_INVALID when dr / 2 > ARB_ROPE_MAX_PAIRS or dr is odd). */
arb_status_t arb_rope_make(const arb_model_config_t *cfg, arb_rope_t *rope, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
