// SPDX-License-Identifier: MIT
// The persistent form of a layer's two segments (kernels.h, engine/gpu/persist_plan.h):
//   persist_attn  qkv_a, mla_prep, q_b, absorb, attend, merge, W_uv, o_proj   (8 stages)
//   persist_moe   router logits, router top-k, MoE gate/up, MoE down          (4 stages)
// one launch each, every CTA resident (the grid is the occupancy times the SMs), each CTA
// walking its host-built list of (stage, tile): a tile runs the stage's op for one block
// index through the same *_ops.cuh function as the op's own kernel, so the operations and
// their order are those of the launches and the results bit-identical. Between stages no
// launch and no grid barrier: a CTA leaving a stage adds its tiles to the stage's counter
// (after a block barrier and a fence: release), and before its first tile of a stage a CTA
// waits until the previous stage's counter holds all its tiles (acquire): once per CTA and
// stage, by one thread (cta_wait), after the weights of that tile that are known before
// the wait were pulled toward L2. The MoE's shared-expert gate/up tiles wait only on the
// launch's predecessor (the call site before: they do not read the router), so they
// overlap the router. Activations are read through L2 (persist_sync::coherent); weights as
// in the kernels.
#include "gpu/kernels/kernels.h"

#include "gpu/kernels/attend_ops.cuh"
#include "gpu/kernels/gemv_ops.cuh"
#include "gpu/kernels/mla_ops.cuh"
#include "gpu/kernels/moe_down_ops.cuh"
#include "gpu/kernels/moe_gate_up_ops.cuh"
#include "gpu/kernels/router_ops.cuh"

namespace arbk {
namespace {

constexpr int kPersistThreads = 256; // every op's block (8 warps)

// Before a CTA's first tile of stage s > 0 (after its weights were pulled toward L2): thread 0
// waits until stage s - 1's counter holds all its tiles (acquire), backing off 32 .. 256 ns
// between polls (every CTA polls one word: a poll per thread or per warp saturated its L2
// slice and slowed the stage being waited for), or until the deadline (the error word names
// the stage); the block barrier then hands the acquire to every thread.
__device__ __forceinline__ void cta_wait(const persist_ctl &c, const unsigned *tiles, int s)
{
    if (threadIdx.x == 0) {
        const unsigned *cnt = c.cnt + s - 1, target = tiles[s - 1];
        unsigned long long t0 = 0;
        unsigned ns = 32;
        for (unsigned it = 0;; it++) {
            unsigned v;
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(cnt) : "memory");
            if (v >= target)
                break;
            const unsigned long long now = global_ns();
            if (it == 0)
                t0 = now;
            else if (now - t0 > c.timeout_ns) {
                atomicCAS(c.err, 0, c.code_base + s + 1);
                break;
            }
            if (*reinterpret_cast<volatile int *>(c.err))
                break;
            __nanosleep(ns);
            ns = ns < 256 ? 2 * ns : 256;
        }
    }
    __syncthreads();
}

// The weight rows of GEMV block `tile` (gemv_tile's rows) toward L2.
template <int T> __device__ __forceinline__ void gemv_prefetch(const bf16 *W, int N, int K, int tile)
{
    const int S = gemv_parts(K), rows = gemv_rows_per_block(S, gemv_pair(S, GEMV_BF16, T));
    const int r0 = tile * rows, n = min(rows, N - r0);
    if (n > 0)
        block_prefetch_l2(W + (size_t)r0 * K, (size_t)n * K * sizeof(bf16));
}

// The CTA's n tiles of stage s are done: publish them (all threads' writes before the barrier).
__device__ __forceinline__ void stage_done(const persist_ctl &c, int s, unsigned n)
{
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(c.cnt + s, n);
    }
}

// The CTA's walk over its list: next() gives the next (stage, tile) or false at the end;
// entering a new stage publishes the tiles of the one before (the end publishes the last).
// next() is a call, not inlined, to keep the loop around the ops small (the MoE kernel's INT4
// instantiations spill either way: 764-832 bytes a thread on sm_90 and 620-760 on sm_120 at
// every T with CUDA 13.0, results/kernel-resources/dc994e1-cuda13.0.csv).
struct walker {
    uint32_t i, e;
    int cur;
    unsigned done;
    bool waited; // cta_wait ran for the current stage
    __device__ __forceinline__ void begin(const persist_ctl &c)
    {
        pdl_launch_dependents(); // every CTA is resident before a dependent can launch
        i = __ldg(c.off + blockIdx.x), e = __ldg(c.off + blockIdx.x + 1), cur = -1, done = 0, waited = true;
    }
    __device__ __noinline__ bool next(const persist_ctl &c, int &s, int &tile)
    {
        if (i >= e) {
            if (cur >= 0)
                stage_done(c, cur, done);
            return false;
        }
        const uint32_t en = __ldg(c.ent + i++);
        s = (int)(en >> 24), tile = (int)(en & 0xffffffu);
        if (s != cur) {
            if (cur >= 0)
                stage_done(c, cur, done);
            cur = s, done = 0, waited = s == 0;
        } else {
            __syncthreads(); // the previous tile's shared memory
        }
        done++;
        return true;
    }
};

