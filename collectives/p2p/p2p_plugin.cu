// SPDX-License-Identifier: MIT
// arb-p2p.so: custom all-reduce kernels over CUDA IPC peer memory, single node.
// Buffers: the harness's own (no ARB_CAP_NEEDS_ALLOC). send and recv are read and
// written only locally; what peers must see travels through this plugin's IPC
// window (see README.md for what each variant stages and what that costs).
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/plugin.h"
#include "p2p_cuda.h"
#include "p2p_kernels.h"
#include "p2p_params.h"
#include "p2p_team.h"

namespace {

// Largest payload of one launch; a call over this size is split into launches (each
// a complete all-reduce of its chunk), which bounds the window at any max_bytes.
constexpr size_t AREA_CAP_BYTES = 8u << 20;
constexpr size_t AREA_CAP_FLAGFREE_BYTES = 2u << 20; // LL lines double it

struct p2p_state {
    p2p_params_t params;
    p2p_team_t team;
    int blocks;        // params.blocks clamped to the smallest SM count (co-residency)
    size_t area_bytes; // payload bytes per launch, multiple of 16
    p2p_launch_t base; // every launch argument except send, recv, count
    char desc[160];
};

const char *const p2p_variants[] = {
    "variant=oneshot-pull,blocks=8,threads=512",
    "variant=oneshot-push,blocks=8,threads=512",
    "variant=oneshot-push,blocks=24,threads=256",
    "variant=twoshot,blocks=16,threads=512",
    "variant=oneshot-flagfree,blocks=12,threads=512",
    "variant=oneshot-flagfree,blocks=24,threads=256",
    NULL,
};

arb_status_t p2p_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                      void **state, char *why, size_t why_len)
{
    p2p_params_t p;
    arb_status_t st;
    P2P_CHECK(p2p_params_parse(params, 0, info->nranks, &p, why, why_len));
    if (info->cuda_device < 0) {
        snprintf(why, why_len, "p2p needs a CUDA device (this run is host-only)");
        return ARB_DECLINE;
    }
    p2p_state *s = (p2p_state *)calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "p2p: out of host memory");
        return ARB_ERR_SYSTEM;
    }
    s->params = p;
    const size_t cap = p.variant == P2P_ONESHOT_FLAGFREE ? AREA_CAP_FLAGFREE_BYTES : AREA_CAP_BYTES;
    size_t want = (info->max_bytes + 15) / 16 * 16;
    s->area_bytes = want < 4096 ? 4096 : want > cap ? cap : want;
    P2P_CHECK_GOTO(p2p_team_open(info, ops, p2p_payload_bytes(p.variant, info->nranks, s->area_bytes), &s->team,
                                 why, why_len),
                   st, err_free_state);
    s->blocks = p.blocks < s->team.max_blocks ? p.blocks : s->team.max_blocks;
    s->params.blocks = s->blocks;
    s->base.rank = info->rank;
    s->base.nranks = info->nranks;
    for (int r = 0; r < info->nranks; r++) {
        s->base.payload[r] = p2p_team_payload(&s->team, r);
        s->base.flags[r] = &((p2p_window_head_t *)s->team.peer_window[r])->flags[0][0][0];
    }
    s->base.state = s->team.state;
    s->base.area_bytes = s->area_bytes;
    s->base.timeout_ns = (uint64_t)p.timeout_ms * 1000000u;
    s->base.hang = p.test_hang_rank == info->rank;
    p2p_params_describe(&s->params, s->desc, sizeof s->desc);
    *state = s;
    return ARB_OK;

err_free_state:
    free(s);
    return st;
}

arb_status_t p2p_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                           void *stream)
{
    p2p_state *s = (p2p_state *)state;
    if (dtype != ARB_DTYPE_BF16 && dtype != ARB_DTYPE_FP32)
        return ARB_ERR_INVALID;
    if (((uintptr_t)send | (uintptr_t)recv) & 15)
        return ARB_ERR_INVALID; // the ABI promises 16-byte alignment
    if (count == 0)
        return ARB_OK;
    const size_t elt = dtype == ARB_DTYPE_BF16 ? 2 : 4;
    cudaStream_t cs = (cudaStream_t)stream;
    if (s->base.nranks == 1)
        return cudaMemcpyAsync(recv, send, count * elt, cudaMemcpyDeviceToDevice, cs) == cudaSuccess
                   ? ARB_OK
                   : ARB_ERR_SYSTEM;
    // Chunks of area_bytes (a multiple of 16) keep every launch's pointers aligned.
    const size_t chunk = s->area_bytes / elt;
    for (size_t off = 0; off < count; off += chunk) {
        p2p_launch_t a = s->base;
        a.send = (const char *)send + off * elt;
        a.recv = (char *)recv + off * elt;
        a.count = count - off < chunk ? count - off : chunk;
        if (p2p_launch_allreduce(s->params.variant, &a, dtype == ARB_DTYPE_BF16, s->blocks, s->params.threads, cs) !=
            cudaSuccess)
            return ARB_ERR_SYSTEM;
    }
    return ARB_OK;
}

arb_status_t p2p_query_error(void *state, char *why, size_t why_len)
{
    return p2p_team_query_error(&((p2p_state *)state)->team, why, why_len);
}

const char *p2p_describe(void *state) { return ((p2p_state *)state)->desc; }

void p2p_finalize(void *state)
{
    p2p_state *s = (p2p_state *)state;
    p2p_team_close(&s->team);
    free(s);
}

} // namespace

extern "C" ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v1 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "p2p",
    .description = "custom all-reduce kernels over CUDA IPC peer memory (one-shot pull/push, two-shot, flag-free one-shot), single node",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_P2P | ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 |
            ARB_CAP_FP32,
    .variants = p2p_variants,
    .init = p2p_init,
    .mem_alloc = NULL,
    .mem_free = NULL,
    .allreduce = p2p_allreduce,
    .allreduce_rmsnorm = NULL,
    .query_error = p2p_query_error,
    .describe = p2p_describe,
    .finalize = p2p_finalize,
};
