// SPDX-License-Identifier: MIT
// Each engine kernel at Kimi-K2's per-rank shapes (tp_shape 8) against a plain host loop
// in double (checkasm style: same inputs, compare). TAP; exit 77 without a CUDA device.
//   gemv        bf16 / fp32 / SiLU*up epilogues, T = 1, 3, 8, K not a multiple of 256, and
//               rows long enough to be split over two and four warps; the grid folded into
//               one wave (--wave-fit) bit-identical to the plain one
//   wgen        device generation bit-identical to engine/model/wgen.h on the host (bf16;
//               INT4 values read through the fragment layout of moe_int4_layout.h)
//   router      logits and top-k (Kimi: 384 experts, one group, T = 3 and 8; DeepSeek: 256
//               in 8 groups, 4 kept) against engine/model/router.h's arb_route on the same
//               logits (T = 1, 3, 8 for Kimi); ties (repeated router rows, zero bias: sets of
//               8 equal choices, all 384 equal, tied groups); coef zero for every unpicked
//               (expert, token) over a poisoned buffer, n_uniq the distinct picks
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
//   l2_pull     the side branch's pulls toward L2 (--l2-side): odd ranges run without an error and
//               write nothing; its refusals
// The MoE block is test_engine_gpu_moe.cu. Tolerances: fp32 outputs within 1e-5 of sum |terms| (accumulation order); bf16 outputs
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

void t_gemv()
{
    // K 1000: 125 vectors per row, a partial last round of the unrolled loop, one warp per
    // row; 2304 and 4096: rows split over two and four warps (gemv_parts)
    for (int T : {1, 3, 8})
      for (int K : {1000, 2304, 4096}) {
        const int N = K == 1000 ? 300 : 70;
        auto W = rand_bf((size_t)N * K, 1.0f), W2 = rand_bf((size_t)N * K, 1.0f), x = rand_bf((size_t)T * K, 1.0f);
        bf16 *dW = (bf16 *)to_dev(W), *dW2 = (bf16 *)to_dev(W2), *dx = (bf16 *)to_dev(x);
        float *dy;
        TAP_REQUIRE(cudaMalloc(&dy, sizeof(float) * T * N) == cudaSuccess);
        for (int epi = 0; epi < 3; epi++) {
            TAP_REQUIRE(arbk::gemv(g_lc, (arbk::gemv_epilogue)epi, dW, dW2, dx, K, N, K, dy, N, T) == cudaSuccess);
            std::vector<float> yf;
            std::vector<uint16_t> yb;
            if (epi == arbk::GEMV_F32)
                yf = from_dev(dy, (size_t)T * N);
            else
                yb = from_dev((uint16_t *)dy, (size_t)T * N);
            cmp c{epi == 0 ? "gemv bf16" : epi == 1 ? "gemv f32" : "gemv silu*up"};
            for (int t = 0; t < T; t++)
                for (int n = 0; n < N; n++) {
                    double a = 0, aa = 0, b = 0, bb = 0;
                    for (int k = 0; k < K; k++) {
                        const double xv = bfd(x[(size_t)t * K + k]);
                        a += bfd(W[(size_t)n * K + k]) * xv, aa += fabs(bfd(W[(size_t)n * K + k]) * xv);
                        b += bfd(W2[(size_t)n * K + k]) * xv, bb += fabs(bfd(W2[(size_t)n * K + k]) * xv);
                    }
                    if (epi == arbk::GEMV_F32)
                        c(yf[(size_t)t * N + n], a, 1e-5 * aa);
                    else if (epi == arbk::GEMV_BF16)
                        c(bfd(yb[(size_t)t * N + n]), a, 1e-5 * aa + fabs(a) / 256);
                    else {
                        const double s = a / (1 + exp(-a)), ref = s * b;
                        c(bfd(yb[(size_t)t * N + n]), ref, 1e-5 * (aa * fabs(b) + bb * fabs(s)) * 2 + fabs(ref) / 256);
                    }
                }
            TAP_CHECK(c.ok());
        }
        cudaFree(dW), cudaFree(dW2), cudaFree(dx), cudaFree(dy);
      }
    // The folded grid (--wave-fit): 5000 tiles of 8 rows (K 1000: a warp a row) cannot be one
    // wave on any GPU (at most 8 blocks of 256 threads an SM), so every block runs several
    // tiles (at most wave_fit.h's 4); the output bit-identical to the plain grid's, for each
    // epilogue (gate/up pulls both matrices) and T = 1, 3, 8.
    const int N = 40000, K = 1000;
    auto W = rand_bf((size_t)N * K, 1.0f), W2 = rand_bf((size_t)N * K, 1.0f);
    bf16 *dW = (bf16 *)to_dev(W), *dW2 = (bf16 *)to_dev(W2);
    for (int T : {1, 3, 8}) {
        auto x = rand_bf((size_t)T * K, 1.0f);
        bf16 *dx = (bf16 *)to_dev(x);
        float *dy[2];
        for (auto &d : dy)
            TAP_REQUIRE(cudaMalloc(&d, sizeof(float) * T * N) == cudaSuccess);
        for (int epi = 0; epi < 3; epi++) {
            for (int f = 0; f < 2; f++) {
                arbk::launch_ctx lw = g_lc;
                lw.wave = f;
                cudaMemset(dy[f], 0xff, sizeof(float) * T * N);
                TAP_REQUIRE(arbk::gemv(lw, (arbk::gemv_epilogue)epi, dW, dW2, dx, K, N, K, dy[f], N, T) == cudaSuccess);
            }
            TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
            const size_t n = (size_t)T * N * (epi == arbk::GEMV_F32 ? 2 : 1); // 16-bit words written
            if (from_dev((uint16_t *)dy[1], n) != from_dev((uint16_t *)dy[0], n))
                TAP_FAIL_("gemv folded grid, epilogue %d, T %d: output differs from the plain grid's", epi, T);
        }
        cudaFree(dx), cudaFree(dy[0]), cudaFree(dy[1]);
    }
    cudaFree(dW), cudaFree(dW2);
}

