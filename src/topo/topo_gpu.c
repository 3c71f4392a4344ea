/* SPDX-License-Identifier: MIT */
/*
 * What CUDA and NVML say about the GPUs: bus ids, P2P access/atomics/performance rank,
 * NVLink pairs, the driver version. NVML is optional: libnvidia-ml.so.1 is loaded with
 * dlopen at run time (it ships with the driver, not the toolkit), never linked; its types
 * come from the toolkit's nvml.h.
 */
#include "topo/topo.h"
#include "base/driver_version.h"

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

#if ARB_HAVE_NVML_H
#include <nvml.h>
#else
/* Only where the toolkit lacks nvml.h (pip-installed toolkits): the few declarations
 * used, as NVIDIA's NVML API reference gives them. */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef int nvmlReturn_t;
#define NVML_SUCCESS 0
#define NVML_P2P_CAPS_INDEX_NVLINK 2
#define NVML_P2P_STATUS_OK 0
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80
typedef int nvmlGpuP2PCapsIndex_t, nvmlGpuP2PStatus_t;
#endif

/* NVML is loaded at run time (it ships with the driver, not the toolkit). */
typedef struct nvml_api {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*by_busid)(const char *busid, nvmlDevice_t *dev);
    nvmlReturn_t (*p2p_status)(nvmlDevice_t a, nvmlDevice_t b, nvmlGpuP2PCapsIndex_t caps, nvmlGpuP2PStatus_t *status);
    nvmlReturn_t (*driver_version)(char *version, unsigned int length);
    const char *(*error_string)(nvmlReturn_t r);
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
    *(void **)&api->driver_version = dlsym(api->lib, "nvmlSystemGetDriverVersion");
    *(void **)&api->error_string = dlsym(api->lib, "nvmlErrorString");
    if (!api->init || !api->shutdown || !api->by_busid || !api->p2p_status || !api->driver_version || !api->error_string) {
        snprintf(why, why_len, "NVML not usable: libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2, nvmlDeviceGetP2PStatus or nvmlSystemGetDriverVersion");
        goto err_close_lib;
    }
    nvmlReturn_t r = api->init();
    if (r != NVML_SUCCESS) {
        snprintf(why, why_len, "NVML not usable: nvmlInit_v2: %s", api->error_string(r));
        goto err_close_lib;
    }
    return 0;

err_close_lib:
    dlclose(api->lib);
    api->lib = NULL;
    return -1;
}

int arb_driver_version_parse_proc(const char *text, char *buf, size_t len)
{
    /* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun ..." or
     * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ...":
     * the version is the first word after "Kernel Module" made of digits and dots. */
    const char *p = text ? strstr(text, "Kernel Module") : NULL;
    if (!p || !len)
        return -1;
    for (p += strlen("Kernel Module"); *p && *p != '\n';) {
        while (*p == ' ' || *p == '\t')
            p++;
        size_t n = strcspn(p, " \t\n");
        size_t digits = strspn(p, "0123456789.");
        if (n && digits == n && p[0] != '.' && memchr(p, '.', n) && n < len) {
            memcpy(buf, p, n);
            buf[n] = '\0';
            return 0;
        }
        p += n;
    }
    return -1;
}

arb_status_t arb_driver_version(char *buf, size_t len, char *why, size_t why_len)
{
    buf[0] = '\0';
    nvml_api_t api;
    char nvml_why[256] = "";
    if (nvml_open(&api, nvml_why, sizeof nvml_why) == 0) {
        char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
        nvmlReturn_t r = api.driver_version(v, sizeof v);
        if (r != NVML_SUCCESS)
            snprintf(nvml_why, sizeof nvml_why, "nvmlSystemGetDriverVersion: %s", api.error_string(r));
        api.shutdown();
        dlclose(api.lib);
        if (r == NVML_SUCCESS && v[0]) {
            snprintf(buf, len, "%s", v);
            return ARB_OK;
        }
    }
    /* Fallback: the kernel module's own line (both wordings of it). */
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    char line[512] = "";
    int ok = f && fgets(line, sizeof line, f) && arb_driver_version_parse_proc(line, buf, len) == 0;
    if (f)
        fclose(f);
    if (ok)
        return ARB_OK;
    snprintf(why, why_len, "driver version unknown: %s; /proc/driver/nvidia/version %s", nvml_why,
             f ? "has no \"Kernel Module <version>\"" : "cannot be read");
    return ARB_DECLINE;
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
    nvmlDevice_t dev[ARB_TOPO_MAX_GPUS];
    int pairs = 0;
    for (int i = 0; i < node->ngpus; i++) {
        nvmlReturn_t r = api.by_busid(node->gpu[i].busid, &dev[i]);
        if (r != NVML_SUCCESS) {
            snprintf(why, why_len, "NVML does not know GPU %s: %s", node->gpu[i].busid, api.error_string(r));
            note_source(node, why);
            pairs = -1;
            goto out_shutdown;
        }
    }
    for (int i = 0; i < node->ngpus; i++)
        for (int j = i + 1; j < node->ngpus; j++) {
            nvmlGpuP2PStatus_t status = (nvmlGpuP2PStatus_t)-1;
            if (api.p2p_status(dev[i], dev[j], NVML_P2P_CAPS_INDEX_NVLINK, &status) == NVML_SUCCESS &&
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
