/* SPDX-License-Identifier: MIT */
/* The CPU reference's loops (float64 accumulation, one bf16 rounding per stored value),
 * shared by the reference and by the EAGLE-3 draft head's CPU forward (engine/draft). */
#ifndef ARB_ENGINE_CPU_REF_MATH_H
#define ARB_ENGINE_CPU_REF_MATH_H

#include <stdint.h>

#include "model/rope.h"

double arb_bf(uint16_t b);                                           /* bf16 bits -> value */
uint16_t arb_tobf(double v);                                         /* value -> bf16 bits, RNE */
double arb_dot_bf(const uint16_t *w, const uint16_t *x, unsigned n); /* sum w[i] x[i], float64 */
/* out[r] = bf16(sum_i w[r*n + i] * x[i]) for r < rows. */
void arb_matvec_bf(const uint16_t *w, const uint16_t *x, unsigned rows, unsigned n, uint16_t *out);
/* out = bf16(x / sqrt(mean(x^2) + eps) * w), n elements. */
void arb_rmsnorm_bf(const uint16_t *x, const uint16_t *w, unsigned n, double eps, uint16_t *out);
/* Rotates dr values (interleaved pairs) at position pos in place, rounding to bf16. */
void arb_rope_bf(const arb_rope_t *rope, uint16_t *x, unsigned pos);

#endif
