// SPDX-License-Identifier: MIT
// The MLA kernels at Kimi-K2's per-rank shapes (tp_shape 8) against a plain host loop in double
// (checkasm style: same inputs, compare); the other kernels are test_engine_gpu_kernels.cu.
// TAP; exit 77 without a CUDA device.
//   mla         prep, absorb, attend over 10 chunks (the last partial and wholly masked for
//               the first token), the merge and W_uv, T = 1, 3, 8; twice: bit-identical;
//               the merge and W_uv in one launch (--fuse merge_uv) against the same double
//               reference, twice bit-identical, its tickets left zero, its refusals;
//               the one-launch projection + prep (qkva_prep) bit-identical to gemv + mla_prep,
//               also with its grid folded into one wave
//   qb_absorb   q_b and the absorption in one launch (--fuse qb_absorb) bit-identical to
//               the two launches, T = 1, 3, 8, and the shapes it refuses
//   qb_prep     the MLA prep in that launch (--fuse prep_qb), qkv_a's launch the projection only,
//               bit-identical to qkva_prep's jobs then the plain fused q_b, T = 1, 3, 8, on a
//               non-blocking stream with PDL; its refusals
// Tolerances: fp32 outputs within 1e-5 of sum |terms| (accumulation order); bf16 outputs
// additionally one rounding, 2^-8 relative; where a bf16 intermediate is rounded on both
// sides (act, qlat, olat) a flip of one ulp is allowed through 4 x that.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <cuda_runtime.h>

#include "tap.h"
#include "gpu_check.h"
#include "gpu/kernels/moe_int4_layout.h"
#include "model/router.h"
#include "model/wgen.h"

