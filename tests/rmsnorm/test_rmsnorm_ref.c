/* SPDX-License-Identifier: MIT */
/*
 * Unit tests (TAP, no GPU) for the host side of residual add + RMSNorm: bf16
 * conversions, the deterministic fill, the float64 reference against hand-computed
 * values, count_wrong, and an fp32 emulation of the device arithmetic that checks the
 * error bound behind ARB_RMSNORM_RTOL (see src/rmsnorm/rmsnorm_ref.c).
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rmsnorm/rmsnorm.h"
#include "tap.h"


static float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int bf16_is_nan(uint16_t h) { return (h & 0x7F80u) == 0x7F80u && (h & 0x007Fu) != 0; }

static void test_f32_to_bf16(void)
{
    static const struct { uint32_t in; uint16_t want; const char *what; } cases[] = {
        {0x3F800000u, 0x3F80u, "1.0 exact"},
        {0x3F808000u, 0x3F80u, "1 + 2^-8: tie, even is down"},
        {0x3F818000u, 0x3F82u, "1 + 3*2^-8: tie, even is up"},
        {0x3F808001u, 0x3F81u, "just above a tie rounds up"},
        {0x3F807FFFu, 0x3F80u, "just below a tie rounds down"},
        {0xBF818000u, 0xBF82u, "negative tie to even"},
        {0x80000000u, 0x8000u, "-0 keeps its sign"},
        {0x7F800000u, 0x7F80u, "+inf"},
        {0xFF800000u, 0xFF80u, "-inf"},
        {0x7F7FFFFFu, 0x7F80u, "FLT_MAX overflows to inf (past the last bf16 + half ulp)"},
        {0x7F7F7FFFu, 0x7F7Fu, "just under the overflow tie stays the largest bf16"},
        {0x00000001u, 0x0000u, "smallest float denormal rounds to 0"},
        {0x00008000u, 0x0000u, "denormal tie, even is 0"},
        {0x00018000u, 0x0002u, "denormal tie, even is up"},
        {0x00010000u, 0x0001u, "smallest bf16 denormal exact"},
        {0x007FFFFFu, 0x0080u, "largest float denormal rounds to the smallest normal"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t got = arb_f32_to_bf16(f32_from_bits(cases[i].in));
        tap_ok(got == cases[i].want, "f32_to_bf16 0x%08X -> 0x%04X (want 0x%04X): %s", (unsigned)cases[i].in,
               (unsigned)got, (unsigned)cases[i].want, cases[i].what);
    }
    uint16_t qnan = arb_f32_to_bf16(f32_from_bits(0x7FC00000u));
    uint16_t snan_low = arb_f32_to_bf16(f32_from_bits(0x7F800001u)); /* payload only in the cut bits */
    uint16_t neg_nan = arb_f32_to_bf16(f32_from_bits(0xFFFFFFFFu));
    tap_ok(bf16_is_nan(qnan) && bf16_is_nan(snan_low) && bf16_is_nan(neg_nan) && (neg_nan & 0x8000u),
           "NaN stays NaN (0x%04X 0x%04X 0x%04X), sign kept", (unsigned)qnan, (unsigned)snan_low, (unsigned)neg_nan);

    /* Every bf16 pattern survives bf16 -> f32 -> bf16; NaNs stay NaN. */
    unsigned bad = 0;
    for (uint32_t h = 0; h <= 0xFFFFu; h++) {
        uint16_t back = arb_f32_to_bf16(arb_bf16_to_f32((uint16_t)h));
        if (bf16_is_nan((uint16_t)h) ? !bf16_is_nan(back) : back != h)
            bad++;
    }
    tap_ok(bad == 0, "all 65536 bf16 patterns round-trip through float (%u bad)", bad);
    tap_ok(arb_bf16_to_f32(0x0001u) == ldexpf(1.0f, -133), "bf16 0x0001 is the denormal 2^-133");
    tap_ok(arb_bf16_to_f32(0xC040u) == -3.0f, "bf16 0xC040 is -3");
}

