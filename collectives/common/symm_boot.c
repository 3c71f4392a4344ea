/* SPDX-License-Identifier: MIT */
#include "symm_boot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "arb_plugin_util.h"
#include "arbench/status.h"

void symm_version_str(int code, char *buf, size_t len)
{
    snprintf(buf, len, "%d.%d.%d", code / 10000, (code / 100) % 100, code % 100);
}

arb_status_t symm_check_device(const arb_comm_info_t *info, const char *plugin, char *why, size_t why_len)
{
    ARB_TRY(arb_plugin_device_check(info, plugin, why, why_len));
    if (info->nnodes > 1)
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s runs on one node only (symmetric windows over LSA/P2P); this job spans %d nodes", plugin, info->nnodes);
    ARB_CUDA_TRY(cudaSetDevice(info->cuda_device), why, why_len);
    return ARB_OK;
}

arb_status_t symm_comm_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, ncclComm_t *comm,
                            char *why, size_t why_len)
{
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t nr = ncclSuccess;
    if (info->rank == 0)
        nr = ncclGetUniqueId(&id);
    /* Every rank joins the broadcast even when rank 0 failed, so nobody hangs; a
     * zeroed id then makes ncclCommInitRank fail everywhere. */
    if (ops->bcast(ops->ctx, &id, sizeof id, 0) != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "broadcast of the NCCL unique id failed");
    }
    if (nr != ncclSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ncclGetUniqueId: %s", ncclGetErrorString(nr));
    }
    nr = ncclCommInitRank(comm, info->nranks, id, info->rank);
    if (nr != ncclSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ncclCommInitRank(nranks=%d, rank=%d): %s", info->nranks, info->rank, ncclGetErrorString(nr));
    }
    return ARB_OK;
}

arb_status_t symm_window_alloc(ncclComm_t comm, size_t bytes, void **ptr, ncclWindow_t *win,
                               char *why, size_t why_len)
{
    size_t rounded = (bytes + NCCL_WIN_REQUIRED_ALIGNMENT - 1) / NCCL_WIN_REQUIRED_ALIGNMENT * NCCL_WIN_REQUIRED_ALIGNMENT;
    if (rounded == 0)
        rounded = NCCL_WIN_REQUIRED_ALIGNMENT;
    *ptr = NULL;
    *win = NULL;
    ncclResult_t nr = ncclMemAlloc(ptr, rounded);
    if (nr != ncclSuccess) {
        ARB_WHY(why, why_len, "ncclMemAlloc(%zu bytes): %s", rounded, ncclGetErrorString(nr));
        *ptr = NULL;
        return ARB_ERR_SYSTEM;
    }
    nr = ncclCommWindowRegister(comm, *ptr, rounded, win, NCCL_WIN_COLL_SYMMETRIC);
    if (nr != ncclSuccess) {
        ARB_WHY(why, why_len, "ncclCommWindowRegister(%zu bytes, NCCL_WIN_COLL_SYMMETRIC): %s", rounded, ncclGetErrorString(nr));
        ncclMemFree(*ptr);
        *ptr = NULL;
        *win = NULL;
        return ARB_ERR_SYSTEM;
    }
    return ARB_OK;
}

void symm_window_free(ncclComm_t comm, void *ptr, ncclWindow_t win)
{
    if (win)
        ncclCommWindowDeregister(comm, win);
    if (ptr)
        ncclMemFree(ptr);
}

arb_status_t symm_probe_window(ncclComm_t comm, const arb_host_ops_t *ops, int *all_have,
                               char *why, size_t why_len)
{
    void *ptr = NULL;
    ncclWindow_t win = NULL;
    arb_status_t st = symm_window_alloc(comm, NCCL_WIN_REQUIRED_ALIGNMENT, &ptr, &win, why, why_len);
    if (st != ARB_OK)
        return st;
    /* The decision must be the same on every rank, or some would run and some not. */
    int mine = win != NULL, nranks = 0;
    ncclCommCount(comm, &nranks);
    int *all = calloc((size_t)nranks, sizeof *all);
    if (!all) {
        symm_window_free(comm, ptr, win);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory");
    }
    if (ops->allgather(ops->ctx, &mine, all, sizeof mine) != 0) {
        free(all);
        symm_window_free(comm, ptr, win);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "allgather of the window probe failed");
    }
    *all_have = 1;
    for (int r = 0; r < nranks; r++)
        if (!all[r])
            *all_have = 0;
    free(all);
    symm_window_free(comm, ptr, win);
    return ARB_OK;
}

