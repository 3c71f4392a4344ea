// SPDX-License-Identifier: MIT
// Where the GPU keeps a routed expert's INT4 weights: the logical values of forward.md
// (q in [-8, 7] at (row, col) of an expert's [rows x cols] matrix, a bf16 scale per row and
// 32 consecutive columns), reshuffled once at generation so that each lane of a warp reads
// its mma.sync m16n8k16 A fragments as one 8-byte load per group of 32 columns.
//
// A 16-row tile (rt = row / 16) and a group (grp = col / 32) are 32 lanes x 2 words: lane
// 4 gi + ti holds rows gi and gi + 8 of the tile, columns 8 ti .. 8 ti + 7 of the group;
// word j (0, 1) is the A fragment of the k16 step j. The mma's k slots of lane ti
// {2ti, 2ti+1 | 2ti+8, 2ti+9} stand for the columns 8ti + 4j + {0, 1 | 2, 3} (a
// permutation inside the group; the B fragment uses the same one, so each lane's B is the
// 16-byte vector x[8ti .. 8ti+7] of the group). In a word, nibble v (value j of the packed
// format's word) is fragment register pair p = v % 4, half v / 4: pair 0 a0a1 (row gi),
// 1 a2a3 (row gi + 8), 2 a4a5 (row gi), 3 a6a7 (row gi + 8); pairs 0, 1 take columns
// 8ti + 4j + {0, 1}, pairs 2, 3 columns 8ti + 4j + {2, 3}, the half the column's parity.
// Scales: per (tile, group) 8 pairs of bf16, pair gi = (row gi, row gi + 8).
// The tiles of an expert are consecutive, experts expert-major: rows x cols / 8 words and
// rows x cols / 32 scales per expert, as the packed format. Host and device (C++).
#ifndef ARB_ENGINE_MOE_INT4_LAYOUT_H
#define ARB_ENGINE_MOE_INT4_LAYOUT_H

#include <cstddef>

#if defined(__CUDACC__)
#define ARB_MOE_FN __host__ __device__ inline
#else
#define ARB_MOE_FN inline
#endif

namespace arbk {

struct int4_pos {
    size_t word; // word index in the expert's matrix
    int nibble;  // 0 .. 7: bits [4 nibble, 4 nibble + 4)
};

// (row, col) of a [rows x cols] matrix (rows a multiple of 16, cols of 32) to its word and nibble.
ARB_MOE_FN int4_pos int4_frag_pos(unsigned row, unsigned col, unsigned cols)
{
    const unsigned groups = cols / 32, rt = row / 16, rr = row % 16, gi = rr % 8, rhalf = rr / 8;
    const unsigned grp = col / 32, cc = col % 32, ti = cc / 8, j = (cc % 8) / 4, q = cc % 4;
    const unsigned pair = rhalf + 2 * (q / 2), half = q % 2;
    const size_t lane = 4 * gi + ti;
    return int4_pos{(((size_t)rt * groups + grp) * 32 + lane) * 2 + j, (int)(pair + 4 * half)};
}

// The inverse: word w, nibble v to (row, col).
ARB_MOE_FN void int4_frag_rc(size_t w, int v, unsigned cols, unsigned *row, unsigned *col)
{
    const unsigned groups = cols / 32, j = (unsigned)(w % 2), lane = (unsigned)(w / 2 % 32);
    const size_t tg = w / 64; // tile * groups + group
    const unsigned grp = (unsigned)(tg % groups), rt = (unsigned)(tg / groups);
    const unsigned gi = lane / 4, ti = lane % 4, pair = (unsigned)v % 4, half = (unsigned)v / 4;
    *row = rt * 16 + gi + 8 * (pair % 2);
    *col = grp * 32 + 8 * ti + 4 * j + 2 * (pair / 2) + half;
}

// The scale of (row, group grp) of a matrix of `groups` groups per row.
ARB_MOE_FN size_t int4_frag_scale(unsigned row, unsigned grp, unsigned groups)
{
    const unsigned rt = row / 16, rr = row % 16;
    return (((size_t)rt * groups + grp) * 8 + rr % 8) * 2 + rr / 8;
}

ARB_MOE_FN void int4_frag_scale_rg(size_t i, unsigned groups, unsigned *row, unsigned *grp)
{
    const unsigned rhalf = (unsigned)(i % 2), gi = (unsigned)(i / 2 % 8);
    const size_t tg = i / 16;
    *grp = (unsigned)(tg % groups);
    *row = (unsigned)(tg / groups) * 16 + gi + 8 * rhalf;
}

} // namespace arbk

#endif