template <int T, int S> __device__ __forceinline__ void gemv_bf16(const persist_sync &p, const bf16 *W, const bf16 *x,
                                                                  int N, int K, bf16 *y, int tile)
{
    constexpr bool pair = gemv_pair(S, GEMV_BF16, T);
    gemv_tile<T, GEMV_BF16, S, pair>(p, W, nullptr, x, K, N, K, y, N, tile);
}

template <int T> __device__ __forceinline__ void gemv_any(const persist_sync &p, int parts, const bf16 *W,
                                                          const bf16 *x, int N, int K, bf16 *y, int tile)
{
    if (parts == 4)
        gemv_bf16<T, 4>(p, W, x, N, K, y, tile);
    else if (parts == 2)
        gemv_bf16<T, 2>(p, W, x, N, K, y, tile);
    else
        gemv_bf16<T, 1>(p, W, x, N, K, y, tile);
}

template <int T> __global__ void __launch_bounds__(kPersistThreads, 2)
    persist_attn_kernel(persist_attn_args a, persist_ctl c)
{
    ARB_TL(ARB_TL_PERSIST_ATTN);
    extern __shared__ uint4 persist_smem[];
    const int qw = a.nh_r * (a.dn + a.dr), ow = a.nh_r * a.dv;
    const int p_qkv = gemv_parts(a.H), p_qb = gemv_parts(a.rq), p_o = gemv_parts(ow);
    walker wk;
    wk.begin(c);
    int s, tile;
    while (wk.next(c, s, tile)) {
        if (!wk.waited) { // the stage's weights (those known before the wait) toward L2, then the wait
            if (s == PA_Q_B)
                gemv_prefetch<T>(a.q_b, qw, a.rq, tile);
            else if (s == PA_O_PROJ)
                gemv_prefetch<T>(a.o_proj, a.H, ow, tile);
            else if (s == PA_ABSORB && tile / a.nh_r != mla_absorb_gy(a.rkv) - 1 && (int)threadIdx.x < a.dn)
                asm volatile("prefetch.global.L2 [%0];" ::"l"(
                    a.kv_b + ((size_t)(tile % a.nh_r) * (a.dn + a.dv) + threadIdx.x) * a.rkv +
                    (tile / a.nh_r) * kAbsorbCols));
            else if (s == PA_UV)
                block_prefetch_l2(
                    a.kv_b + ((size_t)(tile % a.nh_r) * (a.dn + a.dv) + a.dn + (tile / a.nh_r) * kUvWarps) * a.rkv,
                    (size_t)min(kUvWarps, a.dv - (tile / a.nh_r) * kUvWarps) * a.rkv * sizeof(bf16));
            else if (s == PA_ATTEND) // the chunk's rows below P0 (earlier steps'; P0 is set before the step)
                block_prefetch_l2(a.cache_ckv + (size_t)(tile % a.chunks) * kAttnChunk * a.rkv,
                                  (size_t)max(0, min(kAttnChunk, __ldg(a.pos0) - (tile % a.chunks) * kAttnChunk)) *
                                      a.rkv * sizeof(bf16));
            cta_wait(c, a.tiles, s);
            wk.waited = true;
        }
        const persist_sync p; // the op's own wait: the PDL wait alone (cta_wait waited for the stage before)
        switch (s) {
        case PA_QKV_A: gemv_any<T>(p, p_qkv, a.qkv_a, a.h, a.qkva_w, a.H, a.qkva, tile); break;
        case PA_PREP:
            mla_prep_tile(p, a.qkva, a.q_a_norm, a.kv_a_norm, a.rope_cs, a.pos0, a.qa, a.cache_ckv, a.cache_kpe, a.rq,
                          a.rkv, a.dr, a.eps, tile % T, tile / T);
            break;
        case PA_Q_B: gemv_any<T>(p, p_qb, a.q_b, a.qa, qw, a.rq, a.q, tile); break;
        case PA_ABSORB:
            mla_absorb_tile(p, a.q, a.kv_b, a.rope_cs, a.pos0, a.qlat, a.qpe, a.nh_r, a.dn, a.dr, a.dv, a.rkv, T,
                            tile % a.nh_r, tile / a.nh_r, mla_absorb_gy(a.rkv),
                            reinterpret_cast<float *>(persist_smem));
            break;
        case PA_ATTEND:
            mla_attend_tile(p, a.qlat, a.qpe, a.cache_ckv, a.cache_kpe, a.pos0, a.partial, a.nh_r, a.dr, a.rkv, a.scale,
                            T, a.Rg, tile % a.chunks, tile / a.chunks, persist_smem);
            break;
        case PA_MERGE: {
            const int R = T * a.nh_r;
            mla_merge_tile(p, a.partial, a.pos0, a.olat, R, a.rkv, T, tile % R, tile / R,
                           *reinterpret_cast<merge_smem *>(persist_smem));
            break;
        }
        case PA_UV:
            mla_uv_tile<T>(p, a.olat, a.kv_b, a.o_heads, a.nh_r, a.dn, a.dv, a.rkv, tile % a.nh_r, tile / a.nh_r);
            break;
        case PA_O_PROJ: gemv_any<T>(p, p_o, a.o_proj, a.o_heads, a.H, ow, a.part, tile); break;
        }
    }
}

