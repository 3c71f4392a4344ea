/* SPDX-License-Identifier: MIT */
/* FP8 E4M3 (engine/weights/fp8.h). */
#include "weights/fp8.h"

#include <math.h>

float arb_fp8_e4m3_to_f32(uint8_t v)
{
    int sign = v >> 7, e = (v >> 3) & 0xf, m = v & 7;
    float x;
    if (e == 15 && m == 7)
        x = NAN;
    else if (e == 0)
        x = ldexpf((float)m / 8.0f, -6); /* subnormal */
    else
        x = ldexpf(1.0f + (float)m / 8.0f, e - 7);
    return sign ? -x : x;
}

uint8_t arb_fp8_e4m3_from_f32(float x)
{
    if (isnan(x))
        return 0x7f;
    uint8_t sign = signbit(x) ? 0x80 : 0;
    float a = fabsf(x);
    if (a >= ARB_FP8_E4M3_MAX)
        return sign | 0x7e;
    /* the positive codes 0x00 .. 0x7e increase with their value: the last one <= a */
    unsigned lo = 0, hi = 0x7e;
    while (lo < hi) {
        unsigned mid = (lo + hi + 1) / 2;
        if (arb_fp8_e4m3_to_f32((uint8_t)mid) <= a)
            lo = mid;
        else
            hi = mid - 1;
    }
    float below = arb_fp8_e4m3_to_f32((uint8_t)lo), above = arb_fp8_e4m3_to_f32((uint8_t)(lo + 1));
    unsigned code = lo;
    if (a - below > above - a || (a - below == above - a && (lo & 1)))
        code = lo + 1;
    return sign | (uint8_t)code;
}
