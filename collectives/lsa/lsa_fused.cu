/* SPDX-License-Identifier: MIT */
/*
 * Fused all-reduce + residual add + RMSNorm for oneshot-flagfree on the LSA path
 * (arb_rmsnorm_args_t): the common fused flag-free kernel
 * (collectives/common/arb_ff_fused.cuh: work split, lines and their memory ordering,
 * epochs, sums, timeouts) addressing peers through lsa_peers (lsa_device.cuh): the
 * ranks' x travel as flag-free lines pushed into the peers' symmetric scratch windows
 * through their LSA pointers, in a fused line area separate from the all-reduce's,
 * with its own epochs (W_FUSED + b).
 *
 * This file picks the instantiation per launch: the launch bound from the threads per
 * CTA, one unit per thread where no thread holds more (1-3 tokens at hidden 7168 on
 * 24 x 256: 44 registers instead of ~230, no predicated slot loops on the latency
 * path), whole 8-byte units or element by element, clusters of P > 1 CTAs or plain
 * CTAs, and programmatic dependent launch (pdl=1). The kernels of one launch size are
 * interchangeable (same lines, epochs, split and sums); the occupancy check at init
 * takes the fewest resident clusters over all of them.
 */
#include "lsa_device.cuh"

namespace {

template <int MAXT, int KMAX, bool CLUSTER, bool WHOLE>
constexpr auto fused_kernel = arb_ff_fused_kernel<lsa_peers, MAXT, KMAX, CLUSTER, WHOLE>;

template <int MAXT, int KMAX, bool WHOLE>
cudaError_t launch_k(const lsa_fargs &a, int ctas, int p, int threads, bool pdl, cudaStream_t s)
{
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = arb_cluster_launch_config(ctas, p, threads, pdl, s, attr);
    if (p == 1)
        return cudaLaunchKernelEx(&cfg, fused_kernel<MAXT, KMAX, false, WHOLE>, a);
    return cudaLaunchKernelEx(&cfg, fused_kernel<MAXT, KMAX, true, WHOLE>, a);
}

/* single: no thread holds more than one unit in this launch. */
template <int MAXT, bool WHOLE>
cudaError_t launch_t(const lsa_fargs &a, int ctas, int p, int threads, bool pdl, bool single, cudaStream_t s)
{
    return single ? launch_k<MAXT, 1, WHOLE>(a, ctas, p, threads, pdl, s)
                  : launch_k<MAXT, arb_ff_kmax(MAXT), WHOLE>(a, ctas, p, threads, pdl, s);
}

template <int MAXT, int KMAX, bool WHOLE> cudaError_t max_clusters_t(int p, int threads, int *clusters)
{
    if (p == 1)
        return arb_resident_clusters(fused_kernel<MAXT, KMAX, false, WHOLE>, 1, threads, clusters);
    return arb_resident_clusters(fused_kernel<MAXT, KMAX, true, WHOLE>, p, threads, clusters);
}

/* The fewest over the four kernels a launch of this size may run. */
template <int MAXT> cudaError_t max_clusters_m(int p, int threads, int *clusters)
{
    constexpr int K = arb_ff_kmax(MAXT);
    int n[4] = {0, 0, 0, 0};
    cudaError_t e = max_clusters_t<MAXT, K, true>(p, threads, &n[0]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, K, false>(p, threads, &n[1]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, 1, true>(p, threads, &n[2]);
    if (e == cudaSuccess)
        e = max_clusters_t<MAXT, 1, false>(p, threads, &n[3]);
    *clusters = n[0];
    for (int i = 1; i < 4; i++)
        *clusters = n[i] < *clusters ? n[i] : *clusters;
    return e;
}

} // namespace

cudaError_t lsa_fused_max_clusters(int p, int threads, int *clusters)
{
    *clusters = 0;
    if (threads <= 256)
        return max_clusters_m<256>(p, threads, clusters);
    if (threads <= 512)
        return max_clusters_m<512>(p, threads, clusters);
    return max_clusters_m<1024>(p, threads, clusters);
}

cudaError_t lsa_fused_launch(const lsa_fargs &a, bool whole, int ctas, int p, int threads, bool pdl, cudaStream_t s)
{
    /* Every thread holds at most one unit: one unit per row (upt 1) and at most one row
     * per cluster. */
    const bool single = a.upt == 1 && a.rows <= (unsigned)(ctas / p);
    if (threads <= 256)
        return whole ? launch_t<256, true>(a, ctas, p, threads, pdl, single, s)
                     : launch_t<256, false>(a, ctas, p, threads, pdl, single, s);
    if (threads <= 512)
        return whole ? launch_t<512, true>(a, ctas, p, threads, pdl, single, s)
                     : launch_t<512, false>(a, ctas, p, threads, pdl, single, s);
    return whole ? launch_t<1024, true>(a, ctas, p, threads, pdl, single, s)
                 : launch_t<1024, false>(a, ctas, p, threads, pdl, single, s);
}