template <bool INT4, int T>
__device__ __forceinline__ void moe_stage(const persist_moe_args &a, int s, int tile, const persist_sync &p)
{
    static_assert(moe_halves(T) == 1, "the persistent form runs the step's T <= kMaxT");
    constexpr int rowt = moe_rowt(T);
    if (s == PM_GATE_UP)
        moe_gate_up_tile<INT4, rowt, 1, moe_tiling<rowt>::unr, moe_tiling<rowt>::unrq>(p, p, a.w, a.rt, a.h, a.act,
                                                                                       a.act_sh, T, tile);
    else
        moe_down_tile<INT4, rowt, 1, moe_unr_down(INT4, rowt)>(p, a.w, a.rt, a.act, a.act_sh, a.part, T, tile);
}

// The top-k's choices per lane in the persistent form: E <= kPersistMaxExperts (persist_moe
// refuses more), one instantiation for all.
constexpr int kPersistTopkNL = kPersistMaxExperts / kWarp;

template <int T, bool INT4> __global__ void __launch_bounds__(kPersistThreads, 2)
    persist_moe_kernel(persist_moe_args a, persist_ctl c)
{
    ARB_TL(ARB_TL_PERSIST_MOE);
    extern __shared__ uint4 persist_smem[];
    float *fs = reinterpret_cast<float *>(persist_smem);
    walker wk;
    wk.begin(c);
    int s, tile;
    const int sh_items = moe_sh_items(a.w.H, a.w.Is, T); // gate/up's shared-expert parts: they do not read the router
    while (wk.next(c, s, tile)) {
        if (!wk.waited && !(s == PM_GATE_UP && tile < sh_items)) {
            if (s == PM_DOWN) // the shared expert's rows of this tile (the routed ones depend on the router)
                block_prefetch_l2(a.w.sh_down + (size_t)tile * 16 * moe_rowt(T) * a.w.Is,
                                  (size_t)16 * moe_rowt(T) * a.w.Is * sizeof(bf16));
            cta_wait(c, a.tiles, s);
            wk.waited = true;
        }
        const persist_sync p; // the op's own wait: the PDL wait alone (cta_wait waited for the stage before)
        if (s == PM_LOGITS) {
            router_logits_tile<T>(p, a.h, a.router, a.logits, a.H, a.E, tile);
        } else if (s == PM_TOPK) {
            router_topk_tile<kPersistTopkNL>(p, a.logits, a.router_bias, a.rt, a.E, a.k, a.n_group, a.topk_group,
                                             a.scaling, T, fs);
        } else {
            moe_stage<INT4, T>(a, s, tile, p); // shared-expert gate/up tiles skip cta_wait: they do not read the router
        }
    }
}

// cta_wait on its own: stage 1 of a plan whose stage 0 has `target` tiles.
__global__ void persist_wait_probe_kernel(unsigned *cnt, unsigned target, int *err, int code,
                                          unsigned long long timeout_ns)
{
    persist_ctl c = {};
    c.cnt = cnt, c.err = err, c.code_base = code - 2, c.timeout_ns = timeout_ns, c.nctas = 1;
    const unsigned tiles[1] = {target};
    cta_wait(c, tiles, 1);
}

template <typename KernelPtr> cudaError_t occupancy(KernelPtr k, size_t smem, int *per_sm)
{
    *per_sm = 0;
    cudaError_t e = cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(per_sm, k, kPersistThreads, smem);
    return e;
}

} // namespace