static void test_f64_to_bf16(void)
{
    /* 1 + 2^-8 + 2^-40: through float it becomes the tie 1 + 2^-8 and rounds to even
     * (down); rounded once from double it is above the tie and rounds up. */
    uint16_t once = arb_f64_to_bf16(1.0 + ldexp(1.0, -8) + ldexp(1.0, -40));
    tap_ok(once == 0x3F81u, "f64_to_bf16 rounds once: 1+2^-8+2^-40 -> 0x%04X (want 0x3F81)", (unsigned)once);
    tap_ok(arb_f64_to_bf16(1e300) == 0x7F80u && arb_f64_to_bf16(-1e300) == 0xFF80u,
           "f64_to_bf16 overflow gives +-inf");
    double tie_max = (double)arb_bf16_to_f32(0x7F7Fu) + ldexp(1.0, 127 - 8); /* largest bf16 + half ulp */
    tap_ok(arb_f64_to_bf16(tie_max) == 0x7F80u && arb_f64_to_bf16(nextafter(tie_max, 0.0)) == 0x7F7Fu,
           "f64_to_bf16 overflow tie goes to inf, just under stays 0x7F7F");
    tap_ok(arb_f64_to_bf16(1e-300) == 0x0000u && arb_f64_to_bf16(-1e-300) == 0x8000u,
           "f64_to_bf16 underflow gives signed zero");
    tap_ok(arb_f64_to_bf16(3.0 * ldexp(1.0, -134)) == 0x0002u, "f64_to_bf16 denormal tie (1.5 quanta) to even");
    tap_ok(bf16_is_nan(arb_f64_to_bf16(NAN)), "f64_to_bf16 NaN stays NaN");

    /* Agrees with the float path on every float that is exactly a double (all of them). */
    uint64_t s = 12345;
    unsigned disagree = 0;
    for (int i = 0; i < 200000; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        float f = f32_from_bits((uint32_t)(s >> 32));
        if (isnan(f))
            continue;
        if (arb_f64_to_bf16((double)f) != arb_f32_to_bf16(f))
            disagree++;
    }
    tap_ok(disagree == 0, "f64_to_bf16 == f32_to_bf16 on 200000 random float bit patterns (%u differ)", disagree);
}

static void test_fill(void)
{
    enum { N = 20000 };
    static uint16_t a[N], b[N], c[N];
    arb_fill_bf16_random(a, N, 42, 3.0f);
    arb_fill_bf16_random(b, N, 42, 3.0f);
    arb_fill_bf16_random(c, N, 43, 3.0f);
    tap_ok(memcmp(a, b, sizeof a) == 0, "fill: same seed gives the same values");
    tap_ok(memcmp(a, c, sizeof a) != 0, "fill: another seed gives other values");

    float lo = INFINITY, hi = -INFINITY;
    double mean = 0.0;
    int in_range = 1;
    for (int i = 0; i < N; i++) {
        float v = arb_bf16_to_f32(a[i]);
        in_range &= v >= -3.0f && v <= 3.0f;
        lo = fminf(lo, v);
        hi = fmaxf(hi, v);
        mean += v / N;
    }
    tap_ok(in_range, "fill: all values in [-3, 3]");
    tap_ok(lo < -2.9f && hi > 2.9f && fabs(mean) < 0.1, "fill: spread min %g max %g mean %g", (double)lo,
           (double)hi, mean);

    /* scale 0.3 is not a bf16 value: truncation keeps |v| <= 0.3 anyway. */
    arb_fill_bf16_random(a, N, 7, 0.3f);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= fabsf(arb_bf16_to_f32(a[i])) <= 0.3f;
    tap_ok(ok, "fill: a scale that is not a bf16 value still bounds the values");

    /* Anchored to splitmix64 itself: its first output for seed 0 is the published
     * 0xE220A8397B1DCDAF. */
    uint16_t first;
    arb_fill_bf16_random(&first, 1, 0, 1.0f);
    double u = (double)(0xE220A8397B1DCDAFull >> 11) * 0x1.0p-53;
    float want = (float)(2.0 * u - 1.0);
    uint32_t wb;
    memcpy(&wb, &want, sizeof wb);
    tap_ok(first == (uint16_t)(wb >> 16), "fill: seed 0 starts from splitmix64's 0xE220A8397B1DCDAF (0x%04X)",
           (unsigned)first);

    arb_fill_bf16_random(a, 4, 1, 0.0f);
    tap_ok(arb_bf16_to_f32(a[0]) == 0.0f && arb_bf16_to_f32(a[3]) == 0.0f, "fill: scale 0 gives zeros");
    fprintf(stderr, "(the next error message is expected)\n");
    arb_fill_bf16_random(a, 4, 1, -1.0f);
    tap_ok(bf16_is_nan(a[0]) && bf16_is_nan(a[3]), "fill: a negative scale is refused with NaN data");
}

