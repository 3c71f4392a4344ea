// SPDX-License-Identifier: MIT
// The MoE block of one layer for all experts the step selected, in two launches:
//   moe_gate_up  act[u][t] = bf16(silu(gate_e h[t]) * (up_e h[t])) for every distinct
//                expert e = uniq[u], and act_sh[t] for the shared expert; one warp per
//                (expert, intermediate row), gate and up rows read in one pass
//   moe_down     part[t][i] = bf16(sum_i (shared_down[i] . act_sh[t])
//                                  + sum_u coef[u][t] (down_e[i] . act[u][t]))
//                four output rows per warp, the shared expert first, then the distinct
//                experts in ascending order: one fixed summation order, no atomics.
// Routed experts are bf16 or INT4 W4A16 (forward.md: eight 4-bit two's-complement values
// per int32 along the input dimension, value j in bits [4j, 4j+4), a bf16 scale per 32
// inputs); the shared expert is bf16. An expert shared by several tokens is read once.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/rowdot.cuh"

namespace arbk {
namespace {

constexpr int kMoeWarps = 8;
constexpr int kDownRowsPerWarp = 4;

// The eight INT4 values of one packed word as four bf16 pairs: pair k holds values k
// (low half) and k + 4 (high half) as 136 + q, exact; one bf16x2 subtraction of 136
// leaves q exactly, widened to fp32 by a shift or a mask.
__device__ __forceinline__ void dequant_word(uint32_t w, float (&q)[8])
{
    const uint32_t u = w ^ 0x88888888u; // q + 8 in every nibble, unsigned
    const __nv_bfloat162 bias = __floats2bfloat162_rn(136.0f, 136.0f);
#pragma unroll
    for (int k = 0; k < 4; k++) {
        uint32_t p = ((u >> (4 * k)) & 0x000f000fu) | 0x43004300u;
        __nv_bfloat162 v = __hsub2(*reinterpret_cast<__nv_bfloat162 *>(&p), bias);
        const uint32_t r = *reinterpret_cast<uint32_t *>(&v);
        q[k] = bf16_lo(r);
        q[k + 4] = bf16_hi(r);
    }
}

// One group of 32 inputs: 4 packed words to 32 exact q values (dequantized once, used
// for every token), then its dot product with 32 bf16 inputs (4 vectors).
__device__ __forceinline__ void dequant_group(const uint4 packed, float (&q)[32])
{
    const uint32_t words[4] = {packed.x, packed.y, packed.z, packed.w};
#pragma unroll
    for (int wi = 0; wi < 4; wi++) {
        float qw[8];
        dequant_word(words[wi], qw);
#pragma unroll
        for (int j = 0; j < 8; j++)
            q[wi * 8 + j] = qw[j];
    }
}

// Gate and up share the input: each x vector is widened once for both.
__device__ __forceinline__ void group_dot2(const float (&qa)[32], const float (&qb)[32], const uint4 *x, float &sa,
                                           float &sb)
{
    sa = 0.0f, sb = 0.0f;
#pragma unroll
    for (int wi = 0; wi < 4; wi++) {
        float xf[8];
        unpack8(__ldg(x + wi), xf);
#pragma unroll
        for (int j = 0; j < 8; j++)
            sa = fmaf(qa[wi * 8 + j], xf[j], sa), sb = fmaf(qb[wi * 8 + j], xf[j], sb);
    }
}

__device__ __forceinline__ float group_dot(const float (&q)[32], const uint4 *x)
{
    float s = 0.0f;
#pragma unroll
    for (int wi = 0; wi < 4; wi++) {
        float xf[8];
        unpack8(__ldg(x + wi), xf);
#pragma unroll
        for (int j = 0; j < 8; j++)
            s = fmaf(q[wi * 8 + j], xf[j], s);
    }
    return s;
}

// One INT4 row pair (gate, up) of K inputs against T input rows, sums in every lane.
template <int T>
__device__ __forceinline__ void warp_rowdot_int4_pair(const uint32_t *__restrict__ g_packed,
                                                      const bf16 *__restrict__ g_scale,
                                                      const uint32_t *__restrict__ u_packed,
                                                      const bf16 *__restrict__ u_scale, const bf16 *__restrict__ x,
                                                      int K, float (&acc)[T], float (&acc2)[T])
{
    const int lane = threadIdx.x % kWarp, groups = K / 32;
    const uint4 *gp = reinterpret_cast<const uint4 *>(g_packed), *up = reinterpret_cast<const uint4 *>(u_packed);
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f, acc2[t] = 0.0f;
    constexpr int kGU = 4; // groups of gate and of up in flight per lane
    for (int g0 = lane; g0 < groups; g0 += kWarp * kGU) {
        uint4 pg[kGU], pu[kGU];
        float sg[kGU], su[kGU];
#pragma unroll
        for (int j = 0; j < kGU; j++) {
            const int g = g0 + j * kWarp;
            if (g < groups)
                pg[j] = ld_stream(gp + g), pu[j] = ld_stream(up + g), sg[j] = bf(g_scale[g]), su[j] = bf(u_scale[g]);
        }
#pragma unroll
        for (int j = 0; j < kGU; j++) {
            const int g = g0 + j * kWarp;
            if (g >= groups)
                break;
            float qg[32], qu[32];
            dequant_group(pg[j], qg);
            dequant_group(pu[j], qu);
#pragma unroll
            for (int t = 0; t < T; t++) {
                float dg, du;
                group_dot2(qg, qu, xv + (size_t)t * (K / 8) + g * 4, dg, du);
                acc[t] = fmaf(dg, sg[j], acc[t]);
                acc2[t] = fmaf(du, su[j], acc2[t]);
            }
        }
    }
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = warp_sum(acc[t]), acc2[t] = warp_sum(acc2[t]);
}

// warp_rowdot_int4_pair over ROWS consecutive rows of one expert: each input vector is
// widened once for all of them (at T > 1 the inputs' loads and widening, not the
// weights, bound the kernel). Per row the same sums in the same order, so the same bits.
template <int T, int ROWS>
__device__ __forceinline__ void warp_rows_int4_pair(const uint32_t *__restrict__ g_packed,
                                                    const bf16 *__restrict__ g_scale,
                                                    const uint32_t *__restrict__ u_packed,
                                                    const bf16 *__restrict__ u_scale, const bf16 *__restrict__ x,
                                                    int K, float (&acc)[ROWS][T], float (&acc2)[ROWS][T])
{
    const int lane = threadIdx.x % kWarp, groups = K / 32;
    const uint4 *gp = reinterpret_cast<const uint4 *>(g_packed), *up = reinterpret_cast<const uint4 *>(u_packed);
    const uint4 *xv = reinterpret_cast<const uint4 *>(x);
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
        for (int t = 0; t < T; t++)
            acc[r][t] = 0.0f, acc2[r][t] = 0.0f;
    constexpr int kGU = 4; // groups of gate and of up in flight per lane and row
    for (int g0 = lane; g0 < groups; g0 += kWarp * kGU) {
        uint4 pg[kGU][ROWS], pu[kGU][ROWS];
        float sg[kGU][ROWS], su[kGU][ROWS];
#pragma unroll
        for (int j = 0; j < kGU; j++) {
            const int g = g0 + j * kWarp;
            if (g < groups)
#pragma unroll
                for (int r = 0; r < ROWS; r++) {
                    const size_t o = (size_t)r * groups + g; // groups per row: one uint4 and one scale each
                    pg[j][r] = ld_stream(gp + o), pu[j][r] = ld_stream(up + o);
                    sg[j][r] = bf(g_scale[o]), su[j][r] = bf(u_scale[o]);
                }
        }
#pragma unroll
        for (int j = 0; j < kGU; j++) {
            const int g = g0 + j * kWarp;
            if (g >= groups)
                break;
            float dg[ROWS][T], du[ROWS][T];
#pragma unroll
            for (int r = 0; r < ROWS; r++)
#pragma unroll
                for (int t = 0; t < T; t++)
                    dg[r][t] = 0.0f, du[r][t] = 0.0f;
#pragma unroll
            for (int wi = 0; wi < 4; wi++) {
                float xf[T][8];
#pragma unroll
                for (int t = 0; t < T; t++)
                    unpack8(__ldg(xv + (size_t)t * (K / 8) + g * 4 + wi), xf[t]);
#pragma unroll
                for (int r = 0; r < ROWS; r++) {
                    const uint32_t wg[4] = {pg[j][r].x, pg[j][r].y, pg[j][r].z, pg[j][r].w};
                    const uint32_t wu[4] = {pu[j][r].x, pu[j][r].y, pu[j][r].z, pu[j][r].w};
                    float qg[8], qu[8];
                    dequant_word(wg[wi], qg);
                    dequant_word(wu[wi], qu);
#pragma unroll
                    for (int t = 0; t < T; t++)
#pragma unroll
                        for (int jj = 0; jj < 8; jj++)
                            dg[r][t] = fmaf(qg[jj], xf[t][jj], dg[r][t]), du[r][t] = fmaf(qu[jj], xf[t][jj], du[r][t]);
                }
            }
#pragma unroll
            for (int r = 0; r < ROWS; r++)
#pragma unroll
                for (int t = 0; t < T; t++)
                    acc[r][t] = fmaf(dg[r][t], sg[j][r], acc[r][t]), acc2[r][t] = fmaf(du[r][t], su[j][r], acc2[r][t]);
        }
    }
#pragma unroll
    for (int r = 0; r < ROWS; r++)
#pragma unroll
        for (int t = 0; t < T; t++)
            acc[r][t] = warp_sum(acc[r][t]), acc2[r][t] = warp_sum(acc2[r][t]);
}

template <int T>
__device__ __forceinline__ void store_act(bf16 *dst, int ld, int row, const float (&g)[T], const float (&u)[T])
{
    const int lane = threadIdx.x % kWarp;
#pragma unroll
    for (int t = 0; t < T; t++)
        if (lane == t)
            dst[(size_t)t * ld + row] = to_bf(g[t] / (1.0f + expf(-g[t])) * u[t]);
}

template <int T, bool INT4>
__global__ void __launch_bounds__(kMoeWarps *kWarp)
    moe_gate_up_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ h, bf16 *__restrict__ act,
                       bf16 *__restrict__ act_sh)
{
    const int warp = blockIdx.x * kMoeWarps + threadIdx.x / kWarp;
    const int H = w.H, I = w.I;
    pdl_launch_dependents();
    if (warp < w.Is) { // the shared expert's rows do not depend on the router: fetch them early
        warp_prefetch_l2(w.sh_gate + (size_t)warp * H, (size_t)H * 2);
        warp_prefetch_l2(w.sh_up + (size_t)warp * H, (size_t)H * 2);
    }
    pdl_wait();
    float g[T], u[T];
    if (warp < w.Is) { // the shared expert's row
        warp_rowdot<T, true>(w.sh_gate + (size_t)warp * H, w.sh_up + (size_t)warp * H, h, H, H, g, u);
        store_act<T>(act_sh, w.Is, warp, g, u);
        return;
    }
    const int slot = (warp - w.Is) / I, n = (warp - w.Is) % I;
    if (slot >= *rt.n_uniq)
        return;
    const size_t row = (size_t)rt.uniq[slot] * I + n; // row of the expert-major [E x I x H] tensors
    if (INT4) {
        warp_rowdot_int4_pair<T>(static_cast<const uint32_t *>(w.gate) + row * (H / 8), w.gate_s + row * (H / 32),
                                 static_cast<const uint32_t *>(w.up) + row * (H / 8), w.up_s + row * (H / 32), h, H, g,
                                 u);
    } else {
        warp_rowdot<T, true>(static_cast<const bf16 *>(w.gate) + row * H, static_cast<const bf16 *>(w.up) + row * H, h,
                             H, H, g, u);
    }
    store_act<T>(act + (size_t)slot * kMaxT * I, I, n, g, u);
}

// INT4 gate/up with ROWS rows of an expert per warp (warp_rows_int4_pair); the shared
// expert as in moe_gate_up_kernel.
template <int T, int ROWS>
__global__ void __launch_bounds__(kMoeWarps *kWarp)
    moe_gate_up_rows_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ h, bf16 *__restrict__ act,
                            bf16 *__restrict__ act_sh)
{
    const int warp = blockIdx.x * kMoeWarps + threadIdx.x / kWarp;
    const int H = w.H, I = w.I;
    pdl_launch_dependents();
    if (warp < w.Is) {
        warp_prefetch_l2(w.sh_gate + (size_t)warp * H, (size_t)H * 2);
        warp_prefetch_l2(w.sh_up + (size_t)warp * H, (size_t)H * 2);
    }
    pdl_wait();
    if (warp < w.Is) {
        float g[T], u[T];
        warp_rowdot<T, true>(w.sh_gate + (size_t)warp * H, w.sh_up + (size_t)warp * H, h, H, H, g, u);
        store_act<T>(act_sh, w.Is, warp, g, u);
        return;
    }
    const int per_slot = I / ROWS, slot = (warp - w.Is) / per_slot, n = (warp - w.Is) % per_slot * ROWS;
    if (slot >= *rt.n_uniq)
        return;
    const size_t row = (size_t)rt.uniq[slot] * I + n;
    float g[ROWS][T], u[ROWS][T];
    warp_rows_int4_pair<T, ROWS>(static_cast<const uint32_t *>(w.gate) + row * (H / 8), w.gate_s + row * (H / 32),
                                 static_cast<const uint32_t *>(w.up) + row * (H / 8), w.up_s + row * (H / 32), h, H, g,
                                 u);
#pragma unroll
    for (int r = 0; r < ROWS; r++)
        store_act<T>(act + (size_t)slot * kMaxT * I, I, n + r, g[r], u[r]);
}

