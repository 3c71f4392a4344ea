// SPDX-License-Identifier: MIT
// Fused all-reduce + residual add + RMSNorm kernels over the p2p transports (pull,
// push, flag-free); p2p_fused.h gives the work split and the area layout, README.md
// the memory ordering. One launch: send my x, receive the peers' x, sum in rank order
// 0..n-1 in fp32, add into residual (stored as bf16), sum the squares of the stored
// row across the CTAs of the row's cluster, write out = residual / rms * weight.
#include "p2p_fused.h"

#include <cooperative_groups.h>
#include <math.h>

#include "arb_ff_fused.cuh"
#include "p2p_device.cuh"

namespace cg = cooperative_groups;

namespace {

constexpr int kWarp = kArbWarp;
constexpr int kRowsMax = P2P_FUSED_MAX_ROWS_PER_CLUSTER;
constexpr int kMaxRowBlocks = 8; // the portable cluster size limit (p2p_params.c checks row_blocks)
// Units of the first kept_rows(MAXT) rows of a CTA that each thread keeps in registers
// from pass 1 (residual add) to pass 2 (norm), kKeptUnits per row; the rest is read
// back from residual (the thread's own stores, so program order makes them visible).
// 1024-thread CTAs have 64 registers per thread: one kept row.
constexpr int kKeptUnits = 2;
__host__ __device__ constexpr int kept_rows(int max_threads) { return max_threads > 512 ? 1 : 2; }

template <int E> using unit_t = arb_unit<E>;

template <p2p_variant_t V> struct fused_traits {
    static constexpr int E = V == P2P_ONESHOT_FLAGFREE ? 4 : 8;
};

// Rank `owner`'s slot for rank `src` in the current set (push, flag-free), or rank
// `owner`'s staging (pull); 16 bytes per unit.
template <p2p_variant_t V>
__device__ __forceinline__ uint4 *slot(const p2p_fused_launch_t &a, int owner, int src, unsigned set)
{
    const size_t s = a.net.area_bytes;
    if (V == P2P_ONESHOT_PULL)
        return (uint4 *)(a.net.payload[owner] + set * s);
    return (uint4 *)(a.net.payload[owner] + ((size_t)set * a.net.nranks + src) * s);
}

// Makes unit idx of my x visible to the peers: posted writes into every peer's slot
// (push), a line into every peer's slot (flag-free), or my own staging (pull).
template <p2p_variant_t V>
__device__ __forceinline__ void send_unit(const p2p_fused_launch_t &a, size_t idx, const unit_t<fused_traits<V>::E> &x,
                                          uint32_t epoch, unsigned set)
{
    const int n = a.net.nranks, me = a.net.rank;
    if constexpr (V == P2P_ONESHOT_PULL) {
        slot<V>(a, me, me, set)[idx] = x.u;
    } else {
        for (int k = 1; k < n; k++) { // start at the next rank: spread the links
            const int p = (me + k) % n;
            if constexpr (V == P2P_ONESHOT_FLAGFREE)
                arb_st_line(slot<V>(a, p, me, set) + idx, x.u.x, x.u.y, epoch);
            else
                slot<V>(a, p, me, set)[idx] = x.u;
        }
    }
}

// Unit idx of rank r's x (r != me); false when a flag-free wait gave up. Push and
// pull read after the block barrier, with .cg (L1 is not coherent with peer writes).
template <p2p_variant_t V>
__device__ __forceinline__ bool fetch_unit(const p2p_fused_launch_t &a, int r, size_t idx, uint32_t epoch, unsigned set,
                                           unit_t<fused_traits<V>::E> *x)
{
    if constexpr (V == P2P_ONESHOT_FLAGFREE) {
        uint4 l;
        if (!p2p_wait_line(slot<V>(a, a.net.rank, r, set) + idx, epoch, a.net.state, r, a.net.timeout_ns, &l))
            return false;
        x->u = make_uint2(l.x, l.z);
    } else if constexpr (V == P2P_ONESHOT_PULL) {
        x->u = p2p_ld_cg(slot<V>(a, r, r, set) + idx);
    } else {
        x->u = p2p_ld_cg(slot<V>(a, a.net.rank, r, set) + idx);
    }
    return true;
}

// Per-call values every helper needs, the same in every thread of a CTA.
struct row_ctx {
    unsigned upr;    // units per row
    unsigned u0;     // this thread's first unit of a row
    unsigned ustride; // units between this thread's units: P * T
    uint32_t epoch;
    unsigned set;
};

// Pass 1 for unit j of launch row t: sum the ranks' x in rank order (fp32), add into
// residual, store it rounded, add the squares of the stored values into sq.
template <p2p_variant_t V>
__device__ __forceinline__ bool unit_pass1(const p2p_fused_launch_t &a, const row_ctx &c, unsigned t, unsigned j,
                                           unit_t<fused_traits<V>::E> *stored, float &sq)
{
    constexpr int E = fused_traits<V>::E;
    const size_t row = (size_t)t * a.hidden, idx = (size_t)t * c.upr + j;
    // Local loads first: their latency overlaps the wait for the peers' data.
    __nv_bfloat16 *res_row = (__nv_bfloat16 *)a.residual + row;
    unit_t<E> res = arb_load_unit<E>(res_row, j, a.hidden, a.whole_units);
    const unit_t<E> mine = arb_load_unit<E>((const __nv_bfloat16 *)a.x + row, j, a.hidden, a.whole_units);
    float acc[E] = {};
    for (int r = 0; r < a.net.nranks; r++) {
        unit_t<E> v = mine;
        if (r != a.net.rank && !fetch_unit<V>(a, r, idx, c.epoch, c.set, &v))
            return false;
#pragma unroll
        for (int k = 0; k < E; k++)
            acc[k] += __bfloat162float(v.e[k]);
    }
    // Squares added into sq one by one (not arb_residual_add's per-unit partial): the
    // order of additions this kernel's results were checked with.
#pragma unroll
    for (int k = 0; k < E; k++) {
        res.e[k] = __float2bfloat16_rn(__bfloat162float(res.e[k]) + acc[k]);
        const float f = __bfloat162float(res.e[k]); // the norm uses the value as stored
        sq += f * f;
    }
    arb_store_unit<E>(res_row, j, a.hidden, a.whole_units, res);
    *stored = res;
    return true;
}

// Pass 1 over this thread's units of launch row t; the warp's sum of squares goes to
// warp_sums[warp]. Every thread of the CTA calls it (the shuffle needs the whole warp).
template <p2p_variant_t V>
__device__ __forceinline__ void row_pass1(const p2p_fused_launch_t &a, const row_ctx &c, unsigned t,
                                          unit_t<fused_traits<V>::E> (&kept)[kKeptUnits], bool &failed,
                                          float *warp_sums)
{
    float sq = 0.0f;
#pragma unroll
    for (int m = 0; m < kKeptUnits; m++) {
        const unsigned j = c.u0 + m * c.ustride;
        if (j < c.upr && !failed)
            failed = !unit_pass1<V>(a, c, t, j, &kept[m], sq);
    }
    for (unsigned j = c.u0 + kKeptUnits * c.ustride; j < c.upr && !failed; j += c.ustride) {
        unit_t<fused_traits<V>::E> dropped;
        failed = !unit_pass1<V>(a, c, t, j, &dropped, sq);
    }
    sq = arb_warp_sum(sq);
    if (threadIdx.x % kWarp == 0)
        warp_sums[threadIdx.x / kWarp] = sq;
}

// out = residual * inv_rms * weight for unit j of a row (the same formula and order
// as the unfused kernel in src/rmsnorm/rmsnorm.cu).
template <int E>
__device__ __forceinline__ void out_unit(const p2p_fused_launch_t &a, __nv_bfloat16 *out_row, unsigned j,
                                         const unit_t<E> &r, const unit_t<E> &w, float inv_rms)
{
    arb_store_unit<E>(out_row, j, a.hidden, a.whole_units, arb_rms_out<E>(r, w, inv_rms));
}

// Pass 2 over this thread's units of launch row t. KEPT: the first kKeptUnits units
// come from registers; every other unit is read back from residual. w_kept: the
// weight of the first kKeptUnits units (the same for every row), loaded early.
template <int E, bool KEPT>
__device__ __forceinline__ void row_pass2(const p2p_fused_launch_t &a, const row_ctx &c, unsigned t,
                                          const unit_t<E> (&kept)[kKeptUnits], const unit_t<E> (&w_kept)[kKeptUnits],
                                          float inv_rms)
{
    const __nv_bfloat16 *w_row = (const __nv_bfloat16 *)a.weight;
    const size_t row = (size_t)t * a.hidden;
    const __nv_bfloat16 *res_row = (const __nv_bfloat16 *)a.residual + row;
    __nv_bfloat16 *out_row = (__nv_bfloat16 *)a.out + row;
#pragma unroll
    for (int m = 0; m < kKeptUnits; m++) {
        const unsigned j = c.u0 + m * c.ustride;
        if (j < c.upr)
            out_unit<E>(a, out_row, j, KEPT ? kept[m] : arb_load_unit<E>(res_row, j, a.hidden, a.whole_units), w_kept[m],
                        inv_rms);
    }
    for (unsigned j = c.u0 + kKeptUnits * c.ustride; j < c.upr; j += c.ustride)
        out_unit<E>(a, out_row, j, arb_load_unit<E>(res_row, j, a.hidden, a.whole_units),
                    arb_load_unit<E>(w_row, j, a.hidden, a.whole_units), inv_rms);
}

// MAXT: the launch bound (512: 128 registers per thread; 1024). CLUSTER: row_blocks > 1,
// launched as thread-block clusters of row_blocks CTAs; without it each CTA owns whole
// rows and the row's sum needs no other CTA.
template <p2p_variant_t V, int MAXT, bool CLUSTER>
__global__ void __launch_bounds__(MAXT, 1) fused_rmsnorm(p2p_fused_launch_t a)
{
    constexpr int E = fused_traits<V>::E;
    constexpr int KR = kept_rows(MAXT);
    __shared__ float s_warp[kRowsMax][MAXT / kWarp]; // per row: each warp's sum of squares
    __shared__ float s_part[kRowsMax];               // per row: this CTA's sum, read by the cluster
    __shared__ float s_inv[kRowsMax];                // per row: 1 / rms
    __shared__ uint32_t s_epoch;
    __shared__ int s_aborted;
    unsigned P = 1, q = 0;
    if constexpr (CLUSTER) {
        P = cg::this_cluster().num_blocks();
        q = cg::this_cluster().block_rank();
    }
    const unsigned cl = blockIdx.x / P, NC = gridDim.x / P;

    arb_pdl_enter(); // pdl=1: x, residual and the epoch words are read only after the wait

    if (threadIdx.x == 0) {
        s_aborted = p2p_aborted(a.net.state);
        s_epoch = a.net.state->fused_epoch[blockIdx.x] + 1;
    }
    __syncthreads();
    row_ctx c;
    c.epoch = s_epoch;
    c.set = c.epoch & 1;
    c.upr = (a.hidden + E - 1) / E;
    c.ustride = P * blockDim.x;
    c.u0 = q * blockDim.x + threadIdx.x;
    // This cluster's rows: cl, cl + NC, ... (the same count in all its CTAs, on all ranks).
    const unsigned rows_mine = a.rows > cl ? (a.rows - cl + NC - 1) / NC : 0;
    // An aborted rank still goes through every cluster barrier: a CTA that left early
    // would leave the rest of its cluster waiting.
    bool failed = s_aborted != 0;
    unit_t<E> w_kept[kKeptUnits]; // weights of my first units, off the critical path
#pragma unroll
    for (int m = 0; m < kKeptUnits; m++) {
        const unsigned j = c.u0 + m * c.ustride;
        if (j < c.upr)
            w_kept[m] = arb_load_unit<E>((const __nv_bfloat16 *)a.weight, j, a.hidden, a.whole_units);
    }

    if (!failed && !a.net.hang)
        for (unsigned i = 0; i < rows_mine; i++) {
            const unsigned t = cl + i * NC;
            const __nv_bfloat16 *x_row = (const __nv_bfloat16 *)a.x + (size_t)t * a.hidden;
            for (unsigned j = c.u0; j < c.upr; j += c.ustride)
                send_unit<V>(a, (size_t)t * c.upr + j, arb_load_unit<E>(x_row, j, a.hidden, a.whole_units), c.epoch,
                             c.set);
        }
    // Push and pull: block b waits for block b of every rank (same rows, same units).
    if constexpr (V != P2P_ONESHOT_FLAGFREE)
        if (!failed && rows_mine > 0)
            failed = !p2p_block_barrier(a.net, P2P_FLAG_FUSED, c.epoch);

    unit_t<E> kept[KR][kKeptUnits];
#pragma unroll
    for (int i = 0; i < KR; i++)
        if ((unsigned)i < rows_mine)
            row_pass1<V>(a, c, cl + i * NC, kept[i], failed, s_warp[i]);
    for (unsigned i = KR; i < rows_mine; i++) {
        unit_t<E> dropped[kKeptUnits];
        row_pass1<V>(a, c, cl + i * NC, dropped, failed, s_warp[i]);
    }

    // This CTA's partial of each row, warps in order; NaN after a failed wait, so the
    // whole row's output is NaN on this rank rather than plausibly wrong.
    const bool block_failed = __syncthreads_or(failed);
    const unsigned nwarps = blockDim.x / kWarp;
    if (threadIdx.x < rows_mine) {
        float p = 0.0f;
        for (unsigned w = 0; w < nwarps; w++)
            p += s_warp[threadIdx.x][w];
        s_part[threadIdx.x] = block_failed ? NAN : p;
        if (!CLUSTER)
            s_inv[threadIdx.x] = arb_rms_inv(s_part[threadIdx.x], a.hidden, a.eps);
    }
    if constexpr (CLUSTER) {
        // Cluster barrier (release/acquire at cluster scope): every CTA's s_part is
        // written before any CTA of the cluster reads it through distributed shared memory.
        cg::this_cluster().sync();
        if (threadIdx.x < rows_mine) {
            // All loads first (independent remote shared-memory reads in flight
            // together), then the sum in CTA order, the same in every CTA and on every rank.
            float part[kMaxRowBlocks];
#pragma unroll
            for (int b = 0; b < kMaxRowBlocks; b++)
                part[b] = (unsigned)b < P ? *cg::this_cluster().map_shared_rank(&s_part[threadIdx.x], b) : 0.0f;
            float total = 0.0f;
#pragma unroll
            for (int b = 0; b < kMaxRowBlocks; b++)
                if ((unsigned)b < P)
                    total += part[b];
            s_inv[threadIdx.x] = arb_rms_inv(total, a.hidden, a.eps);
        }
        // My reads of the other CTAs' s_part are done (waited for before exiting).
        cg::this_cluster().barrier_arrive();
    }
    __syncthreads();

    if (!block_failed) {
#pragma unroll
        for (int i = 0; i < KR; i++)
            if ((unsigned)i < rows_mine)
                row_pass2<E, true>(a, c, cl + i * NC, kept[i], w_kept, s_inv[i]);
        for (unsigned i = KR; i < rows_mine; i++)
            row_pass2<E, false>(a, c, cl + i * NC, kept[0], w_kept, s_inv[i]);
    }
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_wait(); // no CTA exits while another reads its s_part
    // A failed CTA keeps its epoch (the instance is disabled anyway, see query_error).
    if (!block_failed && threadIdx.x == 0)
        a.net.state->fused_epoch[blockIdx.x] = c.epoch;
}

template <p2p_variant_t V, int MAXT>
cudaError_t launch_t(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, bool pdl,
                     cudaStream_t stream)
{
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = arb_cluster_launch_config(blocks, row_blocks, threads, pdl, stream, attr);
    if (row_blocks == 1)
        return cudaLaunchKernelEx(&cfg, fused_rmsnorm<V, MAXT, false>, *a);
    return cudaLaunchKernelEx(&cfg, fused_rmsnorm<V, MAXT, true>, *a);
}

template <p2p_variant_t V>
cudaError_t launch_v(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, bool pdl,
                     cudaStream_t stream)
{
    return threads > 512 ? launch_t<V, 1024>(a, blocks, row_blocks, threads, pdl, stream)
                         : launch_t<V, 512>(a, blocks, row_blocks, threads, pdl, stream);
}

template <p2p_variant_t V, int MAXT> cudaError_t max_clusters_t(int row_blocks, int threads, int *clusters)
{
    if (row_blocks == 1) // plain CTAs: per SM times SMs
        return arb_resident_clusters(fused_rmsnorm<V, MAXT, false>, 1, threads, clusters);
    return arb_resident_clusters(fused_rmsnorm<V, MAXT, true>, row_blocks, threads, clusters);
}

template <p2p_variant_t V> cudaError_t max_clusters_v(int row_blocks, int threads, int *clusters)
{
    return threads > 512 ? max_clusters_t<V, 1024>(row_blocks, threads, clusters)
                         : max_clusters_t<V, 512>(row_blocks, threads, clusters);
}

} // namespace

