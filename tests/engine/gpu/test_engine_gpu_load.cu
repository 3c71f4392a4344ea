// SPDX-License-Identifier: MIT
// The host side of the GPU model's checkpoint load (engine/gpu/gpu_model_load.cu): INT4
// packed rows and their scales reshuffled into the fragment layout of
// kernels/moe_int4_layout.h, checked element by element through int4_frag_pos and
// int4_frag_scale (the layout's forward maps, which the MoE kernels read through). No GPU needed.
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "gpu/gpu_model.h"
#include "gpu/kernels/moe_int4_layout.h"
#include "model/int4.h"
#include "tap.h"

static uint64_t mix(uint64_t x)
{
    x ^= x >> 31;
    x *= 0x9e3779b97f4a7c15ull;
    return x ^ (x >> 29);
}

static void check_shape(unsigned rows, unsigned cols)
{
    const size_t words = (size_t)rows * cols / 8, groups = cols / 32;
    std::vector<int32_t> src(words);
    std::vector<uint32_t> dst(words);
    for (size_t i = 0; i < words; i++)
        src[i] = (int32_t)(uint32_t)mix(i + 1);
    arb_gpu_int4_to_frag(src.data(), dst.data(), rows, cols);
    size_t bad = 0;
    for (unsigned r = 0; r < rows; r++)
        for (unsigned c = 0; c < cols; c++) {
            const int want = arb_int4_unpack(src[((size_t)r * cols + c) / 8], (int)(c % 8));
            const arbk::int4_pos p = arbk::int4_frag_pos(r, c, cols);
            bad += arb_int4_unpack((int32_t)dst[p.word], p.nibble) != want;
        }
    TAP_EQ_U64(bad, 0);
    std::vector<uint16_t> ss(rows * groups), sd(rows * groups);
    for (size_t i = 0; i < ss.size(); i++)
        ss[i] = (uint16_t)mix(i + 7);
    arb_gpu_scales_to_frag(ss.data(), sd.data(), rows, cols);
    bad = 0;
    for (unsigned r = 0; r < rows; r++)
        for (unsigned g = 0; g < groups; g++)
            bad += sd[arbk::int4_frag_scale(r, g, (unsigned)groups)] != ss[(size_t)r * groups + g];
    TAP_EQ_U64(bad, 0);
}

static void t_tiny(void) { check_shape(32, 64); }          // the tiny config's I_e x H
static void t_kimi_down(void) { check_shape(7168, 256); }  // Kimi-K2 TP=8 down_proj: H x I_e_r
static void t_kimi_gate(void) { check_shape(256, 7168); }  // gate/up: I_e_r x H

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"tiny", t_tiny}, {"kimi_down", t_kimi_down}, {"kimi_gate", t_kimi_gate}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
