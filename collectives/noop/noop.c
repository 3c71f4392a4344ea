/* SPDX-License-Identifier: MIT */
/*
 * arb-noop.so: the launch floor. allreduce enqueues one empty kernel (1 block,
 * 32 threads) and moves no data, so its time is what any kernel-based all-reduce
 * pays before doing work. REFERENCE: the harness does not check its results.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime.h>

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "noop_kernel.h"

typedef struct noop_state {
    arb_host_ops_t ops;
} noop_state_t;

static arb_status_t noop_init(const arb_comm_info_t *info, const arb_host_ops_t *ops,
                              const char *params, void **state, char *why, size_t why_len)
{
    if (params && *params) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "noop params '%s': noop takes no parameters (expected an empty string)", params);
    }
    ARB_TRY(arb_plugin_device_check(info, "noop", why, why_len));
    noop_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory");
    }
    s->ops = *ops;
    *state = s;
    return ARB_OK;
}

static arb_status_t noop_allreduce(void *state, const void *send, void *recv, size_t count,
                                   arb_dtype_t dtype, void *stream, char *why, size_t why_len)
{
    (void)send, (void)recv, (void)count, (void)dtype, (void)state;
    int err = arb_noop_launch(stream);
    if (err != 0) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "noop kernel launch: %s", arb_noop_error_string(err));
    }
    return ARB_OK;
}

static void noop_finalize(void *state)
{
    free(state);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "noop",
    .description = "launch floor: one empty kernel (1 block, 32 threads), no data moved",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_REFERENCE,
    .variants = NULL,
    .init = noop_init,
    .allreduce = noop_allreduce,
    .finalize = noop_finalize,
};
