// SPDX-License-Identifier: MIT
// Host helpers for launching the plugins' kernels (header only, C++17): the launch
// configuration of a grid in thread-block clusters with optional programmatic
// dependent launch, and how many CTAs or clusters of a kernel can be resident at once
// (every CTA that waits for a peer CTA must be, so a plugin checks its grid with it).
#ifndef ARB_COMMON_LAUNCH_CUH
#define ARB_COMMON_LAUNCH_CUH

#include <cuda_runtime.h>

// A launch of `ctas` CTAs of `threads`: clusters of p CTAs (p > 1), programmatic
// stream serialization (pdl). attr holds 2 entries.
static inline cudaLaunchConfig_t arb_cluster_launch_config(int ctas, int p, int threads, bool pdl, cudaStream_t s,
                                                      cudaLaunchAttribute *attr)
{
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)ctas);
    cfg.blockDim = dim3((unsigned)threads);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 0;
    if (p > 1) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeClusterDimension;
        attr[cfg.numAttrs].val.clusterDim.x = (unsigned)p;
        attr[cfg.numAttrs].val.clusterDim.y = 1;
        attr[cfg.numAttrs].val.clusterDim.z = 1;
        cfg.numAttrs++;
    }
    if (pdl) {
        attr[cfg.numAttrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
        attr[cfg.numAttrs].val.programmaticStreamSerializationAllowed = 1;
        cfg.numAttrs++;
    }
    return cfg;
}

// Most clusters of p CTAs of `threads` threads of `kernel` resident at once on the
// current device (p = 1: CTAs per SM times SMs), into *clusters. Every CTA that waits
// for a peer CTA must be resident, so a plugin checks its grid against this.
template <typename Kernel> cudaError_t arb_resident_clusters(Kernel kernel, int p, int threads, int *clusters)
{
    if (p == 1) {
        int dev = 0, sms = 0, per_sm = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e == cudaSuccess)
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
        if (e == cudaSuccess)
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, 0);
        *clusters = per_sm * sms;
        return e;
    }
    cudaLaunchAttribute attr[2];
    const cudaLaunchConfig_t cfg = arb_cluster_launch_config(p, p, threads, false, 0, attr);
    return cudaOccupancyMaxActiveClusters(clusters, kernel, &cfg);
}

#endif
