// SPDX-License-Identifier: MIT
// The MoE router in two launches (forward.md):
//   router_logits  logits[t][e] = h[t] . router[e] (fp32): a block per expert row, eight
//                  warps over H, each lane's first vectors loaded before the PDL wait
//   router_topk    one block, launched under PDL behind the logits (the bias staged before
//                  its wait), a warp per token:
//   score = sigmoid(logits); choice = score + e_score_correction_bias
//   groups: keep the topk_group groups whose top-2 choice sum is largest (all if n_group 1)
//   top-k experts by choice among the kept groups, ties to the lower index
//   w_j = score[e_j] / sum_j score[e_j] * routed_scaling_factor
// and the step's dedupe for the MoE kernels: the distinct experts in ascending order
// (uniq, n_uniq) and coef[u][t] = the weight token t gives expert uniq[u] (0 if none).
#include "gpu/kernels/kernels.h"

#include <cmath>

#include "gpu/kernels/rowdot.cuh"

namespace arbk {
namespace {

constexpr int kRouterWarps = 8; // a block per expert row, the row split over its warps
constexpr int kRouterVecs = 4;  // 16-byte weight vectors per lane loaded before waiting on the predecessor
constexpr int kTopkWarps = 8;   // the top-k block: warp t routes token t
static_assert(kTopkWarps >= kMaxT, "a warp per token in the top-k");

struct best_t {
    float v;
    int i;
};

__device__ __forceinline__ best_t better(best_t a, best_t b)
{
    return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

// The warp's best (value, then lowest index) in two warp reductions: the value as an
// order-preserving unsigned key (-0 taken as +0, so equal values tie as better() has
// them), then the lowest index among the lanes holding that key. Indices are >= 0.
__device__ __forceinline__ best_t warp_best(best_t b)
{
    const unsigned u = __float_as_uint(b.v + 0.0f);
    const unsigned key = (u & 0x80000000u) ? ~u : u | 0x80000000u;
    const unsigned top = __reduce_max_sync(0xffffffffu, key);
    const unsigned idx = __reduce_min_sync(0xffffffffu, key == top ? (unsigned)b.i : 0xffffffffu);
    const unsigned tu = (top & 0x80000000u) ? top & 0x7fffffffu : ~top;
    return best_t{__uint_as_float(tu), (int)idx};
}

// The groups a token keeps (bit g; all when n_group is 1): the topk_group groups whose two
// largest choices sum highest, ties to the lower group index. By one warp; its choices are
// sc[e] + bs[e] (score and bias).
__device__ __forceinline__ unsigned long long kept_groups(const float *sc, const float *bs, int n_group,
                                                          int topk_group, int gsz)
{
    if (n_group <= 1)
        return ~0ull;
    const int lane = threadIdx.x % kWarp;
    float gs = -INFINITY; // lane g < n_group: the sum of its group's two largest choices
    if (lane < n_group) {
        float a = -INFINITY, b2 = -INFINITY;
        for (int e = lane * gsz; e < (lane + 1) * gsz; e++) {
            const float c = sc[e] + bs[e];
            if (c > a)
                b2 = a, a = c;
            else if (c > b2)
                b2 = c;
        }
        gs = a + b2;
    }
    unsigned long long keep = 0;
    for (int kept = 0; kept < topk_group; kept++) {
        best_t b = {(lane < n_group && !((keep >> lane) & 1)) ? gs : -INFINITY, lane < n_group ? lane : 0x7fffffff};
        b = warp_best(b);
        keep |= 1ull << b.i;
    }
    return keep;
}

// After the top-k (used, sel, selw in shared memory, then a barrier): the distinct experts
// ascending (uniq, n_uniq) and coef[u][t]; by the whole block.
__device__ void publish_route(const unsigned char *used, const int *sel, const float *selw, int *slot_of,
                              int *n_uniq_s, const moe_route &rt, int E, int k, int T)
{
    if (threadIdx.x < kWarp) { // distinct experts, ascending: ballot and prefix count
        int count = 0;
        for (int base = 0; base < E; base += kWarp) {
            const int e = base + threadIdx.x;
            const bool f = e < E && used[e];
            const unsigned mask = __ballot_sync(0xffffffffu, f);
            if (f) {
                const int pos = count + __popc(mask & ((1u << threadIdx.x) - 1u));
                rt.uniq[pos] = e;
                slot_of[e] = pos;
            }
            count += __popc(mask);
        }
        if (threadIdx.x == 0)
            *n_uniq_s = count, *rt.n_uniq = count;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < *n_uniq_s * kMaxT; i += blockDim.x)
        rt.coef[i] = 0.0f;
    __syncthreads();
    for (int i = threadIdx.x; i < T * k; i += blockDim.x)
        rt.coef[slot_of[sel[i]] * kMaxT + i / k] = selw[i];
}

// Top-k of every token (warp t routes token t) and the dedupe, one block of kTopkWarps
// warps. The bias is staged before the PDL wait (it is a weight, not the logits kernel's
// output). The scores by all threads, kept in shared memory (a choice, score + bias, is
// formed where it is read: the same fp32 add each time); then each lane
// holds its experts' choices in registers and keeps its best remaining one, a pick is two
// warp reductions and its owner rescans its registers; the weights by the lanes in
// parallel (their sum in pick order).
__global__ void __launch_bounds__(kTopkWarps *kWarp)
    router_topk_kernel(const float *logits, const float *__restrict__ bias, moe_route rt, int E, int k, int n_group,
                       int topk_group, float scaling, int T)
{
    __shared__ float score[kMaxT][kMaxExperts]; // a choice is score + bias_s, formed where used
    __shared__ float bias_s[kMaxExperts];
    __shared__ int sel[kMaxT * kMaxTopk];
    __shared__ float selw[kMaxT * kMaxTopk];
    __shared__ unsigned char used[kMaxExperts];
    __shared__ int slot_of[kMaxExperts];
    __shared__ int n_uniq_s;
    pdl_launch_dependents();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, gsz = E / n_group;
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        bias_s[e] = bias[e], used[e] = 0;
    pdl_wait();
    for (int i = threadIdx.x; i < T * E; i += blockDim.x) // every token's scores
        score[i / E][i % E] = 1.0f / (1.0f + expf(-__ldcg(logits + i)));
    __syncthreads();
    if (warp < T) {
        const int t = warp;
        const float *sct = score[t];
        const unsigned long long keep = kept_groups(sct, bias_s, n_group, topk_group, gsz);
        unsigned mine = 0; // lane's experts e = lane + 32 i still eligible, bit i
        for (int i = 0, e = lane; e < E; i++, e += kWarp)
            if ((keep >> (e / gsz)) & 1)
                mine |= 1u << i;
        float cv[kMaxExperts / kWarp]; // the lane's choices in registers: a rescan reads no memory
#pragma unroll
        for (int i = 0; i < kMaxExperts / kWarp; i++)
            cv[i] = lane + kWarp * i < E ? sct[lane + kWarp * i] + bias_s[lane + kWarp * i] : -INFINITY;
        auto local_best = [&]() {
            best_t b = {-INFINITY, 0x7fffffff};
#pragma unroll
            for (int i = 0; i < kMaxExperts / kWarp; i++)
                if ((mine >> i) & 1)
                    b = better(b, best_t{cv[i], lane + kWarp * i});
            return b;
        };
        best_t lb = local_best();
        int my_e = 0x7fffffff; // lane j < k: the j-th pick
        for (int j = 0; j < k; j++) {
            const best_t b = warp_best(lb);
            if (lane == j)
                my_e = b.i;
            if (b.i % kWarp == lane && b.i < E) { // the owner drops it and rescans
                mine &= ~(1u << (b.i / kWarp));
                lb = local_best();
            }
        }
        const float sc = lane < k ? sct[my_e] : 0.0f;
        float sum = 0.0f;
        for (int j = 0; j < k; j++)
            sum += __shfl_sync(0xffffffffu, sc, j);
        if (lane < k) {
            sel[t * k + lane] = my_e;
            selw[t * k + lane] = sc / sum * scaling;
            rt.experts[t * k + lane] = my_e;
            used[my_e] = 1;
        }
    }
    __syncthreads();
    publish_route(used, sel, selw, slot_of, &n_uniq_s, rt, E, k, T);
}

// Block e: logits[t][e] = h[t] . router[e], the row's H / 8 vectors in kRouterWarps
// contiguous parts added in part order. The first kRouterVecs vectors of each lane are
// loaded into registers before waiting on the predecessor (the weights are not its
// output), so under PDL the row streams while the call site before the router finishes.
template <int T>
__global__ void __launch_bounds__(kRouterWarps *kWarp)
    router_logits_kernel(const bf16 *__restrict__ h, const bf16 *__restrict__ W, float *__restrict__ logits, int H,
                         int E)
{
    __shared__ float part[kRouterWarps][T];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp, e = blockIdx.x;
    const int nvec = H / 8, per = (nvec + kRouterWarps - 1) / kRouterWarps;
    const int v0 = min(nvec, warp * per), v1 = min(nvec, v0 + per), pre = v0 + kRouterVecs * kWarp;
    const uint4 *w = reinterpret_cast<const uint4 *>(W + (size_t)e * H);
    pdl_launch_dependents();
    uint4 wv[kRouterVecs];
#pragma unroll
    for (int u = 0; u < kRouterVecs; u++) {
        const int v = v0 + lane + u * kWarp;
        wv[u] = v < v1 ? ld_stream(w + v) : make_uint4(0u, 0u, 0u, 0u);
    }
    if (pre < v1) // a row longer than the registers hold: the rest toward L2
        warp_prefetch_l2(w + pre, (size_t)(v1 - pre) * 16);
    pdl_wait();
    const uint4 *xv = reinterpret_cast<const uint4 *>(h);
    float acc[T];
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f;
#pragma unroll
    for (int u = 0; u < kRouterVecs; u++) {
        const int v = v0 + lane + u * kWarp;
        if (v < v1) {
            float wf[8];
            unpack8(wv[u], wf);
#pragma unroll
            for (int t = 0; t < T; t++)
                acc[t] += dot8(wf, __ldg(xv + (size_t)t * nvec + v));
        }
    }
    for (int v = pre + lane; v < v1; v += kWarp) {
        float wf[8];
        unpack8(ld_stream(w + v), wf);
#pragma unroll
        for (int t = 0; t < T; t++)
            acc[t] += dot8(wf, __ldg(xv + (size_t)t * nvec + v));
    }
#pragma unroll
    for (int t = 0; t < T; t++) {
        const float s = warp_sum(acc[t]);
        if (lane == 0)
            part[warp][t] = s;
    }
    __syncthreads();
    if (threadIdx.x < T) { // parts added in a fixed order
        const int t = threadIdx.x;
        float s = part[0][t];
#pragma unroll
        for (int j = 1; j < kRouterWarps; j++)
            s += part[j][t];
        logits[(size_t)t * E + e] = s;
    }
}

} // namespace

cudaError_t router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                   const moe_route &rt, int H, int E, int k, int n_group, int topk_group, float scaling, int T)
{
    if (E > kMaxExperts || k > kMaxTopk || n_group > kMaxGroups || n_group < 1 || E % n_group || H % 8 || T < 1 ||
        T > kMaxT)
        return cudaErrorInvalidValue;
    const dim3 grid(E), block(kRouterWarps * kWarp);
    cudaError_t err = cudaErrorInvalidValue;
    switch (T) {
    case 1: err = launch(c, router_logits_kernel<1>, grid, block, 0, h, W, logits, H, E); break;
    case 2: err = launch(c, router_logits_kernel<2>, grid, block, 0, h, W, logits, H, E); break;
    case 3: err = launch(c, router_logits_kernel<3>, grid, block, 0, h, W, logits, H, E); break;
    case 4: err = launch(c, router_logits_kernel<4>, grid, block, 0, h, W, logits, H, E); break;
    case 5: err = launch(c, router_logits_kernel<5>, grid, block, 0, h, W, logits, H, E); break;
    case 6: err = launch(c, router_logits_kernel<6>, grid, block, 0, h, W, logits, H, E); break;
    case 7: err = launch(c, router_logits_kernel<7>, grid, block, 0, h, W, logits, H, E); break;
    case 8: err = launch(c, router_logits_kernel<8>, grid, block, 0, h, W, logits, H, E); break;
    }
    if (err != cudaSuccess)
        return err;
    return launch(c, router_topk_kernel, dim3(1), dim3(kTopkWarps * kWarp), 0, logits, bias, rt, E, k, n_group,
                  topk_group, scaling, T);
}

} // namespace arbk