static uint16_t bf(float f) { return arb_f32_to_bf16(f); }

static void test_reference_by_hand(void)
{
    /* hidden 4, 2 ranks, 2 tokens, eps 4.
     * Token 0: x0 + x1 = [0, -2, 1, 4], residual_in = [1, 1, 2, -1] -> residual [1, -1, 3, 3]
     *   (exact); mean of squares (1+1+9+9)/4 = 5; 1/sqrt(5 + 4) = 1/3.
     *   weight [1, 2, 0.5, -1] -> out [1/3, -2/3, 1/2, -1].
     * Token 1: x0 + x1 = [1, 1, 0, 0.5], residual_in = [256, 255, 0, 0.5] -> exact sums
     *   [257, 256, 0, 1]; 257 is a bf16 tie between 256 and 258 (ulp 2 there) and rounds
     *   to the even 256. The norm uses 256: mean of squares (65536+65536+0+1)/4
     *   = 131073/4; out = r / sqrt(131073/4 + 4) * w. */
    const uint16_t x0[8] = {bf(1), bf(-1), bf(0.5f), bf(3), bf(0.5f), bf(0.5f), bf(0), bf(0.25f)};
    const uint16_t x1[8] = {bf(-1), bf(-1), bf(0.5f), bf(1), bf(0.5f), bf(0.5f), bf(0), bf(0.25f)};
    const uint16_t res_in[8] = {bf(1), bf(1), bf(2), bf(-1), bf(256), bf(255), bf(0), bf(0.5f)};
    const uint16_t weight[4] = {bf(1), bf(2), bf(0.5f), bf(-1)};
    const uint16_t *x[2] = {x0, x1};
    double res_out[8], out[8];
    arb_rmsnorm_reference(x, 2, res_in, weight, 2, 4, 4.0, res_out, out);

    const double want_res[8] = {1, -1, 3, 3, 256, 256, 0, 1};
    const double d1 = sqrt(131073.0 / 4.0 + 4.0);
    const double want_out[8] = {1.0 / 3, -2.0 / 3, 0.5, -1, 256 / d1, 512 / d1, 0, -1 / d1};
    int res_ok = 1, out_ok = 1;
    for (int i = 0; i < 8; i++) {
        res_ok &= res_out[i] == want_res[i];
        out_ok &= fabs(out[i] - want_out[i]) <= 1e-15 * fmax(1.0, fabs(want_out[i]));
    }
    tap_ok(res_ok, "reference: residual by hand, 257 rounds to 256 (tie to even) [%g %g %g %g | %g %g %g %g]",
           res_out[0], res_out[1], res_out[2], res_out[3], res_out[4], res_out[5], res_out[6], res_out[7]);
    tap_ok(out_ok, "reference: output by hand [%.6f %.6f %.6f %.6f | %.6f %.6f %.6f %.6f]", out[0], out[1], out[2],
           out[3], out[4], out[5], out[6], out[7]);
}

