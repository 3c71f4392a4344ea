/* SPDX-License-Identifier: MIT */
/* A host-memory reference floor for the API's tests: its allreduce returns at once and
 * leaves recv as it was, so a communicator that ever used it for a call would return a
 * wrong sum. A profile entry naming it must be refused. */
#include <stdlib.h>

#include "arbench/plugin.h"

static int g_state;

static arb_status_t floor_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                               void **state, char *why, size_t why_len)
{
    (void)info, (void)ops, (void)params, (void)why, (void)why_len;
    *state = &g_state;
    return ARB_OK;
}

static arb_status_t floor_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                    void *stream, char *why, size_t why_len)
{
    (void)state, (void)send, (void)recv, (void)count, (void)dtype, (void)stream, (void)why, (void)why_len;
    return ARB_OK;
}

static void floor_finalize(void *state) { (void)state; }

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "floor",
    .description = "moves nothing (a reference floor for the API's tests)",
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_REFERENCE,
    .init = floor_init,
    .allreduce = floor_allreduce,
    .finalize = floor_finalize,
};
