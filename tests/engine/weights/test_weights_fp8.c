/* SPDX-License-Identifier: MIT */
/* FP8 E4M3 (engine/weights/fp8.h): known codes, every finite code back to itself, ties to even, saturation. */
#include <math.h>
#include <stdint.h>

#include "tap.h"
#include "weights/fp8.h"

static void t_values(void)
{
    TAP_NEAR(arb_fp8_e4m3_to_f32(0x38), 1.0, 0);
    TAP_NEAR(arb_fp8_e4m3_to_f32(0xb8), -1.0, 0);
    TAP_NEAR(arb_fp8_e4m3_to_f32(0x7e), 448.0, 0);
    TAP_NEAR(arb_fp8_e4m3_to_f32(0x08), ldexp(1.0, -6), 0);  /* the smallest normal */
    TAP_NEAR(arb_fp8_e4m3_to_f32(0x01), ldexp(1.0, -9), 0);  /* the smallest subnormal */
    TAP_NEAR(arb_fp8_e4m3_to_f32(0x3b), 1.375, 0);
    TAP_CHECK(isnan(arb_fp8_e4m3_to_f32(0x7f)));
    TAP_CHECK(isnan(arb_fp8_e4m3_to_f32(0xff)));
}

static void t_round_trip(void)
{
    int bad = 0;
    for (int v = 0; v < 256; v++)
        if ((v & 0x7f) != 0x7f)
            bad += arb_fp8_e4m3_from_f32(arb_fp8_e4m3_to_f32((uint8_t)v)) != v;
    TAP_EQ_INT(bad, 0);
}

static void t_rounding(void)
{
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(1.0625f), 0x38); /* halfway 1 .. 1.125: the even code */
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(1.1875f), 0x3a); /* halfway 1.125 .. 1.25 */
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(1.07f), 0x39);
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(-1.07f), 0xb9);
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(1000.0f), 0x7e); /* saturates */
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(-1000.0f), 0xfe);
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(1e-9f), 0x00);
    TAP_EQ_INT(arb_fp8_e4m3_from_f32(NAN), 0x7f);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"values", t_values}, {"round_trip", t_round_trip}, {"rounding", t_rounding}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