static void test_count_wrong(void)
{
    const double ref[6] = {1.0, -2.0, 0.001, 100.0, 0.5, -0.25};
    uint16_t got[6];
    for (int i = 0; i < 6; i++)
        got[i] = arb_f64_to_bf16(ref[i]);
    tap_ok(arb_rmsnorm_count_wrong(got, ref, 6, ARB_RMSNORM_RTOL) == 0, "count_wrong: rounded reference passes");

    uint16_t g[6];
    memcpy(g, got, sizeof g);
    g[0] = 0x3F81u; /* 1 + 2^-7: one ulp, 0.0078 relative: inside */
    g[2] = bf(0.001f + 0.0002f); /* below the 1/64 floor: |err| ~2e-4 < 0.016/64 = 2.5e-4 */
    tap_ok(arb_rmsnorm_count_wrong(g, ref, 6, ARB_RMSNORM_RTOL) == 0, "count_wrong: in-tolerance values pass");

    memcpy(g, got, sizeof g);
    g[0] = bf(1.03125f);          /* 3% off */
    g[2] = bf(0.001f + 0.0004f);  /* 4e-4 absolute, over the floor's 2.5e-4 */
    g[3] = 0x7FC0u;               /* NaN */
    g[4] = 0x7F80u;               /* inf */
    size_t wrong = arb_rmsnorm_count_wrong(g, ref, 6, ARB_RMSNORM_RTOL);
    tap_ok(wrong == 4, "count_wrong: 3%% off, over the floor, NaN and inf all count (%zu of 4)", wrong);

    double nan_ref[1] = {NAN};
    tap_ok(arb_rmsnorm_count_wrong(got, nan_ref, 1, ARB_RMSNORM_RTOL) == 1, "count_wrong: a NaN reference counts");
    const uint16_t one_ulp_up = 0x3F81u; /* ref[0] is 1.0 */
    tap_ok(arb_rmsnorm_count_wrong(got, ref, 1, 0.0) == 0 && arb_rmsnorm_count_wrong(&one_ulp_up, ref, 1, 0.0) == 1,
           "count_wrong: rtol 0 passes an exact value and flags a one-ulp difference");
}

#define EMU_MAX_RANKS 8

/* The device's arithmetic, in fp32 on the host: ranks summed in reverse order (the
 * reference sums in double, in order), the residual rounded to bf16, the sum of
 * squares in fp32, the output rounded to bf16. fused == 0 models the unfused path:
 * the all-reduce rounds the sum to bf16 before the residual add. */
static void emulate_device(const uint16_t *const *x, int nranks, const uint16_t *res_in, const uint16_t *weight,
                           unsigned tokens, unsigned hidden, float eps, int fused, uint16_t *res_out, uint16_t *out)
{
    for (unsigned t = 0; t < tokens; t++) {
        size_t row = (size_t)t * hidden;
        float sum_sq = 0.0f;
        for (unsigned h = 0; h < hidden; h++) {
            float s = 0.0f;
            for (int r = nranks - 1; r >= 0; r--)
                s += arb_bf16_to_f32(x[r][row + h]);
            if (!fused)
                s = arb_bf16_to_f32(bf(s));
            res_out[row + h] = bf(arb_bf16_to_f32(res_in[row + h]) + s);
            float v = arb_bf16_to_f32(res_out[row + h]);
            sum_sq += v * v;
        }
        float inv_rms = 1.0f / sqrtf(sum_sq / (float)hidden + eps);
        for (unsigned h = 0; h < hidden; h++)
            out[row + h] = bf(arb_bf16_to_f32(res_out[row + h]) * inv_rms * arb_bf16_to_f32(weight[h]));
    }
}

/* Largest |got - ref| / max(|ref|, 1/64): the quantity ARB_RMSNORM_RTOL bounds. */
static double max_err(const uint16_t *got, const double *ref, size_t n)
{
    double m = 0.0;
    for (size_t i = 0; i < n; i++)
        m = fmax(m, fabs((double)arb_bf16_to_f32(got[i]) - ref[i]) / fmax(fabs(ref[i]), 1.0 / 64.0));
    return m;
}

