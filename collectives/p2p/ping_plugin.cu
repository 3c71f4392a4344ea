// SPDX-License-Identifier: MIT
// arb-ping.so: the latency floor of a one-shot all-reduce. Each call is one
// all-to-all flag exchange with no payload: every rank writes the call's epoch into
// a flag in every peer (one posted write each, st.release.sys) and waits until every
// peer's flag has arrived in its own memory (ld.acquire.sys). That is exactly the
// synchronisation of oneshot-push (and oneshot-flagfree's data lines arrive the same
// way), so a one-shot kernel's time over this floor is its data movement and
// arithmetic. A 0 -> 1 -> 0 round trip would be two one-way latencies, which no
// one-shot algorithm needs. Results are not checked (ARB_CAP_REFERENCE).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "arbench/plugin.h"
#include "arb_plugin_util.h"
#include "arbench/status.h"
#include "p2p_device.cuh"
#include "p2p_params.h"
#include "p2p_team.h"

namespace {

struct ping_state {
    p2p_params_t params;
    p2p_team_t team;
    p2p_launch_t base;
    char desc[96];
};

// One CTA; thread p signals peer p and waits for peer p's flag (see p2p_block_barrier).
__global__ void ping_kernel(p2p_launch_t a)
{
    uint32_t epoch;
    if (!p2p_begin_call(a, &epoch))
        return;
    if (!p2p_block_barrier(a, 0, epoch))
        return;
    p2p_end_call(a, epoch);
}

arb_status_t ping_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                       void **state, char *why, size_t why_len)
{
    p2p_params_t p;
    arb_status_t st;
    ARB_TRY(p2p_params_parse(params, 1, info->nranks, &p, why, why_len));
    if (info->cuda_device < 0) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "ping needs a CUDA device (this run is host-only)");
    }
    ping_state *s = (ping_state *)calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ping: out of host memory");
    }
    s->params = p;
    ARB_TRY_GOTO(st, p2p_team_open(info, ops, 0, &s->team, why, why_len), err_free_state);
    s->base.rank = info->rank;
    s->base.nranks = info->nranks;
    for (int r = 0; r < info->nranks; r++)
        s->base.flags[r] = &((p2p_window_head_t *)s->team.peer_window[r])->flags[0][0][0];
    s->base.state = s->team.state;
    s->base.timeout_ns = (uint64_t)p.timeout_ms * 1000000u;
    s->base.hang = p.test_hang_rank == info->rank;
    p2p_params_describe(&s->params, s->desc, sizeof s->desc);
    *state = s;
    return ARB_OK;

err_free_state:
    free(s);
    return st;
}

arb_status_t ping_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                            void *stream, char *why, size_t why_len)
{
    (void)send, (void)recv, (void)count, (void)dtype;
    ping_state *s = (ping_state *)state;
    ping_kernel<<<1, s->params.threads, 0, (cudaStream_t)stream>>>(s->base);
    const cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ping: kernel launch failed: %s", cudaGetErrorString(ce));
    }
    return ARB_OK;
}

arb_status_t ping_query_error(void *state, char *why, size_t why_len)
{
    return p2p_team_query_error(&((ping_state *)state)->team, why, why_len);
}

const char *ping_describe(void *state) { return ((ping_state *)state)->desc; }

void ping_finalize(void *state)
{
    ping_state *s = (ping_state *)state;
    p2p_team_close(&s->team);
    free(s);
}

} // namespace

extern "C" ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "ping",
    .description = "latency floor: all-to-all cross-GPU flag exchange with no payload (one-shot synchronisation)",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_P2P | ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 |
            ARB_CAP_FP32 | ARB_CAP_REFERENCE,
    .variants = NULL,
    .init = ping_init,
    .mem_alloc = NULL,
    .mem_free = NULL,
    .allreduce = ping_allreduce,
    .allreduce_rmsnorm = NULL,
    .query_error = ping_query_error,
    .describe = ping_describe,
    .finalize = ping_finalize,
};