void persist_attn_plan(persist_attn_args &a, int T, size_t *smem)
{
    const int qw = a.nh_r * (a.dn + a.dr), ow = a.nh_r * a.dv, R = T * a.nh_r;
    auto blocks = [T](int N, int K) {
        const int S = gemv_parts(K), rows = gemv_rows_per_block(S, gemv_pair(S, GEMV_BF16, T));
        return (unsigned)((N + rows - 1) / rows);
    };
    mla_attend_grid(T, a.nh_r, a.context, 0, &a.chunks, &a.groups, &a.Rg);
    a.tiles[PA_QKV_A] = blocks(a.qkva_w, a.H);
    a.tiles[PA_PREP] = 2u * (unsigned)T;
    a.tiles[PA_Q_B] = blocks(qw, a.rq);
    a.tiles[PA_ABSORB] = (unsigned)(a.nh_r * mla_absorb_gy(a.rkv));
    a.tiles[PA_ATTEND] = (unsigned)(a.chunks * a.groups);
    a.tiles[PA_MERGE] = (unsigned)(R * ((a.rkv + kMergeCols - 1) / kMergeCols));
    a.tiles[PA_UV] = (unsigned)(a.nh_r * ((a.dv + kUvWarps - 1) / kUvWarps));
    a.tiles[PA_O_PROJ] = blocks(a.H, ow);
    size_t m = mla_attend_pos_smem(a.rkv, a.dr, a.Rg);
    m = m > kAbsorbSmem ? m : kAbsorbSmem;
    m = m > sizeof(merge_smem) ? m : sizeof(merge_smem);
    *smem = (m + 15) / 16 * 16;
}

void persist_moe_plan(persist_moe_args &a, int T, size_t *smem)
{
    const int rows = 16 * moe_rowt(T);
    a.tiles[PM_LOGITS] = (unsigned)a.E;
    a.tiles[PM_TOPK] = 1u;
    a.tiles[PM_GATE_UP] = (unsigned)(moe_sh_items(a.w.H, a.w.Is, T) + a.max_slots * (a.w.I / rows));
    a.tiles[PM_DOWN] = (unsigned)(a.w.H / rows);
    *smem = (router_topk_smem(a.E, T) + 15) / 16 * 16;
}

cudaError_t persist_attn_occupancy(int T, size_t smem, int *per_sm)
{
    return with_t(T, [&](auto t) { return occupancy(persist_attn_kernel<decltype(t)::value>, smem, per_sm); });
}

cudaError_t persist_moe_occupancy(int T, bool int4, size_t smem, int *per_sm)
{
    return with_t(T, [&](auto t) {
        return int4 ? occupancy(persist_moe_kernel<decltype(t)::value, true>, smem, per_sm)
                    : occupancy(persist_moe_kernel<decltype(t)::value, false>, smem, per_sm);
    });
}

cudaError_t persist_attn(const launch_ctx &c, const persist_attn_args &a, const persist_ctl &ctl, size_t smem, int T)
{
    if (a.rkv % 8 || a.rkv > kMaxLatent || a.dr % 8 || a.H % 8 || a.rq % 8 || ctl.nctas < 1)
        return cudaErrorInvalidValue;
    return with_t(T, [&](auto t) {
        return launch(c, persist_attn_kernel<decltype(t)::value>, dim3(ctl.nctas), dim3(kPersistThreads), smem, a, ctl);
    });
}

cudaError_t persist_moe(const launch_ctx &c, const persist_moe_args &a, const persist_ctl &ctl, size_t smem, int T)
{
    if (a.E > kPersistMaxExperts || a.k > kMaxTopk || a.n_group > kMaxGroups || a.n_group < 1 || a.E % a.n_group ||
        a.H % 32 || a.w.I % 32 || a.w.Is % 32 || a.max_slots < 1 || a.max_slots > kMaxSlots || ctl.nctas < 1)
        return cudaErrorInvalidValue;
    return with_t(T, [&](auto t) {
        constexpr int TT = decltype(t)::value;
        return a.w.gate_s
                   ? launch(c, persist_moe_kernel<TT, true>, dim3(ctl.nctas), dim3(kPersistThreads), smem, a, ctl)
                   : launch(c, persist_moe_kernel<TT, false>, dim3(ctl.nctas), dim3(kPersistThreads), smem, a, ctl);
    });
}

cudaError_t persist_wait_probe(cudaStream_t s, const unsigned *cnt, unsigned target, int *err, int code,
                               unsigned long long timeout_ns)
{
    persist_wait_probe_kernel<<<1, 64, 0, s>>>(const_cast<unsigned *>(cnt), target, err, code, timeout_ns);
    return cudaGetLastError();
}

ARB_TL_TU(persist)

} // namespace arbk
