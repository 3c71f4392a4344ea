/* SPDX-License-Identifier: MIT */
/*
 * The wave fit's tiling (engine/gpu/kernels/wave_fit.h), no GPU needed: Kimi-K2's qkv_a and
 * o_proj grids on an H200 and an RTX PRO 6000, and over a sweep of tile counts and resident
 * blocks, that block b's tiles b, b + grid, .. cover every tile exactly once, that every
 * block has a tile, that none has more than ARB_WAVE_MAX_TILES, that a grid which fits one
 * wave is left as it is, and that one which does not either fits after the fold or is at the
 * cap.
 */
#include "tap.h"
#include "gpu/kernels/wave_fit.h"

/* The tiles block b of `grid` takes out of `tiles`. */
static int tiles_of(int b, int grid, int tiles) { return b < tiles ? (tiles - 1 - b) / grid + 1 : 0; }

static void t_kimi(void)
{
    /* qkv_a at T = 1: 2112 rows, 4 a block, two blocks an SM (123 registers): 528 tiles */
    TAP_EQ_INT(arb_wave_tiles(528, 2 * 132), 2);
    TAP_EQ_INT(arb_wave_grid(528, 2 * 132), 264); /* H200, 132 SMs */
    TAP_EQ_INT(arb_wave_grid(528, 2 * 188), 264); /* RTX PRO 6000, 188 SMs: 376 resident */
    /* qkv_a at T = 8: 2 rows a block, one block an SM: 1056 tiles, 8 a block capped at 4 */
    TAP_EQ_INT(arb_wave_tiles(1056, 132), ARB_WAVE_MAX_TILES);
    TAP_EQ_INT(arb_wave_grid(1056, 132), 264);
    /* o_proj: 7168 rows, 8 a block: 896 tiles; four blocks an SM */
    TAP_EQ_INT(arb_wave_grid(896, 4 * 132), 448);
    TAP_EQ_INT(arb_wave_grid(896, 4 * 188), 448);
    /* q_b: 384 tiles fit 528 resident: unchanged */
    TAP_EQ_INT(arb_wave_grid(384, 4 * 132), 384);
    TAP_EQ_INT(arb_wave_tiles(384, 4 * 132), 1);
}

static void t_sweep(void)
{
    static const int resident[] = {1, 2, 3, 7, 132, 264, 376, 528, 1000};
    int bad = 0, cases = 0;
    for (unsigned r = 0; r < sizeof resident / sizeof resident[0]; r++)
        for (int tiles = 1; tiles <= 6000; tiles += tiles < 100 ? 1 : 37) {
            const int res = resident[r], tpb = arb_wave_tiles(tiles, res), grid = arb_wave_grid(tiles, res);
            int covered = 0, most = 0, empty = 0;
            for (int b = 0; b < grid; b++) {
                const int n = tiles_of(b, grid, tiles);
                covered += n;
                most = n > most ? n : most;
                empty += n == 0;
            }
            cases++;
            if (covered != tiles || empty || most > tpb || tpb < 1 || tpb > ARB_WAVE_MAX_TILES ||
                (tiles <= res && grid != tiles) || (grid > res && tpb != ARB_WAVE_MAX_TILES)) {
                if (bad++ < 5)
                    TAP_FAIL_("tiles %d, resident %d: grid %d, %d a block (most %d, covered %d, empty %d)", tiles, res,
                              grid, tpb, most, covered, empty);
            }
        }
    TAP_EQ_INT(bad, 0);
    TAP_CHECK(cases > 1000);
}

static void t_degenerate(void)
{
    TAP_EQ_INT(arb_wave_tiles(0, 10), 1);
    TAP_EQ_INT(arb_wave_grid(0, 10), 0);
    TAP_EQ_INT(arb_wave_tiles(10, 0), 1); /* no occupancy figure: one tile a block */
    TAP_EQ_INT(arb_wave_grid(10, 0), 10);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi", t_kimi}, {"sweep", t_sweep}, {"degenerate", t_degenerate}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
