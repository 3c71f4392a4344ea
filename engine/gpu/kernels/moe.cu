// SPDX-License-Identifier: MIT
// The MoE block of one layer for all experts the step selected, in two launches, on tensor
// cores (moe_mma.cuh: mma.sync m16n8k16, the T <= 8 tokens as n, zero padded, so the work
// is the same at every T):
//   moe_gate_up  act[u][t] = bf16(silu(gate_e h[t]) * (up_e h[t])) for every distinct
//                expert e = uniq[u], and act_sh[t] for the shared expert: a cluster of
//                `split` CTAs per ROWT 16-row tiles of gate and of up (the same rows of
//                both), its split x 8 warps splitting the H columns in groups of 32; each
//                CTA adds its warps' fp32 sums in warp order, the cluster's rank 0 adds the
//                CTAs' sums in rank order (through distributed shared memory), then SiLU * up.
//                At T <= 3 the routed INT4 tiles stream through shared memory with cp.async
//                (moe_stage.cuh); at T = 1 it also pulls the selected experts' down rows
//                toward L2.
//   moe_down     part[t][i] = bf16(shared_down[i] . act_sh[t]
//                                  + sum_u coef[u][t] (down_e[i] . act[u][t]))
//                a CTA per ROWT 16-row tiles of the output; each warp takes the shared
//                expert's groups w, w + 8, .. then the (expert, group) pairs w, w + 8, .. in
//                ascending order (pair = u * groups + group); the warps' sums in warp order.
//                The selection is read once per CTA, while the shared expert's rows load.
// INT4 groups (forward.md): the group's two k16 steps into a fresh accumulator, then times
// the group's scale into the sum (down: times the token's weight too). No atomics and no
// counters: every sum has one order for a given selection and T, so reruns and graph
// replays are bit-identical.
// Routed experts INT4 (W4A16 group 32 in the fragment layout of moe_int4_layout.h) or bf16
// (row-major); the shared expert bf16. An expert shared by several tokens is read once.
#include "gpu/kernels/kernels.h"

#include <cooperative_groups.h>

#include "gpu/kernels/moe_mma.cuh"
#include "gpu/kernels/moe_stage.cuh"

namespace arbk {
namespace {

namespace cg = cooperative_groups;

constexpr int kMoeWarps = 8;
static_assert(kMaxSlots <= kMoeWarps * kWarp, "moe_down reads the selection a thread per slot");

// Part `part` of `parts` of [p, p + bytes) toward L2, by the whole block, a 128-byte line
// per thread and step (a weight range: nothing a predecessor writes).
__device__ __forceinline__ void block_prefetch_l2(const void *p, size_t bytes, int part, int parts)
{
    const size_t chunk = ((bytes + parts - 1) / parts + 127) / 128 * 128;
    const size_t b0 = min(bytes, (size_t)part * chunk), b1 = min(bytes, b0 + chunk);
    const char *c = static_cast<const char *>(p);
    for (size_t off = b0 + (size_t)threadIdx.x * 128; off < b1; off += (size_t)blockDim.x * 128)
        asm volatile("prefetch.global.L2 [%0];" ::"l"(c + off));
}

// ROWT tiles of gate and up over groups [g0, g1) of the lane's share: INT4 fragments
// (gq, uq: the first tile's uint2 per (group, lane); tiles 32 G apart) and scale pairs
// (gs, us: per (group, gi); tiles 8 G apart). UNR groups' loads in flight per lane.
template <int ROWT, int UNR>
__device__ __forceinline__ void gate_up_int4(const uint2 *__restrict__ gq, const uint2 *__restrict__ uq,
                                             const uint32_t *__restrict__ gs, const uint32_t *__restrict__ us,
                                             int G, const bf16 *__restrict__ x, int ldx, int T, int g0, int g1,
                                             float (&ag)[ROWT][4], float (&au)[ROWT][4])
{
    const int lane = threadIdx.x % kWarp, gi = lane / 4;
    for (int g = g0; g < g1; g += UNR) {
        uint2 qa[UNR][ROWT], qb[UNR][ROWT];
        uint32_t sa[UNR][ROWT], sb[UNR][ROWT];
        uint4 xb[UNR];
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
            xb[j] = ld_b(x, ldx, g + j, T);
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                const size_t o = ((size_t)k * G + g + j) * kWarp + lane, so = ((size_t)k * G + g + j) * 8 + gi;
                qa[j][k] = ld_stream2(gq + o), qb[j][k] = ld_stream2(uq + o);
                sa[j][k] = __ldg(gs + so), sb[j][k] = __ldg(us + so);
            }
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                float p[4];
                mma_int4_group(p, qa[j][k], xb[j]);
                add_scaled(ag[k], p, sa[j][k]);
                mma_int4_group(p, qb[j][k], xb[j]);
                add_scaled(au[k], p, sb[j][k]);
            }
        }
    }
}

