/* SPDX-License-Identifier: MIT */
/*
 * FP8 E4M3 as DeepSeek-V3's checkpoint stores it (torch.float8_e4m3fn, the OCP "fn" form):
 * sign, 4 exponent bits of bias 7, 3 mantissa bits; no infinities, S.1111.111 is NaN, the
 * largest finite value 448; exponent 0 is subnormal (m / 8 * 2^-6).
 */
#ifndef ARB_ENGINE_WEIGHTS_FP8_H
#define ARB_ENGINE_WEIGHTS_FP8_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARB_FP8_E4M3_MAX 448.0f

/* The value of code v. */
float arb_fp8_e4m3_to_f32(uint8_t v);

/* The nearest code to x (ties to the even code; |x| beyond 448 saturates to +-448, as
 * a quantizer that clamps to the range does; NaN to NaN). */
uint8_t arb_fp8_e4m3_from_f32(float x);

#ifdef __cplusplus
}
#endif

#endif
