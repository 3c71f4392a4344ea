// SPDX-License-Identifier: MIT
// The fused flag-free all-reduce + residual add + RMSNorm kernel (one kernel per
// launch), for any plugin that can give every rank's line area a device address. The
// plugin supplies a peer-address policy (how it reaches the peers' memory: CUDA IPC
// pointers in p2p, LSA pointers into symmetric windows in lsa), its launch grid and
// its host-side choice of instantiation; the algorithm, the lines and their memory
// ordering are here.
//
// Work split. The grid is fixed per plugin instance (G CTAs; every CTA runs in every
// launch, so the per-CTA epochs count launches and agree on every CTA and rank). A
// launch groups the G CTAs into NC = G/P clusters of P CTAs (P a power of two <= 8;
// CLUSTER false: P = 1, plain CTAs). Row t of the launch belongs to cluster t % NC;
// unit j of a row (4 bf16 elements, the 8 payload bytes of one line) to thread
// j % (P*T) of CTA (j / T) % P of that cluster. A thread keeps all its units (at most
// KMAX: upt per row x its rows) in registers from the first load to the last store;
// the host splits calls with more rows into launches of whole rows.
//
// Lines and their memory ordering (arb_device.cuh, "LL lines"): unit u of row t
// (index t*upr + u) goes to every peer as the 16-byte line {d0, epoch, d1, epoch} with
// ONE st.volatile.v4 into the peer's area (set epoch&1, source slot = my rank). No
// flag, no fence: each 8-byte half lands single-copy atomically, so a reader that sees
// this launch's epoch in both halves has this launch's payload. The reader polls its
// own area with ld.volatile and needs no acquire. The line store and poll carry no
// "memory" clobber, so the compiler keeps the thread's independent loads (x,
// residual, weight of all its units) ahead of them.
//
// Epochs: CTA b reads its launch count (Peers::epoch_word) at its start (every thread
// reads it itself, so no barrier stands before the sends), epoch = count + 1, and
// thread 0 writes it back after the CTA's (or cluster's) barrier, which every thread
// reaches after its read. Never a kernel argument, so a captured graph replays
// correctly. Areas start zeroed, the first epoch is 1, epochs only grow. Two sets by
// epoch parity suffice: rank r writes set k%2 again in launch k+2 only after its
// launch k+1 kernel finished (stream order), and that kernel received a line of
// launch k+1 from every peer, which the peer wrote after its launch k kernel (the last
// reader of set k%2 in its area) had finished. Whichever CTA or cluster size handles
// a unit in a launch does not matter: the argument is at kernel level.
//
// Sums: fp32, ranks in order 0..n-1 (my own unit from x), residual = bf16(residual +
// sum) stored, the squares of the stored values summed per thread in unit order, per
// warp by an xor butterfly, per row: after ONE barrier (the CTA's, or the cluster's at
// cluster scope with release/acquire, which orders the distributed shared memory
// reads after the writes) every warp adds the row's P x nwarps warp partials itself in
// the same order. So every warp, CTA and rank computes the same 1/rms, and residual
// and out are bitwise identical on every rank.
//
// Spins are bounded: a thread that waited timeout_ns for a rank's lines records (CTA,
// peer, Peers::kWaitWhat, epoch) in the policy's error record and stops; it stores
// nothing, and its rows' sums become NaN (outputs NaN or unwritten, never plausibly
// wrong). It still passes the cluster barrier (a CTA missing there would hang its
// cluster). Later kernels on this rank see the error flag and send and wait for
// nothing, so the peers time out too instead of hanging.
//
// PDL: the kernel starts with griddepcontrol.wait / launch_dependents, no-ops unless
// the launch carries cudaLaunchAttributeProgrammaticStreamSerialization
// (arb_cluster_launch_config with pdl, arb_launch.cuh).
//
// A peer-address policy is a trivially copyable struct with
//   __device__ uint4 *lines(int owner, int src, size_t set, int nranks) const;
//       // source src's lines of set `set` in rank owner's area (a device address)
//   __device__ uint32_t *epoch_word() const;       // this CTA's fused launch count
//   __device__ arb_spin_error_t *error() const;    // this rank's error record
//   static constexpr uint32_t kWaitWhat;           // the record's `what` for these lines
//   using index_t = ...;   // unsigned type of line indices and row offsets: uint32_t
//                          // where the plugin bounds its areas and calls below 2^32
//                          // elements (fewer registers), else size_t
#ifndef ARB_COMMON_FF_FUSED_CUH
#define ARB_COMMON_FF_FUSED_CUH

#include <math.h>

#include <cooperative_groups.h>
#include <cuda_runtime.h>

#include "arb_device.cuh"
#include "arb_launch.cuh"

// bf16 elements per unit: the 8 payload bytes of a line.
constexpr int kArbFfUnitElems = 4;
// Largest cluster (CTAs per row): the portable limit.
constexpr int kArbFfMaxP = 8;

