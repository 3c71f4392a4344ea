/* SPDX-License-Identifier: MIT */
/*
 * Shared between the p2p and ping plugins, host and device: limits, the layout of
 * the peer-visible window every rank allocates, and the rank-local device state.
 */
#ifndef P2P_COMMON_H
#define P2P_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "arb_spin.h"

#define P2P_MAX_RANKS 16   /* ranks of one node */
#define P2P_MAX_BLOCKS 128 /* CTAs per kernel; also clamped to the smallest SM count */
#define P2P_FLAG_PHASES 3  /* barrier flags: phase A, phase B (twoshot's second barrier), fused */
#define P2P_FLAG_FUSED 2   /* the phase of the fused all-reduce + RMSNorm kernels (own epochs) */

/* What a spin that gave up waited for (p2p_dev_state.err.what). */
#define P2P_WAIT_FLAG 0        /* a barrier flag (pull, push, two-shot, ping) */
#define P2P_WAIT_LINES 1       /* flag-free all-reduce lines */
#define P2P_WAIT_FUSED_LINES 2 /* flag-free fused lines */

/*
 * Head of the window (one cudaMalloc region per rank, opened by every peer through
 * CUDA IPC). Peers write into it; the owner only reads it (except the probe_self
 * pattern it writes itself during preflight). Payload areas follow at
 * P2P_WINDOW_HEAD_BYTES, laid out by each variant (p2p_plugin.cu).
 *
 * flags[phase][block][src]: written by rank `src` (st.release.sys, value = the
 * epoch of the call that signalled), polled by the owner (ld.acquire.sys). Epochs
 * only grow, so a stale value is always smaller than the one awaited: nothing is
 * ever reset.
 */
typedef struct p2p_window_head {
    uint64_t probe[P2P_MAX_RANKS]; /* preflight: rank r writes its pattern into probe[r] */
    uint64_t probe_self;           /* preflight: the owner's pattern, read by peers */
    uint64_t pad_[15];
    uint32_t flags[P2P_FLAG_PHASES][P2P_MAX_BLOCKS][P2P_MAX_RANKS];
} p2p_window_head_t;

/* Payload areas start 4 KiB-aligned after the head. */
#define P2P_WINDOW_HEAD_BYTES (((sizeof(p2p_window_head_t) + 4095) / 4096) * 4096)

/*
 * Rank-local device state (plain cudaMalloc, never seen by peers). epoch[b] is the
 * number of calls block b has completed: every block of every launch increments
 * its own word, and every launch of one plugin instance uses the same grid, so all
 * epoch[b] are equal and equal on every rank after the same number of calls. A
 * kernel reads it at its start and writes epoch+1 at its end, so CUDA-graph
 * replays never see a value frozen at capture.
 */
typedef struct p2p_dev_state {
    uint32_t epoch[P2P_MAX_BLOCKS];
    /* The same count for the fused all-reduce + RMSNorm kernels (p2p_fused.cu), which
     * have their own grid, flag phase and payload area: the two sequences of calls
     * may interleave without one's epochs meeting the other's flags or lines. */
    uint32_t fused_epoch[P2P_MAX_BLOCKS];
    /* The first spin that gave up (first wins, atomicCAS); err.failed also means
     * "aborted": later kernels return at once, so the peers time out too. */
    arb_spin_error_t err;
} p2p_dev_state_t;

#endif