void t_wgen()
{
    const uint64_t seed = 5;
    // a shard block of an expert-major tensor: 3 experts x rows [64, 96) of 256 x cols [32, 96) of 128
    arbk::wgen_block b = {seed, ARB_W_EXP_DOWN, 4, 3, 32, 64, 64, 32, 256, 128, 0.123f};
    const size_t n = (size_t)b.experts * b.rows * b.cols;
    bf16 *d;
    uint32_t *dq;
    bf16 *ds;
    TAP_REQUIRE(cudaMalloc(&d, n * 2) == cudaSuccess && cudaMalloc(&dq, n / 2) == cudaSuccess &&
                cudaMalloc(&ds, n / 16) == cudaSuccess);
    TAP_REQUIRE(arbk::gen_linear(nullptr, d, b, 8) == cudaSuccess);
    TAP_REQUIRE(arbk::gen_int4(nullptr, dq, ds, b, ARB_W_EXP_DOWN_SCALE, 0.0456f, 8) == cudaSuccess);
    auto v = from_dev((uint16_t *)d, n);
    auto q = from_dev(dq, n / 8);
    auto s = from_dev((uint16_t *)ds, n / 32);
    size_t bad = 0;
    for (size_t e = 0; e < b.experts; e++)
        for (size_t r = 0; r < b.rows; r++)
            for (size_t c = 0; c < b.cols; c++) {
                const uint64_t idx = ((e * b.grows) + b.row0 + r) * b.gcols + b.col0 + c;
                const size_t i = (e * b.rows + r) * b.cols + c;
                bad += v[i] != arb_f32_to_bf16(b.c * arb_wgen_uniform(seed, b.tensor, b.layer, idx));
                const arbk::int4_pos fp = arbk::int4_frag_pos((unsigned)r, (unsigned)c, b.cols);
                const size_t wi = e * b.rows * b.cols / 8 + fp.word;
                const int qv = (int)((q[wi] >> (4 * fp.nibble)) & 0xf), want = arb_wgen_int4(seed, b.tensor, b.layer, idx);
                bad += (qv >= 8 ? qv - 16 : qv) != want;
                if (c % 32 == 0) {
                    const uint64_t sidx = ((e * b.grows) + b.row0 + r) * (b.gcols / 32) + (b.col0 + c) / 32;
                    const float p = 0.25f * arb_wgen_uniform(seed, ARB_W_EXP_DOWN_SCALE, b.layer, sidx);
                    const size_t si = e * b.rows * (b.cols / 32) + arbk::int4_frag_scale((unsigned)r, (unsigned)c / 32, b.cols / 32);
                    bad += s[si] != arb_f32_to_bf16(0.0456f * (1.0f + p));
                }
            }
    if (bad)
        tap_diag("wgen: %zu of %zu values differ from the host", bad, n * 2 + n / 32);
    TAP_EQ_U64(bad, 0);
    cudaFree(d), cudaFree(dq), cudaFree(ds);
}

