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
//   l2_pull     the side branch's pulls toward L2 (--l2-side): odd ranges run without an error and
//               write nothing; its refusals
//   embed       res = the token's table row (exact) and h = its RMSNorm, bit-identical to the
//               kernel's fixed-order float sum emulated on the host (thread i of 256 summing
//               values i, i + 256, .. then warp_sum and block_sum's butterflies) and within one
//               rounding of double; H 7168 (the held form) and 8200 (past it: the loop form),
//               T = 1, 3, 8 with a repeated token
// The MLA kernels are test_engine_gpu_mla.cu, the MoE block test_engine_gpu_moe.cu. Tolerances:
// fp32 outputs within 1e-5 of sum |terms| (accumulation order); bf16 outputs
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

// The embedding's RMSNorm as embed.cu computes it (both forms): thread i of 256 sums v * v over
// values i, i + 256, .. (a contracted multiply-add), each warp adds its lanes by xor butterfly
// (every lane holds the same sum), then block_sum adds the 8 warps' sums by the same butterfly.
float embed_inv_host(const uint16_t *x, int H, float eps)
{
    float th[256] = {}, ws[32] = {};
    for (int i = 0; i < H; i++) {
        const float v = arb_bf16_to_f32(x[i]);
        th[i % 256] = fmaf(v, v, th[i % 256]);
    }
    auto butterfly = [](float *a) {
        for (int o = 16; o > 0; o >>= 1) {
            float b[32];
            for (int l = 0; l < 32; l++)
                b[l] = a[l] + a[l ^ o];
            std::copy(b, b + 32, a);
        }
        return a[0];
    };
    for (int w = 0; w < 8; w++)
        ws[w] = butterfly(th + 32 * w);
    return 1.0f / sqrtf(butterfly(ws) / (float)H + eps);
}

void embed_case(int H, int T)
{
    const int V = 37;
    const float eps = 1e-6f;
    auto table = rand_bf((size_t)V * H, 1.0f), norm = rand_bf((size_t)H, 1.0f);
    std::vector<int32_t> tok(T);
    for (int t = 0; t < T; t++)
        tok[t] = t == 1 ? tok[0] : (int32_t)((t * 17 + 5) % V); // token 1 repeats token 0
    bf16 *dt = (bf16 *)to_dev(table), *dn = (bf16 *)to_dev(norm), *dres, *dh;
    int32_t *dtok = to_dev(tok);
    TAP_REQUIRE(cudaMalloc(&dres, 2 * (size_t)T * H) == cudaSuccess && cudaMalloc(&dh, 2 * (size_t)T * H) == cudaSuccess);
    cudaMemset(dres, 0xff, 2 * (size_t)T * H), cudaMemset(dh, 0xff, 2 * (size_t)T * H); // NaN poison
    TAP_REQUIRE(arbk::embed_rmsnorm(g_lc, dt, dtok, dn, dres, dh, H, eps, T) == cudaSuccess);
    auto res = from_dev((uint16_t *)dres, (size_t)T * H), h = from_dev((uint16_t *)dh, (size_t)T * H);
    size_t bad_res = 0, bad_bits = 0;
    cmp c{H > 8192 ? "embed h (loop form)" : "embed h (held form)"};
    for (int t = 0; t < T; t++) {
        const uint16_t *x = table.data() + (size_t)tok[t] * H;
        const float inv = embed_inv_host(x, H, eps);
        double ss = 0;
        for (int i = 0; i < H; i++)
            ss += bfd(x[i]) * bfd(x[i]);
        const double dinv = 1.0 / sqrt(ss / H + eps);
        for (int i = 0; i < H; i++) {
            const size_t o = (size_t)t * H + i;
            bad_res += res[o] != x[i];
            const uint16_t want = arb_f32_to_bf16(arb_bf16_to_f32(x[i]) * inv * arb_bf16_to_f32(norm[i]));
            if (h[o] != want && bad_bits++ < 4)
                tap_diag("embed H %d T %d: h[%d][%d] %#06x, the host's fixed order %#06x", H, T, t, i, h[o], want);
            const double ref = bfd(x[i]) * dinv * bfd(norm[i]);
            c(bfd(h[o]), ref, fabs(ref) / 128 + 1e-6);
        }
    }
    if (bad_res)
        tap_diag("embed H %d T %d: %zu res values differ from the table row", H, T, bad_res);
    TAP_EQ_U64(bad_res, 0);
    TAP_EQ_U64(bad_bits, 0);
    TAP_CHECK(c.ok());
    cudaFree(dt), cudaFree(dn), cudaFree(dtok), cudaFree(dres), cudaFree(dh);
}

void t_embed()
{
    for (int T : {1, 3, 8}) {
        embed_case(7168, T); // Kimi-K2 / DeepSeek-V3: the held form
        embed_case(8200, T); // past 256 x 32 values: the loop form
    }
}

} // namespace

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"gemv", t_gemv},
        {"wgen", t_wgen},
        {"router", t_router},
        {"l2_pull", t_l2_pull},
        {"embed", t_embed},
    };
    return gpu_tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
