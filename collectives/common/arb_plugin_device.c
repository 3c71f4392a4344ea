/* SPDX-License-Identifier: MIT */
/* The CUDA device check of the GPU plugins (its own object file: a module that never
 * calls it does not link the CUDA runtime for it). */
#include "arb_plugin_util.h"

#include <cuda_runtime_api.h>

#include "arbench/status.h"

arb_status_t arb_plugin_device_check(const arb_comm_info_t *info, const char *plugin, char *why, size_t why_len)
{
    if (info->cuda_device < 0)
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s needs a CUDA device (this run is host-only)", plugin);
    int ndev = 0;
    const cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "no CUDA device visible: cudaGetDeviceCount: %s",
                  cudaGetErrorString(ce));
    if (ndev == 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "no CUDA device visible: cudaGetDeviceCount returned 0");
    if (info->cuda_device >= ndev)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s: cuda_device %d is not one of the %d visible devices", plugin,
                  info->cuda_device, ndev);
    return ARB_OK;
}