// The same for bf16 tiles of row-major [rows x K] matrices from their first rows (tiles 16 K apart).
template <int ROWT, int UNR>
__device__ __forceinline__ void gate_up_bf16(const bf16 *__restrict__ wg, const bf16 *__restrict__ wu, int K,
                                             const bf16 *__restrict__ x, int T, int g0, int g1,
                                             float (&ag)[ROWT][4], float (&au)[ROWT][4])
{
    for (int g = g0; g < g1; g += UNR) {
        uint4 ga[UNR][ROWT][2], ua[UNR][ROWT][2], xb[UNR];
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
            xb[j] = ld_b(x, K, g + j, T);
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                ld_a_bf16(wg + (size_t)k * 16 * K, K, g + j, ga[j][k][0], ga[j][k][1]);
                ld_a_bf16(wu + (size_t)k * 16 * K, K, g + j, ua[j][k][0], ua[j][k][1]);
            }
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (g + j >= g1)
                break;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                mma_bf16_group(ag[k], ga[j][k][0], ga[j][k][1], xb[j]);
                mma_bf16_group(au[k], ua[j][k][0], ua[j][k][1], xb[j]);
            }
        }
    }
}

// CTA blockIdx.x is rank blockIdx.x % split of the cluster of tile item blockIdx.x / split
// (a 1-D grid of clusters of `split` CTAs, split <= kMoeMaxSplit; split 1: no cluster).
// prefetch_down: each routed item also pulls its share of its expert's down rows (and
// scales) toward L2, each shared item its share of the shared expert's.
template <bool INT4, int ROWT, int UNR, int MINB>
__global__ void __launch_bounds__(kMoeWarps *kWarp, MINB)
    moe_gate_up_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ h, bf16 *__restrict__ act,
                       bf16 *__restrict__ act_sh, int T, int split, int prefetch_down)
{
    constexpr bool kStaged = INT4 && ROWT == 1; // routed tiles through shared memory (moe_stage.cuh; T <= 3)
    __shared__ float red[kMoeWarps][2 * ROWT][4][kWarp];
    __shared__ float csum[2 * ROWT][4][kWarp]; // this CTA's sums, read by the cluster's rank 0
    __shared__ int4_stage stage[kStaged ? kMoeWarps : 1][kStaged ? kMoeStages : 1];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const int H = w.H, I = w.I, G = H / 32, rows = 16 * ROWT;
    const int sh_items = w.Is / rows, items = I / rows;
    const int item = blockIdx.x / split, rank = blockIdx.x % split, nw = split * kMoeWarps;
    const int per = (G + nw - 1) / nw, g0 = min(G, (rank * kMoeWarps + warp) * per), g1 = min(G, g0 + per);
    const bool shared = item < sh_items;
    pdl_launch_dependents();
    if (shared) // the shared expert does not depend on the router: pull its rows toward L2 first
        for (int r = 0; r < rows; r++) {
            const size_t o = (size_t)(item * rows + r) * H + (size_t)g0 * 32;
            warp_prefetch_l2(w.sh_gate + o, (size_t)(g1 - g0) * 64);
            warp_prefetch_l2(w.sh_up + o, (size_t)(g1 - g0) * 64);
        }
    pdl_wait();
    float ag[ROWT][4] = {}, au[ROWT][4] = {};
    bf16 *dst;
    int ld, row0;
    if (shared) {
        if (prefetch_down)
            block_prefetch_l2(w.sh_down, (size_t)H * w.Is * 2, item * split + rank, sh_items * split);
        row0 = item * rows, dst = act_sh, ld = w.Is;
        gate_up_bf16<ROWT, UNR>(w.sh_gate + (size_t)row0 * H, w.sh_up + (size_t)row0 * H, H, h, T, g0, g1, ag, au);
    } else {
        const int slot = (item - sh_items) / items, it = (item - sh_items) % items;
        const int n_uniq = *rt.n_uniq, e = rt.uniq[slot]; // both in one round trip (slot < kMaxSlots)
        if (slot >= n_uniq)
            return; // the whole cluster: its CTAs share the slot
        const size_t r = (size_t)e * I + (size_t)it * rows; // first row of the [E x I x H] tensors
        row0 = it * rows, dst = act + (size_t)slot * kMaxT * I, ld = I;
        if (prefetch_down) {
            const int part = it * split + rank, parts = items * split;
            const size_t de = (size_t)e * H * I; // the expert's first element of [E x H x I]
            if (INT4) {
                block_prefetch_l2(static_cast<const uint32_t *>(w.down) + de / 8, (size_t)H * I / 2, part, parts);
                block_prefetch_l2(w.down_s + de / 32, (size_t)H * I / 16, part, parts);
            } else {
                block_prefetch_l2(static_cast<const bf16 *>(w.down) + de, (size_t)H * I * 2, part, parts);
            }
        }
        if constexpr (kStaged) {
            if (T > kMoeStageT) // the dispatch takes this form for T <= kMoeStageT only
                __trap();
            gate_up_int4_staged(stage[warp], reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.gate) + r * (H / 8)),
                                reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.up) + r * (H / 8)),
                                reinterpret_cast<const uint32_t *>(w.gate_s + r * G),
                                reinterpret_cast<const uint32_t *>(w.up_s + r * G), h, H, T, g0, g1, ag[0], au[0]);
        } else if (INT4)
            gate_up_int4<ROWT, UNR>(reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.gate) + r * (H / 8)),
                                    reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.up) + r * (H / 8)),
                                    reinterpret_cast<const uint32_t *>(w.gate_s + r * G),
                                    reinterpret_cast<const uint32_t *>(w.up_s + r * G), G, h, H, T, g0, g1, ag, au);
        else
            gate_up_bf16<ROWT, UNR>(static_cast<const bf16 *>(w.gate) + r * H, static_cast<const bf16 *>(w.up) + r * H,
                                    H, h, T, g0, g1, ag, au);
    }
