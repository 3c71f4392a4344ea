// SPDX-License-Identifier: MIT
// The MoE kernels' host side (engine/gpu/kernels/moe.cu, kernels.h), no GPU needed:
//   tstride      the token stride of act and coef: at least T for T = 1 .. kMoeMaxT, 8 for
//                every T the step runs (the router writes coef with it), even (down reads a
//                float2 of coef at 2 ti)
//   sh_scratch   the shared expert's part sums and tickets (moe_sh_part_floats,
//                moe_sh_tickets) hold what every dispatched tiling writes, at Kimi-K2 and
//                DeepSeek-V3 shards and odd shapes, recomputed here from the tiling rules
//                (rows per item 16 ROWT, ROWT 1 up to T = 3 else 2, NH = 1 up to T = 8 else 2,
//                parts of 8 warps x 4 (ROWT 1) or 2 (ROWT 2) input groups, 2 ROWT NH x 4 x 32
//                floats a part)
//   order        moe_gate_up_block (the gate/up grid's order, --moe-order) maps a grid's blocks
//                one to one onto its logical blocks, the first `head` onto routed tiles 0 ..
//                head - 1 in order, at Kimi-K2's shapes (112 shared parts; 128, 384 routed;
//                heads 0, 132, 188, all) and odd ones
//   refusals     moe_block refuses T = 0 and T > kMoeMaxT, shapes not multiples of 32 and
//                more slots than kMaxSlots before it launches anything (no device touched)
#include <cstdio>
#include <vector>

#include "gpu/kernels/kernels.h"
#include "tap.h"

namespace {

void t_tstride()
{
    size_t bad = 0;
    for (int T = 1; T <= arbk::kMoeMaxT; T++) {
        const int ts = arbk::moe_tstride(T), nh = arbk::moe_halves(T);
        const bool ok = ts >= T && ts == 8 * nh && ts % 2 == 0 && (T > arbk::kMaxT || ts == arbk::kMaxT) &&
                        8 * nh >= T && 8 * (nh - 1) < T;
        if (!ok)
            tap_diag("T %d: stride %d, halves %d", T, ts, nh);
        bad += !ok;
    }
    TAP_EQ_U64(bad, 0);
}

// The floats and tickets the shared expert's parts need at T for hidden H and shared rows Is.
void sh_need(int H, int Is, int T, size_t *floats, size_t *tickets)
{
    const int rowt = T <= 3 ? 1 : 2, nh = T <= 8 ? 1 : 2, unr = rowt == 1 ? 4 : 2;
    const int parts = (H / 32 + 8 * unr - 1) / (8 * unr), items = Is / (16 * rowt);
    *floats = parts > 1 ? (size_t)items * parts * (2 * rowt * nh * 4 * 32) : 0;
    *tickets = parts > 1 ? (size_t)items : 0;
}

void t_sh_scratch()
{
    // (H, Is): Kimi-K2 and DeepSeek-V3 (7168, 2048 / tp), and odd shapes (one part; many parts)
    const int shapes[][2] = {{7168, 2048}, {7168, 1024}, {7168, 512}, {7168, 256}, {4096, 1408},
                             {2048, 64},   {256, 32},    {32, 32},    {12288, 96}, {160, 3200}};
    size_t bad = 0, checked = 0;
    for (const auto &sh : shapes)
        for (int T = 1; T <= arbk::kMoeMaxT; T++) {
            size_t need_f, need_t;
            sh_need(sh[0], sh[1], T, &need_f, &need_t);
            const size_t have_f = arbk::moe_sh_part_floats(sh[0], sh[1]);
            const size_t have_t = need_t ? (size_t)arbk::moe_sh_tickets(sh[1]) : 0;
            if (need_f > have_f || need_t > have_t) {
                tap_diag("H %d Is %d T %d: %zu floats and %zu tickets needed, %zu and %zu sized", sh[0], sh[1], T,
                         need_f, need_t, have_f, have_t);
                bad++;
            }
            checked++;
        }
    TAP_EQ_U64(checked, 10 * arbk::kMoeMaxT);
    TAP_EQ_U64(bad, 0);
    size_t f, t;
    sh_need(7168, 256, 16, &f, &t); // Kimi-K2's rank of 8 at T = 16: 8 items of 14 parts of 1024 floats
    TAP_EQ_U64(f, 8 * 14 * 1024);
    TAP_CHECK(arbk::moe_sh_part_floats(7168, 256) >= f);
}

void t_order()
{
    const int cases[][3] = {{112, 128, 128}, {112, 128, 0}, {112, 384, 132}, {112, 384, 188}, {112, 384, 384},
                            {112, 384, 0},   {7, 5, 3},     {7, 5, 5},       {1, 1, 1},       {3, 0, 0}};
    for (const auto &c : cases) {
        const int sh = c[0], R = c[1], head = c[2], n = sh + R;
        std::vector<int> seen(n, 0);
        size_t bad = 0;
        for (int b = 0; b < n; b++) {
            const int l = arbk::moe_gate_up_block(b, sh, head);
            bad += l < 0 || l >= n || seen[l]++;
            if (b < head) // the leading blocks: routed tiles 0 .. head - 1, in order
                bad += l != sh + b;
        }
        if (bad)
            tap_diag("order: %d shared, %d routed, head %d: %zu blocks wrong", sh, R, head, bad);
        TAP_EQ_U64(bad, 0);
    }
    // head 0 is the identity (the shared parts first); head = R is routed first
    TAP_EQ_INT(arbk::moe_gate_up_block(5, 112, 0), 5);
    TAP_EQ_INT(arbk::moe_gate_up_block(128, 112, 128), 0);
    TAP_EQ_INT(arbk::moe_gate_up_block(0, 112, 132), 112);
    TAP_EQ_INT(arbk::moe_gate_up_block(244, 112, 132), 244);
}

void t_refusals()
{
    arbk::moe_weights w{};
    w.H = 7168, w.I = 256, w.Is = 256;
    arbk::moe_route rt{};
    const arbk::launch_ctx lc = {nullptr, 0, {}, 0, 0, 0, 0};
    // pointers are never dereferenced: every case is refused before a launch
    TAP_CHECK(arbk::moe_block(lc, w, rt, nullptr, nullptr, nullptr, nullptr, 0, 1) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::moe_block(lc, w, rt, nullptr, nullptr, nullptr, nullptr, arbk::kMoeMaxT + 1, 1) ==
              cudaErrorInvalidValue);
    TAP_CHECK(arbk::moe_block(lc, w, rt, nullptr, nullptr, nullptr, nullptr, 1, 0) == cudaErrorInvalidValue);
    TAP_CHECK(arbk::moe_block(lc, w, rt, nullptr, nullptr, nullptr, nullptr, 1, arbk::kMaxSlots + 1) ==
              cudaErrorInvalidValue);
    arbk::moe_weights odd = w;
    odd.H = 7168 + 16;
    TAP_CHECK(arbk::moe_block(lc, odd, rt, nullptr, nullptr, nullptr, nullptr, 1, 1) == cudaErrorInvalidValue);
    // the shared expert in parts (7168 columns) without its scratch: refused too
    TAP_CHECK(arbk::moe_gate_up(lc, w, rt, nullptr, nullptr, nullptr, arbk::kMoeMaxT, 1) == cudaErrorInvalidValue);
}

} // namespace

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"tstride", t_tstride}, {"sh_scratch", t_sh_scratch}, {"order", t_order}, {"refusals", t_refusals}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
