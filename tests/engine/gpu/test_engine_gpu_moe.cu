// SPDX-License-Identifier: MIT
// The MoE block (engine/gpu/kernels/moe.cu) at Kimi-K2's per-rank shapes (tp_shape 8:
// H 7168, I 256, a shared expert of 256) against a plain host loop in double, and the INT4
// fragment layout (moe_int4_layout.h) on the host. TAP; exit 77 without a CUDA device.
//   int4_layout   every (row, column) of a matrix to a distinct (word, nibble) and back;
//                 every scale likewise
//   moe_int4_T*   INT4 experts (row-major packed values, reshuffled into the layout on the
//                 host) for T = 1, 2, 3, 8, and 12 and 16 (two token halves, tree verify; act
//                 and coef at moe_tstride(T)), experts shared by two tokens; a rerun
//                 bit-identical; at T = 1 (one tile) the staged gate/up (--moe-stage smem) bit-identical,
//                 output and act; the gate/up grid orders (--moe-order shared-first,
//                 routed-first and spread: at T = 8, 256 routed tiles, spread leads with one
//                 an SM) bit-identical to the default's (auto), output and act; --moe-early (on, l2,
//                 spec, spec-sync) bit-identical, also with the selection published late by gate/up's
//                 predecessor (late_selection; spec-sync then guesses the poison); T = kMoeMaxT + 1 refused
//   moe_bf16_T*   the same with bf16 experts
// Tolerance: one bf16 rounding of the output (2^-8 relative), 1e-5 of sum |terms| for
// accumulation order, and one-ulp flips of the stored act (bf16 on both sides) through
// 4 x 2^-8 / 16 of the terms.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gpu_check.h"
#include "gpu/kernels/common.cuh"
#include "gpu/kernels/moe_int4_layout.h"
#include "gpu/kernels/moe_ops.cuh"