#pragma unroll
    for (int k = 0; k < ROWT; k++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            red[warp][k][c][lane] = ag[k][c], red[warp][ROWT + k][c][lane] = au[k][c];
    __syncthreads();
    // warp k < ROWT finishes tile k: c0, c1 row gi, tokens 2 ti, 2 ti + 1; c2, c3 row gi + 8
    const int k = warp < ROWT ? warp : 0;
    float sg[4] = {}, su[4] = {};
    if (warp < ROWT)
#pragma unroll
        for (int c = 0; c < 4; c++)
            for (int v = 0; v < kMoeWarps; v++)
                sg[c] += red[v][k][c][lane], su[c] += red[v][ROWT + k][c][lane];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
    if (split > 1) // clusters are SM90 and later; the launcher never asks for one before
        __trap();
#else
    if (split > 1) { // every thread of the cluster reaches both barriers
        cg::cluster_group cluster = cg::this_cluster();
        if (warp < ROWT)
#pragma unroll
            for (int c = 0; c < 4; c++)
                csum[k][c][lane] = sg[c], csum[ROWT + k][c][lane] = su[c];
        cluster.sync(); // release / acquire: the ranks' csum are visible to rank 0
        if (rank == 0 && warp < ROWT)
#pragma unroll
            for (int c = 0; c < 4; c++) {
                sg[c] = su[c] = 0.0f;
                for (int q = 0; q < split; q++) {
                    const float *o = cluster.map_shared_rank(&csum[0][0][0], q);
                    sg[c] += o[(k * 4 + c) * kWarp + lane], su[c] += o[((ROWT + k) * 4 + c) * kWarp + lane];
                }
            }
        cluster.sync(); // rank 0 has read them: the others' shared memory may go
        if (rank != 0)
            return;
    }
#endif
    if (warp >= ROWT)
        return;
#pragma unroll
    for (int c = 0; c < 4; c++) {
        const float g = sg[c], u = su[c];
        const int n = 2 * ti + (c & 1), r = row0 + 16 * k + gi + 8 * (c >> 1);
        if (n < T)
            dst[(size_t)n * ld + r] = to_bf(g / (1.0f + expf(-g)) * u);
    }
}