static void test_tolerance_emulated(void)
{
    enum { TOKENS = 8, HIDDEN = 7168, N = TOKENS * HIDDEN };
    static uint16_t xs[EMU_MAX_RANKS][N], res_in[N], weight[HIDDEN], res_dev[N], out_dev[N];
    static double res_ref[N], out_ref[N];
    const uint16_t *x[EMU_MAX_RANKS];
    for (int r = 0; r < EMU_MAX_RANKS; r++)
        x[r] = xs[r];
    const double bound = ldexp(1.0, -7) + ldexp(1.0, -8) + 1e-5;

    /* Wide dynamic range (each element scaled by 2^-k, k in 0..23) so that fp32 sums of
     * 8 ranks are sometimes inexact and the residual rounds the other way: the worst
     * case the tolerance is meant for. */
    for (int r = 0; r < EMU_MAX_RANKS; r++) {
        arb_fill_bf16_random(xs[r], N, 100 + (uint64_t)r, 1.0f);
        for (size_t i = 0; i < N; i++)
            xs[r][i] = bf(ldexpf(arb_bf16_to_f32(xs[r][i]), -(int)((i * 7 + (size_t)r * 13) % 24)));
    }
    arb_fill_bf16_random(res_in, N, 200, 2.0f);
    arb_fill_bf16_random(weight, HIDDEN, 300, 1.0f);
    for (int nranks = 2; nranks <= EMU_MAX_RANKS; nranks *= 2) {
        arb_rmsnorm_reference(x, nranks, res_in, weight, TOKENS, HIDDEN, 1e-6, res_ref, out_ref);
        emulate_device(x, nranks, res_in, weight, TOKENS, HIDDEN, 1e-6f, 1, res_dev, out_dev);
        size_t flips = 0;
        for (size_t i = 0; i < N; i++)
            flips += (double)arb_bf16_to_f32(res_dev[i]) != res_ref[i];
        size_t wrong = arb_rmsnorm_count_wrong(out_dev, out_ref, N, ARB_RMSNORM_RTOL);
        double m = max_err(out_dev, out_ref, N);
        tap_ok(wrong == 0 && m <= bound,
               "tolerance: fused fp32 emulation, %d ranks, wide range: %zu wrong, max err %.5f <= %.5f, %zu residual flips",
               nranks, wrong, m, bound, flips);
    }

    /* Unfused path (sum rounded to bf16 by the all-reduce) on random data: against the
     * exact-sum reference it falls outside the tolerance where residual + sum cancels;
     * against the reference given the rounded sum it is within one output rounding. */
    arb_fill_bf16_random(xs[0], N, 400, 1.0f);
    arb_fill_bf16_random(xs[1], N, 401, 1.0f);
    arb_fill_bf16_random(res_in, N, 402, 1.0f);
    emulate_device(x, 2, res_in, weight, TOKENS, HIDDEN, 1e-6f, 0, res_dev, out_dev);
    arb_rmsnorm_reference(x, 2, res_in, weight, TOKENS, HIDDEN, 1e-6, res_ref, out_ref);
    size_t wrong_exact = arb_rmsnorm_count_wrong(out_dev, out_ref, N, ARB_RMSNORM_RTOL);
    static uint16_t sum_rounded[N];
    for (size_t i = 0; i < N; i++)
        sum_rounded[i] = arb_f64_to_bf16((double)arb_bf16_to_f32(xs[0][i]) + arb_bf16_to_f32(xs[1][i]));
    const uint16_t *one[1] = {sum_rounded};
    arb_rmsnorm_reference(one, 1, res_in, weight, TOKENS, HIDDEN, 1e-6, res_ref, out_ref);
    size_t wrong_rounded = arb_rmsnorm_count_wrong(out_dev, out_ref, N, ARB_RMSNORM_RTOL);
    double m = max_err(out_dev, out_ref, N);
    tap_ok(wrong_exact > 0, "tolerance: unfused path vs exact-sum reference is outside it (%zu of %d wrong), as documented",
           wrong_exact, N);
    tap_ok(wrong_rounded == 0 && m <= ldexp(1.0, -8) + 1e-5,
           "tolerance: unfused path vs rounded-sum reference: %zu wrong, max err %.5f <= 2^-8", wrong_rounded, m);

    /* Per-rank x from arb_fill_bf16_exact_partials: on 8 ranks, with the sum rounded
     * to bf16 after every hop (NCCL's ring) or once (an fp32 all-reduce), the unfused
     * path meets the exact-sum reference within one output rounding. */
    for (int r = 0; r < EMU_MAX_RANKS; r++)
        arb_fill_bf16_exact_partials(xs[r], N, 500 + (uint64_t)r);
    static uint16_t hop_sum[N];
    for (size_t i = 0; i < N; i++) {
        uint16_t acc = xs[EMU_MAX_RANKS - 1][i];
        for (int r = EMU_MAX_RANKS - 2; r >= 0; r--)
            acc = bf(arb_bf16_to_f32(acc) + arb_bf16_to_f32(xs[r][i]));
        hop_sum[i] = acc;
    }
    const uint16_t *hop[1] = {hop_sum};
    arb_rmsnorm_reference(x, EMU_MAX_RANKS, res_in, weight, TOKENS, HIDDEN, 1e-6, res_ref, out_ref);
    emulate_device(hop, 1, res_in, weight, TOKENS, HIDDEN, 1e-6f, 0, res_dev, out_dev);
    size_t res_diff = 0;
    for (size_t i = 0; i < N; i++)
        res_diff += (double)arb_bf16_to_f32(res_dev[i]) != res_ref[i];
    size_t wrong_hop = arb_rmsnorm_count_wrong(out_dev, out_ref, N, ARB_RMSNORM_RTOL);
    m = max_err(out_dev, out_ref, N);
    tap_ok(res_diff == 0 && wrong_hop == 0 && m <= ldexp(1.0, -8) + 1e-5,
           "tolerance: exact partials, 8 ranks rounded per hop, unfused: residual differs in %zu, %zu wrong, max err %.5f",
           res_diff, wrong_hop, m);
    emulate_device(x, EMU_MAX_RANKS, res_in, weight, TOKENS, HIDDEN, 1e-6f, 1, res_dev, out_dev);
    res_diff = 0;
    for (size_t i = 0; i < N; i++)
        res_diff += (double)arb_bf16_to_f32(res_dev[i]) != res_ref[i];
    m = max_err(out_dev, out_ref, N);
    tap_ok(res_diff == 0 && m <= ldexp(1.0, -8) + 1e-5,
           "tolerance: exact partials, 8 ranks, fused fp32: residual differs in %zu, max err %.5f", res_diff, m);
}

