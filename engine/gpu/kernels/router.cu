// SPDX-License-Identifier: MIT
// The MoE router in one launch (forward.md):
//   logits[t][e] = h[t] . router[e]  (fp32)                       one warp per expert
//   then the last block to finish (an integer ticket, so no float atomics anywhere):
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

constexpr int kRouterWarps = 4; // more blocks for the logits; warps route tokens t, t + 4

struct best_t {
    float v;
    int i;
};

__device__ __forceinline__ best_t better(best_t a, best_t b)
{
    return (b.v > a.v || (b.v == a.v && b.i < a.i)) ? b : a;
}

__device__ __forceinline__ best_t warp_best(best_t b)
{
    for (int o = kWarp / 2; o > 0; o >>= 1) {
        const best_t other = {__shfl_xor_sync(0xffffffffu, b.v, o), __shfl_xor_sync(0xffffffffu, b.i, o)};
        b = better(b, other);
    }
    return b;
}

// The groups a token keeps (bit g; all when n_group is 1): the topk_group groups whose two
// largest choices sum highest, ties to the lower group index. By one warp; ch its choices.
__device__ __forceinline__ unsigned long long kept_groups(const float *ch, int n_group, int topk_group, int gsz)
{
    if (n_group <= 1)
        return ~0ull;
    const int lane = threadIdx.x % kWarp;
    float gs = -INFINITY; // lane g < n_group: the sum of its group's two largest choices
    if (lane < n_group) {
        float a = -INFINITY, b2 = -INFINITY;
        for (int e = lane * gsz; e < (lane + 1) * gsz; e++) {
            const float c = ch[e];
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

// Top-k of every token (warp t routes token t, shuffles only) and the dedupe; run by the
// whole (last) block. Shared memory per token: choice values, the kept-group mask.
__device__ void route_tokens(const float *logits, const float *__restrict__ bias, const moe_route &rt, int E, int k,
                             int n_group, int topk_group, float scaling, int T)
{
    __shared__ float choice[kRouterWarps][kMaxExperts];
    __shared__ float score_sel[kMaxT * kMaxTopk];
    __shared__ int sel[kMaxT * kMaxTopk];
    __shared__ float selw[kMaxT * kMaxTopk];
    __shared__ unsigned char used[kMaxExperts];
    __shared__ int slot_of[kMaxExperts];
    __shared__ int n_uniq_s;
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, gsz = E / n_group;
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        used[e] = 0;
    __syncthreads();
    for (int t = warp; t < T; t += kRouterWarps) {
        float *ch = choice[warp];
        for (int e = lane; e < E; e += kWarp)
            ch[e] = 1.0f / (1.0f + expf(-__ldcg(logits + (size_t)t * E + e))) + bias[e];
        __syncwarp();
        const unsigned long long keep = kept_groups(ch, n_group, topk_group, gsz);
        for (int j = 0; j < k; j++) {
            best_t b = {-INFINITY, 0x7fffffff};
            for (int e = lane; e < E; e += kWarp)
                if ((keep >> (e / gsz)) & 1)
                    b = better(b, best_t{ch[e], e});
            b = warp_best(b);
            if (lane == 0) {
                sel[t * k + j] = b.i;
                score_sel[t * k + j] = ch[b.i] - bias[b.i];
                ch[b.i] = -INFINITY; // taken
            }
            __syncwarp();
        }
        if (lane == 0) { // w_j = score / sum score * scaling, scores as sigmoid of the logit
            float sum = 0.0f;
            for (int j = 0; j < k; j++) {
                const int e = sel[t * k + j];
                score_sel[t * k + j] = 1.0f / (1.0f + expf(-__ldcg(logits + (size_t)t * E + e)));
                sum += score_sel[t * k + j];
            }
            for (int j = 0; j < k; j++) {
                const int e = sel[t * k + j];
                selw[t * k + j] = score_sel[t * k + j] / sum * scaling;
                rt.experts[t * k + j] = e;
                used[e] = 1;
            }
        }
        __syncwarp();
    }
    __syncthreads();
    publish_route(used, sel, selw, slot_of, &n_uniq_s, rt, E, k, T);
}

template <int T>
__global__ void __launch_bounds__(kRouterWarps *kWarp)
    router_kernel(const bf16 *__restrict__ h, const bf16 *__restrict__ W, const float *__restrict__ bias,
                  float *logits, unsigned *ticket, moe_route rt, int H, int E, int k, int n_group, int topk_group,
                  float scaling)
{
    __shared__ int last;
    const int e = blockIdx.x * kRouterWarps + threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    pdl_launch_dependents();
    if (e < E)
        warp_prefetch_l2(W + (size_t)e * H, (size_t)H * 2);
    pdl_wait();
    if (e < E) {
        float acc[T], unused[T];
        warp_rowdot<T, false>(W + (size_t)e * H, nullptr, h, H, H, acc, unused);
#pragma unroll
        for (int t = 0; t < T; t++)
            if (lane == t)
                logits[(size_t)t * E + e] = acc[t];
    }
    // Release this block's logits, take a ticket; the last block sees every block's.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    route_tokens(logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    if (threadIdx.x == 0)
        *ticket = 0; // ready for the next launch (the next layer, or the graph's next replay)
}

// ---- the default form: the logits split over more warps, every token routed at once ----

constexpr int kSplitWarps = 8;                      // block
constexpr int kSplitK = 4;                          // warps per expert row, each a quarter of H
constexpr int kSplitExperts = kSplitWarps / kSplitK; // experts per block

// route_tokens with warp t routing token t (T <= kMaxT = kSplitWarps), each lane keeping
// its best remaining expert so a pick rescans one lane's experts, and the weights by
// the lanes in parallel (their sum in the old order, j = 0 .. k-1).
__device__ void route_tokens_par(const float *logits, const float *__restrict__ bias, const moe_route &rt, int E,
                                 int k, int n_group, int topk_group, float scaling, int T)
{
    __shared__ float choice[kMaxT][kMaxExperts];
    __shared__ int sel[kMaxT * kMaxTopk];
    __shared__ float selw[kMaxT * kMaxTopk];
    __shared__ unsigned char used[kMaxExperts];
    __shared__ int slot_of[kMaxExperts];
    __shared__ int n_uniq_s;
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, gsz = E / n_group;
    for (int e = threadIdx.x; e < E; e += blockDim.x)
        used[e] = 0;
    __syncthreads();
    if (warp < T) {
        const int t = warp;
        float *ch = choice[t];
        for (int e = lane; e < E; e += kWarp)
            ch[e] = 1.0f / (1.0f + expf(-__ldcg(logits + (size_t)t * E + e))) + bias[e];
        __syncwarp();
        const unsigned long long keep = kept_groups(ch, n_group, topk_group, gsz);
        unsigned mine = 0; // lane's experts e = lane + 32 i still eligible, bit i
        for (int i = 0, e = lane; e < E; i++, e += kWarp)
            if ((keep >> (e / gsz)) & 1)
                mine |= 1u << i;
        auto local_best = [&]() {
            best_t b = {-INFINITY, 0x7fffffff};
            for (int i = 0, e = lane; e < E; i++, e += kWarp)
                if ((mine >> i) & 1)
                    b = better(b, best_t{ch[e], e});
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
        const float score = lane < k ? 1.0f / (1.0f + expf(-__ldcg(logits + (size_t)t * E + my_e))) : 0.0f;
        float sum = 0.0f;
        for (int j = 0; j < k; j++)
            sum += __shfl_sync(0xffffffffu, score, j);
        if (lane < k) {
            sel[t * k + lane] = my_e;
            selw[t * k + lane] = score / sum * scaling;
            rt.experts[t * k + lane] = my_e;
            used[my_e] = 1;
        }
    }
    __syncthreads();
    publish_route(used, sel, selw, slot_of, &n_uniq_s, rt, E, k, T);
}

template <int T>
__global__ void __launch_bounds__(kSplitWarps *kWarp)
    router_split_kernel(const bf16 *__restrict__ h, const bf16 *__restrict__ W, const float *__restrict__ bias,
                        float *logits, unsigned *ticket, moe_route rt, int H, int E, int k, int n_group,
                        int topk_group, float scaling)
{
    __shared__ float part[kSplitWarps][T];
    __shared__ int last;
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int e = blockIdx.x * kSplitExperts + warp / kSplitK, q = warp % kSplitK;
    const int per = (H / 8 + kSplitK - 1) / kSplitK * 8; // inputs per quarter, a multiple of 8
    const int k0 = q * per, k1 = min(H, k0 + per);
    pdl_launch_dependents();
    if (e < E && k0 < k1)
        warp_prefetch_l2(W + (size_t)e * H + k0, (size_t)(k1 - k0) * 2);
    pdl_wait();
    float acc[T], unused[T];
#pragma unroll
    for (int t = 0; t < T; t++)
        acc[t] = 0.0f;
    if (e < E && k0 < k1)
        warp_rowdot<T, false>(W + (size_t)e * H + k0, nullptr, h + k0, H, k1 - k0, acc, unused);
    if (lane == 0)
#pragma unroll
        for (int t = 0; t < T; t++)
            part[warp][t] = acc[t];
    __syncthreads();
    if (threadIdx.x < kSplitExperts * T) { // quarters added in a fixed order
        const int x = threadIdx.x / T, t = threadIdx.x % T, ex = blockIdx.x * kSplitExperts + x;
        if (ex < E) {
            float s = part[x * kSplitK][t];
#pragma unroll
            for (int j = 1; j < kSplitK; j++)
                s += part[x * kSplitK + j][t];
            logits[(size_t)t * E + ex] = s;
        }
    }
    // Release this block's logits, take a ticket; the last block sees every block's.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0)
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    __syncthreads();
    if (!last)
        return;
    __threadfence();
    route_tokens_par(logits, bias, rt, E, k, n_group, topk_group, scaling, T);
    if (threadIdx.x == 0)
        *ticket = 0;
}

} // namespace

// One launch of the router for T tokens: the split form (four warps per expert row) or,
// with ARB_ENGINE_OLD=router, the previous one (a warp per expert row).
template <int T>
cudaError_t router_t(const launch_ctx &c, bool split, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                     unsigned *ticket, const moe_route &rt, int H, int E, int k, int n_group, int topk_group,
                     float scaling)
{
    if (split)
        return launch(c, router_split_kernel<T>, dim3((E + kSplitExperts - 1) / kSplitExperts), dim3(kSplitWarps * kWarp), 0,
                      h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    return launch(c, router_kernel<T>, dim3((E + kRouterWarps - 1) / kRouterWarps), dim3(kRouterWarps * kWarp), 0, h, W,
                  bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
}

cudaError_t router(const launch_ctx &c, const bf16 *h, const bf16 *W, const float *bias, float *logits,
                   unsigned *ticket, const moe_route &rt, int H, int E, int k, int n_group, int topk_group,
                   float scaling, int T)
{
    if (E > kMaxExperts || k > kMaxTopk || n_group > kMaxGroups || n_group < 1 || E % n_group || H % 8)
        return cudaErrorInvalidValue;
    const bool split = !use_old("router");
    switch (T) {
    case 1: return router_t<1>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 2: return router_t<2>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 3: return router_t<3>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 4: return router_t<4>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 5: return router_t<5>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 6: return router_t<6>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 7: return router_t<7>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    case 8: return router_t<8>(c, split, h, W, bias, logits, ticket, rt, H, E, k, n_group, topk_group, scaling);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace arbk
