/* SPDX-License-Identifier: MIT */
/*
 * Where the launches form's fused kernels apply (--fuse, engine/model/engine_opts.h), and how a
 * skinny GEMV splits its rows: rules the kernels' launchers (C++) and the engine's host side (C:
 * the GPU backend's options, the result rows' step_form) must agree on, so they live here once.
 * C and C++; host and device.
 */
#ifndef ARB_ENGINE_KERNELS_QB_FIT_H
#define ARB_ENGINE_KERNELS_QB_FIT_H

#if defined(__CUDACC__)
#define ARB_QB_FIT_FN __host__ __device__ static inline
#else
#define ARB_QB_FIT_FN static inline
#endif

/* The parts a skinny GEMV splits a row of K inputs into (gemv_ops.cuh's gemv_parts): four of
 * at least 128 vectors (four loads per lane), else two of at least 96, K / 8 a multiple of the
 * parts; else one. */
ARB_QB_FIT_FN int arb_gemv_parts(int K)
{
    const int nvec = K / 8;
    if (nvec >= 4 * 128 && nvec % 4 == 0)
        return 4;
    if (nvec >= 2 * 96 && nvec % 2 == 0)
        return 2;
    return 1;
}

/* Whether q_b and the absorption run as one launch (mla_qb.cu): absorb's eight warps take 16 of
 * the dn query rows each (dn = 128), the RoPE rows come in CTAs of 16, the latent row fits the
 * kernels (a multiple of 8 up to 512), and q_b's rows are in one or two parts. */
ARB_QB_FIT_FN int arb_qb_absorb_fits(int rq, int dn, int dr, int rkv)
{
    return dn == 128 && dr > 0 && dr % 16 == 0 && rkv > 0 && rkv % 8 == 0 && rkv <= 512 && rq > 0 && rq % 8 == 0 &&
           arb_gemv_parts(rq) <= 2;
}

/* Whether the MLA prep (the q_a norm, the latent's norm and RoPE into the cache) can run in that
 * fused launch (--fuse prep_qb, mla_qb.cu): where it fits, every lane of q_b's warps holds an
 * input vector in the first round (a part of at least 256 inputs), so all of a CTA's threads wait
 * at once, where the CTA forms its qa behind a barrier; and its shared memory at 8 tokens, 9 x
 * (rq + rkv) bf16 (mla_qb.cu's qb_prep_smem), stays within 72 KB, so that with the kernel's static
 * ~18 KB it fits SM120's 99 KB a block: rq + rkv <= 4096. */
ARB_QB_FIT_FN int arb_qb_prep_fits(int rq, int dn, int dr, int rkv)
{
    return arb_qb_absorb_fits(rq, dn, dr, rkv) && rq / arb_gemv_parts(rq) >= 256 && rq + rkv <= 4096;
}

/* Whether the attention's merge and W_uv run as one launch (attend_ops.cuh's mla_merge_uv_tile):
 * two threads of a merge block to a W_uv row (v_head_dim up to 128), the latent row a multiple of
 * 8 up to 512 (the merge's blocks of 64 columns, at most 8 of them). */
ARB_QB_FIT_FN int arb_merge_uv_fits(int dv, int rkv)
{
    return dv > 0 && dv <= 128 && rkv > 0 && rkv % 8 == 0 && rkv <= 512;
}

/* The fused kernels a step of the launches form runs (ARB_FUSE_* bits, engine_opts.h's values:
 * 1 qb_absorb, 2 merge_uv, 4 prep_qb): `fuse` as the options hold it; given 0 (the default) drops
 * what the shapes do not fit (prep_qb also without qb_absorb), given 1 keeps it (the GPU model
 * then refuses the shapes or the set, naming them); none outside the launches form. */
ARB_QB_FIT_FN unsigned arb_fuse_applied(unsigned fuse, int given, int launches, int rq, int dn, int dr, int dv, int rkv)
{
    if (!launches)
        return 0;
    if (!given && !arb_qb_absorb_fits(rq, dn, dr, rkv))
        fuse &= ~1u;
    if (!given && !arb_merge_uv_fits(dv, rkv))
        fuse &= ~2u;
    if (!given && (!(fuse & 1u) || !arb_qb_prep_fits(rq, dn, dr, rkv)))
        fuse &= ~4u;
    return fuse;
}

#undef ARB_QB_FIT_FN
#endif