// Units a thread may hold in registers in one launch (over all its rows), by launch
// bound: the register budget of 255 (256 threads), 128 (512) or 64 (1024) per thread.
__host__ __device__ constexpr int arb_ff_kmax(int maxt) { return maxt <= 256 ? 8 : maxt <= 512 ? 4 : 2; }
// The launch bound that serves `threads` threads per CTA.
__host__ __device__ constexpr int arb_ff_maxt(int threads) { return threads <= 256 ? 256 : threads <= 512 ? 512 : 1024; }

template <typename Peers> struct arb_ff_args {
    Peers peers;               // how this rank reaches every rank's line area
    const void *x;             // bf16 [rows x hidden], this rank's partial sums
    void *residual;            // bf16 [rows x hidden], read and written
    const void *weight;        // bf16 [hidden]
    void *out;                 // bf16 [rows x hidden]
    unsigned rows, hidden;     // token rows of this launch; elements per row
    unsigned upt;              // units per thread per row, ceil(units per row / (P*T))
    float eps;
    unsigned long long timeout_ns;
    int rank, nranks;
    int hang;                  // test hook: this rank sends no lines
};

// MAXT: the launch bound. KMAX: the units a thread may hold (arb_ff_kmax(MAXT), or 1
// for launches where no thread has more than one: less code on the latency path).
// CLUSTER: launched in thread-block clusters of P > 1 CTAs. WHOLE: hidden % 4 == 0 and
// x, residual, weight, out 8-byte aligned (else element by element).
template <typename Peers, int MAXT, int KMAX, bool CLUSTER, bool WHOLE>
__global__ void __launch_bounds__(MAXT, 1) arb_ff_fused_kernel(const arb_ff_args<Peers> a)
{
    namespace cg = cooperative_groups;
    constexpr int kE = kArbFfUnitElems;
    using unit4 = arb_unit<kE>;
    __shared__ float s_warp[KMAX][MAXT / kArbWarp]; // [row of this CTA][warp]: sum of squares
    __shared__ float s_inv[MAXT / kArbWarp][KMAX];  // [warp][row]: 1 / rms, each warp its own copy
    unsigned P = 1, q = 0;
    if constexpr (CLUSTER) {
        P = cg::this_cluster().num_blocks();
        q = cg::this_cluster().block_rank();
    }
    const unsigned cl = blockIdx.x / P, NC = gridDim.x / P;
    const unsigned upr = (a.hidden + kE - 1) / kE, ustride = P * blockDim.x, u0 = q * blockDim.x + threadIdx.x;
    const unsigned rows_mine = a.rows > cl ? (a.rows - cl + NC - 1) / NC : 0;
    const int n = a.nranks, me = a.rank;
    const unsigned upt = a.upt;

    // Programmatic dependent launch: this kernel may start while the previous one on
    // the stream runs; the epoch words, x and residual are read only after the wait.
    arb_pdl_enter();

    // 1. Every load first. Slot k: unit u0 + (k % upt) * ustride of my row k / upt.
    const uint32_t epoch = *a.peers.epoch_word() + 1;
    bool failed = arb_spin_failed(a.peers.error());
    const size_t set = epoch & 1u;
    unsigned valid = 0, row_of[KMAX];
    using index_t = typename Peers::index_t;
    index_t idx[KMAX]; // line index in a source's area: row * upr + unit
    index_t off[KMAX]; // the row's first element in x, residual and out
    unsigned unit[KMAX];
    unit4 xv[KMAX], rv[KMAX], wv[KMAX];
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        const unsigned i = (unsigned)k / upt, j = u0 + ((unsigned)k % upt) * ustride;
        row_of[k] = i;
        idx[k] = 0;
        off[k] = 0;
        unit[k] = j;
        xv[k].u = rv[k].u = wv[k].u = make_uint2(0, 0);
        if (i < rows_mine && j < upr) {
            const index_t t = cl + (index_t)i * NC;
            valid |= 1u << k;
            idx[k] = t * upr + j;
            off[k] = t * a.hidden;
            xv[k] = arb_load_unit<kE, WHOLE>((const __nv_bfloat16 *)a.x + off[k], j, a.hidden);
            rv[k] = arb_load_unit<kE, WHOLE>((const __nv_bfloat16 *)a.residual + off[k], j, a.hidden);
            wv[k] = arb_load_unit<kE, WHOLE>((const __nv_bfloat16 *)a.weight, j, a.hidden);
        }
    }

    // 2. My lines into every peer's source slot `me` of this set, next rank first so
    // that not every rank writes into rank 0 first.
    if (!failed && !a.hang)
        for (int s = 1; s < n; s++) {
            const int p = me + s < n ? me + s : me + s - n;
            uint4 *dst = a.peers.lines(p, me, set, n);
#pragma unroll
            for (int k = 0; k < KMAX; k++)
                if (valid >> k & 1)
                    arb_st_line_free(dst + idx[k], xv[k].u, epoch);
        }

    // 3. Sum in rank order 0..n-1 (fp32). A rank's lines are polled together: each pass
    // re-reads only the ones still stale.
    float acc[KMAX][kE];
