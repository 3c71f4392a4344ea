/* SPDX-License-Identifier: MIT */
/* Check macros of the p2p plugins, in the shape of src/common.h's ARB_CHECK (the
 * plugins do not link libarbench, so they carry their own). */
#ifndef P2P_CUDA_H
#define P2P_CUDA_H

#include <cuda_runtime.h>
#include <stdio.h>

#include "arbench/plugin.h"

/* Evaluate an arb_status_t expression; on failure return it. */
#define P2P_CHECK(call)                                                             \
    do {                                                                            \
        arb_status_t p2p_check_s_ = (call);                                         \
        if (p2p_check_s_ != ARB_OK)                                                 \
            return p2p_check_s_;                                                    \
    } while (0)

/* The same, for functions that clean up: store the status in `st` and jump. */
#define P2P_CHECK_GOTO(call, st, label)                                             \
    do {                                                                            \
        (st) = (call);                                                              \
        if ((st) != ARB_OK)                                                         \
            goto label;                                                             \
    } while (0)

/* A CUDA runtime call; on failure st = ARB_ERR_SYSTEM and msg (a char array) names
 * the call and the CUDA error. */
#define P2P_CUDA_TRY(call, st, msg)                                                 \
    do {                                                                            \
        cudaError_t p2p_ce_ = (call);                                               \
        if (p2p_ce_ != cudaSuccess) {                                               \
            snprintf((msg), sizeof(msg), "%s: %s", #call, cudaGetErrorString(p2p_ce_)); \
            (st) = ARB_ERR_SYSTEM;                                                  \
        }                                                                           \
    } while (0)

#endif
