/* SPDX-License-Identifier: MIT */
/*
 * Host side of residual add + RMSNorm: bf16 conversions, deterministic test data and
 * the float64 reference that fused and unfused device results are checked against.
 *
 * Why ARB_RMSNORM_RTOL is 0.016 (element error, relative to |ref|):
 *  - bf16 has 8 significant bits (7 stored + the implicit one). A value in
 *    [2^e, 2^(e+1)) has an ulp of 2^(e-7), so rounding to nearest moves it by at most
 *    2^(e-8) <= 2^-8 |value|, and one ulp is at most 2^-7 of the value. (The brief's
 *    "2^-9 per rounding" would hold for 9 significant bits; bf16 has 8.)
 *  - Residual: the reference sums the ranks' x in double (exact for bf16 inputs of any
 *    sensible count and range), adds the residual and rounds once to bf16. A device
 *    that sums in fp32 is exact too unless the inputs span more than ~16 binades; it
 *    can then round the other way near a tie: one ulp, <= 2^-7 of that element. When
 *    the fp32 sum cancels, its error is ~2^-24 of the terms, i.e. of the row's RMS, far
 *    under the absolute floor below.
 *  - Norm: flipped neighbours change the mean of squares by ~2^-6/hidden each, and the
 *    fp32 sum of squares and rsqrt add ~1e-6: negligible against 2^-8.
 *  - Output: one rounding to bf16, <= 2^-8.
 *  Bound: 2^-7 + 2^-8 + ~1e-6 = 0.0118; 0.016 leaves ~0.004 (a third of an output
 *  rounding) of margin and still rejects a second residual ulp of error.
 *  The floor max(|ref|, 1/64): elements near zero are judged against 1/64 in output
 *  units; RMSNorm output divided by the weight has an RMS of exactly 1, so with
 *  weights of order one this is ~1/64 of a typical element, and the absolute errors
 *  above (all proportional to the element or to 2^-24 of the row) stay well inside it.
 *
 * What the bound does NOT cover: an all-reduce that rounds the sum to bf16 before the
 * residual add (the unfused path: allreduce, then arb_rmsnorm_residual_launch; also
 * NCCL's ring, which rounds at every hop). That adds up to 2^-8 |sum| per rounding to
 * the residual, which is unbounded relative to the residual where residual + sum
 * cancels: with x and residual uniform in [-1, 1] on 2 ranks about 2% of elements fail
 * (tests/rmsnorm/test_rmsnorm_ref.c measures it). Check such paths with per-rank x
 * from arb_fill_bf16_exact_partials, whose partial sums are exact in bf16 whatever
 * the order and rounding, or give the reference the bf16-rounded sum as one rank.
 */
#include "rmsnorm/rmsnorm.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "arbench/status.h"
#include "base/common.h"

#define BF16_QNAN 0x7FC0u

uint16_t arb_f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: truncation could clear the payload */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* Round to nearest, ties to even: add just under half an ulp, plus one when the
     * kept lsb is odd. Unsigned, and |u| <= 0x7F800000 here, so no wrap. Finite values
     * past the largest bf16 round up into the exponent field: inf, as IEEE demands. */
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

float arb_bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

uint16_t arb_f64_to_bf16(double d)
{
    uint16_t sign = signbit(d) ? 0x8000u : 0u;
    if (isnan(d))
        return (uint16_t)(sign | BF16_QNAN);
    double a = fabs(d);
    if (isinf(a))
        return (uint16_t)(sign | 0x7F80u);
    /* quantum: the bf16 ulp at a; fixed at 2^-133 in the subnormal range. */
    int e;
    frexp(a, &e); /* a in [2^(e-1), 2^e) */
    int lead = e - 1 < -126 ? -126 : e - 1;
    double quantum = ldexp(1.0, lead - 7);
    double y = a / quantum; /* exact: a power-of-two scaling, y < 2^8 */
    double kept = floor(y);
    double frac = y - kept; /* exact */
    /* Ties to even by hand, independent of the FP rounding mode. */
    if (frac > 0.5 || (frac == 0.5 && fmod(kept, 2.0) != 0.0))
        kept += 1.0;
    double r = kept * quantum; /* exact: at most 9 significant bits */
    if (r > FLT_MAX)            /* converting would be undefined; IEEE overflow is inf */
        return (uint16_t)(sign | 0x7F80u);
    /* r has <= 8 significant bits within float's range: both conversions are exact. */
    return (uint16_t)(sign | arb_f32_to_bf16((float)r));
}