static void test_exact_partials(void)
{
    enum { N = 4096, RANKS = 16 };
    static uint16_t xs[RANKS][N], again[N];
    for (int r = 0; r < RANKS; r++)
        arb_fill_bf16_exact_partials(xs[r], N, 900 + (uint64_t)r);
    arb_fill_bf16_exact_partials(again, N, 900);
    tap_ok(memcmp(again, xs[0], sizeof again) == 0, "exact partials: deterministic per seed");
    int grid = 1, seen_lo = 0, seen_hi = 0;
    for (size_t i = 0; i < N; i++) {
        float v = arb_bf16_to_f32(xs[0][i]);
        grid &= v >= -1.0f && v <= 1.0f && v * 16.0f == floorf(v * 16.0f);
        seen_lo |= v == -1.0f;
        seen_hi |= v == 1.0f;
    }
    tap_ok(grid && seen_lo && seen_hi, "exact partials: multiples of 1/16 covering [-1, 1]");
    /* 16 ranks summed forward and backward with a bf16 rounding after every step equal
     * the double sum. */
    size_t inexact = 0;
    for (size_t i = 0; i < N; i++) {
        double exact = 0.0;
        float fwd = 0.0f, bwd = 0.0f;
        for (int r = 0; r < RANKS; r++) {
            exact += arb_bf16_to_f32(xs[r][i]);
            fwd = arb_bf16_to_f32(bf(fwd + arb_bf16_to_f32(xs[r][i])));
            bwd = arb_bf16_to_f32(bf(bwd + arb_bf16_to_f32(xs[RANKS - 1 - r][i])));
        }
        inexact += (double)fwd != exact || (double)bwd != exact;
    }
    tap_ok(inexact == 0, "exact partials: 16-rank sums rounded per step are exact (%zu inexact)", inexact);
}

int main(void)
{
    test_f32_to_bf16();
    test_f64_to_bf16();
    test_fill();
    test_reference_by_hand();
    test_count_wrong();
    test_exact_partials();
    test_tolerance_emulated();
    return tap_done();
}
