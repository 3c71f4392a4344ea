/* SPDX-License-Identifier: MIT */
/*
 * Residual add + RMSNorm: the reference kernel that follows an unfused all-reduce,
 * and the float64 CPU reference every fused result is checked against.
 * Semantics are those of arb_rmsnorm_args_t in include/arbench/plugin.h.
 */
#ifndef ARB_RMSNORM_H
#define ARB_RMSNORM_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Relative tolerance for fused/unfused outputs against the float64 reference: an
 * element is wrong when |got - ref| > ARB_RMSNORM_RTOL * max(|ref|, 1/64) or got is
 * not finite. Two bf16 roundings (residual, output) bound the error by ~2^-7. */
#define ARB_RMSNORM_RTOL 0.0160

/* bf16 <-> float on the host (round to nearest even; NaN stays NaN). */
uint16_t arb_f32_to_bf16(float f);
float arb_bf16_to_f32(uint16_t h);

/* Deterministic pseudo-random bf16 values uniform in [-scale, scale] from a seed
 * (splitmix64), identical on every rank for the same seed. */
void arb_fill_bf16_random(uint16_t *buf, size_t n, uint64_t seed, float scale);

/* float64 reference of the fused operation. x[r] is rank r's partial sums
 * [tokens x hidden]; residual_in, weight as in arb_rmsnorm_args_t. The sum over ranks
 * is rounded to bf16 only where the device rounds: the residual is rounded to bf16
 * (as stored) before the norm. Outputs are doubles [tokens x hidden]. */
void arb_rmsnorm_reference(const uint16_t *const *x, int nranks, const uint16_t *residual_in,
                           const uint16_t *weight, unsigned tokens, unsigned hidden, double eps,
                           double *residual_out, double *out);

/* Counts elements of got (bf16) outside the tolerance of ref; NaN always counts. */
size_t arb_rmsnorm_count_wrong(const uint16_t *got, const double *ref, size_t n, double rtol);

/* Built only with CUDA.
 * residual[t,:] += sum[t,:] (rounded to bf16); out[t,:] = rmsnorm(residual[t,:]) * weight.
 * All bf16; fp32 arithmetic; one block per token. Enqueued on stream (cudaStream_t). */
arb_status_t arb_rmsnorm_residual_launch(void *residual, const void *sum, const void *weight,
                                         void *out, unsigned tokens, unsigned hidden, float eps,
                                         void *stream);

#ifdef __cplusplus
}
#endif

#endif