template <bool INT4, int ROWT, int UNR>
__global__ void __launch_bounds__(kMoeWarps *kWarp, 2)
    moe_down_kernel(moe_weights w, moe_route rt, const bf16 *__restrict__ act, const bf16 *__restrict__ act_sh,
                    bf16 *__restrict__ part, int T)
{
    __shared__ float red[kMoeWarps][ROWT][4][kWarp];
    __shared__ int32_t uniq[kMaxSlots];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, gi = lane / 4, ti = lane % 4;
    const int H = w.H, I = w.I, Is = w.Is, Gi = I / 32, Gs = Is / 32;
    const int r0 = blockIdx.x * 16 * ROWT;
    pdl_launch_dependents();
    for (int r = warp; r < 16 * ROWT; r += kMoeWarps) // the shared expert's rows, before the wait
        warp_prefetch_l2(w.sh_down + (size_t)(r0 + r) * Is, (size_t)Is * 2);
    pdl_wait();
    // The selection, a thread per slot (uniq has kMaxSlots entries; those past n_uniq are
    // never used): loaded here, stored after the shared expert, so its round trip overlaps
    // the shared expert's loads.
    const int32_t my_uniq = threadIdx.x < kMaxSlots ? rt.uniq[threadIdx.x] : 0;
    const int n_uniq = min(*rt.n_uniq, kMaxSlots);
    float acc[ROWT][4] = {};
    for (int g = warp; g < Gs; g += kMoeWarps) { // the shared expert (weight 1)
        const uint4 xb = ld_b(act_sh, Is, g, T);
#pragma unroll
        for (int k = 0; k < ROWT; k++) {
            uint4 a0, a1;
            ld_a_bf16(w.sh_down + (size_t)(r0 + 16 * k) * Is, Is, g, a0, a1);
            mma_bf16_group(acc[k], a0, a1, xb);
        }
    }
    if (threadIdx.x < kMaxSlots)
        uniq[threadIdx.x] = my_uniq;
    __syncthreads();
    const int npairs = n_uniq * Gi;
    for (int q0 = warp; q0 < npairs; q0 += kMoeWarps * UNR) {
        uint2 qa[UNR][ROWT];
        uint32_t sa[UNR][ROWT];
        uint4 ba[UNR][ROWT][2], xb[UNR];
        float2 cf[UNR];
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            const int q = q0 + j * kMoeWarps;
            if (q >= npairs)
                break;
            const int u = q / Gi, grp = q % Gi;
            const size_t r = (size_t)uniq[u] * H + r0; // first row of the [E x H x I] tensor
            xb[j] = ld_b(act + (size_t)u * kMaxT * I, I, grp, T);
            cf[j] = *reinterpret_cast<const float2 *>(rt.coef + u * kMaxT + 2 * ti);
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                const size_t rk = r + 16 * k;
                if (INT4) {
                    qa[j][k] = ld_stream2(reinterpret_cast<const uint2 *>(static_cast<const uint32_t *>(w.down) + rk * (I / 8)) +
                                          grp * kWarp + lane);
                    sa[j][k] = __ldg(reinterpret_cast<const uint32_t *>(w.down_s + rk * Gi) + grp * 8 + gi);
                } else {
                    ld_a_bf16(static_cast<const bf16 *>(w.down) + rk * I, I, grp, ba[j][k][0], ba[j][k][1]);
                }
            }
        }
