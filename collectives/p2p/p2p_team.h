/* SPDX-License-Identifier: MIT */
/*
 * The ranks of one node and their peer-visible windows: CUDA IPC exchange of one
 * cudaMalloc region per rank, preflight (peer access, then a real write and read
 * through every mapping), device-side error reporting. Shared by p2p and ping.
 */
#ifndef P2P_TEAM_H
#define P2P_TEAM_H

#include <stddef.h>

#include "arbench/plugin.h"
#include "p2p_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct p2p_team {
    int rank, nranks;
    int device;         /* this rank's CUDA device */
    int max_blocks;     /* the smallest SM count over all ranks: co-resident CTAs */
    const arb_host_ops_t *ops;
    char *window;       /* this rank's window: head + payload_bytes (cudaMalloc) */
    size_t window_bytes;
    char *peer_window[P2P_MAX_RANKS]; /* mapped windows; peer_window[rank] == window */
    p2p_dev_state_t *state;           /* rank-local device state (cudaMalloc) */
} p2p_team_t;

/* Collective over all ranks; every rank gets the same status. ARB_DECLINE when ranks
 * span nodes, no device is visible, or a pair of GPUs has no working P2P (why names
 * the pair). payload_bytes follow the window head. */
arb_status_t p2p_team_open(const arb_comm_info_t *info, const arb_host_ops_t *ops, size_t payload_bytes,
                           p2p_team_t *t, char *why, size_t why_len);
/* Collective: synchronizes the device, unmaps peers, frees. */
void p2p_team_close(p2p_team_t *t);

/* After the stream was synchronized: ARB_ERR_TIMEOUT with "spin-wait timed out
 * waiting for rank R (epoch E)" when a kernel gave up; ARB_ERR_SYSTEM when the device
 * state cannot be read. A timed-out team stays disabled (kernels return at once). */
arb_status_t p2p_team_query_error(p2p_team_t *t, char *why, size_t why_len);

/* Payload area of rank r's window (r == t->rank: the local one). */
static inline char *p2p_team_payload(const p2p_team_t *t, int r)
{
    return t->peer_window[r] + P2P_WINDOW_HEAD_BYTES;
}

#ifdef __cplusplus
}
#endif

#endif
