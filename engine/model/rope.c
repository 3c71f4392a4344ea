/* SPDX-License-Identifier: MIT */
/* RoPE / YaRN tables in float64 (engine/model/rope.h; formulas of HF's DeepSeek-V3 modelling code). */
#include "model/rope.h"

#include <math.h>

#include "arbench/status.h"

double arb_yarn_mscale(double scale, double a)
{
    return scale > 1 ? 0.1 * a * log(scale) + 1.0 : 1.0;
}

/* The dimension index (of dim/2 pairs, counted in dims) at which a frequency makes
 * num_rotations full turns over orig_max positions. */
static double correction_dim(double num_rotations, unsigned dim, double base, unsigned orig_max)
{
    return (dim * log(orig_max / (num_rotations * 2.0 * M_PI))) / (2.0 * log(base));
}

void arb_yarn_correction_range(double beta_fast, double beta_slow, unsigned dim, double base, unsigned orig_max,
                               double *low, double *high)
{
    double lo = floor(correction_dim(beta_fast, dim, base, orig_max));
    double hi = ceil(correction_dim(beta_slow, dim, base, orig_max));
    *low = lo > 0 ? lo : 0;
    *high = hi < dim - 1.0 ? hi : dim - 1.0;
}

arb_status_t arb_rope_make(const arb_model_config_t *cfg, arb_rope_t *r, char *why, size_t len)
{
    unsigned dr = cfg->qk_rope_head_dim;
    if (dr % 2 || dr / 2 > ARB_ROPE_MAX_PAIRS || dr == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, len, "qk_rope_head_dim %u: must be even and at most %u", dr,
                  2 * ARB_ROPE_MAX_PAIRS);
    const arb_rope_scaling_t *rs = &cfg->rope_scaling;
    r->pairs = dr / 2;
    r->mscale = 1.0;
    r->yarn_low = r->yarn_high = 0;
    r->softmax_scale = 1.0 / sqrt((double)(cfg->qk_nope_head_dim + dr));
    for (unsigned i = 0; i < r->pairs; i++) {
        double extra = pow(cfg->rope_theta, -(2.0 * i) / dr); /* theta^(-2i/dr) */
        r->inv_freq[i] = extra;
    }
    if (rs->kind != ARB_ROPE_YARN)
        return ARB_OK;
    arb_yarn_correction_range(rs->beta_fast, rs->beta_slow, dr, cfg->rope_theta, rs->original_max_position_embeddings,
                              &r->yarn_low, &r->yarn_high);
    double lo = r->yarn_low, hi = r->yarn_high;
    if (hi == lo)
        hi += 0.001; /* HF's yarn_linear_ramp_mask avoids a zero-width ramp this way */
    for (unsigned i = 0; i < r->pairs; i++) {
        double extra = r->inv_freq[i], inter = extra / rs->factor;
        double ramp = (i - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        r->inv_freq[i] = inter * ramp + extra * (1.0 - ramp);
    }
    r->mscale = arb_yarn_mscale(rs->factor, rs->mscale) / arb_yarn_mscale(rs->factor, rs->mscale_all_dim);
    if (rs->mscale_all_dim != 0) {
        double m = arb_yarn_mscale(rs->factor, rs->mscale_all_dim);
        r->softmax_scale *= m * m;
    }
    return ARB_OK;
}
