/* SPDX-License-Identifier: MIT */
/*
 * arb-noop.so: the launch floor. allreduce enqueues one empty kernel (1 block,
 * 32 threads) and moves no data, so its time is what any kernel-based all-reduce
 * pays before doing work. REFERENCE: the harness does not check its results.
 * Parameter pdl=1 (default 0): the kernel waits on its predecessor with the PDL wait and
 * is launched with programmatic stream serialization, the floor of an all-reduce kernel
 * that is PDL-capable on both sides (the engine's compute-only replay uses it, so that
 * its call sites do not break the compute's launch chain: docs/engine.md).
 * The fused op (allreduce_rmsnorm) is one launch of the library's residual + RMSNorm
 * kernel (src/rmsnorm/rmsnorm.cu, compiled into this module with hidden symbols) with a zero
 * sum: the floor of any fused all-reduce + RMSNorm, the norm's work and no data moved. It
 * computes what the composed path computes (the residual plus noop's untouched, zero-filled
 * scratch: the same bits), in one launch instead of two.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "noop_kernel.h"
#include "rmsnorm/rmsnorm.h"

typedef struct noop_state {
    arb_host_ops_t ops;
    int pdl;
    void *zeros;       /* device, zero-filled: the fused op's sum (max_tokens x hidden bf16) */
    size_t zero_bytes; /* 0 when the run has no fused call (max_tokens or hidden 0) */
} noop_state_t;

static const arb_kv_key_t noop_keys[] = {{"pdl", NULL}};

static arb_status_t noop_on_pair(void *ctx, int key, const char *value, char *why, size_t why_len)
{
    (void)key; /* the only key */
    if (arb_kv_int(value, 0, 1, (int *)ctx) != 0) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "noop: parameter pdl=%s: expected 0 or 1", value);
    }
    return ARB_OK;
}

static arb_status_t noop_init(const arb_comm_info_t *info, const arb_host_ops_t *ops,
                              const char *params, void **state, char *why, size_t why_len)
{
    int pdl = 0;
    ARB_TRY(arb_kv_parse("noop", params, noop_keys, 1, noop_on_pair, &pdl, ops, why, why_len));
    ARB_TRY(arb_plugin_device_check(info, "noop", why, why_len));
    noop_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory");
    }
    s->ops = *ops;
    s->pdl = pdl;
    s->zero_bytes = (size_t)info->max_tokens * info->hidden * 2;
    arb_status_t st = ARB_OK;
    if (s->zero_bytes) {
        ARB_CUDA_GOTO(st, cudaMalloc(&s->zeros, s->zero_bytes), err_free_state, why, why_len);
        ARB_CUDA_GOTO(st, cudaMemset(s->zeros, 0, s->zero_bytes), err_free_zeros, why, why_len);
        /* the memset may still run, and a non-blocking stream would not wait for it */
        ARB_CUDA_GOTO(st, cudaDeviceSynchronize(), err_free_zeros, why, why_len);
    }
    *state = s;
    return ARB_OK;

err_free_zeros:
    cudaFree(s->zeros);
err_free_state:
    free(s);
    return st;
}

static arb_status_t noop_allreduce(void *state, const void *send, void *recv, size_t count,
                                   arb_dtype_t dtype, void *stream, char *why, size_t why_len)
{
    (void)send, (void)recv, (void)count, (void)dtype;
    int err = arb_noop_launch(stream, ((noop_state_t *)state)->pdl);
    if (err != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "noop kernel launch: %s", arb_noop_error_string(err));
    }
    return ARB_OK;
}

/* One launch: residual += 0; out = rmsnorm(residual) * weight (PDL-capable with pdl=1, as the
 * composed path's kernel after a plugin always is). x is not read: noop moves no data. */
static arb_status_t noop_allreduce_rmsnorm(void *state, const arb_rmsnorm_args_t *a, void *stream, char *why,
                                           size_t why_len)
{
    const noop_state_t *s = state;
    if ((size_t)a->tokens * a->hidden * 2 > s->zero_bytes) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "noop: fused call of %u x %u exceeds the zero sum opened for %zu bytes", a->tokens, a->hidden, s->zero_bytes);
    }
    return arb_rmsnorm_residual_launch_pdl(a->residual, s->zeros, a->weight, a->out, a->tokens, a->hidden, a->eps,
                                           s->pdl, stream, why, why_len);
}

static void noop_finalize(void *state)
{
    cudaFree(((noop_state_t *)state)->zeros);
    free(state);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "noop",
    .description = "launch floor: one empty kernel (1 block, 32 threads), no data moved; fused: the residual + RMSNorm "
                   "kernel alone (a zero sum); pdl=1: PDL-capable",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_REFERENCE,
    .variants = NULL,
    .init = noop_init,
    .allreduce = noop_allreduce,
    .allreduce_rmsnorm = noop_allreduce_rmsnorm,
    .finalize = noop_finalize,
};
