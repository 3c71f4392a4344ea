// SPDX-License-Identifier: MIT
// The p2p all-reduce kernels. README.md in this folder gives each algorithm, its
// memory ordering and its cost.
//
// Work split, shared by all variants: vector v (16 bytes; for the flag-free variant
// an 8-byte unit) belongs to thread v % (G*T) of block (v / T) % G, for G blocks of
// T threads. The owner of v depends only on v, G and T, never on the count, so block
// b on every rank handles the same vectors in every call: a CTA only ever waits for
// the CTA with its own index on the other ranks (per-block flags, no grid barrier),
// and a flag-free line is always rewritten by the same block.
#include "p2p_kernels.h"

#include "arb_launch.cuh"
#include "p2p_device.cuh"

namespace {

// Every rank's input is read from the ranks' staging areas and summed in rank order
// 0..n-1, in fp32, rounded once: the same operations on every rank.
template <typename T>
__global__ void oneshot_pull(p2p_launch_t a)
{
    constexpr int VEC = p2p_elt<T>::VEC;
    uint32_t epoch;
    if (!p2p_begin_call(a, &epoch))
        return;
    const size_t nv = (a.count + VEC - 1) / VEC, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if ((size_t)blockIdx.x * blockDim.x < nv) { // same on every rank: owns some vector
        const size_t set_off = (epoch & 1) * a.area_bytes;
        uint4 *mine = (uint4 *)(a.payload[a.rank] + set_off);
        for (size_t v = first; v < nv; v += stride)
            mine[v] = p2p_load_vec((const T *)a.send, v, a.count).u;
        if (!p2p_block_barrier(a, 0, epoch))
            return;
        for (size_t v = first; v < nv; v += stride) {
            float acc[VEC] = {};
            for (int r = 0; r < a.nranks; r++) {
                p2p_vec<T> x;
                x.u = r == a.rank ? mine[v] : p2p_ld_cg((const uint4 *)(a.payload[r] + set_off) + v);
                p2p_acc<T>(acc, x);
            }
            p2p_store_vec((T *)a.recv, v, a.count, p2p_round<T>(acc));
        }
    }
    p2p_end_call(a, epoch);
}

// Each rank writes its input into slot `rank` of every peer (posted writes), signals,
// waits for every peer's signal, and sums its own slots in rank order.
template <typename T>
__global__ void oneshot_push(p2p_launch_t a)
{
    constexpr int VEC = p2p_elt<T>::VEC;
    uint32_t epoch;
    if (!p2p_begin_call(a, &epoch))
        return;
    const size_t nv = (a.count + VEC - 1) / VEC, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if ((size_t)blockIdx.x * blockDim.x < nv) {
        const size_t set_base = (size_t)(epoch & 1) * a.nranks;
        if (!a.hang)
            for (size_t v = first; v < nv; v += stride) {
                const uint4 x = p2p_load_vec((const T *)a.send, v, a.count).u;
                for (int k = 1; k < a.nranks; k++) { // start at the next rank: spread the links
                    const int p = (a.rank + k) % a.nranks;
                    ((uint4 *)(a.payload[p] + (set_base + a.rank) * a.area_bytes))[v] = x;
                }
            }
        if (!p2p_block_barrier(a, 0, epoch))
            return;
        for (size_t v = first; v < nv; v += stride) {
            float acc[VEC] = {};
            for (int r = 0; r < a.nranks; r++) {
                p2p_vec<T> x;
                if (r == a.rank)
                    x = p2p_load_vec((const T *)a.send, v, a.count);
                else
                    x.u = p2p_ld_cg((const uint4 *)(a.payload[a.rank] + (set_base + r) * a.area_bytes) + v);
                p2p_acc<T>(acc, x);
            }
            p2p_store_vec((T *)a.recv, v, a.count, p2p_round<T>(acc));
        }
    }
    p2p_end_call(a, epoch);
}

// Reduce-scatter then all-gather: rank r sums shard r (vectors [r*S, (r+1)*S)) from
// every rank's staging in rank order, writes it to its recv and into every peer's
// out area; after the second barrier each rank copies the other shards from out.
// Single buffers suffice: a rank rewrites its staging only after every peer passed
// the previous call's second barrier, i.e. finished reading it, and peers write out
// only after the next call's first barrier, i.e. after this rank finished copying.
template <typename T>
__global__ void twoshot(p2p_launch_t a)
{
    constexpr int VEC = p2p_elt<T>::VEC;
    uint32_t epoch;
    if (!p2p_begin_call(a, &epoch))
        return;
    const size_t nv = (a.count + VEC - 1) / VEC, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if ((size_t)blockIdx.x * blockDim.x < nv) {
        const size_t shard = (nv + a.nranks - 1) / a.nranks;
        const size_t lo = (size_t)a.rank * shard, hi = lo + shard < nv ? lo + shard : nv;
        uint4 *staging = (uint4 *)a.payload[a.rank];
        uint4 *out = (uint4 *)(a.payload[a.rank] + a.area_bytes);
        for (size_t v = first; v < nv; v += stride)
            staging[v] = p2p_load_vec((const T *)a.send, v, a.count).u;
        if (!p2p_block_barrier(a, 0, epoch))
            return;
        for (size_t v = first; v < nv; v += stride) {
            if (v < lo || v >= hi)
                continue;
            float acc[VEC] = {};
            for (int r = 0; r < a.nranks; r++) {
                p2p_vec<T> x;
                x.u = r == a.rank ? staging[v] : p2p_ld_cg((const uint4 *)a.payload[r] + v);
                p2p_acc<T>(acc, x);
            }
            const p2p_vec<T> y = p2p_round<T>(acc);
            p2p_store_vec((T *)a.recv, v, a.count, y);
            if (!a.hang)
                for (int k = 1; k < a.nranks; k++) {
                    const int p = (a.rank + k) % a.nranks;
                    ((uint4 *)(a.payload[p] + a.area_bytes))[v] = y.u;
                }
        }
        if (!p2p_block_barrier(a, 1, epoch))
            return;
        for (size_t v = first; v < nv; v += stride)
            if (v < lo || v >= hi) {
                p2p_vec<T> y;
                y.u = p2p_ld_cg(out + v);
                p2p_store_vec((T *)a.recv, v, a.count, y);
            }
    }
    p2p_end_call(a, epoch);
}

// ---- flag-free one-shot (LL lines) ----

// Lines: arb_st_line / arb_ld_line (collectives/common/arb_device.cuh: LL lines).

// 8-byte unit u of a count-element array, zero past the end.
template <typename T> __device__ __forceinline__ uint2 load_unit(const T *base, size_t u, size_t count)
{
    constexpr int H = 8 / sizeof(T);
    union {
        uint2 u2;
        T e[H];
    } x;
    const size_t first = u * H;
    if (first + H <= count) {
        x.u2 = *(const uint2 *)(base + first);
    } else {
        x.u2 = make_uint2(0, 0);
        for (int i = 0; i < H && first + i < count; i++)
            x.e[i] = base[first + i];
    }
    return x.u2;
}

// Each rank writes its input as lines into its slot of every peer's current set, then
// polls its own slots line by line. Two sets are enough: a rank can start call k+2
// only after it received every peer's call-k+1 lines, which each peer writes after
// finishing call k, so no peer still reads call k's set when call k+2 rewrites it.
template <typename T>
__global__ void oneshot_flagfree(p2p_launch_t a)
{
    constexpr int H = 8 / sizeof(T);
    uint32_t epoch;
    if (!p2p_begin_call(a, &epoch))
        return;
    const size_t nu = (a.count + H - 1) / H, stride = (size_t)gridDim.x * blockDim.x;
    const size_t first = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    const size_t slot_bytes = 2 * a.area_bytes, set_base = (size_t)(epoch & 1) * a.nranks;
    if (!a.hang)
        for (size_t u = first; u < nu; u += stride) {
            const uint2 x = load_unit((const T *)a.send, u, a.count);
            for (int k = 1; k < a.nranks; k++) {
                const int p = (a.rank + k) % a.nranks;
                arb_st_line((uint4 *)(a.payload[p] + (set_base + a.rank) * slot_bytes) + u, x.x, x.y, epoch);
            }
        }
    bool failed = false; // a wait gave up: leave recv as it is, keep the epoch
    for (size_t u = first; u < nu && !failed; u += stride) {
        float acc[H] = {};
        for (int r = 0; r < a.nranks && !failed; r++) {
            union {
                uint2 u2;
                T e[H];
            } x;
            if (r == a.rank) {
                x.u2 = load_unit((const T *)a.send, u, a.count);
            } else {
                const uint4 *line = (const uint4 *)(a.payload[a.rank] + (set_base + r) * slot_bytes) + u;
                uint4 l = arb_ld_line(line);
                if (l.y != epoch || l.w != epoch) {
                    const uint64_t t0 = arb_globaltimer_ns();
                    for (unsigned spin = 1; l.y != epoch || l.w != epoch; spin++) {
                        if ((spin & 255) == 0 && p2p_aborted(a.state)) {
                            failed = true;
                            break;
                        }
                        if (arb_globaltimer_ns() - t0 > a.timeout_ns) {
                            p2p_record_timeout(a.state, r, P2P_WAIT_LINES, epoch);
                            failed = true;
                            break;
                        }
                        l = arb_ld_line(line);
                    }
                }
                x.u2 = make_uint2(l.x, l.z);
            }
#pragma unroll
            for (int i = 0; i < H; i++)
                acc[i] += p2p_elt<T>::to_f(x.e[i]);
        }
        if (failed)
            break;
        union {
            uint2 u2;
            T e[H];
        } y;
#pragma unroll
        for (int i = 0; i < H; i++)
            y.e[i] = p2p_elt<T>::from_f(acc[i]);
        T *recv = (T *)a.recv;
        const size_t e0 = u * H;
        if (e0 + H <= a.count)
            *(uint2 *)(recv + e0) = y.u2;
        else
            for (int i = 0; i < H && e0 + i < a.count; i++)
                recv[e0 + i] = y.e[i];
    }
    // Every thread of the block is done with this epoch before it is advanced.
    if (__syncthreads_or(failed))
        return;
    p2p_end_call(a, epoch);
}

template <typename T> cudaError_t launch_typed(p2p_variant_t v, const p2p_launch_t *a, int blocks, int threads,
                                               bool pdl, cudaStream_t s)
{
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = arb_cluster_launch_config(blocks, 1, threads, pdl, s, attr);
    switch (v) {
    case P2P_ONESHOT_PULL: return cudaLaunchKernelEx(&cfg, oneshot_pull<T>, *a);
    case P2P_ONESHOT_PUSH: return cudaLaunchKernelEx(&cfg, oneshot_push<T>, *a);
    case P2P_TWOSHOT: return cudaLaunchKernelEx(&cfg, twoshot<T>, *a);
    case P2P_ONESHOT_FLAGFREE: return cudaLaunchKernelEx(&cfg, oneshot_flagfree<T>, *a);
    default: return cudaErrorInvalidValue;
    }
}

} // namespace

size_t p2p_payload_bytes(p2p_variant_t v, int nranks, size_t area_bytes)
{
    switch (v) {
    case P2P_ONESHOT_PULL: return 2 * area_bytes;
    case P2P_ONESHOT_PUSH: return 2 * (size_t)nranks * area_bytes;
    case P2P_TWOSHOT: return 2 * area_bytes;
    case P2P_ONESHOT_FLAGFREE: return 2 * (size_t)nranks * 2 * area_bytes;
    default: return 0;
    }
}

cudaError_t p2p_launch_allreduce(p2p_variant_t v, const p2p_launch_t *a, int bf16, int blocks, int threads,
                                 bool pdl, cudaStream_t stream)
{
    return bf16 ? launch_typed<__nv_bfloat16>(v, a, blocks, threads, pdl, stream)
                : launch_typed<float>(v, a, blocks, threads, pdl, stream);
}
