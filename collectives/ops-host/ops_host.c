/* SPDX-License-Identifier: MIT */
/*
 * ops-host: all-reduce on host buffers over the harness's host operations alone (no MPI
 * of its own): every rank's buffer is gathered with ops->allgather, then summed in rank
 * order, so every rank computes the same bits. bf16 is accumulated in fp32 and rounded
 * once; fp32 adds in rank order. The host backend of a libarbench communicator
 * bootstrapped without MPI (a caller's allgather, NCCL), where mpi-host declines; it runs
 * under MPI too (the harness's ops are MPI there).
 *
 * The call itself is collective on the host (like mpi-host's MPI_Allreduce): the ops are
 * used inside allreduce, not only in init. Gathers nranks x count elements per call:
 * a backend for correctness and small jobs, not for speed. No parameters.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arb_host_bf16.h"
#include "arbench/plugin.h"
#include "arbench/status.h"

typedef struct ops_host {
    const arb_host_ops_t *ops; /* owned by the harness, valid until finalize */
    int nranks;
    unsigned char *gathered; /* nranks x cap bytes */
    size_t cap;
} ops_host_t;

static arb_status_t oh_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                            void **state, char *why, size_t why_len)
{
    if (params && *params)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "ops-host params '%s': expected none (an empty string)", params);
    if (!ops || !ops->allgather)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "ops-host needs the harness's allgather");
    ops_host_t *s = calloc(1, sizeof *s);
    if (!s)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ops-host: out of host memory");
    s->ops = ops;
    s->nranks = info->nranks;
    *state = s;
    return ARB_OK;
}

static arb_status_t oh_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                 void *stream, char *why, size_t why_len)
{
    (void)stream;
    ops_host_t *s = state;
    size_t esz = dtype == ARB_DTYPE_FP32 ? 4 : 2, bytes = count * esz;
    if (bytes > s->cap) {
        if ((size_t)s->nranks > SIZE_MAX / bytes)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "ops-host: %zu bytes x %d ranks overflows", bytes, s->nranks);
        unsigned char *g = realloc(s->gathered, bytes * (size_t)s->nranks);
        if (!g)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ops-host: out of host memory for %d x %zu bytes", s->nranks, bytes);
        s->gathered = g, s->cap = bytes;
    }
    if (s->ops->allgather(s->ops->ctx, send, s->gathered, bytes) != 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ops-host: the allgather of %zu bytes failed", bytes);
    for (size_t i = 0; i < count; i++) {
        float acc = 0.0f;
        for (int r = 0; r < s->nranks; r++) {
            const unsigned char *blk = s->gathered + (size_t)r * bytes;
            if (dtype == ARB_DTYPE_FP32) {
                float v;
                memcpy(&v, blk + 4 * i, 4);
                acc += v;
            } else {
                uint16_t h;
                memcpy(&h, blk + 2 * i, 2);
                acc += arb_host_bf16_to_f32(h);
            }
        }
        if (dtype == ARB_DTYPE_FP32) {
            memcpy((unsigned char *)recv + 4 * i, &acc, 4);
        } else {
            uint16_t h = arb_host_f32_to_bf16(acc);
            memcpy((unsigned char *)recv + 2 * i, &h, 2);
        }
    }
    return ARB_OK;
}

static void oh_finalize(void *state)
{
    ops_host_t *s = state;
    free(s->gathered);
    free(s);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "ops-host",
    .description = "host buffers gathered with the harness's allgather, summed in rank order (host backend without MPI)",
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_IN_PLACE,
    .init = oh_init,
    .allreduce = oh_allreduce,
    .finalize = oh_finalize,
};