constexpr int kDownBatch = 8; // experts whose rows are in flight together per lane

// acc[q][t] += c[t] * (row q of W . x[t]) for the shared expert (bf16 rows of K inputs,
// 16-byte vectors, x [T x ldx]) over this lane's share of the warp's rows.
template <int T>
__device__ __forceinline__ void rows_dot_shared(const bf16 *__restrict__ W, int K, const bf16 *__restrict__ x,
                                                float (&acc)[kDownRowsPerWarp][T])
{
    const int lane = threadIdx.x % kWarp, nv = K / 8, items = kDownRowsPerWarp * nv;
    for (int it = lane; it < items; it += kWarp) {
        const int q = it / nv, v = it % nv;
        float wf[8];
        unpack8(ld_stream(reinterpret_cast<const uint4 *>(W + (size_t)q * K) + v), wf);
#pragma unroll
        for (int t = 0; t < T; t++) {
            const float s = dot8(wf, __ldg(reinterpret_cast<const uint4 *>(x + (size_t)t * K) + v));
#pragma unroll
            for (int qq = 0; qq < kDownRowsPerWarp; qq++)
                if (qq == q)
                    acc[qq][t] += s;
        }
    }
}

// The routed experts u0 .. u0+nb-1 (nb <= kDownBatch): every lane issues its loads for all
// of them before using any, then adds coef[u][t] * (row . act[u][t]) in expert order.
template <int T, bool INT4>
__device__ __forceinline__ void rows_dot_routed(const moe_weights &w, const moe_route &rt, const bf16 *__restrict__ act,
                                                int i0, int u0, int nb, float (&acc)[kDownRowsPerWarp][T])
{
    const int lane = threadIdx.x % kWarp, H = w.H, I = w.I;
    const int per_item = INT4 ? 32 : 8; // inputs per 16-byte load
    const int per_row = I / per_item, items = kDownRowsPerWarp * per_row;
    size_t e[kDownBatch];
    float c[kDownBatch][T];
#pragma unroll
    for (int j = 0; j < kDownBatch; j++) {
        e[j] = j < nb ? (size_t)rt.uniq[u0 + j] : 0;
#pragma unroll
        for (int t = 0; t < T; t++)
            c[j][t] = j < nb ? rt.coef[(u0 + j) * kMaxT + t] : 0.0f;
    }
    for (int it = lane; it < items; it += kWarp) {
        const int q = it / per_row, g = it % per_row;
        uint4 p[kDownBatch];
        float sc[kDownBatch];
#pragma unroll
        for (int j = 0; j < kDownBatch; j++) {
            if (j >= nb)
                break;
            const size_t row = e[j] * H + i0 + q; // row of the expert-major [E x H x I] tensor
            if (INT4) {
                p[j] = ld_stream(reinterpret_cast<const uint4 *>(static_cast<const uint32_t *>(w.down) + row * (I / 8)) + g);
                sc[j] = bf(w.down_s[row * (I / 32) + g]);
            } else {
                p[j] = ld_stream(reinterpret_cast<const uint4 *>(static_cast<const bf16 *>(w.down) + row * I) + g);
            }
        }
#pragma unroll
        for (int j = 0; j < kDownBatch; j++) {
            if (j >= nb)
                break;
            const bf16 *x = act + (size_t)(u0 + j) * kMaxT * I;
            if (INT4) {
                float qv[32];
                dequant_group(p[j], qv);
#pragma unroll
                for (int t = 0; t < T; t++) {
                    const float d = group_dot(qv, reinterpret_cast<const uint4 *>(x + (size_t)t * I) + g * 4) * sc[j] * c[j][t];
#pragma unroll
                    for (int qq = 0; qq < kDownRowsPerWarp; qq++)
                        if (qq == q)
                            acc[qq][t] += d;
                }
            } else {
                float wf[8];
                unpack8(p[j], wf);
#pragma unroll
                for (int t = 0; t < T; t++) {
                    const float d = dot8(wf, __ldg(reinterpret_cast<const uint4 *>(x + (size_t)t * I) + g)) * c[j][t];
#pragma unroll
                    for (int qq = 0; qq < kDownRowsPerWarp; qq++)
                        if (qq == q)
                            acc[qq][t] += d;
                }
            }
        }
    }
}