#pragma unroll
        for (int j = 0; j < UNR; j++) {
            if (q0 + j * kMoeWarps >= npairs)
                break;
#pragma unroll
            for (int k = 0; k < ROWT; k++) {
                float p[4];
                float s0 = 1.0f, s1 = 1.0f;
                if (INT4) {
                    mma_int4_group(p, qa[j][k], xb[j]);
                    s0 = bf16_lo(sa[j][k]), s1 = bf16_hi(sa[j][k]);
                } else {
                    p[0] = p[1] = p[2] = p[3] = 0.0f;
                    mma_bf16_group(p, ba[j][k][0], ba[j][k][1], xb[j]);
                }
                acc[k][0] = fmaf(cf[j].x, s0 * p[0], acc[k][0]), acc[k][1] = fmaf(cf[j].y, s0 * p[1], acc[k][1]);
                acc[k][2] = fmaf(cf[j].x, s1 * p[2], acc[k][2]), acc[k][3] = fmaf(cf[j].y, s1 * p[3], acc[k][3]);
            }
        }
    }
#pragma unroll
    for (int k = 0; k < ROWT; k++)
#pragma unroll
        for (int c = 0; c < 4; c++)
            red[warp][k][c][lane] = acc[k][c];
    __syncthreads();
    if (warp >= ROWT)
        return;
    const int k = warp;
#pragma unroll
    for (int c = 0; c < 4; c++) {
        float s = 0.0f;
        for (int v = 0; v < kMoeWarps; v++)
            s += red[v][k][c][lane];
        const int n = 2 * ti + (c & 1), r = r0 + 16 * k + gi + 8 * (c >> 1);
        if (n < T)
            part[(size_t)n * H + r] = to_bf(s);
    }
}

// A cluster of `split` CTAs (split > 1; with PDL when the context asks for it).
template <typename... KArgs, typename... Args>
cudaError_t launch_cluster(const launch_ctx &c, void (*kernel)(KArgs...), dim3 grid, dim3 block, int split,
                           Args... args)
{
    if (split <= 1)
        return launch(c, kernel, grid, block, 0, args...);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.stream = c.stream;
    cudaLaunchAttribute attr[2];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = (unsigned)split;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    attr[1].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[1].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = c.pdl ? 2 : 1;
    return cudaLaunchKernelEx(&cfg, kernel, static_cast<KArgs>(args)...);
}

// Rows per CTA (ROWT tiles), groups in flight per lane (UNR) and CTAs per SM (MINB):
//   gate/up T <= 3: 1 tile, 4 groups, two CTAs per SM (one computes while the other waits;
//                   8 groups would take ~200 registers, one CTA per SM);
//           T >= 4: 2 tiles (each token vector loaded once for both: at T = 8 the tokens'
//                   bytes would otherwise rival the weights'), 2 groups, two CTAs per SM;
//   down    T <= 3: 1 tile, T >= 4: 2; 8 INT4 or 4 bf16 (expert, group) pairs per tile.
// split: CTAs per gate/up tile (a cluster, moe_split_for).
template <bool INT4, int ROWT, int UNR, int MINB>
cudaError_t moe_dispatch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                         bf16 *act_sh, bf16 *part, int T, int max_slots, int split, int which)
{
    constexpr int kUnrDown = (INT4 ? 8 : 4) / ROWT;
    const dim3 block(kMoeWarps * kWarp);
    const int rows = 16 * ROWT, prefetch_down = T == 1;
    cudaError_t e = cudaSuccess;
    if (which & 1)
        e = launch_cluster(c, moe_gate_up_kernel<INT4, ROWT, UNR, MINB>,
                           dim3((w.Is / rows + max_slots * (w.I / rows)) * split), block, split, w, rt, h, act,
                           act_sh, T, split, prefetch_down);
    if (e == cudaSuccess && (which & 2))
        e = launch(c, moe_down_kernel<INT4, ROWT, kUnrDown>, dim3(w.H / rows), block, 0, w, rt, (const bf16 *)act,
                   (const bf16 *)act_sh, part, T);
    return e;
}

