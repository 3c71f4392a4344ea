/* SPDX-License-Identifier: MIT */
/* GPU discovery (gpu_device.h) through the CUDA runtime; built only with CUDA. */
#include "base/driver_version.h"
#include "runtime/gpu_device.h"

#include <cuda_runtime.h>

#include <stdio.h>
#include <string.h>

#include "arbench/status.h"

int arb_gpu_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "no CUDA device visible: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        cudaGetLastError();
        return 0;
    }
    if (n == 0)
        snprintf(why, why_len, "no CUDA device visible (cudaGetDeviceCount returned 0)");
    return n;
}

/* The kernel module's version, "" when unknown: NVML first, /proc as the fallback
 * (driver_version.c). The one place the driver string is read. */
static void driver_version(char *buf, size_t len)
{
    char why[256];
    if (arb_driver_version(buf, len, why, sizeof why) != ARB_OK)
        buf[0] = '\0';
}

arb_status_t arb_gpu_select(int device, arb_gpu_info_t *info, char *why, size_t why_len)
{
    struct cudaDeviceProp prop;
    int drv = 0, rt = 0;
    char kmod[64];
    memset(info, 0, sizeof *info);
    ARB_CUDA_TRY(cudaSetDevice(device), why, why_len);
    ARB_CUDA_TRY(cudaGetDeviceProperties(&prop, device), why, why_len);
    ARB_CUDA_TRY(cudaDriverGetVersion(&drv), why, why_len);
    ARB_CUDA_TRY(cudaRuntimeGetVersion(&rt), why, why_len);
    snprintf(info->name, sizeof info->name, "%.127s", prop.name);
    snprintf(info->sm, sizeof info->sm, "%d.%d", prop.major, prop.minor);
    driver_version(kmod, sizeof kmod);
    snprintf(info->driver, sizeof info->driver, "%s%s(CUDA %d.%d)", kmod, kmod[0] ? " " : "", drv / 1000, (drv % 1000) / 10);
    snprintf(info->cuda, sizeof info->cuda, "%d.%d", rt / 1000, (rt % 1000) / 10);
    snprintf(info->bus_id, sizeof info->bus_id, "%04x:%02x:%02x.0", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
    info->sm_count = prop.multiProcessorCount;
    return ARB_OK;
}