// rep > 0: expert e's router row is row e % rep's and the bias zero, so the choices tie in sets of
// E / rep experts (rep 1: all E tie, every expert a candidate of the top-k's threshold); the
// picks then go by index.
void router_case(int E, int k, int ng, int kg, int T, int rep_rows = 0)
{
    const int H = 7168;
    auto W = rand_bf((size_t)E * H, 0.02f), h = rand_bf((size_t)T * H, 1.0f);
    std::vector<float> bias(E);
    for (auto &x : bias)
        x = rep_rows ? 0.0f : 0.01f * frand();
    if (rep_rows)
        for (int e = rep_rows; e < E; e++)
            std::copy(W.begin() + (size_t)(e % rep_rows) * H, W.begin() + (size_t)(e % rep_rows + 1) * H,
                      W.begin() + (size_t)e * H);
    bf16 *dW = (bf16 *)to_dev(W), *dh = (bf16 *)to_dev(h);
    float *db = to_dev(bias), *dl;
    cudaMalloc(&dl, sizeof(float) * T * E);
    route_dev r = alloc_route(T, k);
    for (int rep = 0; rep < 2; rep++) { // twice: a launch leaves nothing the next one depends on
        if (rep) // the selection and the dedupe of the second launch are its own: poison the first's
            cudaMemset(r.rt.uniq, 0xff, sizeof(int32_t) * arbk::kMaxSlots), cudaMemset(r.rt.n_uniq, 0, sizeof(int32_t)),
                cudaMemset(r.rt.coef, 0xff, sizeof(float) * arbk::kMaxSlots * arbk::kMaxT);
        TAP_REQUIRE(arbk::router(g_lc, dh, dW, db, dl, r.rt, H, E, k, ng, kg, 2.827f, r.ticket, T) == cudaSuccess);
        TAP_EQ_U64(from_dev(r.ticket, 1)[0], 0); // the last block left the ticket zero
    }
    auto lg = from_dev(dl, (size_t)T * E);
    auto ex = from_dev(r.experts, (size_t)T * k);
    auto coef = from_dev(r.rt.coef, (size_t)arbk::kMaxSlots * arbk::kMaxT);
    auto uniq = from_dev(r.rt.uniq, arbk::kMaxSlots);
    auto nu = from_dev(r.rt.n_uniq, 1);
    cmp cl{"router logits"};
    arb_router_cfg_t rc = {(unsigned)E, (unsigned)k, (unsigned)ng, (unsigned)kg, 2.827, 1};
    std::vector<int> seen;
    size_t bad_sel = 0;
    for (int t = 0; t < T; t++) {
        std::vector<float> sc(E);
        for (int e = 0; e < E; e++) {
            double a = 0, aa = 0;
            for (int i = 0; i < H; i++)
                a += bfd(W[(size_t)e * H + i]) * bfd(h[(size_t)t * H + i]),
                    aa += fabs(bfd(W[(size_t)e * H + i]) * bfd(h[(size_t)t * H + i]));
            cl(lg[(size_t)t * E + e], a, 1e-5 * aa);
            sc[e] = (float)(1.0 / (1.0 + exp(-(double)lg[(size_t)t * E + e]))); // the GPU's own logits
        }
        unsigned idx[64];
        double wt[64];
        TAP_REQUIRE(arb_route(&rc, sc.data(), bias.data(), idx, wt) == 0);
        for (int j = 0; j < k; j++) {
            bad_sel += ex[(size_t)t * k + j] != (int)idx[j];
            int u = 0;
            while (u < nu[0] && uniq[u] != (int)idx[j])
                u++;
            if (u == nu[0] || fabs(coef[(size_t)u * arbk::kMaxT + t] - wt[j]) > 1e-5 * wt[j]) {
                bad_sel++;
                tap_diag("router: token %d expert %u: weight %g, want %g", t, idx[j],
                         u < nu[0] ? coef[(size_t)u * arbk::kMaxT + t] : -1.0, wt[j]);
            }
            seen.push_back((int)idx[j]);
        }
    }
    for (int u = 1; u < nu[0]; u++)
        bad_sel += uniq[u] <= uniq[u - 1]; // ascending, distinct
    std::sort(seen.begin(), seen.end());
    bad_sel += (size_t)std::abs(nu[0] - (int)(std::unique(seen.begin(), seen.end()) - seen.begin())); // n_uniq: the distinct picks
    size_t bad_zero = 0; // coef[u][t] of a token that does not pick uniq[u] (and every t >= T): 0, not the poison
    for (int u = 0; u < nu[0] && u < arbk::kMaxSlots; u++)
        for (int t = 0; t < arbk::kMaxT; t++) {
            bool picks = false;
            for (int j = 0; t < T && j < k; j++)
                picks |= ex[(size_t)t * k + j] == uniq[u];
            bad_zero += !picks && coef[(size_t)u * arbk::kMaxT + t] != 0.0f;
        }
    if (bad_zero)
        tap_diag("router E %d k %d: %zu coef entries of unpicked (expert, token) not zero", E, k, bad_zero);
    bad_sel += bad_zero;
    if (bad_sel)
        tap_diag("router E %d k %d groups %d/%d: %zu selection errors", E, k, ng, kg, bad_sel);
    TAP_EQ_U64(bad_sel, 0);
    TAP_CHECK(cl.ok());
    cudaFree(dW), cudaFree(dh), cudaFree(db), cudaFree(dl);
}
void t_router()
{
    router_case(384, 8, 1, 1, 1);
    router_case(384, 8, 1, 1, 3);
    router_case(384, 8, 1, 1, 8);
    router_case(256, 8, 8, 4, 2);
    router_case(384, 8, 1, 1, 1, 48); // ties: sets of 8 equal choices
    router_case(384, 8, 1, 1, 3, 1);  // every choice equal: 384 candidates, picks 0 .. 7
    router_case(256, 8, 8, 4, 2, 64); // ties across the groups
}

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
    // five times, the output bit-identical: all rows per block (a fill target of one CTA),
    // the rows split over blocks as SM120's shared memory makes them at T >= 7 (here: 3
    // groups), one row per block (a fill of chunks x rows, no row floor), the engine's
    // default (three CTAs per SM, groups of at least four rows), and a fill of four CTAs an SM
    // (--attn-fill 4: on SM90 the kernel compiled for four blocks an SM)
    const int chunks_all = (ctx + arbk::kAttnChunk - 1) / arbk::kAttnChunk;
    int sms = 0;
    TAP_REQUIRE(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0) == cudaSuccess);
    for (int rep = 0; rep < 5; rep++) {
        const int rows = rep == 1 ? (T * nh + 2) / 3 : 0;
        const int fill = rep == 2 ? chunks_all * T * nh : rep == 3 ? 0 : rep == 4 ? 4 * sms : 1;
        TAP_REQUIRE(arbk::mla_setup(rkv, dr, nh, rows ? arbk::mla_attend_pos_smem(rkv, dr, rows) : 0, fill,
                                    rep == 2 ? 1 : 0) == cudaSuccess);
        if (rep >= 2) { // the grid the launch below takes
            int chunks, groups, Rg;
            arbk::mla_attend_grid(T, nh, ctx, 0, &chunks, &groups, &Rg);
            TAP_CHECK(rep == 2 ? Rg == 1 : (Rg >= 4 || Rg == T * nh));
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

// l2_pull (--l2-side): ranges with an unaligned start, a length short of 16 and none at all, and
// more pieces than lanes, pulled and synchronized without an error; the memory unchanged (a pull
// writes nothing); refused without a launch: more than kL2PullRanges ranges, bytes without a pointer.
void t_l2_pull()
{
    const size_t n = (size_t)arbk::kL2PullCtas * 32 * arbk::kL2PullPiece + 4096; // past one piece a lane
    uint8_t *d = nullptr;
    TAP_REQUIRE(cudaMalloc(&d, n) == cudaSuccess);
    std::vector<uint8_t> h(n);
    for (size_t i = 0; i < n; i++)
        h[i] = (uint8_t)(i * 2654435761u >> 13);
    TAP_REQUIRE(cudaMemcpy(d, h.data(), n, cudaMemcpyHostToDevice) == cudaSuccess);
    arbk::l2_pulls a = {};
    a.r[a.n++] = {d + 3, n - 3};   // start rounded up to 16, the tail's 13 bytes left out
    a.r[a.n++] = {d + 100, 9};     // nothing whole: no piece
    a.r[a.n++] = {d, 0};           // empty
    a.r[a.n++] = {d + 4096, 4096}; // aligned
    TAP_CHECK(arbk::l2_pull(nullptr, a) == cudaSuccess);
    TAP_CHECK(cudaDeviceSynchronize() == cudaSuccess);
    std::vector<uint8_t> back(n);
    TAP_REQUIRE(cudaMemcpy(back.data(), d, n, cudaMemcpyDeviceToHost) == cudaSuccess);
    TAP_CHECK(back == h);
    arbk::l2_pulls many = {};
    many.n = arbk::kL2PullRanges + 1;
    TAP_CHECK(arbk::l2_pull(nullptr, many) == cudaErrorInvalidValue);
    arbk::l2_pulls null_p = {};
    null_p.r[null_p.n++] = {nullptr, 64};
    TAP_CHECK(arbk::l2_pull(nullptr, null_p) == cudaErrorInvalidValue);
    TAP_CHECK(cudaGetLastError() == cudaSuccess);
    cudaFree(d);
}

} // namespace

int main(int argc, char **argv)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("1..0 # SKIP no CUDA device visible\n");
        return 77;
    }
    static const tap_test_t tests[] = {
        {"gemv", t_gemv}, {"wgen", t_wgen}, {"router", t_router}, {"mla", t_mla}, {"qb_absorb", t_qb_absorb},
        {"qb_prep", t_qb_prep}, {"l2_pull", t_l2_pull},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
