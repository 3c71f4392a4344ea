/* SPDX-License-Identifier: MIT */
/*
 * What CUDA and NVML say about the GPUs: bus ids, P2P access/atomics/performance rank,
 * NVLink pairs. NVML is optional: libnvidia-ml.so.1 is loaded with dlopen at run time
 * (it ships with the driver, not the toolkit), never linked.
 */
#include "topo.h"

#include "arb_config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#if ARB_HAVE_CUDA
#include <cuda_runtime_api.h>

int arb_topo_cuda_count(char *why, size_t why_len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "no CUDA device visible: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return 0;
    }
    if (n == 0)
        snprintf(why, why_len, "no CUDA device visible: cudaGetDeviceCount returned 0");
    return n;
}

int arb_topo_cuda_busid(int cuda_device, char busid[ARB_BUSID_LEN], char *why, size_t why_len)
{
    cudaError_t e = cudaDeviceGetPCIBusId(busid, ARB_BUSID_LEN, cuda_device);
    if (e != cudaSuccess) {
        snprintf(why, why_len, "%s: cudaDeviceGetPCIBusId(device %d): %s",
                 e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver ? "no CUDA device visible" : "CUDA failed",
                 cuda_device, cudaGetErrorString(e));
        return -1;
    }
    return 0;
}

/* This process's CUDA index for a bus id, -1 when the device is not visible here
 * (CUDA_VISIBLE_DEVICES) or CUDA is unusable. */
static int cuda_index_of(const char *busid)
{
    int dev = -1;
    if (cudaDeviceGetByPCIBusId(&dev, busid) != cudaSuccess) {
        (void)cudaGetLastError();
        return -1;
    }
    return dev;
}

void arb_topo_cuda_p2p(arb_topo_node_t *node)
{
    for (int i = 0; i < node->ngpus; i++)
        if (node->gpu[i].cuda_device < 0)
            node->gpu[i].cuda_device = cuda_index_of(node->gpu[i].busid);
    for (int i = 0; i < node->ngpus; i++)
        for (int j = 0; j < node->ngpus; j++) {
            int a = node->gpu[i].cuda_device, b = node->gpu[j].cuda_device;
            if (i == j || a < 0 || b < 0)
                continue;
            int access = 0, atomics = 0, rank = 0;
            if (cudaDeviceGetP2PAttribute(&access, cudaDevP2PAttrAccessSupported, a, b) != cudaSuccess ||
                cudaDeviceGetP2PAttribute(&atomics, cudaDevP2PAttrNativeAtomicSupported, a, b) != cudaSuccess ||
                cudaDeviceGetP2PAttribute(&rank, cudaDevP2PAttrPerformanceRank, a, b) != cudaSuccess) {
                (void)cudaGetLastError();
                continue;
            }
            node->p2p_access[i][j] = (signed char)(access != 0);
            node->p2p_atomics[i][j] = (signed char)(atomics != 0);
            node->p2p_rank[i][j] = rank;
            node->p2p_queried = 1;
        }
}

#else /* !ARB_HAVE_CUDA */

int arb_topo_cuda_count(char *why, size_t why_len)
{
    snprintf(why, why_len, "no CUDA device visible: arbench was built without CUDA");
    return 0;
}

int arb_topo_cuda_busid(int cuda_device, char busid[ARB_BUSID_LEN], char *why, size_t why_len)
{
    (void)busid;
    snprintf(why, why_len, "no CUDA device visible: arbench was built without CUDA (device %d asked for)", cuda_device);
    return -1;
}

void arb_topo_cuda_p2p(arb_topo_node_t *node) { (void)node; }

#endif

/* The few NVML declarations used, from NVIDIA's public NVML API reference. */
typedef struct nvml_device *nvml_device_t;
typedef int nvml_return_t;          /* nvmlReturn_t: 0 is NVML_SUCCESS */
#define NVML_P2P_CAPS_INDEX_NVLINK 2 /* nvmlGpuP2PCapsIndex_t */
#define NVML_P2P_STATUS_OK 0         /* nvmlGpuP2PStatus_t */

typedef struct nvml_api {
    void *lib;
    nvml_return_t (*init)(void);
    nvml_return_t (*shutdown)(void);
    nvml_return_t (*by_busid)(const char *busid, nvml_device_t *dev);
    nvml_return_t (*p2p_status)(nvml_device_t a, nvml_device_t b, int caps_index, int *status);
    const char *(*error_string)(nvml_return_t r);
} nvml_api_t;

static int nvml_open(nvml_api_t *api, char *why, size_t why_len)
{
    memset(api, 0, sizeof *api);
    api->lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!api->lib) {
        snprintf(why, why_len, "NVML not available: dlopen(libnvidia-ml.so.1): %s", dlerror());
        return -1;
    }
    /* POSIX guarantees that dlsym's object pointer converts to a function pointer. */
    *(void **)&api->init = dlsym(api->lib, "nvmlInit_v2");
    *(void **)&api->shutdown = dlsym(api->lib, "nvmlShutdown");
    *(void **)&api->by_busid = dlsym(api->lib, "nvmlDeviceGetHandleByPciBusId_v2");
    *(void **)&api->p2p_status = dlsym(api->lib, "nvmlDeviceGetP2PStatus");
    *(void **)&api->error_string = dlsym(api->lib, "nvmlErrorString");
    if (!api->init || !api->shutdown || !api->by_busid || !api->p2p_status || !api->error_string) {
        snprintf(why, why_len, "NVML not usable: libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetP2PStatus");
        goto err_close_lib;
    }
    nvml_return_t r = api->init();
    if (r != 0) {
        snprintf(why, why_len, "NVML not usable: nvmlInit_v2: %s", api->error_string(r));
        goto err_close_lib;
    }
    return 0;

err_close_lib:
    dlclose(api->lib);
    api->lib = NULL;
    return -1;
}

/* Keeps what hwloc said about NVLink and adds why NVML could not say more. */
static void note_source(arb_topo_node_t *node, const char *why)
{
    char was[sizeof node->nvlink_source];
    snprintf(was, sizeof was, "%s", node->nvlink_source);
    snprintf(node->nvlink_source, sizeof node->nvlink_source, "%.120s%s%.120s", was, was[0] ? ", " : "", why);
}

int arb_topo_nvml_nvlink(arb_topo_node_t *node, char *why, size_t why_len)
{
    nvml_api_t api;
    if (nvml_open(&api, why, why_len) != 0) {
        note_source(node, why);
        return -1;
    }
    nvml_device_t dev[ARB_TOPO_MAX_GPUS];
    int pairs = 0;
    for (int i = 0; i < node->ngpus; i++) {
        nvml_return_t r = api.by_busid(node->gpu[i].busid, &dev[i]);
        if (r != 0) {
            snprintf(why, why_len, "NVML does not know GPU %s: %s", node->gpu[i].busid, api.error_string(r));
            note_source(node, why);
            pairs = -1;
            goto out_shutdown;
        }
    }
    for (int i = 0; i < node->ngpus; i++)
        for (int j = i + 1; j < node->ngpus; j++) {
            int status = -1;
            if (api.p2p_status(dev[i], dev[j], NVML_P2P_CAPS_INDEX_NVLINK, &status) == 0 &&
                status == NVML_P2P_STATUS_OK) {
                arb_topo_node_set_nvlink(node, i, j);
                pairs++;
            }
        }
    snprintf(node->nvlink_source, sizeof node->nvlink_source, "NVML P2P status (%d GPU pairs)", pairs);

out_shutdown:
    api.shutdown();
    dlclose(api.lib);
    return pairs;
}
