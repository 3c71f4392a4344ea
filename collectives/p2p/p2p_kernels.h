/* SPDX-License-Identifier: MIT */
/*
 * The p2p all-reduce kernels (p2p_kernels.cu) and their parameters. One launch
 * reduces one chunk of at most `area_bytes` bytes; p2p_plugin.cu splits larger calls.
 *
 * Payload area layouts (C = area_bytes, n = nranks, set = epoch & 1):
 *   oneshot-pull      staging[2][C]          my input, read by every peer
 *   oneshot-push      slots[2][n][C]         slot src: rank src's input, written by src
 *   twoshot           staging[C], out[C]     input; reduced shards written by their owners
 *   oneshot-flagfree  ll[2][n][2C]           16-byte lines {data, epoch, data, epoch}
 */
#ifndef P2P_KERNELS_H
#define P2P_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "p2p_common.h"
#include "p2p_params.h"

typedef struct p2p_launch {
    const void *send;
    void *recv;
    size_t count;                      /* elements in this launch */
    int rank, nranks;
    char *payload[P2P_MAX_RANKS];      /* payload area of every rank's window, local one at [rank] */
    uint32_t *flags[P2P_MAX_RANKS];    /* &head->flags[0][0][0] of every rank's window */
    p2p_dev_state_t *state;            /* this rank's epochs and error record */
    size_t area_bytes;                 /* C above: payload bytes one launch may carry, multiple of 16 */
    uint64_t timeout_ns;               /* spin-wait limit, nanoseconds */
    int hang;                          /* test_hang_rank == rank: send no signal, no data */
} p2p_launch_t;

/* Payload bytes a variant needs per rank window for chunks of area_bytes. */
size_t p2p_payload_bytes(p2p_variant_t v, int nranks, size_t area_bytes);

#ifdef __cplusplus
#include <cuda_runtime.h>
/* Enqueues one launch of variant v (not P2P_PING) on stream; returns the launch error.
 * pdl: with programmatic dependent launch (every kernel waits in griddepcontrol.wait,
 * p2p_begin_call, before any load). */
cudaError_t p2p_launch_allreduce(p2p_variant_t v, const p2p_launch_t *a, int bf16, int blocks, int threads,
                                 bool pdl, cudaStream_t stream);
#endif

#endif