namespace {

void t_int4_layout()
{
    for (unsigned rows : {16u, 32u, 48u})
        for (unsigned cols : {32u, 64u, 224u}) {
            const size_t n = (size_t)rows * cols, groups = cols / 32;
            std::vector<unsigned char> seen(n, 0), seen_s(rows * groups, 0);
            size_t bad = 0;
            for (unsigned r = 0; r < rows; r++)
                for (unsigned c = 0; c < cols; c++) {
                    const arbk::int4_pos p = arbk::int4_frag_pos(r, c, cols);
                    const size_t i = p.word * 8 + (size_t)p.nibble;
                    unsigned rr, cc;
                    arbk::int4_frag_rc(p.word, p.nibble, cols, &rr, &cc);
                    bad += i >= n || seen[i]++ || rr != r || cc != c || p.nibble < 0 || p.nibble > 7;
                    if (c % 32 == 0) {
                        const size_t si = arbk::int4_frag_scale(r, c / 32, (unsigned)groups);
                        unsigned sr, sg;
                        arbk::int4_frag_scale_rg(si, (unsigned)groups, &sr, &sg);
                        bad += si >= rows * groups || seen_s[si]++ || sr != r || sg != c / 32;
                    }
                }
            if (bad)
                tap_diag("int4 layout %u x %u: %zu collisions or mismatches", rows, cols, bad);
            TAP_EQ_U64(bad, 0);
        }
}

// Host INT4 weight of the row-major packed format: q * s (value j of word at bits 4j).
double w_int4(const std::vector<uint32_t> &q, const std::vector<uint16_t> &s, size_t i)
{
    int v = (int)((q[i / 8] >> (4 * (i % 8))) & 0xf);
    return (v >= 8 ? v - 16 : v) * bfd(s[i / 32]);
}

// Row-major packed words and scales of E experts of [rows x cols] into the fragment layout.
void to_frag(const std::vector<uint32_t> &q, const std::vector<uint16_t> &s, unsigned E, unsigned rows,
             unsigned cols, std::vector<uint32_t> &fq, std::vector<uint16_t> &fs)
{
    const size_t per = (size_t)rows * cols, groups = cols / 32;
    fq.assign(q.size(), 0), fs.assign(s.size(), 0);
    for (unsigned e = 0; e < E; e++)
        for (unsigned r = 0; r < rows; r++)
            for (unsigned c = 0; c < cols; c++) {
                const size_t i = e * per + (size_t)r * cols + c;
                const uint32_t v = (q[i / 8] >> (4 * (i % 8))) & 0xf;
                const arbk::int4_pos p = arbk::int4_frag_pos(r, c, cols);
                fq[e * per / 8 + p.word] |= v << (4 * p.nibble);
                if (c % 32 == 0)
                    fs[e * rows * groups + arbk::int4_frag_scale(r, c / 32, (unsigned)groups)] = s[i / 32];
            }
}

// --moe-early's hazard, staged: a stand-in for the router that lets its dependents launch at once,
// then spins delay_ns on the global timer before it copies the selection (uniq) into place. Gate/up
// launched after it under PDL waits for it to complete; a down launch that read the selection before
// then would see the poisoned slots left there.
__global__ void late_selection(const int32_t *src, int n, int32_t *uniq, unsigned long long delay_ns)
{
    arbk::pdl_launch_dependents();
    const unsigned long long t0 = arbk::global_ns();
    while (arbk::global_ns() - t0 < delay_ns)
        __nanosleep(1000);
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        uniq[i] = src[i];
}

void moe_case(bool int4, int T)
{
    const int H = 7168, I = 256, Is = 256, E = 12, k = 2;
    // T = 3: token 0 experts 3, 7; token 1: 7, 10; token 2: 0, 3 (7 and 3 shared by two
    // tokens). Otherwise token t: 5t + 3 and 5t + 7 mod 12 (T = 8: all 12, four shared).
    std::vector<int> sel(T * k);
    std::vector<float> w(T * k);
    const int sel3[3][2] = {{3, 7}, {7, 10}, {0, 3}};
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            sel[t * k + j] = T == 3 ? sel3[t][j] : (5 * t + 3 + 4 * j) % E;
            w[t * k + j] = 0.2f + 0.1f * (float)((3 * t + 5 * j) % 11);
        }
    const size_t in_el = (size_t)E * I * H;
    std::vector<uint16_t> gb, ub, db;
    std::vector<uint32_t> gq(in_el / 8), uq(in_el / 8), dq(in_el / 8);
    std::vector<uint16_t> gs, us, ds;
    if (int4) {
        for (auto *v : {&gq, &uq, &dq})
            for (auto &x : *v) {
                g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
                x = (uint32_t)(g_rng >> 32);
            }
        gs = rand_bf(in_el / 32, 0.01f), us = rand_bf(in_el / 32, 0.01f), ds = rand_bf(in_el / 32, 0.03f);
    } else {
        gb = rand_bf(in_el, 0.02f), ub = rand_bf(in_el, 0.02f), db = rand_bf(in_el, 0.06f);
    }
    auto sg = rand_bf((size_t)Is * H, 0.02f), su = rand_bf((size_t)Is * H, 0.02f), sd = rand_bf((size_t)H * Is, 0.06f);
    auto h = rand_bf((size_t)T * H, 1.0f);
    arbk::moe_weights mw{};
    std::vector<void *> owned;
    if (int4) {
        std::vector<uint32_t> fq;
        std::vector<uint16_t> fs;
        to_frag(gq, gs, E, I, H, fq, fs);
        mw.gate = to_dev(fq), mw.gate_s = (bf16 *)to_dev(fs);
        to_frag(uq, us, E, I, H, fq, fs);
        mw.up = to_dev(fq), mw.up_s = (bf16 *)to_dev(fs);
        to_frag(dq, ds, E, H, I, fq, fs);
        mw.down = to_dev(fq), mw.down_s = (bf16 *)to_dev(fs);
        owned = {(void *)mw.gate_s, (void *)mw.up_s, (void *)mw.down_s};
    } else {
        mw.gate = to_dev(gb), mw.up = to_dev(ub), mw.down = to_dev(db);
    }
    mw.sh_gate = (bf16 *)to_dev(sg), mw.sh_up = (bf16 *)to_dev(su), mw.sh_down = (bf16 *)to_dev(sd);
    mw.H = H, mw.I = I, mw.Is = Is, mw.E = E;
    route_dev r = alloc_route(T, k, H, Is);
    std::vector<int32_t> uniq(sel.begin(), sel.end());
    std::sort(uniq.begin(), uniq.end());
    uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
    const int ts = arbk::moe_tstride(T); // act's and coef's token stride at this T
    std::vector<float> coef((size_t)arbk::kMaxSlots * ts, 0.0f);
    for (int t = 0; t < T; t++)
        for (int j = 0; j < k; j++) {
            const size_t u = std::find(uniq.begin(), uniq.end(), sel[t * k + j]) - uniq.begin();
            coef[u * ts + t] = w[t * k + j];
        }
    const int32_t nu = (int32_t)uniq.size();
    cudaMemcpy(r.rt.uniq, uniq.data(), sizeof(int32_t) * nu, cudaMemcpyHostToDevice);
    cudaMemcpy(r.rt.coef, coef.data(), coef.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(r.rt.n_uniq, &nu, 4, cudaMemcpyHostToDevice);
    bf16 *dh = (bf16 *)to_dev(h), *act, *act_sh, *part;
    cudaMalloc(&act, (size_t)arbk::kMaxSlots * ts * I * 2);
    cudaMalloc(&act_sh, (size_t)ts * Is * 2);
    cudaMalloc(&part, (size_t)T * H * 2);
    TAP_REQUIRE(arbk::moe_block(g_lc, mw, r.rt, dh, act, act_sh, part, T, T * k) == cudaSuccess);
    TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    auto got = from_dev((uint16_t *)part, (size_t)T * H);
    cudaMemset(part, 0xff, (size_t)T * H * 2); // a rerun (launched as its two halves) must give the same bits
    TAP_REQUIRE(arbk::moe_gate_up(g_lc, mw, r.rt, dh, act, act_sh, T, T * k) == cudaSuccess);
    TAP_REQUIRE(arbk::moe_down(g_lc, mw, r.rt, act, act_sh, part, T) == cudaSuccess);
    auto again = from_dev((uint16_t *)part, (size_t)T * H);
    TAP_CHECK(memcmp(got.data(), again.data(), got.size() * 2) == 0);
    // A variant's launch (ls) against the default's bits, the output and act (every distinct
    // expert's rows of its T tokens: what the kernel writes), both poisoned first.
    const auto act0 = from_dev((uint16_t *)act, (size_t)arbk::kMaxSlots * ts * I);
    const auto same_bits = [&](const arbk::launch_ctx &ls, const char *what) {
        cudaMemset(part, 0xff, (size_t)T * H * 2), cudaMemset(act, 0xff, (size_t)arbk::kMaxSlots * ts * I * 2);
        cudaMemset(act_sh, 0xff, (size_t)ts * Is * 2);
        TAP_REQUIRE(arbk::moe_block(ls, mw, r.rt, dh, act, act_sh, part, T, T * k) == cudaSuccess);
        TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const auto out = from_dev((uint16_t *)part, (size_t)T * H);
        const auto act1 = from_dev((uint16_t *)act, (size_t)arbk::kMaxSlots * ts * I);
        size_t same_act = 0;
        const size_t n_act = uniq.size() * (size_t)T * I;
        for (size_t u = 0; u < uniq.size(); u++)
            for (size_t i = (u * ts) * I; i < (u * ts + T) * I; i++)
                same_act += act0[i] == act1[i];
        const bool same = memcmp(got.data(), out.data(), got.size() * 2) == 0;
        if (!same || same_act != n_act)
            tap_diag("moe %s T=%d %s: part %s, act %zu of %zu the same", int4 ? "int4" : "bf16", T, what,
                     same ? "same" : "DIFFERS", same_act, n_act);
        TAP_CHECK(same);
        TAP_EQ_U64(same_act, n_act);
    };
    if (int4 && arbk::moe_rowt(T) == 1) { // --moe-stage smem (staged groups in shared memory): one tile only
        arbk::launch_ctx ls = g_lc;
        ls.moe_stage = 1;
        same_bits(ls, "staged");
    }
    for (int order = 1; order <= 3; order++) { // --moe-order shared-first, routed-first, spread: the order only
        arbk::launch_ctx ls = g_lc;
        ls.moe_order = order;
        same_bits(ls, order == 1 ? "shared-first" : order == 2 ? "routed-first" : "spread");
    }
    // --moe-early with the selection published late (late_selection): down must still use the one its
    // predecessor's predecessor wrote. The same pairing with gate/up triggering at its start (off)
    // is the race --moe-early avoids: its differing outputs are printed, not asserted (0 where this
    // device gave down's CTAs no room before gate/up's end).
    std::vector<int32_t> poison(uniq.size());
    for (size_t u = 0; u < uniq.size(); u++)
        poison[u] = (uniq[u] + 1) % E; // other experts in every slot
    int32_t *src = to_dev(uniq);
    // the poisoning and the three launches on a stream of their own, as the engine's step (not the
    // legacy default stream, where the tests' other launches go; the stream is non-blocking, so
    // everything of a run is ordered on it)
    cudaStream_t ls = nullptr;
    TAP_REQUIRE(cudaStreamCreateWithFlags(&ls, cudaStreamNonBlocking) == cudaSuccess);
    TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess); // the default stream's work done before ls's
    const auto late_run = [&](int gate_up_early, int down_early) {
        cudaMemcpyAsync(r.rt.uniq, poison.data(), sizeof(int32_t) * nu, cudaMemcpyHostToDevice, ls);
        cudaMemsetAsync(part, 0xff, (size_t)T * H * 2, ls);
        late_selection<<<1, 128, 0, ls>>>(src, nu, r.rt.uniq, 50000);
        arbk::launch_ctx lg = g_lc, ld = g_lc;
        lg.stream = ld.stream = ls;
        lg.moe_early = gate_up_early, ld.moe_early = down_early;
        const bool ok = arbk::moe_gate_up(lg, mw, r.rt, dh, act, act_sh, T, T * k) == cudaSuccess &&
                        arbk::moe_down(ld, mw, r.rt, act, act_sh, part, T) == cudaSuccess &&
                        cudaStreamSynchronize(ls) == cudaSuccess;
        const auto out = from_dev((uint16_t *)part, (size_t)T * H);
        size_t differ = 0;
        for (size_t i = 0; i < got.size(); i++)
            differ += got[i] != out[i];
        return ok ? differ : got.size() + 1;
    };
    tap_diag("moe %s T=%d: gate/up triggering at its start with down's early loads (the race): %zu of %zu outputs "
             "differ",
             int4 ? "int4" : "bf16", T, late_run(0, 1), got.size());
    // on and l2 (1, 2) after a gate/up that triggers after its wait; spec (3) and spec-sync (4) check
    // down's guess after its wait, so even where it saw the poisoned slots the outputs are the
    // selection's (spec-sync pairs gate/up and down as the race above does, whose outputs differed
    // at T = 1 .. 8 in the committed logs: there its guess is the poison and its first round is
    // issued again). All asserted.
    for (int early = 1; early <= 4; early++) {
        const size_t d = late_run(early, early);
        if (d)
            tap_diag("moe %s T=%d early %d, selection published late: %zu outputs differ", int4 ? "int4" : "bf16", T,
                     early, d);
        TAP_EQ_U64(d, 0);
    }
    cudaFree(src);
    cudaStreamDestroy(ls);
    for (int early = 1; early <= 4; early++) { // --moe-early on, l2, spec, spec-sync: the same bits
        cudaMemset(part, 0xff, (size_t)T * H * 2);
        arbk::launch_ctx le = g_lc;
        le.moe_early = early;
        TAP_REQUIRE(arbk::moe_block(le, mw, r.rt, dh, act, act_sh, part, T, T * k) == cudaSuccess);
        TAP_REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
        const auto got_e = from_dev((uint16_t *)part, (size_t)T * H);
        size_t same = 0;
        for (size_t i = 0; i < got.size(); i++)
            same += got[i] == got_e[i];
        if (same != got.size())
            tap_diag("moe %s T=%d early %d: %zu of %zu outputs the same", int4 ? "int4" : "bf16", T, early, same,
                     got.size());
        TAP_EQ_U64(same, got.size());
    }
    // The shared expert runs in parts at this shape (7168 columns), and its tickets are left zero.
    TAP_CHECK(arbk::moe_sh_part_floats(H, Is) > 0);
    const auto tickets = from_dev(r.rt.sh_ticket, (size_t)arbk::moe_sh_tickets(Is));
    size_t nonzero = 0;
    for (unsigned v : tickets)
        nonzero += v != 0;
    TAP_EQ_U64(nonzero, 0);
    { // without the parts' scratch the launch is refused, not run
        arbk::moe_route bare = r.rt;
        bare.sh_part = nullptr;
        TAP_CHECK(arbk::moe_gate_up(g_lc, mw, bare, dh, act, act_sh, T, T * k) == cudaErrorInvalidValue);
    }
    { // more tokens than the kernels take: refused, nothing launched (a launch with no act
      // buffer would fault) and part's sentinel kept
        cudaMemset(part, 0xff, (size_t)T * H * 2);
        TAP_CHECK(arbk::moe_block(g_lc, mw, r.rt, dh, nullptr, act_sh, part, arbk::kMoeMaxT + 1, T * k) ==
                  cudaErrorInvalidValue);
        TAP_CHECK(cudaDeviceSynchronize() == cudaSuccess);
        const auto after = from_dev((uint16_t *)part, (size_t)T * H);
        size_t kept = 0;
        for (uint16_t v : after)
            kept += v == 0xffff;
        TAP_EQ_U64(kept, after.size());
    }
    char name[32];
    snprintf(name, sizeof name, "moe %s T=%d", int4 ? "int4" : "bf16", T);
    cmp c{name};
    std::vector<double> a(I), as(Is);
    std::vector<double> ref((size_t)T * H), mag((size_t)T * H);
    for (int t = 0; t < T; t++) {
        const uint16_t *ht = &h[(size_t)t * H];
        for (int i = 0; i < Is; i++) { // shared expert
            double g = 0, u = 0;
            for (int x = 0; x < H; x++)
                g += bfd(sg[(size_t)i * H + x]) * bfd(ht[x]), u += bfd(su[(size_t)i * H + x]) * bfd(ht[x]);
            as[i] = bfd(arb_f64_to_bf16(g / (1 + exp(-g)) * u));
        }
        for (int o = 0; o < H; o++)
            for (int i = 0; i < Is; i++)
                ref[(size_t)t * H + o] += bfd(sd[(size_t)o * Is + i]) * as[i],
                    mag[(size_t)t * H + o] += fabs(bfd(sd[(size_t)o * Is + i]) * as[i]);
        for (int j = 0; j < k; j++) {
            const size_t e = sel[t * k + j];
            const double wt = w[t * k + j];
            for (int i = 0; i < I; i++) {
                double g = 0, u = 0;
                for (int x = 0; x < H; x++) {
                    const size_t idx = (e * I + i) * H + x;
                    const double wgv = int4 ? w_int4(gq, gs, idx) : bfd(gb[idx]);
                    const double wuv = int4 ? w_int4(uq, us, idx) : bfd(ub[idx]);
                    g += wgv * bfd(ht[x]), u += wuv * bfd(ht[x]);
                }
                a[i] = bfd(arb_f64_to_bf16(g / (1 + exp(-g)) * u));
            }
            for (int o = 0; o < H; o++)
                for (int i = 0; i < I; i++) {
                    const size_t idx = (e * H + o) * I + i;
                    const double wd = int4 ? w_int4(dq, ds, idx) : bfd(db[idx]);
                    ref[(size_t)t * H + o] += wt * wd * a[i];
                    mag[(size_t)t * H + o] += fabs(wt * wd * a[i]);
                }
        }
    }
    for (size_t i = 0; i < ref.size(); i++) // act flips of one ulp: 4 x 2^-8 of the terms
        c(bfd(got[i]), ref[i], fabs(ref[i]) / 256 + mag[i] * (1e-5 + 4.0 / 256 / 16));
    TAP_CHECK(c.ok());
    for (void *p : owned)
        cudaFree(p);
    cudaFree((void *)mw.gate), cudaFree((void *)mw.up), cudaFree((void *)mw.down);
    cudaFree((void *)mw.sh_gate), cudaFree((void *)mw.sh_up), cudaFree((void *)mw.sh_down);
    cudaFree(dh), cudaFree(act), cudaFree(act_sh), cudaFree(part);
    cudaFree(r.experts), cudaFree(r.rt.coef), cudaFree(r.rt.uniq), cudaFree(r.rt.n_uniq), cudaFree(r.rt.sh_part);
    cudaFree(r.rt.sh_ticket), cudaFree(r.ticket);
}
void t_moe_int4_t1() { moe_case(true, 1); }
void t_moe_int4_t2() { moe_case(true, 2); }
void t_moe_int4_t3() { moe_case(true, 3); }
void t_moe_int4_t8() { moe_case(true, 8); }
void t_moe_int4_t12() { moe_case(true, 12); }
void t_moe_int4_t16() { moe_case(true, 16); }
void t_moe_bf16_t1() { moe_case(false, 1); }
void t_moe_bf16_t3() { moe_case(false, 3); }
void t_moe_bf16_t8() { moe_case(false, 8); }
void t_moe_bf16_t16() { moe_case(false, 16); }

} // namespace

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"int4_layout", t_int4_layout}, {"moe_int4_T1", t_moe_int4_t1}, {"moe_int4_T2", t_moe_int4_t2}, {"moe_int4_T3", t_moe_int4_t3},
        {"moe_int4_T8", t_moe_int4_t8}, {"moe_bf16_T1", t_moe_bf16_t1}, {"moe_bf16_T3", t_moe_bf16_t3},
        {"moe_bf16_T8", t_moe_bf16_t8}, {"moe_int4_T12", t_moe_int4_t12}, {"moe_int4_T16", t_moe_int4_t16},
        {"moe_bf16_T16", t_moe_bf16_t16},
    };
    return gpu_tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