#pragma unroll
    for (int k = 0; k < KMAX; k++)
#pragma unroll
        for (int e = 0; e < kE; e++)
            acc[k][e] = 0.0f;
    for (int r = 0; r < n && !failed; r++) {
        unit4 d[KMAX];
        if (r == me) {
#pragma unroll
            for (int k = 0; k < KMAX; k++)
                d[k] = xv[k];
        } else {
            const uint4 *src = a.peers.lines(me, r, set, n);
            unsigned pending = valid;
            arb_spin_clock clock;
            while (pending) {
                uint4 l[KMAX];
#pragma unroll
                for (int k = 0; k < KMAX; k++)
                    if (pending >> k & 1)
                        l[k] = arb_ld_line_free(src + idx[k]);
#pragma unroll
                for (int k = 0; k < KMAX; k++)
                    if ((pending >> k & 1) && arb_line_is(l[k], epoch)) {
                        d[k].u = make_uint2(l[k].x, l[k].z);
                        pending &= ~(1u << k);
                    }
                if (!pending)
                    break;
                if (clock.give_up(a.peers.error(), r, Peers::kWaitWhat, epoch, a.timeout_ns)) {
                    failed = true;
                    break;
                }
            }
            if (failed)
                break;
        }
#pragma unroll
        for (int k = 0; k < KMAX; k++)
            if (valid >> k & 1)
#pragma unroll
                for (int e = 0; e < kE; e++)
                    acc[k][e] += __bfloat162float(d[k].e[e]);
    }

    // 4. residual = bf16(residual + sum), stored; squares of the stored values per row
    // (elements past the row are zero in every term).
    float sq[KMAX];
#pragma unroll
    for (int i = 0; i < KMAX; i++)
        sq[i] = 0.0f;
#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        if (!(valid >> k & 1))
            continue;
        const float s = arb_residual_add<kE>(rv[k], acc[k]);
        if (!failed)
            arb_store_unit<kE, WHOLE>((__nv_bfloat16 *)a.residual + off[k], unit[k], a.hidden, rv[k]);
        // A select, not sq[row_of[k]]: a computed index would put sq in local memory.
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            sq[i] += row_of[k] == (unsigned)i ? s : 0.0f;
    }
    if (failed)
#pragma unroll
        for (int i = 0; i < KMAX; i++)
            sq[i] = NAN;
    const unsigned warp = threadIdx.x / kArbWarp, nwarps = blockDim.x / kArbWarp, lane = threadIdx.x % kArbWarp;
#pragma unroll
    for (int i = 0; i < KMAX; i++)
        if ((unsigned)i < rows_mine) {
            const float w = arb_warp_sum(sq[i]);
            if (lane == 0)
                s_warp[i][warp] = w;
        }
    // The one barrier: every CTA's s_warp is written before any warp reads it.
    if constexpr (CLUSTER)
        cg::this_cluster().sync();
    else
        __syncthreads();

    // Every warp adds the row's P * nwarps partials itself (CTA-major, lane l takes
    // l, l + 32, ... in order, then the butterfly): the same bits everywhere.
    float inv[KMAX];
#pragma unroll
    for (int i = 0; i < KMAX; i++) {
        inv[i] = 0.0f;
        if ((unsigned)i < rows_mine) {
            float v = 0.0f;
            for (unsigned x = lane; x < P * nwarps; x += kArbWarp) {
                const unsigned b = x / nwarps, w = x % nwarps;
                if constexpr (CLUSTER)
                    v += *cg::this_cluster().map_shared_rank(&s_warp[i][w], b);
                else
                    v += s_warp[i][w];
            }
            inv[i] = arb_rms_inv(arb_warp_sum(v), a.hidden, a.eps);
            if (lane == 0)
                s_inv[warp][i] = inv[i];
        }
    }
    __syncwarp();
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_arrive(); // my reads of the other CTAs' s_warp are done
    // Every thread of this CTA read the epoch before the barrier above.
    if (threadIdx.x == 0)
        *a.peers.epoch_word() = epoch;

#pragma unroll
    for (int k = 0; k < KMAX; k++) {
        if (!(valid >> k & 1) || failed)
            continue;
        const float r_inv = s_inv[warp][row_of[k]];
        float f[kE];
#pragma unroll
        for (int e = 0; e < kE; e++)
            f[e] = __bfloat162float(rv[k].e[e]) * r_inv * __bfloat162float(wv[k].e[e]);
        static_assert(kE == 4, "the output packing below writes four bf16 per unit");
        arb_unit<kE> o;
        o.u.x = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[0])) | ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[1])) << 16);
        o.u.y = (uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[2])) | ((uint32_t)__bfloat16_as_ushort(__float2bfloat16_rn(f[3])) << 16);
        arb_store_unit<kE, WHOLE>((__nv_bfloat16 *)a.out + off[k], unit[k], a.hidden, o);
    }
    if constexpr (CLUSTER)
        cg::this_cluster().barrier_wait(); // no CTA exits while another reads its s_warp
}

#endif