int p2p_fused_unit_elems(p2p_variant_t v)
{
    switch (v) {
    case P2P_ONESHOT_PULL:
    case P2P_ONESHOT_PUSH: return 8;
    case P2P_ONESHOT_FLAGFREE: return 4;
    default: return 0;
    }
}

size_t p2p_fused_area_bytes(p2p_variant_t v, int nranks, size_t slot_bytes)
{
    switch (v) {
    case P2P_ONESHOT_PULL: return 2 * slot_bytes;
    case P2P_ONESHOT_PUSH:
    case P2P_ONESHOT_FLAGFREE: return 2 * (size_t)nranks * slot_bytes;
    default: return 0;
    }
}

cudaError_t p2p_fused_max_clusters(p2p_variant_t v, int row_blocks, int threads, int *clusters)
{
    switch (v) {
    case P2P_ONESHOT_PULL: return max_clusters_v<P2P_ONESHOT_PULL>(row_blocks, threads, clusters);
    case P2P_ONESHOT_PUSH: return max_clusters_v<P2P_ONESHOT_PUSH>(row_blocks, threads, clusters);
    case P2P_ONESHOT_FLAGFREE: {
        // Single CTAs may run either kernel in any launch: the grid must fit for both.
        cudaError_t e = max_clusters_v<P2P_ONESHOT_FLAGFREE>(row_blocks, threads, clusters);
        int regs = 0;
        if (e == cudaSuccess && row_blocks == 1 && (e = p2p_fused_ff_max_blocks(threads, &regs)) == cudaSuccess &&
            regs < *clusters)
            *clusters = regs;
        return e;
    }
    default: return cudaErrorInvalidValue;
    }
}

cudaError_t p2p_fused_launch(p2p_variant_t v, const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads,
                             bool pdl, cudaStream_t stream)
{
    switch (v) {
    case P2P_ONESHOT_PULL: return launch_v<P2P_ONESHOT_PULL>(a, blocks, row_blocks, threads, pdl, stream);
    case P2P_ONESHOT_PUSH: return launch_v<P2P_ONESHOT_PUSH>(a, blocks, row_blocks, threads, pdl, stream);
    case P2P_ONESHOT_FLAGFREE: {
        unsigned upt = 0;
        if (p2p_fused_ff_fits(a, blocks, row_blocks, threads, &upt))
            return p2p_fused_ff_launch(a, upt, blocks, threads, pdl, stream);
        return launch_v<P2P_ONESHOT_FLAGFREE>(a, blocks, row_blocks, threads, pdl, stream);
    }
    default: return cudaErrorInvalidValue;
    }
}