template <int T, bool INT4>
__global__ void __launch_bounds__(kMoeWarps *kWarp)
    moe_down_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ act, const bf16 *__restrict__ act_sh,
                    bf16 *__restrict__ part)
{
    const int lane = threadIdx.x % kWarp;
    const int i0 = (blockIdx.x * kMoeWarps + threadIdx.x / kWarp) * kDownRowsPerWarp;
    const int H = w.H;
    pdl_launch_dependents();
    if (i0 < H)
        warp_prefetch_l2(w.sh_down + (size_t)i0 * w.Is, (size_t)min(kDownRowsPerWarp, H - i0) * w.Is * 2);
    pdl_wait();
    if (i0 >= H)
        return;
    float acc[kDownRowsPerWarp][T] = {};
    rows_dot_shared<T>(w.sh_down + (size_t)i0 * w.Is, w.Is, act_sh, acc);
    const int n_uniq = *rt.n_uniq;
    for (int u0 = 0; u0 < n_uniq; u0 += kDownBatch)
        rows_dot_routed<T, INT4>(w, rt, act, i0, u0, min(kDownBatch, n_uniq - u0), acc);
#pragma unroll
    for (int q = 0; q < kDownRowsPerWarp; q++)
#pragma unroll
        for (int t = 0; t < T; t++) {
            const float s = warp_sum(acc[q][t]);
            if (lane == 0 && i0 + q < H)
                part[(size_t)t * H + i0 + q] = to_bf(s);
        }
}

