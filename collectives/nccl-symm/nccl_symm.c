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

#include "arbench/plugin.h"
#include "symm_boot.h"

#define SYMM_MAX_BUFFERS 64

typedef struct symm_buffer {
    void *ptr;
    ncclWindow_t win;
} symm_buffer_t;

typedef struct symm_state {
    arb_comm_info_t info;
    const arb_host_ops_t *ops;
    ncclComm_t comm;
    symm_buffer_t bufs[SYMM_MAX_BUFFERS];
    char describe[96];
} symm_state_t;

static int no_params(void *ctx, const char *key, const char *value, char *why, size_t why_len)
{
    (void)ctx;
    snprintf(why, why_len, "nccl-symm: unknown parameter '%s=%s' (nccl-symm takes no parameters; NCCL picks its symmetric kernel itself)", key, value);
    return -1;
}

static arb_status_t symm_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                              void **state, char *why, size_t why_len)
{
    if (symm_parse_params(params, NULL, no_params, "nccl-symm", why, why_len))
        return ARB_ERR_INVALID;
    symm_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "nccl-symm: out of host memory");
        return ARB_ERR_SYSTEM;
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
    int slot = -1;
    for (int i = 0; i < SYMM_MAX_BUFFERS && slot < 0; i++)
        if (!s->bufs[i].ptr)
            slot = i;
    char why[512], msg[600];
    void *ptr = NULL;
    ncclWindow_t win = NULL;
    /* Collective: the harness calls mem_alloc on every rank with the same sizes in
     * the same order. Even a rank without a free slot registers, so nobody hangs. */
    arb_status_t st = symm_window_alloc(s->comm, bytes, &ptr, &win, why, sizeof why);
    if (st != ARB_OK) {
        snprintf(msg, sizeof msg, "mem_alloc(%zu bytes): %s", bytes, why);
        s->ops->log(s->ops->ctx, msg);
        return NULL;
    }
    if (!win || slot < 0) {
        snprintf(msg, sizeof msg, "mem_alloc(%zu bytes): %s", bytes,
                 win ? "more than 64 live buffers" : "NCCL created no symmetric window although the init probe got one");
        s->ops->log(s->ops->ctx, msg);
        symm_window_free(s->comm, ptr, win);
        return NULL;
    }
    s->bufs[slot].ptr = ptr;
    s->bufs[slot].win = win;
    return ptr;
}

static void symm_mem_free(void *state, void *ptr)
{
    symm_state_t *s = state;
    for (int i = 0; i < SYMM_MAX_BUFFERS; i++) {
        if (s->bufs[i].ptr == ptr && ptr) {
            symm_window_free(s->comm, ptr, s->bufs[i].win);
            s->bufs[i].ptr = NULL;
            s->bufs[i].win = NULL;
            return;
        }
    }
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
        snprintf(why, why_len, "nccl-symm: dtype %d, expected bf16 or fp32", (int)dtype);
        return ARB_ERR_INVALID;
    }
    ncclResult_t nr = ncclAllReduce(send, recv, count, t, ncclSum, s->comm, (cudaStream_t)stream);
    if (nr != ncclSuccess) {
        snprintf(why, why_len, "ncclAllReduce(count=%zu): %s", count, ncclGetErrorString(nr));
        return ARB_ERR_SYSTEM;
    }
    return ARB_OK;
}

static arb_status_t symm_query_error(void *state, char *why, size_t why_len)
{
    symm_state_t *s = state;
    ncclResult_t async = ncclSuccess;
    ncclResult_t nr = ncclCommGetAsyncError(s->comm, &async);
    if (nr != ncclSuccess || async != ncclSuccess) {
        snprintf(why, why_len, "NCCL asynchronous error: %s", ncclGetErrorString(nr != ncclSuccess ? nr : async));
        return ARB_ERR_SYSTEM;
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
    for (int i = 0; i < SYMM_MAX_BUFFERS; i++)
        if (s->bufs[i].ptr)
            symm_window_free(s->comm, s->bufs[i].ptr, s->bufs[i].win);
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
