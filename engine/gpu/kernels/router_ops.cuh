// SPDX-License-Identifier: MIT
// One block index of the router's two kernels (router.cu: what they compute), for their own
// launches and persist.cu's persistent launch alike (P: common.cuh's sync).
#ifndef ARB_ENGINE_KERNELS_ROUTER_OPS_CUH
#define ARB_ENGINE_KERNELS_ROUTER_OPS_CUH

#include <cmath>

#include "gpu/kernels/rowdot.cuh"

namespace arbk {

constexpr int kRouterWarps = 8; // a block per expert row, the row split over its warps
constexpr int kRouterVecs = 4;  // 16-byte weight vectors per lane loaded before waiting on the predecessor
constexpr int kTopkWarps = 8;   // the top-k block: warp t routes token t
static_assert(kTopkWarps >= kMaxT, "a warp per token in the top-k");

struct best_t {
    float v;
    int i;
};

// The warp's best (value, then lowest index) in two warp reductions: the value as an
// order-preserving unsigned key (-0 taken as +0, so equal values tie), then the lowest
// index among the lanes holding that key. Indices are >= 0.
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
__device__ __forceinline__ unsigned long long kept_groups(const float *sc, const float *bs, int n_group, int topk_group,
                                                          int gsz)
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

// Top-k of every token and the dedupe, one block of kTopkWarps warps (warp t routes token
// t), NL >= E / 32 choices per lane. Dynamic shared memory: score [T x E], bias [E] (staged
// before the PDL wait: a weight, not the logits kernel's output), then the candidates
// [T x E] (16-bit expert indices). A choice is score + bias, the same fp32 add wherever it
// is formed. Per token, with no serial pick:
//   thr = the k-th largest of the 32 lanes' best choices (k lanes hold a choice >= thr, so
//         every one of the top k is >= thr);
//   the candidates (eligible, choice >= thr) listed in shared memory, usually about k;
//   each candidate's rank among them by (choice descending, index ascending), counted by
//   the lanes in parallel; rank j < k is the j-th pick. The weights by the lanes (their
//   sum in pick order). Then the dedupe by T k threads: an entry is an expert's first when
//   no earlier entry names it; its slot is the number of distinct experts below it.
// topk_smem: router_topk_smem(E, T) bytes (16-byte aligned). STAGED: the caller has already put
// the bias in its place there (router.cu's logits blocks, before their wait), so it is not read
// again. The scores' loads are issued four at a time before any is used (one trip to L2 for a
// block's share at T <= 4 and E <= 256 a thread, instead of one a load).
template <int NL, class P, bool STAGED = false>
__device__ __forceinline__ void router_topk_tile(const P &pol, const float *logits, const float *__restrict__ bias,
                                                 const moe_route &rt, int E, int k, int n_group, int topk_group,
                                                 float scaling, int T, float *topk_smem)
{
    float *score = topk_smem, *bias_s = score + T * E;
    unsigned short *cand = reinterpret_cast<unsigned short *>(bias_s + E);
    __shared__ int sel[kMaxT * kMaxTopk], slot_of[kMaxT * kMaxTopk], first[kMaxT * kMaxTopk];
    __shared__ float selw[kMaxT * kMaxTopk], selsc[kMaxT * kMaxTopk];
    pol.launch_dependents();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp, gsz = E / n_group;
    if (!STAGED)
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            bias_s[e] = bias[e];
    pol.wait();
    constexpr int kScoreLoads = 4;
    const int ns = T * E, step = (int)blockDim.x;
    for (int i0 = threadIdx.x; i0 < ns; i0 += kScoreLoads * step) { // every token's scores
        float lv[kScoreLoads];
#pragma unroll
        for (int u = 0; u < kScoreLoads; u++)
            lv[u] = i0 + u * step < ns ? __ldcg(logits + i0 + u * step) : 0.0f;
#pragma unroll
        for (int u = 0; u < kScoreLoads; u++)
            if (i0 + u * step < ns)
                score[i0 + u * step] = 1.0f / (1.0f + expf(-lv[u]));
    }
    __syncthreads();
    if (warp < T) {
        const int t = warp;
        const float *sct = score + t * E;
        unsigned short *ct = cand + t * E;
        const unsigned long long keep = kept_groups(sct, bias_s, n_group, topk_group, gsz);
        float cv[NL]; // the lane's choices, e = lane + 32 i; -inf where not eligible
        float lm = -INFINITY;
#pragma unroll
        for (int i = 0; i < NL; i++) {
            const int e = lane + kWarp * i;
            const bool ok = e < E && (n_group <= 1 || ((keep >> (e / gsz)) & 1));
            cv[i] = ok ? sct[e] + bias_s[e] : -INFINITY;
            lm = fmaxf(lm, cv[i]);
        }
        int ge = 0; // lanes whose best choice is >= this lane's
        for (int l = 0; l < kWarp; l++)
            ge += __shfl_sync(0xffffffffu, lm, l) >= lm;
        const float thr = warp_max(ge >= k ? lm : -INFINITY);
        unsigned cm = 0; // the lane's candidates, bit i
#pragma unroll
        for (int i = 0; i < NL; i++)
            if (cv[i] != -INFINITY && cv[i] >= thr)
                cm |= 1u << i;
        const int mine = __popc(cm);
        int off = mine; // inclusive prefix over the lanes, then exclusive
#pragma unroll
        for (int o = 1; o < kWarp; o <<= 1) {
            const int v = __shfl_up_sync(0xffffffffu, off, o);
            if (lane >= o)
                off += v;
        }
        const int n_c = __shfl_sync(0xffffffffu, off, kWarp - 1);
        off -= mine;
#pragma unroll
        for (int i = 0; i < NL; i++)
            if ((cm >> i) & 1)
                ct[off++] = (unsigned short)(lane + kWarp * i);
        __syncwarp();
        for (int a = lane; a < n_c; a += kWarp) {
            const int ea = ct[a];
            const float va = sct[ea] + bias_s[ea];
            int rank = 0;
            for (int b = 0; b < n_c; b++) {
                const int eb = ct[b];
                const float vb = sct[eb] + bias_s[eb];
                rank += vb > va || (vb == va && eb < ea);
            }
            if (rank < k)
                sel[t * k + rank] = ea, selsc[t * k + rank] = sct[ea];
        }
        __syncwarp();
        const float sc = lane < k ? selsc[t * k + lane] : 0.0f;
        float sum = 0.0f;
        for (int j = 0; j < k; j++)
            sum += __shfl_sync(0xffffffffu, sc, j);
        if (lane < k) {
            selw[t * k + lane] = sc / sum * scaling;
            rt.experts[t * k + lane] = sel[t * k + lane];
        }
    }
    __syncthreads();
    const int n = T * k, i = threadIdx.x;
    int f = 0;
    if (i < n) {
        f = 1;
        for (int j = 0; j < i; j++)
            f &= sel[j] != sel[i];
        first[i] = f;
    }
    const int n_uniq = __syncthreads_count(f);
    if (i < n) {
        int slot = 0;
        for (int j = 0; j < n; j++)
            slot += first[j] && sel[j] < sel[i];
        slot_of[i] = slot;
        if (f)
            rt.uniq[slot] = sel[i];
    }
    if (i == 0)
        *rt.n_uniq = n_uniq;
    __syncthreads();
    for (int p = threadIdx.x; p < n_uniq * kMaxT; p += blockDim.x) { // coef[u][t]: 0 where t does not pick u
        const int u = p / kMaxT, t = p % kMaxT;
        float w = 0.0f;
        if (t < T)
            for (int j = 0; j < k; j++)
                w = slot_of[t * k + j] == u ? selw[t * k + j] : w;
        rt.coef[p] = w;
    }
}

size_t router_topk_smem(int E, int T);

// Block e: logits[t][e] = h[t] . router[e], the row's H / 8 vectors in kRouterWarps
// contiguous parts added in part order. The first kRouterVecs vectors of each lane are
// loaded into registers before waiting on the predecessor (the weights are not its
// output), so under PDL the row streams while the call site before the router finishes.
template <int T, class P>
__device__ __forceinline__ void router_logits_tile(const P &pol, const bf16 *h, const bf16 *__restrict__ W,
                                                   float *__restrict__ logits, int H, int E, int e)
{
    __shared__ float part[kRouterWarps][T];
    const int warp = threadIdx.x / kWarp, lane = threadIdx.x % kWarp;
    const int nvec = H / 8, per = (nvec + kRouterWarps - 1) / kRouterWarps;
    const int v0 = min(nvec, warp * per), v1 = min(nvec, v0 + per), pre = v0 + kRouterVecs * kWarp;
    const uint4 *w = reinterpret_cast<const uint4 *>(W + (size_t)e * H);
    pol.launch_dependents();
    uint4 wv[kRouterVecs];
#pragma unroll
    for (int u = 0; u < kRouterVecs; u++) {
        const int v = v0 + lane + u * kWarp;
        wv[u] = v < v1 ? ld_stream(w + v) : make_uint4(0u, 0u, 0u, 0u);
    }
    if (pre < v1) // a row longer than the registers hold: the rest toward L2
        warp_prefetch_l2(w + pre, (size_t)(v1 - pre) * 16);
    pol.wait();
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
                acc[t] += dot8(wf, ld_act<P::coherent>(xv + (size_t)t * nvec + v));
        }
    }
    for (int v = pre + lane; v < v1; v += kWarp) {
        float wf[8];
        unpack8(ld_stream(w + v), wf);
#pragma unroll
        for (int t = 0; t < T; t++)
            acc[t] += dot8(wf, ld_act<P::coherent>(xv + (size_t)t * nvec + v));
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

} // namespace arbk

#endif