// which: 1 gate/up, 2 down, 3 both.
template <bool INT4>
cudaError_t moe_dispatch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                         bf16 *act_sh, bf16 *part, int T, int max_slots, int which)
{
    const dim3 block(kMoeWarps * kWarp);
    const dim3 grid_gu((w.Is + max_slots * w.I + kMoeWarps - 1) / kMoeWarps);
    const dim3 grid_dn((w.H + kMoeWarps * kDownRowsPerWarp - 1) / (kMoeWarps * kDownRowsPerWarp));
    // INT4 at T = 2 .. 4: two rows per warp (moe_gate_up_rows_kernel) unless use_old("moe")
    const bool rows2 = INT4 && T >= 2 && T <= 4 && w.I % 2 == 0 && (which & 1) && !use_old("moe");
    const dim3 grid_gu2((w.Is + max_slots * (w.I / 2) + kMoeWarps - 1) / kMoeWarps);
    cudaError_t e = cudaErrorInvalidValue;
    if (rows2) {
        e = T == 2   ? launch(c, moe_gate_up_rows_kernel<2, 2>, grid_gu2, block, 0, w, rt, h, act, act_sh)
            : T == 3 ? launch(c, moe_gate_up_rows_kernel<3, 2>, grid_gu2, block, 0, w, rt, h, act, act_sh)
                     : launch(c, moe_gate_up_rows_kernel<4, 2>, grid_gu2, block, 0, w, rt, h, act, act_sh);
        if (e != cudaSuccess || !(which & 2))
            return e;
        which = 2;
    }
#define ARB_MOE_CASE(TT)                                                                                        \
    case TT:                                                                                                    \
        e = which & 1 ? launch(c, moe_gate_up_kernel<TT, INT4>, grid_gu, block, 0, w, rt, h, act, act_sh)        \
                      : cudaSuccess;                                                                            \
        if (e == cudaSuccess && (which & 2))                                                                    \
            e = launch(c, moe_down_kernel<TT, INT4>, grid_dn, block, 0, w, rt, (const bf16 *)act,               \
                       (const bf16 *)act_sh, part);                                                            \
        break;
    switch (T) {
        ARB_MOE_CASE(1)
        ARB_MOE_CASE(2)
        ARB_MOE_CASE(3)
        ARB_MOE_CASE(4)
        ARB_MOE_CASE(5)
        ARB_MOE_CASE(6)
        ARB_MOE_CASE(7)
        ARB_MOE_CASE(8)
    default: break;
    }
#undef ARB_MOE_CASE
    return e;
}

} // namespace

static cudaError_t moe_launch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h,
                              bf16 *act, bf16 *act_sh, bf16 *part, int T, int max_slots, int which)
{
    if (w.H % 32 || w.I % (w.gate_s ? 32 : 8) || w.Is % 8 || T < 1 || T > kMaxT || max_slots > kMaxSlots)
        return cudaErrorInvalidValue;
    return w.gate_s ? moe_dispatch<true>(c, w, rt, h, act, act_sh, part, T, max_slots, which)
                    : moe_dispatch<false>(c, w, rt, h, act, act_sh, part, T, max_slots, which);
}

cudaError_t moe_gate_up(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                        bf16 *act_sh, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, nullptr, T, max_slots, 1);
}

cudaError_t moe_down(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *act,
                     const bf16 *act_sh, bf16 *part, int T)
{
    return moe_launch(c, w, rt, nullptr, const_cast<bf16 *>(act), const_cast<bf16 *>(act_sh), part, T, 1, 2);
}

cudaError_t moe_block(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                      bf16 *act_sh, bf16 *part, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, part, T, max_slots, 3);
}

} // namespace arbk
