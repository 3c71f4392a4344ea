/* SPDX-License-Identifier: MIT */
/*
 * The wave fit of the launches form (--wave-fit): a projection of `tiles` independent tiles
 * (one block index of gemv_tile each) whose grid takes more than one wave of `resident`
 * co-resident blocks runs instead as arb_wave_grid blocks, block b taking tiles b, b + grid,
 * b + 2 grid, .. . Only the first wave of a plain grid can issue its weight loads before the
 * PDL wait; the later waves start once the first have finished, and load then (Kimi-K2's
 * qkv_a at T = 1: 528 blocks, two a SM at 123 registers, 264 resident on an H200). Folded, every
 * block is resident at once and pulls its later tiles' weights toward L2 before the wait.
 * At most ARB_WAVE_MAX_TILES tiles a block (the pulls stay a fraction of L2); one tile a
 * block wherever the grid already fits. Each tile's operations are unchanged, so the output
 * is bit-identical to the plain grid's. C and C++, host only (kernels' launchers, unit test).
 */
#ifndef ARB_ENGINE_KERNELS_WAVE_FIT_H
#define ARB_ENGINE_KERNELS_WAVE_FIT_H

#define ARB_WAVE_MAX_TILES 4

/* Tiles a block takes: ceil(tiles / resident) in 1 .. ARB_WAVE_MAX_TILES (1 for a
 * degenerate argument: tiles or resident below 1). */
static inline int arb_wave_tiles(int tiles, int resident)
{
    if (tiles < 1 || resident < 1)
        return 1;
    const int t = tiles / resident + (tiles % resident != 0);
    return t < ARB_WAVE_MAX_TILES ? t : ARB_WAVE_MAX_TILES;
}

/* Blocks of the folded grid: ceil(tiles / arb_wave_tiles), so every block has a tile (block
 * b's first is b < grid <= tiles) and no block more than arb_wave_tiles. */
static inline int arb_wave_grid(int tiles, int resident)
{
    if (tiles < 1)
        return tiles;
    const int t = arb_wave_tiles(tiles, resident);
    return tiles / t + (tiles % t != 0);
}

#endif
