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

// An order-preserving unsigned key of a float (larger float, larger key; -0 below +0, which
// only the threshold below meets, where a comparison of floats treats them as equal anyway).
__device__ __forceinline__ unsigned float_key(float v)
{
    const unsigned u = __float_as_uint(v);
    return (u & 0x80000000u) ? ~u : u | 0x80000000u;
}
__device__ __forceinline__ float key_float(unsigned k)
{
    return __uint_as_float((k & 0x80000000u) ? k & 0x7fffffffu : ~k);
}

// Top-k of every token and the dedupe, one block of kTopkWarps warps (warp t routes token
// t), NL >= E / 32 choices per lane. Dynamic shared memory: score [T x E], bias [E] (staged
// before the PDL wait: a weight, not the logits kernel's output), then the candidates
// [T x E] (16-bit expert indices). A choice is score + bias, the same fp32 add wherever it
// is formed. Per token, with no serial pick:
//   thr = the k-th largest of the 32 lanes' best choices (k lanes hold a choice >= thr, so
//         every one of the top k is >= thr);
//   the candidates (eligible, choice >= thr) listed in shared memory in ascending expert
//         order (a ballot per lane slot: no scan), usually about k;
//   each candidate's rank among them by (choice descending, index ascending: in the list,
//         the earlier position), counted by the lanes in parallel, four candidates a round;
//         rank j < k is the j-th pick. The weights by the lanes (their sum in pick order).
// Then the dedupe: the picked experts as bits of a shared bitmap (an OR, whatever the order);
// an expert's slot is the number of picked experts below it, n_uniq all of them; coef is
// zeroed before and each pick writes its own (slot, token) after a barrier.
// The twenty-sixth session's form: the same picks, weights and slots as the one before it (a
// scan for the list, a rank loop of one candidate a trip, a dedupe of loops over the entries and
// a third barrier), with a shorter chain for the one warp that runs it at T = 1.
// topk_smem: router_topk_smem(E, T) bytes (16-byte aligned). STAGED: the caller has already put
// the bias in its place there (router.cu's logits blocks, before their wait), so it is not read
// again. The scores' loads are issued four at a time before any is used (one trip to L2 for a
// block's share at T <= 4 and E <= 256 a thread, instead of one a load).
template <int NL, class P, bool STAGED = false>
__device__ __forceinline__ void router_topk_tile(const P &pol, const float *logits, const float *__restrict__ bias,
                                                 const moe_route &rt, int E, int k, int n_group, int topk_group,
                                                 float scaling, int T, float *topk_smem)
{
    static_assert(NL * kWarp <= kMaxExperts && kMaxExperts % kWarp == 0, "a bit of the bitmap per expert");
    float *score = topk_smem, *bias_s = score + T * E;
    unsigned short *cand = reinterpret_cast<unsigned short *>(bias_s + E);
    __shared__ int sel[kMaxT * kMaxTopk];
    __shared__ float selsc[kMaxT * kMaxTopk];
    __shared__ unsigned picked[NL]; // bit e % 32 of word e / 32: some token picks expert e
    pol.launch_dependents();
    const int lane = threadIdx.x % kWarp, warp = threadIdx.x / kWarp;
    if (!STAGED)
        for (int e = threadIdx.x; e < E; e += blockDim.x)
            bias_s[e] = bias[e];
    if (threadIdx.x < NL)
        picked[threadIdx.x] = 0;
    pol.wait();
    for (int p = threadIdx.x; p < T * k * kMaxT; p += blockDim.x) // every slot a pick may take: 0 unless picked
        rt.coef[p] = 0.0f;
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
    const int t = warp;
    int my_e = 0;      // lane j < k of warp t < T: the j-th pick
    float my_w = 0.0f; // and its weight
    if (t < T) {
        const float *sct = score + t * E;
        unsigned short *ct = cand + t * E;
        float cv[NL]; // the lane's choices, e = lane + 32 i; -inf where not eligible
        float lm = -INFINITY;
        if (n_group <= 1) {
#pragma unroll
            for (int i = 0; i < NL; i++) {
                const int e = lane + kWarp * i;
                cv[i] = e < E ? sct[e] + bias_s[e] : -INFINITY;
                lm = fmaxf(lm, cv[i]);
            }
        } else {
            const int gsz = E / n_group;
            const unsigned long long keep = kept_groups(sct, bias_s, n_group, topk_group, gsz);
#pragma unroll
            for (int i = 0; i < NL; i++) {
                const int e = lane + kWarp * i;
                cv[i] = e < E && ((keep >> (e / gsz)) & 1) ? sct[e] + bias_s[e] : -INFINITY;
                lm = fmaxf(lm, cv[i]);
            }
        }
        int ge = 0; // lanes whose best choice is >= this lane's
#pragma unroll
        for (int l = 0; l < kWarp; l++)
            ge += __shfl_sync(0xffffffffu, lm, l) >= lm;
        const float thr = key_float(__reduce_max_sync(0xffffffffu, ge >= k ? float_key(lm) : 0u));
        const unsigned below = (1u << lane) - 1u; // the lanes before this one
        int n_c = 0;
#pragma unroll
        for (int i = 0; i < NL; i++) { // e = lane + 32 i: slot i's candidates after slot i - 1's, lanes in order
            const bool c = cv[i] != -INFINITY && cv[i] >= thr;
            const unsigned b = __ballot_sync(0xffffffffu, c);
            if (c)
                ct[n_c + __popc(b & below)] = (unsigned short)(lane + kWarp * i);
            n_c += __popc(b);
        }
        __syncwarp();
        for (int a = lane; a < n_c; a += kWarp) {
            const int ea = ct[a];
            const float va = sct[ea] + bias_s[ea];
            int rank = 0;
            int b0 = 0;
            for (; b0 + 4 <= n_c; b0 += 4) {
                int eb[4];
                float vb[4];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    eb[u] = ct[b0 + u];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    vb[u] = sct[eb[u]] + bias_s[eb[u]];
#pragma unroll
                for (int u = 0; u < 4; u++)
                    rank += vb[u] > va || (vb[u] == va && b0 + u < a);
            }
            for (; b0 < n_c; b0++) {
                const int eb = ct[b0];
                const float vb = sct[eb] + bias_s[eb];
                rank += vb > va || (vb == va && b0 < a);
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
            my_e = sel[t * k + lane];
            my_w = sc / sum * scaling;
            rt.experts[t * k + lane] = my_e;
            atomicOr(&picked[my_e / kWarp], 1u << (my_e % kWarp));
        }
    }
    __syncthreads();
    if (t < T && lane < k) { // slot: the picked experts below this one (a duplicate pick writes the same uniq)
        const int w = my_e / kWarp;
        int slot = __popc(picked[w] & ((1u << (my_e % kWarp)) - 1u));
#pragma unroll
        for (int i = 0; i < NL; i++)
            slot += i < w ? __popc(picked[i]) : 0;
        rt.uniq[slot] = my_e;
        rt.coef[slot * kMaxT + t] = my_w;
    }
    if (threadIdx.x == 0) {
        int n_uniq = 0;
#pragma unroll
        for (int i = 0; i < NL; i++)
            n_uniq += __popc(picked[i]);
        *rt.n_uniq = n_uniq;
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