namespace {

// qkva_prep against gemv + mla_prep on the same inputs (Kimi-K2's K = 7168): qkva, qa and
// the cache rows bit-identical, thrice (the ticket left zero by each launch).
void qkva_prep_case(int T, int rq, int rkv, int dr, float eps, int ctx, int P0, const float2 *d_cs,
                    const int32_t *d_pos)
{
    const int K = 7168, N = rq + rkv + dr;
    auto W = rand_bf((size_t)N * K, 0.02f), x = rand_bf((size_t)T * K, 1.0f);
    auto qan = rand_bf(rq, 1.0f), kvn = rand_bf(rkv, 1.0f);
    bf16 *dW = (bf16 *)to_dev(W), *dx = (bf16 *)to_dev(x), *dqan = (bf16 *)to_dev(qan), *dkvn = (bf16 *)to_dev(kvn);
    bf16 *y[2], *qa[2], *ckv[2], *kpe[2];
    unsigned *ticket;
    cudaMalloc(&ticket, sizeof(unsigned));
    cudaMemset(ticket, 0, sizeof(unsigned));
    for (int f = 0; f < 2; f++) {
        cudaMalloc(&y[f], (size_t)T * N * 2), cudaMalloc(&qa[f], (size_t)T * rq * 2);
        cudaMalloc(&ckv[f], (size_t)ctx * rkv * 2), cudaMalloc(&kpe[f], (size_t)ctx * dr * 2);
        cudaMemset(ckv[f], 0, (size_t)ctx * rkv * 2), cudaMemset(kpe[f], 0, (size_t)ctx * dr * 2);
    }
    TAP_REQUIRE(arbk::gemv(g_lc, arbk::GEMV_BF16, dW, nullptr, dx, K, N, K, y[0], N, T) == cudaSuccess);
    TAP_REQUIRE(arbk::mla_prep(g_lc, y[0], dqan, dkvn, d_cs, d_pos, qa[0], ckv[0], kpe[0], rq, rkv, dr, eps, T) ==
                cudaSuccess);
    // thrice: the plain grid, then twice folded into one wave (--wave-fit qkv_a: on an H200
    // two or four tiles a block by T, the ticket counting the folded grid's blocks)
    for (int rep = 0; rep < 3; rep++) {
        cudaMemset(qa[1], 0xff, (size_t)T * rq * 2); // the second launch's prep is its own
        cudaMemset(y[1], 0xff, (size_t)T * N * 2);
        arbk::launch_ctx lq = g_lc;
        lq.wave = rep > 0;
        TAP_REQUIRE(arbk::qkva_prep(lq, dW, dx, K, y[1], dqan, dkvn, d_cs, d_pos, qa[1], ckv[1], kpe[1], rq, rkv, dr,
                                    eps, ticket, T) == cudaSuccess);
        TAP_EQ_U64(from_dev(ticket, 1)[0], 0);
        TAP_CHECK(from_dev((uint16_t *)y[1], (size_t)T * N) == from_dev((uint16_t *)y[0], (size_t)T * N));
        TAP_CHECK(from_dev((uint16_t *)qa[1], (size_t)T * rq) == from_dev((uint16_t *)qa[0], (size_t)T * rq));
        TAP_CHECK(from_dev((uint16_t *)ckv[1], (size_t)ctx * rkv) == from_dev((uint16_t *)ckv[0], (size_t)ctx * rkv));
        TAP_CHECK(from_dev((uint16_t *)kpe[1], (size_t)ctx * dr) == from_dev((uint16_t *)kpe[0], (size_t)ctx * dr));
    }
    auto c0 = from_dev((uint16_t *)ckv[0], (size_t)ctx * rkv);
    size_t written = 0; // the rows P0 .. P0 + T - 1 and no other
    for (size_t i = 0; i < c0.size(); i++)
        written += c0[i] != 0 && (i / rkv < (size_t)P0 || i / rkv >= (size_t)(P0 + T));
    TAP_EQ_U64(written, 0);
    cudaFree(dW), cudaFree(dx), cudaFree(dqan), cudaFree(dkvn), cudaFree(ticket);
    for (int f = 0; f < 2; f++)
        cudaFree(y[f]), cudaFree(qa[f]), cudaFree(ckv[f]), cudaFree(kpe[f]);
}

// A RoPE table of forward.md's form, (cos * m, sin * m) per position and pair, base 10000.
std::vector<float2> rope_table(int ctx, int dr, double m)
{
    const int pairs = dr / 2;
    std::vector<float2> cs((size_t)ctx * pairs);
    for (int p = 0; p < ctx; p++)
        for (int i = 0; i < pairs; i++) {
            const double f = pow(10000.0, -2.0 * i / dr);
            cs[(size_t)p * pairs + i] = make_float2((float)(cos(p * f) * m), (float)(sin(p * f) * m));
        }
    return cs;
}

// --fuse merge_uv over the partials attend left in d_part: twice, the output poisoned before each,
// the same bits both times, the tickets back at zero, its refusals; its o (bf16 bits) in ofu, left
// empty where a required step failed. o2: the two launches' o, for the count of equal outputs printed.
void merge_uv_case(const float *d_part, const int32_t *d_pos, const bf16 *d_kvb, bf16 *d_o,
                   const std::vector<uint16_t> &o2, int nh, int dn, int dv, int rkv, int T, std::vector<uint16_t> &ofu)
{
    ofu.clear();
    std::vector<uint16_t> got;
    float *uv_s;
    unsigned *uv_t;
    TAP_REQUIRE(cudaMalloc(&uv_s, arbk::mla_merge_uv_scratch_floats(nh, dv, rkv) * 4) == cudaSuccess);
    TAP_REQUIRE(cudaMalloc(&uv_t, (size_t)arbk::kMaxT * nh * sizeof(unsigned)) == cudaSuccess);
    cudaMemset(uv_t, 0, (size_t)arbk::kMaxT * nh * sizeof(unsigned));
    TAP_CHECK(arbk::mla_merge_uv_fits(dv, rkv));
    for (int rep = 0; rep < 2; rep++) {
        cudaMemset(d_o, 0xff, (size_t)T * nh * dv * 2);
        TAP_REQUIRE(arbk::mla_merge_uv(g_lc, d_part, d_pos, d_kvb, d_o, uv_s, uv_t, nh, dn, dv, rkv, T) ==
                    cudaSuccess);
        TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        auto ob = from_dev((uint16_t *)d_o, (size_t)T * nh * dv);
        if (rep)
            TAP_CHECK(ob == got);
        got = ob;
    }
    size_t left = 0, same = 0;
    for (unsigned v : from_dev(uv_t, (size_t)arbk::kMaxT * nh))
        left += v != 0;
    TAP_EQ_U64(left, 0);
    for (size_t i = 0; i < o2.size(); i++)
        same += got[i] == o2[i];
    tap_diag("merge_uv T %d: %zu of %zu outputs bit-equal to the two launches'", T, same, o2.size());
    // refused: v_head_dim past two threads a row, a latent row past 512, no scratch
    TAP_CHECK(arbk::mla_merge_uv(g_lc, d_part, d_pos, d_kvb, d_o, uv_s, uv_t, nh, dn, 129, rkv, T) ==
              cudaErrorInvalidValue);
    TAP_CHECK(arbk::mla_merge_uv(g_lc, d_part, d_pos, d_kvb, d_o, uv_s, uv_t, nh, dn, dv, 520, T) ==
              cudaErrorInvalidValue);
    TAP_CHECK(arbk::mla_merge_uv(g_lc, d_part, d_pos, d_kvb, d_o, nullptr, uv_t, nh, dn, dv, rkv, T) ==
              cudaErrorInvalidValue);
    cudaFree(uv_s), cudaFree(uv_t);
    ofu = got;
}

void mla_case(int T)
{
    const int nh = 8, dn = 128, dr = 64, dv = 128, rkv = 512, rq = 1536, P0 = 287, ctx = 320;
    const int qw = nh * (dn + dr), width = rq + rkv + dr, pairs = dr / 2;
    const float eps = 1e-6f, scale = 0.0722f;
    auto qkva = rand_bf((size_t)T * width, 1.0f), qan = rand_bf(rq, 1.0f), kvn = rand_bf(rkv, 1.0f);
    auto q = rand_bf((size_t)T * qw, 1.0f), kvb = rand_bf((size_t)nh * (dn + dv) * rkv, 0.05f);
    auto ckv0 = rand_bf((size_t)ctx * rkv, 1.0f), kpe0 = rand_bf((size_t)ctx * dr, 1.0f);
    const std::vector<float2> cs = rope_table(ctx, dr, 1.1);
    std::vector<int32_t> posv = {P0};
    bf16 *d_qkva = (bf16 *)to_dev(qkva), *d_qan = (bf16 *)to_dev(qan), *d_kvn = (bf16 *)to_dev(kvn);
    bf16 *d_q = (bf16 *)to_dev(q), *d_kvb = (bf16 *)to_dev(kvb), *d_ckv = (bf16 *)to_dev(ckv0),
         *d_kpe = (bf16 *)to_dev(kpe0);
    float2 *d_cs = to_dev(cs);
    int32_t *d_pos = to_dev(posv);
    bf16 *d_qa, *d_qlat, *d_qpe, *d_o, *d_olat; // olat in its own buffer here: qlat is read back below
    float *d_part;
    cudaMalloc(&d_qa, (size_t)T * rq * 2), cudaMalloc(&d_qlat, (size_t)T * nh * rkv * 2);
    cudaMalloc(&d_qpe, (size_t)T * nh * dr * 2), cudaMalloc(&d_o, (size_t)T * nh * dv * 2);
    cudaMalloc(&d_olat, (size_t)T * nh * rkv * 2);
    cudaMalloc(&d_part, (size_t)(ctx + arbk::kAttnChunk - 1) / arbk::kAttnChunk * T * nh * (rkv + 4) * 4);
    TAP_REQUIRE(arbk::mla_prep(g_lc, d_qkva, d_qan, d_kvn, d_cs, d_pos, d_qa, d_ckv, d_kpe, rq, rkv, dr, eps, T) ==
                cudaSuccess);
    qkva_prep_case(T, rq, rkv, dr, eps, ctx, P0, d_cs, d_pos);
    TAP_REQUIRE(arbk::mla_absorb(g_lc, d_q, d_kvb, d_cs, d_pos, d_qlat, d_qpe, nh, dn, dr, dv, rkv, T) == cudaSuccess);
    std::vector<uint16_t> o;
    // six times, the output bit-identical: all rows per block (a fill target of one CTA),
    // the rows split over blocks as SM120's shared memory makes them at T >= 7 (here: 3
    // groups), one row per block (a fill of chunks x rows, no row floor), the engine's
    // default (three CTAs per SM, groups of at least four rows), a fill of four CTAs an SM
    // (--attn-fill 4: on SM90 the kernel compiled for four blocks an SM), and the wide CTAs
    // (--attn-wide-from 1: 16 warps, T = 3 one group of 24 rows, T = 8 two of 32; T = 1's 8 rows
    // keep the 8-warp grid)
    const int chunks_all = (ctx + arbk::kAttnChunk - 1) / arbk::kAttnChunk;
    int sms = 0;
    TAP_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    TAP_CHECK(arbk::mla_setup(rkv, dr, nh, 0, 0, 0, arbk::kMaxT + 1) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::mla_setup(rkv, dr, nh, 0, 0, 0, -1) == cudaErrorInvalidValue);
    for (int rep = 0; rep < 6; rep++) {
        const int rows = rep == 1 ? (T * nh + 2) / 3 : 0;
        const int fill = rep == 2 ? chunks_all * T * nh : rep == 3 || rep == 5 ? 0 : rep == 4 ? 4 * sms : 1;
        TAP_REQUIRE(arbk::mla_setup(rkv, dr, nh, rows ? arbk::mla_attend_pos_smem(rkv, dr, rows) : 0, fill,
                                    rep == 2 ? 1 : 0, rep == 5 ? 1 : 0) == cudaSuccess);
        if (rep >= 2) { // the grid the launch below takes
            int chunks, groups, Rg, warps = 0;
            arbk::mla_attend_grid(T, nh, ctx, 0, &chunks, &groups, &Rg, &warps);
            const bool wide = rep == 5 && T * nh > 16;
            TAP_CHECK(warps == (wide ? arbk::kWideWarps : arbk::kPosWarps));
            if (wide) // even groups of at most two m16 tiles: T = 3 one of 24, T = 8 two of 32
                TAP_CHECK(Rg <= 32 && groups == (T * nh + 31) / 32 && groups * Rg >= T * nh &&
                          (groups - 1) * Rg < T * nh);
            else
                TAP_CHECK(rep == 2 ? Rg == 1 : (Rg >= 4 || Rg == T * nh));
            int c8, g8, r8; // without warps: the 8-warp grid whatever wide_from says (persist.cu's)
            arbk::mla_attend_grid(T, nh, ctx, 0, &c8, &g8, &r8);
            TAP_CHECK(c8 == chunks && (!wide || r8 <= 16));
        }
        TAP_REQUIRE(arbk::mla_attend_pos(g_lc, d_qlat, d_qpe, d_ckv, d_kpe, d_pos, d_part, nh, dr, rkv, scale, T,
                                         ctx) == cudaSuccess);
        TAP_REQUIRE(arbk::mla_merge(g_lc, d_part, d_pos, d_olat, nh, rkv, T) == cudaSuccess);
        // the last time with a pull toward L2 (--l2-ahead) of a range whose lines do not split
        // evenly over the grid and whose end is not a line's: the same output
        arbk::launch_ctx lu = g_lc;
        if (rep >= 3)
            lu.ahead = {d_kvb, kvb.size() * 2 - 70};
        TAP_REQUIRE(arbk::mla_uv(lu, d_olat, d_kvb, d_o, nh, dn, dv, rkv, T) == cudaSuccess);
        TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        auto ob = from_dev((uint16_t *)d_o, (size_t)T * nh * dv);
        if (rep)
            TAP_CHECK(ob == o);
        o = ob;
    }
    TAP_REQUIRE(arbk::mla_setup(rkv, dr, nh, 0, 0, 0) == cudaSuccess); // the engine's default again
    // --fuse merge_uv over the same partials (its own W_uv order: checked against the double
    // reference below with o's tolerance, not against o's bits)
    std::vector<uint16_t> ofu;
    merge_uv_case(d_part, d_pos, d_kvb, d_o, o, nh, dn, dv, rkv, T, ofu);
    TAP_REQUIRE(ofu.size() == o.size()); // its required steps passed
    auto qa = from_dev((uint16_t *)d_qa, (size_t)T * rq);
    auto ckv = from_dev((uint16_t *)d_ckv, (size_t)ctx * rkv), kpe = from_dev((uint16_t *)d_kpe, (size_t)ctx * dr);
    auto qlat = from_dev((uint16_t *)d_qlat, (size_t)T * nh * rkv), qpe = from_dev((uint16_t *)d_qpe, (size_t)T * nh * dr);
    { // the absorption with a pull toward L2 (--l2-ahead): bit-identical
        arbk::launch_ctx la = g_lc;
        la.ahead = {d_ckv, ckv0.size() * 2 - 3};
        TAP_REQUIRE(arbk::mla_absorb(la, d_q, d_kvb, d_cs, d_pos, d_qlat, d_qpe, nh, dn, dr, dv, rkv, T) == cudaSuccess);
        TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        TAP_CHECK(from_dev((uint16_t *)d_qlat, (size_t)T * nh * rkv) == qlat);
        TAP_CHECK(from_dev((uint16_t *)d_qpe, (size_t)T * nh * dr) == qpe);
    }
    // prep: norms and RoPE, cache rows P0 .. P0+T-1 (rows before untouched)
    cmp cp{"mla prep"};
    auto norm_check = [&](const uint16_t *in, const std::vector<uint16_t> &wn, int n, const uint16_t *out) {
        double ss = 0;
        for (int i = 0; i < n; i++)
            ss += bfd(in[i]) * bfd(in[i]);
        const double inv = 1 / sqrt(ss / n + eps);
        for (int i = 0; i < n; i++) {
            const double r = bfd(in[i]) * inv * bfd(wn[i]);
            cp(bfd(out[i]), r, fabs(r) / 128 + 1e-6);
        }
    };
    for (int t = 0; t < T; t++) {
        const uint16_t *row = &qkva[(size_t)t * width];
        norm_check(row, qan, rq, &qa[(size_t)t * rq]);
        norm_check(row + rq, kvn, rkv, &ckv[(size_t)(P0 + t) * rkv]);
        for (int i = 0; i < pairs; i++) {
            const double x0 = bfd(row[rq + rkv + 2 * i]), x1 = bfd(row[rq + rkv + 2 * i + 1]);
            const float2 c = cs[(size_t)(P0 + t) * pairs + i];
            cp(bfd(kpe[(size_t)(P0 + t) * dr + 2 * i]), x0 * c.x - x1 * c.y, fabs(x0 * c.x - x1 * c.y) / 128 + 1e-6);
            cp(bfd(kpe[(size_t)(P0 + t) * dr + 2 * i + 1]), x0 * c.y + x1 * c.x, fabs(x0 * c.y + x1 * c.x) / 128 + 1e-6);
        }
    }
    TAP_CHECK(memcmp(ckv.data(), ckv0.data(), (size_t)P0 * rkv * 2) == 0);
    TAP_CHECK(cp.ok());
    // absorb, attention and the W_uv projection, from the GPU's own cache rows and qlat
    cmp ca{"mla absorb"}, co{"mla attention output"}, cu{"mla attention output, --fuse merge_uv"};
    for (int t = 0; t < T; t++)
        for (int hd = 0; hd < nh; hd++) {
            const uint16_t *qh = &q[((size_t)t * nh + hd) * (dn + dr)];
            const uint16_t *wuk = &kvb[(size_t)hd * (dn + dv) * rkv], *wuv = wuk + (size_t)dn * rkv;
            for (int c = 0; c < rkv; c++) {
                double a = 0, aa = 0;
                for (int d = 0; d < dn; d++)
                    a += bfd(qh[d]) * bfd(wuk[(size_t)d * rkv + c]), aa += fabs(bfd(qh[d]) * bfd(wuk[(size_t)d * rkv + c]));
                ca(bfd(qlat[((size_t)t * nh + hd) * rkv + c]), a, fabs(a) / 256 + 1e-5 * aa);
            }
            const uint16_t *ql = &qlat[((size_t)t * nh + hd) * rkv], *qp = &qpe[((size_t)t * nh + hd) * dr];
            const int L = P0 + t + 1;
            std::vector<double> s(L);
            double mx = -INFINITY;
            for (int p = 0; p < L; p++) {
                double a = 0;
                for (int c = 0; c < rkv; c++)
                    a += bfd(ql[c]) * bfd(ckv[(size_t)p * rkv + c]);
                for (int c = 0; c < dr; c++)
                    a += bfd(qp[c]) * bfd(kpe[(size_t)p * dr + c]);
                s[p] = a * scale;
                mx = s[p] > mx ? s[p] : mx;
            }
            double z = 0;
            for (int p = 0; p < L; p++)
                z += (s[p] = exp(s[p] - mx));
            std::vector<double> olat(rkv);
            for (int c = 0; c < rkv; c++) {
                double a = 0;
                for (int p = 0; p < L; p++)
                    a += s[p] / z * bfd(ckv[(size_t)p * rkv + c]);
                olat[c] = bfd(arb_f64_to_bf16(a));
            }
            for (int j = 0; j < dv; j++) {
                double a = 0, aa = 0;
                for (int c = 0; c < rkv; c++)
                    a += olat[c] * bfd(wuv[(size_t)j * rkv + c]), aa += fabs(olat[c] * bfd(wuv[(size_t)j * rkv + c]));
                co(bfd(o[((size_t)t * nh + hd) * dv + j]), a, fabs(a) / 256 + aa * (1e-5 + 4.0 / 256 / 16));
                cu(bfd(ofu[((size_t)t * nh + hd) * dv + j]), a, fabs(a) / 256 + aa * (1e-5 + 4.0 / 256 / 16));
            }
        }
    TAP_CHECK(ca.ok());
    TAP_CHECK(co.ok());
    TAP_CHECK(cu.ok());
}
void t_mla()
{
    for (int T : {1, 3, 8})
        mla_case(T);
}

// --fuse qb_absorb (mla_qb.cu): q, qlat and qpe bit-identical to q_b's GEMV then the absorption,
// at Kimi-K2's per-rank shapes (q_b's rows in two parts), T = 1, 3, 8; the outputs poisoned
// before each fused launch, twice (the per-head tickets back at zero between), the second time
// with a pull toward L2 (--l2-ahead); and the shapes it refuses.
void t_qb_absorb()
{
    const int nh = 8, dn = 128, dr = 64, dv = 128, rkv = 512, rq = 1536, P0 = 287, ctx = 320;
    const int qw = nh * (dn + dr);
    TAP_CHECK(arbk::mla_qb_absorb_fits(rq, dn, dr, rkv));
    TAP_CHECK(!arbk::mla_qb_absorb_fits(rq, 64, dr, rkv));       // absorb's warps would take 8 rows
    TAP_CHECK(!arbk::mla_qb_absorb_fits(rq, dn, 40, rkv));       // RoPE rows not in CTAs of 16
    TAP_CHECK(!arbk::mla_qb_absorb_fits(8192, dn, dr, rkv));     // q_b's rows in four parts
    const std::vector<float2> cs = rope_table(ctx, dr, 1.0);
    std::vector<int32_t> posv = {P0};
    float2 *d_cs = to_dev(cs);
    int32_t *d_pos = to_dev(posv);
    auto W = rand_bf((size_t)qw * rq, 0.05f), kvb = rand_bf((size_t)nh * (dn + dv) * rkv, 0.05f);
    bf16 *d_W = (bf16 *)to_dev(W), *d_kvb = (bf16 *)to_dev(kvb);
    float *scratch;
    unsigned *tickets;
    TAP_REQUIRE(cudaMalloc(&scratch, arbk::mla_qb_absorb_scratch_floats(nh, rkv) * 4) == cudaSuccess);
    TAP_REQUIRE(cudaMalloc(&tickets, nh * sizeof(unsigned)) == cudaSuccess);
    cudaMemset(tickets, 0, nh * sizeof(unsigned));
    for (int T : {1, 3, 8}) {
        auto qa = rand_bf((size_t)T * rq, 1.0f);
        bf16 *d_qa = (bf16 *)to_dev(qa), *q[2], *qlat[2], *qpe[2];
        for (int f = 0; f < 2; f++) {
            cudaMalloc(&q[f], (size_t)T * qw * 2), cudaMalloc(&qlat[f], (size_t)T * nh * rkv * 2);
            cudaMalloc(&qpe[f], (size_t)T * nh * dr * 2);
        }
        TAP_REQUIRE(arbk::gemv(g_lc, arbk::GEMV_BF16, d_W, nullptr, d_qa, rq, qw, rq, q[0], qw, T) == cudaSuccess);
        TAP_REQUIRE(arbk::mla_absorb(g_lc, q[0], d_kvb, d_cs, d_pos, qlat[0], qpe[0], nh, dn, dr, dv, rkv, T) ==
                    cudaSuccess);
        auto q0 = from_dev((uint16_t *)q[0], (size_t)T * qw);
        auto l0 = from_dev((uint16_t *)qlat[0], (size_t)T * nh * rkv), p0 = from_dev((uint16_t *)qpe[0], (size_t)T * nh * dr);
        size_t nonzero = 0;
        for (uint16_t v : l0)
            nonzero += (v & 0x7fff) != 0;
        TAP_CHECK(nonzero > l0.size() / 2); // the split form's qlat is a real one to compare with
        for (int rep = 0; rep < 2; rep++) {
            cudaMemset(q[1], 0xff, (size_t)T * qw * 2), cudaMemset(qlat[1], 0xff, (size_t)T * nh * rkv * 2);
            cudaMemset(qpe[1], 0xff, (size_t)T * nh * dr * 2);
            arbk::launch_ctx la = g_lc;
            if (rep == 1)
                la.ahead = {d_kvb, kvb.size() * 2 - 70};
            TAP_REQUIRE(arbk::mla_qb_absorb(la, d_qa, d_W, d_kvb, d_cs, d_pos, q[1], qlat[1], qpe[1], scratch, tickets,
                                            nh, rq, dn, dr, dv, rkv, T) == cudaSuccess);
            TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            const bool qs = from_dev((uint16_t *)q[1], (size_t)T * qw) == q0;
            const bool ls = from_dev((uint16_t *)qlat[1], (size_t)T * nh * rkv) == l0;
            const bool ps = from_dev((uint16_t *)qpe[1], (size_t)T * nh * dr) == p0;
            if (!qs || !ls || !ps)
                tap_diag("T %d run %d: q %s, qlat %s, qpe %s", T, rep, qs ? "same" : "DIFFERS", ls ? "same" : "DIFFERS",
                         ps ? "same" : "DIFFERS");
            TAP_CHECK(qs && ls && ps);
            auto tk = from_dev(tickets, nh);
            size_t left = 0;
            for (unsigned v : tk)
                left += v != 0;
            TAP_EQ_U64(left, 0);
        }
        cudaFree(d_qa);
        for (int f = 0; f < 2; f++)
            cudaFree(q[f]), cudaFree(qlat[f]), cudaFree(qpe[f]);
    }
    // refused, nothing launched: a shape it does not fit, T past kMaxT, no scratch
    TAP_CHECK(arbk::mla_qb_absorb(g_lc, nullptr, d_W, d_kvb, d_cs, d_pos, nullptr, nullptr, nullptr, scratch, tickets,
                                  nh, rq, 64, dr, dv, rkv, 1) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::mla_qb_absorb(g_lc, nullptr, d_W, d_kvb, d_cs, d_pos, nullptr, nullptr, nullptr, scratch, tickets,
                                  nh, rq, dn, dr, dv, rkv, 9) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::mla_qb_absorb(g_lc, nullptr, d_W, d_kvb, d_cs, d_pos, nullptr, nullptr, nullptr, nullptr, tickets,
                                  nh, rq, dn, dr, dv, rkv, 1) == cudaErrorInvalidValue);
    cudaFree(d_cs), cudaFree(d_pos), cudaFree(d_W), cudaFree(d_kvb), cudaFree(scratch), cudaFree(tickets);
}

// --fuse prep_qb: qkva_prep with jobs 0 (the projection only) then mla_qb_absorb running the prep
// itself, against qkva_prep with its jobs then the plain fused q_b: qkva, qa, q, qlat, qpe and the
// cache rows bit-identical, at Kimi-K2's per-rank shapes (K 7168, q_b in two parts), T = 1, 3, 8,
// twice each, on a non-blocking stream with PDL (the q_b CTAs may start while qkv_a runs: the
// engine's case), every output poisoned before; the tickets left zero; the shapes and calls refused.
void t_qb_prep()
{
    const int nh = 8, dn = 128, dr = 64, dv = 128, rkv = 512, rq = 1536, P0 = 287, ctx = 320, K = 7168;
    const int qw = nh * (dn + dr), N = rq + rkv + dr;
    const float eps = 1e-6f;
    TAP_CHECK(arbk::mla_qb_prep_fits(rq, dn, dr, rkv));
    TAP_CHECK(!arbk::mla_qb_prep_fits(128, dn, dr, rkv));  // a q_b part of 128 inputs: lanes without a first vector
    TAP_CHECK(!arbk::mla_qb_prep_fits(rq, 64, dr, rkv));   // no fused q_b to run it in
    TAP_CHECK(!arbk::mla_qb_prep_fits(3592, dn, dr, rkv)); // 9 x (rq + rkv) bf16 past 72 KB of shared memory
    TAP_CHECK(!arbk::mla_qb_prep_fits(4800, dn, dr, rkv)); // q_b's rows in four parts: no fused q_b
    cudaStream_t st;
    TAP_REQUIRE(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking) == cudaSuccess);
    arbk::launch_ctx lc = g_lc;
    lc.stream = st;
    const std::vector<float2> cs = rope_table(ctx, dr, 1.0);
    std::vector<int32_t> posv = {P0};
    float2 *d_cs = to_dev(cs);
    int32_t *d_pos = to_dev(posv);
    auto Wa = rand_bf((size_t)N * K, 0.02f), Wb = rand_bf((size_t)qw * rq, 0.05f);
    auto kvb = rand_bf((size_t)nh * (dn + dv) * rkv, 0.05f), qan = rand_bf(rq, 1.0f), kvn = rand_bf(rkv, 1.0f);
    bf16 *d_Wa = (bf16 *)to_dev(Wa), *d_Wb = (bf16 *)to_dev(Wb), *d_kvb = (bf16 *)to_dev(kvb);
    bf16 *d_qan = (bf16 *)to_dev(qan), *d_kvn = (bf16 *)to_dev(kvn);
    float *scratch;
    unsigned *tickets; // [0 .. nh): q_b's heads, [nh]: qkv_a's
    TAP_REQUIRE(cudaMalloc(&scratch, arbk::mla_qb_absorb_scratch_floats(nh, rkv) * 4) == cudaSuccess);
    TAP_REQUIRE(cudaMalloc(&tickets, (nh + 1) * sizeof(unsigned)) == cudaSuccess);
    cudaMemset(tickets, 0, (nh + 1) * sizeof(unsigned));
    for (int T : {1, 3, 8}) {
        auto x = rand_bf((size_t)T * K, 1.0f);
        bf16 *d_x = (bf16 *)to_dev(x);
        bf16 *qkva[2], *qa[2], *q[2], *qlat[2], *qpe[2], *ckv[2], *kpe[2];
        for (int f = 0; f < 2; f++) {
            cudaMalloc(&qkva[f], (size_t)T * N * 2), cudaMalloc(&qa[f], (size_t)T * rq * 2);
            cudaMalloc(&q[f], (size_t)T * qw * 2), cudaMalloc(&qlat[f], (size_t)T * nh * rkv * 2);
            cudaMalloc(&qpe[f], (size_t)T * nh * dr * 2);
            cudaMalloc(&ckv[f], (size_t)ctx * rkv * 2), cudaMalloc(&kpe[f], (size_t)ctx * dr * 2);
            cudaMemset(ckv[f], 0, (size_t)ctx * rkv * 2), cudaMemset(kpe[f], 0, (size_t)ctx * dr * 2);
        }
        TAP_REQUIRE(arbk::qkva_prep(lc, d_Wa, d_x, K, qkva[0], d_qan, d_kvn, d_cs, d_pos, qa[0], ckv[0], kpe[0], rq, rkv,
                                    dr, eps, tickets + nh, T) == cudaSuccess);
        TAP_REQUIRE(arbk::mla_qb_absorb(lc, qa[0], d_Wb, d_kvb, d_cs, d_pos, q[0], qlat[0], qpe[0], scratch, tickets, nh,
                                        rq, dn, dr, dv, rkv, T) == cudaSuccess);
        TAP_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
        auto sizes = std::vector<size_t>{(size_t)T * N, (size_t)T * rq, (size_t)T * qw, (size_t)T * nh * rkv,
                                         (size_t)T * nh * dr, (size_t)ctx * rkv, (size_t)ctx * dr};
        const char *names[] = {"qkva", "qa", "q", "qlat", "qpe", "cache_ckv", "cache_kpe"};
        bf16 **bufs[] = {qkva, qa, q, qlat, qpe, ckv, kpe};
        std::vector<std::vector<uint16_t>> ref;
        for (int b = 0; b < 7; b++)
            ref.push_back(from_dev((uint16_t *)bufs[b][0], sizes[b]));
        size_t nonzero = 0;
        for (uint16_t v : ref[3])
            nonzero += (v & 0x7fff) != 0;
        TAP_CHECK(nonzero > ref[3].size() / 2); // a real qlat to compare with
        arbk::qb_prep pp;
        pp.qkva = qkva[1], pp.q_a_norm = d_qan, pp.kv_a_norm = d_kvn, pp.cache_ckv = ckv[1], pp.cache_kpe = kpe[1];
        pp.qa = qa[1], pp.eps = eps;
        for (int rep = 0; rep < 2; rep++) {
            for (int b = 0; b < 5; b++)
                cudaMemset(bufs[b][1], 0xff, sizes[b] * 2);
            cudaMemset(ckv[1], 0, sizes[5] * 2), cudaMemset(kpe[1], 0, sizes[6] * 2);
            TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            // the qa argument is not read with a prep: a null one is accepted
            TAP_REQUIRE(arbk::qkva_prep(lc, d_Wa, d_x, K, qkva[1], d_qan, d_kvn, d_cs, d_pos, nullptr, nullptr, nullptr,
                                        rq, rkv, dr, eps, nullptr, T, false) == cudaSuccess);
            TAP_REQUIRE(arbk::mla_qb_absorb(lc, nullptr, d_Wb, d_kvb, d_cs, d_pos, q[1], qlat[1], qpe[1], scratch,
                                            tickets, nh, rq, dn, dr, dv, rkv, T, pp) == cudaSuccess);
            TAP_REQUIRE(cudaStreamSynchronize(st) == cudaSuccess);
            bool all = true;
            for (int b = 0; b < 7; b++) {
                const bool same = from_dev((uint16_t *)bufs[b][1], sizes[b]) == ref[b];
                if (!same)
                    tap_diag("prep_qb T %d run %d: %s DIFFERS from qkva_prep's jobs + the fused q_b", T, rep, names[b]);
                all = all && same;
            }
            TAP_CHECK(all);
            size_t left = 0;
            for (unsigned v : from_dev(tickets, nh + 1))
                left += v != 0;
            TAP_EQ_U64(left, 0);
        }
        cudaFree(d_x);
        for (int f = 0; f < 2; f++)
            cudaFree(qkva[f]), cudaFree(qa[f]), cudaFree(q[f]), cudaFree(qlat[f]), cudaFree(qpe[f]), cudaFree(ckv[f]),
                cudaFree(kpe[f]);
    }
    // refused, nothing launched: a prep without its qa, without a norm, at a q_lora_rank it does not
    // fit; qkva_prep with jobs but no ticket
    arbk::qb_prep bad;
    bad.qkva = d_Wa, bad.q_a_norm = d_qan, bad.kv_a_norm = d_kvn, bad.cache_ckv = d_kvb, bad.cache_kpe = d_kvb;
    TAP_CHECK(arbk::mla_qb_absorb(lc, nullptr, d_Wb, d_kvb, d_cs, d_pos, d_kvb, d_kvb, d_kvb, scratch, tickets, nh, rq,
                                  dn, dr, dv, rkv, 1, bad) == cudaErrorInvalidValue);
    bad.qa = d_kvb, bad.kv_a_norm = nullptr;
    TAP_CHECK(arbk::mla_qb_absorb(lc, nullptr, d_Wb, d_kvb, d_cs, d_pos, d_kvb, d_kvb, d_kvb, scratch, tickets, nh, rq,
                                  dn, dr, dv, rkv, 1, bad) == cudaErrorInvalidValue);
    bad.kv_a_norm = d_kvn;
    TAP_CHECK(arbk::mla_qb_absorb(lc, nullptr, d_Wb, d_kvb, d_cs, d_pos, d_kvb, d_kvb, d_kvb, scratch, tickets, nh, 128,
                                  dn, dr, dv, rkv, 1, bad) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::qkva_prep(lc, d_Wa, d_Wa, K, d_kvb, d_qan, d_kvn, d_cs, d_pos, d_kvb, d_kvb, d_kvb, rq, rkv, dr, eps,
                              nullptr, 1, true) == cudaErrorInvalidValue);
    TAP_CHECK(cudaStreamSynchronize(st) == cudaSuccess);
    cudaStreamDestroy(st);
    cudaFree(d_cs), cudaFree(d_pos), cudaFree(d_Wa), cudaFree(d_Wb), cudaFree(d_kvb), cudaFree(d_qan), cudaFree(d_kvn);
    cudaFree(scratch), cudaFree(tickets);
}

} // namespace

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"mla", t_mla},
        {"qb_absorb", t_qb_absorb},
        {"qb_prep", t_qb_prep},
    };
    return gpu_tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