static void append(char *buf, size_t len, const char *text)
{
    size_t used = strlen(buf);
    if (used + 2 < len)
        snprintf(buf + used, len - used, "%s%s", used ? "; " : "", text);
}

void symm_no_window_reason(const arb_comm_info_t *info, const arb_host_ops_t *ops, char *buf, size_t len)
{
    char item[256];
    buf[0] = '\0';
    const char *v = getenv("NCCL_CUMEM_ENABLE");
    if (v && strcmp(v, "0") == 0)
        append(buf, len, "NCCL_CUMEM_ENABLE=0 (symmetric windows need CUDA VMM memory)");
    v = getenv("NCCL_WIN_ENABLE");
    if (v && strcmp(v, "0") == 0)
        append(buf, len, "NCCL_WIN_ENABLE=0");
    v = getenv("NCCL_P2P_DISABLE");
    if (v && strcmp(v, "0") != 0) {
        snprintf(item, sizeof item, "NCCL_P2P_DISABLE=%s (symmetric windows need P2P/NVLink load-store access between all ranks)", v);
        append(buf, len, item);
    }
    v = getenv("NCCL_P2P_LEVEL");
    if (v) {
        snprintf(item, sizeof item, "NCCL_P2P_LEVEL=%s (up to NCCL 2.28.3 the LSA team also obeys the P2P distance check)", v);
        append(buf, len, item);
    }
    /* Which GPUs cannot reach each other: exchange PCI bus ids and ask CUDA. Every
     * rank joins the allgather, with an empty id where it could not tell its own. */
    char *ids = calloc((size_t)info->nranks, 32);
    char mine[32] = "";
    if (cudaDeviceGetPCIBusId(mine, sizeof mine, info->cuda_device) != cudaSuccess)
        mine[0] = '\0';
    if (ids && ops->allgather(ops->ctx, mine, ids, 32) == 0) {
        for (int r = 0; r < info->nranks; r++) {
            int peer_dev = -1, can = 0;
            if (r == info->rank || !mine[0] || !ids[32 * r])
                continue;
            if (cudaDeviceGetByPCIBusId(&peer_dev, ids + 32 * r) != cudaSuccess) {
                cudaGetLastError();
                continue; /* not visible to this process (CUDA_VISIBLE_DEVICES) */
            }
            if (peer_dev != info->cuda_device &&
                cudaDeviceCanAccessPeer(&can, info->cuda_device, peer_dev) == cudaSuccess && !can) {
                snprintf(item, sizeof item, "no CUDA P2P from rank %d (%s) to rank %d (%s)", info->rank, mine, r, ids + 32 * r);
                append(buf, len, item);
            }
        }
    }
    free(ids);
    if (!buf[0])
        append(buf, len, "NCCL gave no reason through its API; rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,REG to see it");
}

arb_status_t symm_comm_open(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *plugin,
                            ncclComm_t *comm, char *why, size_t why_len)
{
    arb_status_t st = symm_check_device(info, plugin, why, why_len);
    if (st != ARB_OK)
        return st;
    st = symm_comm_init(info, ops, comm, why, why_len);
    if (st != ARB_OK)
        return st;
    int all_have = 0;
    st = symm_probe_window(*comm, ops, &all_have, why, why_len);
    if (st == ARB_OK && !all_have) {
        char reason[768];
        symm_no_window_reason(info, ops, reason, sizeof reason);
        ARB_WHY(why, why_len, "NCCL created no symmetric window: %s", reason);
        st = ARB_DECLINE;
    }
    if (st != ARB_OK) {
        ncclCommDestroy(*comm);
        *comm = NULL;
    }
    return st;
}