static uint64_t splitmix64_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void arb_fill_bf16_random(uint16_t *buf, size_t n, uint64_t seed, float scale)
{
    if (!(scale >= 0.0f) || isinf(scale)) {
        arb_err("arb_fill_bf16_random: scale %g is not a finite number >= 0; filling with NaN", (double)scale);
        for (size_t i = 0; i < n; i++)
            buf[i] = BF16_QNAN;
        return;
    }
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++) {
        /* 53 random bits -> u in [0, 1); 2u - 1 in [-1, 1) exactly. Every step is an
         * exact or correctly rounded IEEE operation, so all hosts agree. Rounding is
         * monotonic, so |v| <= scale after the product, the float conversion and the
         * truncation toward zero to bf16 (truncation rather than rounding keeps the
         * range closed at scale even when scale itself is not a bf16 value). */
        double u = (double)(splitmix64_next(&state) >> 11) * 0x1.0p-53;
        double v = (2.0 * u - 1.0) * (double)scale;
        float f = (float)v;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        buf[i] = (uint16_t)(bits >> 16);
    }
}

void arb_fill_bf16_exact_partials(uint16_t *buf, size_t n, uint64_t seed)
{
    uint64_t state = seed;
    for (size_t i = 0; i < n; i++) {
        /* k uniform in 0..32 from the top 32 bits (multiply-shift, no modulo bias
         * worth the name); (k - 16) / 16 is exact in float and in bf16. */
        uint64_t k = ((splitmix64_next(&state) >> 32) * 33u) >> 32;
        buf[i] = arb_f32_to_bf16((float)((int)k - 16) / 16.0f);
    }
}

void arb_rmsnorm_reference(const uint16_t *const *x, int nranks, const uint16_t *residual_in,
                           const uint16_t *weight, unsigned tokens, unsigned hidden, double eps,
                           double *residual_out, double *out)
{
    for (unsigned t = 0; t < tokens; t++) {
        size_t row = (size_t)t * hidden;
        double sum_sq = 0.0;
        for (unsigned h = 0; h < hidden; h++) {
            /* Exact in double: bf16 values have 8 significant bits, so a sum of a few
             * of them fits 53 bits unless their exponents span ~45 binades. */
            double s = 0.0;
            for (int r = 0; r < nranks; r++)
                s += (double)arb_bf16_to_f32(x[r][row + h]);
            double v = (double)arb_bf16_to_f32(residual_in[row + h]) + s;
            double stored = (double)arb_bf16_to_f32(arb_f64_to_bf16(v)); /* as the device stores it */
            residual_out[row + h] = stored;
            sum_sq += stored * stored;
        }
        double inv_rms = 1.0 / sqrt(sum_sq / (double)hidden + eps);
        for (unsigned h = 0; h < hidden; h++)
            out[row + h] = residual_out[row + h] * inv_rms * (double)arb_bf16_to_f32(weight[h]);
    }
}

size_t arb_rmsnorm_count_wrong(const uint16_t *got, const double *ref, size_t n, double rtol)
{
    size_t wrong = 0;
    for (size_t i = 0; i < n; i++) {
        double g = (double)arb_bf16_to_f32(got[i]);
        double bound = rtol * fmax(fabs(ref[i]), 1.0 / 64.0);
        /* Written so that a NaN in got or ref (any comparison false) counts as wrong. */
        if (!(isfinite(g) && fabs(g - ref[i]) <= bound))
            wrong++;
    }
    return wrong;
}

arb_status_t arb_rmsnorm_residual_host(uint16_t *residual, const uint16_t *sum, const uint16_t *weight,
                                       uint16_t *out, unsigned tokens, unsigned hidden, float eps,
                                       char *why, size_t why_len)
{
    if (hidden == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: hidden is 0; expected the row length in elements, >= 1");
    if (!(eps >= 0.0f) || isinf(eps))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: eps %g is not a finite number >= 0", (double)eps);
    if (tokens && (!residual || !sum || !weight || !out))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "rmsnorm: NULL buffer; expected host pointers");
    for (unsigned t = 0; t < tokens; t++) {
        size_t row = (size_t)t * hidden;
        float sum_sq = 0.0f;
        for (unsigned h = 0; h < hidden; h++) {
            uint16_t stored = arb_f32_to_bf16(arb_bf16_to_f32(residual[row + h]) + arb_bf16_to_f32(sum[row + h]));
            residual[row + h] = stored;
            float v = arb_bf16_to_f32(stored);
            sum_sq += v * v;
        }
        float inv_rms = 1.0f / sqrtf(sum_sq / (float)hidden + eps);
        for (unsigned h = 0; h < hidden; h++)
            out[row + h] = arb_f32_to_bf16(arb_bf16_to_f32(residual[row + h]) * inv_rms * arb_bf16_to_f32(weight[h]));
    }
    return ARB_OK;
}
