/* SPDX-License-Identifier: MIT */
/*
 * arb-nccl-symm.so: ncclAllReduce with send and recv in NCCL_WIN_COLL_SYMMETRIC
 * windows over ncclMemAlloc memory, so that NCCL 2.27+ may pick its symmetric
 * kernels (single node; in 2.28 also over PCIe P2P). NCCL falls back silently to
 * its ordinary kernels when a buffer is not in a symmetric window, and
 * ncclCommWindowRegister succeeds WITHOUT a window when the communicator lacks
 * symmetric support: init probes for a window and declines when there is none,
 * so a fallback is never recorded as "symmetric".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "symm_boot.h"
#include "symm_windows.h"

typedef struct symm_state {
    arb_comm_info_t info;
    const arb_host_ops_t *ops;
    ncclComm_t comm;
    symm_windows_t bufs; /* mem_alloc's buffers */
    char describe[96];
} symm_state_t;

static arb_status_t symm_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                              void **state, char *why, size_t why_len)
{
    /* No keys: NCCL picks its symmetric kernel itself. */
    ARB_TRY(arb_kv_parse("nccl-symm", params, NULL, 0, NULL, NULL, ops, why, why_len));
    symm_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "nccl-symm: out of host memory");
    }
    s->info = *info;
    s->ops = ops;
    arb_status_t st = symm_comm_open(info, ops, "nccl-symm", &s->comm, why, why_len);
    if (st != ARB_OK) {
        free(s);
        return st;
    }

    int version = 0;
    ncclGetVersion(&version);
    char vs[32];
    symm_version_str(version, vs, sizeof vs);
    snprintf(s->describe, sizeof s->describe, "window=symmetric,nccl=%s", vs);
    *state = s;
    return ARB_OK;
}

static void *symm_mem_alloc(void *state, size_t bytes)
{
    symm_state_t *s = state;
    const int slot = symm_windows_alloc(&s->bufs, s->comm, s->ops, bytes);
    return slot < 0 ? NULL : s->bufs.w[slot].base;
}

static void symm_mem_free(void *state, void *ptr)
{
    symm_state_t *s = state;
    symm_windows_free(&s->bufs, s->comm, ptr);
}

static arb_status_t symm_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                   void *stream, char *why, size_t why_len)
{
    symm_state_t *s = state;
    ncclDataType_t t;
    switch (dtype) {
    case ARB_DTYPE_BF16: t = ncclBfloat16; break;
    case ARB_DTYPE_FP32: t = ncclFloat32; break;
    default:
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "nccl-symm: dtype %d, expected bf16 or fp32", (int)dtype);
    }
    ncclResult_t nr = ncclAllReduce(send, recv, count, t, ncclSum, s->comm, (cudaStream_t)stream);
    if (nr != ncclSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ncclAllReduce(count=%zu): %s", count, ncclGetErrorString(nr));
    }
    return ARB_OK;
}

static arb_status_t symm_query_error(void *state, char *why, size_t why_len)
{
    symm_state_t *s = state;
    ncclResult_t async = ncclSuccess;
    ncclResult_t nr = ncclCommGetAsyncError(s->comm, &async);
    if (nr != ncclSuccess || async != ncclSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "NCCL asynchronous error: %s", ncclGetErrorString(nr != ncclSuccess ? nr : async));
    }
    return ARB_OK;
}

static const char *symm_describe(void *state)
{
    return ((symm_state_t *)state)->describe;
}

static void symm_finalize(void *state)
{
    symm_state_t *s = state;
    symm_windows_free_all(&s->bufs, s->comm);
    ncclCommDestroy(s->comm);
    free(s);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "nccl-symm",
    .description = "NCCL all-reduce on buffers in NCCL_WIN_COLL_SYMMETRIC windows (NCCL's symmetric kernels)",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_ALLOC | ARB_CAP_SINGLE_NODE |
            ARB_CAP_BF16 | ARB_CAP_FP32,
    .variants = NULL,
    .init = symm_init,
    .mem_alloc = symm_mem_alloc,
    .mem_free = symm_mem_free,
    .allreduce = symm_allreduce,
    .allreduce_rmsnorm = NULL,
    .query_error = symm_query_error,
    .describe = symm_describe,
    .finalize = symm_finalize,
};
