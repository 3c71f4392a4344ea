/* SPDX-License-Identifier: MIT */
/* bf16 <-> fp32 on the host for the host backends (header only: no CUDA needed). */
#ifndef ARB_HOST_BF16_H
#define ARB_HOST_BF16_H

#include <stdint.h>
#include <string.h>

static inline float arb_host_bf16_to_f32(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* Round to nearest even; a NaN stays a quiet NaN. */
static inline uint16_t arb_host_f32_to_bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu))
        return (uint16_t)((b >> 16) | 0x0040u);
    b += 0x7fffu + ((b >> 16) & 1u);
    return (uint16_t)(b >> 16);
}

#endif
