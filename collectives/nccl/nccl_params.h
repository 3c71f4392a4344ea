/* SPDX-License-Identifier: MIT */
/*
 * The NCCL plugin's parameter string: "key=value,key=value", keys
 *   algo     = auto | Ring | Tree            (NCCL_ALGO for this communicator's init)
 *   proto    = auto | LL | LL128 | Simple    (NCCL_PROTO for this communicator's init)
 *   channels = 1..64                         (ncclConfig_t minCTAs = maxCTAs)
 * Values are case-insensitive and resolved to NCCL's spelling. Parsing touches
 * neither CUDA nor NCCL, so bad input is rejected on any machine.
 */
#ifndef ARB_NCCL_PARAMS_H
#define ARB_NCCL_PARAMS_H

#include <stddef.h>

#include "arbench/plugin.h"

/* NCCL's MAXCHANNELS (src/include/device.h) in 2.28. */
#define ARB_NCCL_MAX_CHANNELS 64

typedef struct arb_nccl_params {
    const char *algo;  /* NULL: NCCL's choice; else "Ring" or "Tree" */
    const char *proto; /* NULL: NCCL's choice; else "LL", "LL128" or "Simple" */
    int channels;      /* 0: NCCL's choice; else 1..ARB_NCCL_MAX_CHANNELS */
} arb_nccl_params_t;

/* Parses params (NULL or "" = all defaults). On bad input returns ARB_ERR_INVALID and
 * writes one line naming the bad key or value and the accepted ones into why. */
arb_status_t arb_nccl_params_parse(const char *params, arb_nccl_params_t *out, char *why,
                                   size_t why_len);

/* Non-zero when the variant overrides any NCCL choice. */
int arb_nccl_params_forced(const arb_nccl_params_t *p);

/* "algo=Ring,proto=LL[,channels=N],nccl=2.28.3". `env_algo`/`env_proto` are the
 * user's NCCL_ALGO/NCCL_PROTO (NULL if unset): where the variant does not force a
 * choice and the user's environment does, the field reads "env" instead of "auto"
 * (the results' env column holds the value). nccl_version is ncclGetVersion()'s code. */
void arb_nccl_params_describe(const arb_nccl_params_t *p, const char *env_algo,
                              const char *env_proto, int nccl_version, char *buf, size_t len);

/* "2.28.3" from an NCCL version code (2.9 and later: major*10000 + minor*100 + patch). */
void arb_nccl_version_str(int code, char *buf, size_t len);

#endif
