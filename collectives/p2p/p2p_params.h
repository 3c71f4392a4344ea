/* SPDX-License-Identifier: MIT */
/* Parameter strings of the p2p and ping plugins ("key=value,key=value"). Pure C,
 * no CUDA: init validates parameters before it touches a device. */
#ifndef P2P_PARAMS_H
#define P2P_PARAMS_H

#include <stddef.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum p2p_variant {
    P2P_ONESHOT_PULL = 0,
    P2P_ONESHOT_PUSH = 1,
    P2P_TWOSHOT = 2,
    P2P_ONESHOT_FLAGFREE = 3,
    P2P_PING = 4, /* the ping plugin: no payload */
} p2p_variant_t;

typedef struct p2p_params {
    p2p_variant_t variant;
    int blocks;          /* CTAs per launch, before clamping to the SM count */
    int threads;         /* threads per CTA, a multiple of 32 */
    int timeout_ms;      /* a spin-wait gives up after this many milliseconds */
    int test_hang_rank;  /* this rank never signals (tests the timeout path); -1: none */
    int row_blocks;      /* fused op: CTAs (one thread-block cluster) per token row; 0: auto */
    int pdl;             /* 1: the all-reduce and the fused op launch with programmatic dependent launch */
} p2p_params_t;

#define P2P_DEFAULT_TIMEOUT_MS 2000

/* Parses params for the p2p plugin (ping = 0) or the ping plugin (ping = 1).
 * An empty string gives the defaults (p2p: oneshot-push, 8 blocks of 512 threads).
 * Unknown keys, bad values and duplicates give ARB_ERR_INVALID and a message in why
 * that names the key and the accepted form. nranks bounds test_hang_rank. */
arb_status_t p2p_params_parse(const char *params, int ping, int nranks, p2p_params_t *out,
                              char *why, size_t why_len);

const char *p2p_variant_name(p2p_variant_t v);

/* The resolved parameters as the results' params column shows them. */
void p2p_params_describe(const p2p_params_t *p, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
