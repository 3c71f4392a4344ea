// SPDX-License-Identifier: MIT
// The flag-free register kernel of p2p's fused all-reduce + residual add + RMSNorm
// (p2p_fused.h: "register kernel"): the common fused flag-free kernel
// (collectives/common/arb_ff_fused.cuh: work split, lines and their memory ordering,
// epochs, sums, timeouts) addressing peers through p2p_peers, the CUDA IPC mappings of
// every rank's window. Used for launches of whole rows per CTA (row_blocks 1) whose
// units are whole; the same lines, index of a unit in the area, epochs
// (p2p_dev_state.fused_epoch), work split and sums as fused_rmsnorm<P2P_ONESHOT_FLAGFREE>
// in p2p_fused.cu, so launches of either kernel may follow each other on one instance.
// Measured on 2 x H200 (README.md): faster than the general kernel for whole rows per
// CTA, slower in thread-block clusters, which keep the general kernel.
#include "p2p_fused.h"

#include "arb_ff_fused.cuh"
#include "p2p_device.cuh"

namespace {

// How the fused kernel reaches the line areas on the IPC path: payload[r] is the
// fused area of rank r's window, as this rank maps it (its own at [rank]).
struct p2p_peers {
    char *payload[P2P_MAX_RANKS];
    size_t area_bytes; // one source's line set (the fused slot)
    p2p_dev_state_t *state;
    static constexpr uint32_t kWaitWhat = P2P_WAIT_FUSED_LINES;
    using index_t = uint32_t; // a fused slot holds at most 4 MiB of lines, a launch its rows
    __device__ __forceinline__ uint4 *lines(int owner, int src, size_t set, int n) const
    {
        return (uint4 *)(payload[owner] + (set * n + src) * area_bytes);
    }
    __device__ __forceinline__ uint32_t *epoch_word() const { return &state->fused_epoch[blockIdx.x]; }
    __device__ __forceinline__ arb_spin_error_t *error() const { return &state->err; }
};

// Whole units, single CTAs, every unit of a thread in registers (arb_ff_kmax of MAXT).
template <int MAXT>
constexpr auto ff_kernel = arb_ff_fused_kernel<p2p_peers, MAXT, arb_ff_kmax(MAXT), false, true>;

arb_ff_args<p2p_peers> ff_args(const p2p_fused_launch_t *a, unsigned upt)
{
    arb_ff_args<p2p_peers> f = {};
    for (int r = 0; r < a->net.nranks; r++)
        f.peers.payload[r] = a->net.payload[r];
    f.peers.area_bytes = a->net.area_bytes;
    f.peers.state = a->net.state;
    f.x = a->x;
    f.residual = a->residual;
    f.weight = a->weight;
    f.out = a->out;
    f.rows = a->rows;
    f.hidden = a->hidden;
    f.upt = upt;
    f.eps = a->eps;
    f.timeout_ns = a->net.timeout_ns;
    f.rank = a->net.rank;
    f.nranks = a->net.nranks;
    f.hang = a->net.hang;
    return f;
}

} // namespace

int p2p_fused_ff_fits(const p2p_fused_launch_t *a, int blocks, int row_blocks, int threads, unsigned *upt)
{
    if (row_blocks != 1 || !a->whole_units || a->hidden % kArbFfUnitElems != 0 || threads > 1024)
        return 0;
    const unsigned upr = a->hidden / kArbFfUnitElems, per_row = (unsigned)threads;
    const unsigned u = (upr + per_row - 1) / per_row, rows = (a->rows + (unsigned)blocks - 1) / (unsigned)blocks;
    *upt = u;
    return (size_t)u * rows <= (size_t)arb_ff_kmax(arb_ff_maxt(threads));
}

cudaError_t p2p_fused_ff_launch(const p2p_fused_launch_t *a, unsigned upt, int blocks, int threads, bool pdl,
                                cudaStream_t stream)
{
    const arb_ff_args<p2p_peers> f = ff_args(a, upt);
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = arb_cluster_launch_config(blocks, 1, threads, pdl, stream, attr);
    if (threads <= 256)
        return cudaLaunchKernelEx(&cfg, ff_kernel<256>, f);
    if (threads <= 512)
        return cudaLaunchKernelEx(&cfg, ff_kernel<512>, f);
    return cudaLaunchKernelEx(&cfg, ff_kernel<1024>, f);
}

cudaError_t p2p_fused_ff_max_blocks(int threads, int *blocks)
{
    if (threads <= 256)
        return arb_resident_clusters(ff_kernel<256>, 1, threads, blocks);
    if (threads <= 512)
        return arb_resident_clusters(ff_kernel<512>, 1, threads, blocks);
    return arb_resident_clusters(ff_kernel<1024>, 1, threads, blocks);
}
