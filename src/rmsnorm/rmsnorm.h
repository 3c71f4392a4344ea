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

/*
 * Relative tolerance for fused/unfused outputs against the float64 reference: an
 * element is wrong when |got - ref| > ARB_RMSNORM_RTOL * max(|ref|, 1/64) or got is
 * not finite. Why 0.016 (the derivation is in rmsnorm_ref.c and checked by
 * tests/rmsnorm/test_rmsnorm_ref.c): bf16 keeps 8 significant bits, so one rounding
 * is within 2^-8 relative and one ulp is at most 2^-7 relative. The device's stored
 * residual may sit one ulp away from the reference's (fp32 sums in another rank
 * order): <= 2^-7; the output rounding: <= 2^-8; fp32 norm arithmetic: ~1e-6.
 * Total <= 0.0118; 0.016 leaves a third of an output rounding as margin. The 1/64
 * floor is in output units (RMSNorm output divided by weight has an RMS of 1), so it
 * assumes weights of order one. The bound holds only when the device adds the exact
 * sum of the ranks' x: an all-reduce that rounds the sum to bf16 first (the unfused
 * path, NCCL's per-hop rounding) can be far off where residual + sum cancels. Fill x
 * with arb_fill_bf16_exact_partials (every partial sum exact in bf16), or give the
 * reference the rounded sum as one rank; see rmsnorm_ref.c.
 */
#define ARB_RMSNORM_RTOL 0.0160

/* bf16 <-> float on the host (round to nearest even; NaN stays NaN, sign kept). */
uint16_t arb_f32_to_bf16(float f);
float arb_bf16_to_f32(uint16_t h);
/* double -> bf16 rounded once, to nearest even (no double rounding through float);
 * beyond the bf16 range gives +-inf. */
uint16_t arb_f64_to_bf16(double d);

/* Deterministic pseudo-random bf16 values uniform in [-scale, scale] from a seed
 * (splitmix64), identical on every rank and host for the same seed. scale must be
 * finite and >= 0; otherwise an error is logged and buf is filled with NaN. */
void arb_fill_bf16_random(uint16_t *buf, size_t n, uint64_t seed, float scale);

/* Deterministic pseudo-random multiples of 1/16 in [-1, 1] (splitmix64, like
 * arb_fill_bf16_random). Any sum of up to 16 of them, in any order and rounded to bf16
 * after every step, is exact (integers up to 256 sixteenths are bf16 values), so every
 * all-reduce, fused or not, leaves the same sum as the float64 reference. Use it for
 * the per-rank x of RMSNorm checks with up to 16 ranks. */
void arb_fill_bf16_exact_partials(uint16_t *buf, size_t n, uint64_t seed);

/* float64 reference of the fused operation. x[r] is rank r's partial sums
 * [tokens x hidden]; residual_in, weight as in arb_rmsnorm_args_t. The sum over ranks
 * is rounded to bf16 only where the device rounds: the residual is rounded to bf16
 * (as stored) before the norm. Outputs are doubles [tokens x hidden]; residual_out
 * holds exact bf16 values. */
void arb_rmsnorm_reference(const uint16_t *const *x, int nranks, const uint16_t *residual_in,
                           const uint16_t *weight, unsigned tokens, unsigned hidden, double eps,
                           double *residual_out, double *out);

/* Counts elements of got (bf16) outside the tolerance of ref; NaN always counts. */
size_t arb_rmsnorm_count_wrong(const uint16_t *got, const double *ref, size_t n, double rtol);

/* The host twin of arb_rmsnorm_residual_launch for host-memory all-reduces (the
 * composed fused op of host plugins), with the device kernel's arithmetic: fp32 sums,
 * the residual rounded to bf16 as stored, the mean of squares of the stored residual
 * in fp32, one rounding of the output. ARB_ERR_INVALID (with the reason) for hidden
 * == 0, NULL pointers when tokens > 0, or eps negative or not finite. */
arb_status_t arb_rmsnorm_residual_host(uint16_t *residual, const uint16_t *sum, const uint16_t *weight,
                                       uint16_t *out, unsigned tokens, unsigned hidden, float eps,
                                       char *why, size_t why_len);

/* Built only with CUDA.
 * residual[t,:] += sum[t,:] (rounded to bf16); out[t,:] = rmsnorm(residual[t,:]) * weight.
 * All bf16; fp32 arithmetic; one block per token. Enqueued on stream (cudaStream_t);
 * a plain kernel launch, so it may be captured in a CUDA graph. Any alignment works
 * (16-byte vectors where hidden and the pointers allow). out must not overlap
 * residual or weight. tokens == 0 enqueues nothing. Returns ARB_ERR_INVALID for
 * hidden == 0, NULL pointers, tokens > 2^31-1 or eps negative or not finite;
 * ARB_ERR_SYSTEM when the launch fails; the reason in why. */
arb_status_t arb_rmsnorm_residual_launch(void *residual, const void *sum, const void *weight,
                                         void *out, unsigned tokens, unsigned hidden, float eps,
                                         void *stream, char *why, size_t why_len);
/* The same; pdl != 0 launches it with programmatic stream serialization (it may start
 * while the kernel before it runs, and waits for that kernel before reading sum or
 * residual; it reads weight before that wait, so weight must not be written by the kernel
 * before it). The kernel always lets its successor launch early; the successor must wait
 * on it. */
arb_status_t arb_rmsnorm_residual_launch_pdl(void *residual, const void *sum, const void *weight,
                                             void *out, unsigned tokens, unsigned hidden, float eps,
                                             int pdl, void *stream, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
