/* SPDX-License-Identifier: MIT */
/*
 * The error record of a bounded spin-wait, shared by host and device code: a kernel
 * that gave up waiting for a peer writes it (arb_device.cuh: arb_spin_record), the
 * plugin's query_error reads it back after the stream was synchronized. Rank-local
 * device memory, never seen by peers.
 */
#ifndef ARB_COMMON_SPIN_H
#define ARB_COMMON_SPIN_H

#include <stdint.h>

/* Five uint32 words, in this order (lsa keeps them at W_ERR_FLAG of its word array). */
typedef struct arb_spin_error {
    uint32_t failed; /* 0 until the first spin of this rank gave up; also "abort": later
                        kernels and the other CTAs stop waiting, so the peers time out
                        too instead of hanging */
    uint32_t cta;    /* blockIdx.x of the first CTA that gave up */
    uint32_t peer;   /* the rank it waited for */
    uint32_t what;   /* what it waited for (the plugin's code: a barrier, lines, ...) */
    uint32_t epoch;  /* the epoch it waited for */
} arb_spin_error_t;

#endif
