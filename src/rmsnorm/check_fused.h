/* SPDX-License-Identifier: MIT */
/*
 * The fused op's check, shared by the host and GPU runners: deterministic inputs per
 * (point salt, slot, rank) and the float64 reference the outputs are compared with.
 * x is made of exact partials (rmsnorm.h), so every all-reduce order gives the
 * reference's sum and ARB_RMSNORM_RTOL bounds fused and composed paths alike.
 */
#ifndef ARB_CHECK_FUSED_H
#define ARB_CHECK_FUSED_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inputs of slot k: rank r's x, the residual, the weight (slot-independent). */
void arb_fused_fill_x(uint16_t *x, size_t n, unsigned salt, unsigned k, int rank);
void arb_fused_fill_residual(uint16_t *res, size_t n, unsigned salt, unsigned k);
void arb_fused_fill_weight(uint16_t *w, unsigned hidden, unsigned salt);

/* Host scratch for checking one point of tokens x hidden on nranks ranks. */
typedef struct arb_fused_check {
    int nranks;
    unsigned tokens, hidden;
    float eps;
    uint16_t **xs, *res_in, *w;
    double *ref_res, *ref_out;
} arb_fused_check_t;

arb_status_t arb_fused_check_init(arb_fused_check_t *c, int nranks, unsigned tokens, unsigned hidden, float eps,
                                  char *why, size_t why_len);
void arb_fused_check_free(arb_fused_check_t *c);

/* Wrong elements of slot k's outputs (residual and out, bf16) against the reference;
 * folds both into *hash (FNV-1a; 0 starts a new hash), which every rank must agree on. */
unsigned long long arb_fused_check_slot(arb_fused_check_t *c, unsigned salt, unsigned k, const uint16_t *got_res,
                                        const uint16_t *got_out, unsigned long long *hash);

#ifdef __cplusplus
}
#endif

#endif
