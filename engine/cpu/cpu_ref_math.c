/* SPDX-License-Identifier: MIT */
/* The CPU reference's loops: float64 accumulation, one bf16 rounding per stored value. */
#include <math.h>

#include "cpu/cpu_ref_math.h"
#include "rmsnorm/rmsnorm.h" /* arb_bf16_to_f32, arb_f64_to_bf16 */

double arb_bf(uint16_t b)
{
    return (double)arb_bf16_to_f32(b);
}

uint16_t arb_tobf(double v)
{
    return arb_f64_to_bf16(v);
}

double arb_dot_bf(const uint16_t *w, const uint16_t *x, unsigned n)
{
    double s = 0;
    for (unsigned i = 0; i < n; i++)
        s += arb_bf(w[i]) * arb_bf(x[i]);
    return s;
}

void arb_matvec_bf(const uint16_t *w, const uint16_t *x, unsigned rows, unsigned n, uint16_t *out)
{
    for (unsigned r = 0; r < rows; r++)
        out[r] = arb_tobf(arb_dot_bf(w + (size_t)r * n, x, n));
}

void arb_rmsnorm_bf(const uint16_t *x, const uint16_t *w, unsigned n, double eps, uint16_t *out)
{
    double ss = 0;
    for (unsigned i = 0; i < n; i++)
        ss += arb_bf(x[i]) * arb_bf(x[i]);
    double inv = 1.0 / sqrt(ss / n + eps);
    for (unsigned i = 0; i < n; i++)
        out[i] = arb_tobf(arb_bf(x[i]) * inv * arb_bf(w[i]));
}

void arb_rope_bf(const arb_rope_t *rope, uint16_t *x, unsigned pos)
{
    for (unsigned i = 0; i < rope->pairs; i++) {
        double ang = (double)pos * rope->inv_freq[i];
        double c = cos(ang) * rope->mscale, s = sin(ang) * rope->mscale;
        double a = arb_bf(x[2 * i]), b = arb_bf(x[2 * i + 1]);
        x[2 * i] = arb_tobf(a * c - b * s);
        x[2 * i + 1] = arb_tobf(a * s + b * c);
    }
}