template <bool INT4>
cudaError_t moe_by_t(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                     bf16 *act_sh, bf16 *part, int T, int max_slots, int split, int which)
{
    return T <= kMoeStageT ? moe_dispatch<INT4, 1, 4, 2>(c, w, rt, h, act, act_sh, part, T, max_slots, split, which)
                  : moe_dispatch<INT4, 2, 2, 2>(c, w, rt, h, act, act_sh, part, T, max_slots, split, which);
}

// The default split, from T alone (so a step's bits do not depend on the GPU). At T = 1
// the 144 tiles of Kimi-K2 (16 shared, 8 x 16 routed) fill barely one CTA per SM, each
// warp walking 28 groups in 7 round trips, and the 16 bf16 shared-expert tiles read 4 x
// the bytes of a routed one on one SM each; with 4 CTAs per tile each warp walks 7 groups,
// two CTAs per SM. At T = 2 (272 tiles) 2 per tile spare a second wave of 8 CTAs; from
// T = 3 (about 360 active tiles) the grid already fills more than a wave.
int moe_split_for(int T) { return T == 1 ? 4 : T == 2 ? 2 : 1; }

} // namespace

// which: 1 gate/up, 2 down, 3 both; split 0: moe_split_for(T) (1 on a device without clusters).
static cudaError_t moe_launch(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h,
                              bf16 *act, bf16 *act_sh, bf16 *part, int T, int max_slots, int split, int which)
{
    if (w.H % 32 || w.I % 32 || w.Is % 32 || w.H <= 0 || w.I <= 0 || w.Is <= 0 || T < 1 || T > kMaxT ||
        max_slots < 1 || max_slots > kMaxSlots || split < 0 || split > kMoeMaxSplit || (split & (split - 1)))
        return cudaErrorInvalidValue;
    const uintptr_t int4_ptrs = (uintptr_t)w.gate | (uintptr_t)w.up | (uintptr_t)w.gate_s | (uintptr_t)w.up_s |
                                (uintptr_t)w.down | (uintptr_t)w.down_s | (uintptr_t)h;
    if (w.gate_s && int4_ptrs % 16) // the staged gate/up copies 16-byte pieces
        return cudaErrorMisalignedAddress;
    if (split != 1) { // a cluster launch needs the device's support (SM90 and later)
        int dev = 0, clusters = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&clusters, cudaDevAttrClusterLaunch, dev) != cudaSuccess)
            return cudaErrorInvalidDevice;
        if (!clusters && split > 1)
            return cudaErrorNotSupported;
        if (split == 0)
            split = clusters ? moe_split_for(T) : 1;
    }
    return w.gate_s ? moe_by_t<true>(c, w, rt, h, act, act_sh, part, T, max_slots, split, which)
                    : moe_by_t<false>(c, w, rt, h, act, act_sh, part, T, max_slots, split, which);
}

cudaError_t moe_gate_up(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                        bf16 *act_sh, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, nullptr, T, max_slots, 0, 1);
}

cudaError_t moe_gate_up_split(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h,
                              bf16 *act, bf16 *act_sh, int T, int max_slots, int split)
{
    if (split < 1)
        return cudaErrorInvalidValue;
    return moe_launch(c, w, rt, h, act, act_sh, nullptr, T, max_slots, split, 1);
}

cudaError_t moe_down(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *act,
                     const bf16 *act_sh, bf16 *part, int T)
{
    return moe_launch(c, w, rt, nullptr, const_cast<bf16 *>(act), const_cast<bf16 *>(act_sh), part, T, 1, 1, 2);
}

cudaError_t moe_block(const launch_ctx &c, const moe_weights &w, const moe_route &rt, const bf16 *h, bf16 *act,
                      bf16 *act_sh, bf16 *part, int T, int max_slots)
{
    return moe_launch(c, w, rt, h, act, act_sh, part, T, max_slots, 0, 3);
}

} // namespace arbk
