/* SPDX-License-Identifier: MIT */
/*
 * The device side of arb-lsa.so (lsa_kernels.cu, C++17): NCCL device communicator,
 * scratch window (barrier inboxes, push staging) and the one-shot kernels. The
 * NCCL device-API types stay inside the .cu; lsa.c sees an opaque handle.
 */
#ifndef ARB_LSA_KERNELS_H
#define ARB_LSA_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include <nccl.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most CTAs one call uses; one barrier slot per CTA index. */
#define LSA_MAX_CTAS 64

typedef enum lsa_variant { LSA_ONESHOT_PULL = 0, LSA_ONESHOT_PUSH = 1 } lsa_variant_t;
typedef enum lsa_barrier { LSA_BARRIER_BOUNDED = 0, LSA_BARRIER_NCCL = 1 } lsa_barrier_t;

typedef struct lsa_dev lsa_dev_t;

/* NCCL_VERSION_CODE this file was compiled against (the device API's layouts). */
int lsa_header_version(void);

/* Collective. Creates the device communicator (lsaBarrierCount = max_ctas), a
 * symmetric scratch window (barrier inboxes, and 2 x lsa_size x max_bytes staging
 * for push), this rank's epoch and error words. Declines when the LSA team does not
 * hold every rank. */
arb_status_t lsa_dev_create(ncclComm_t comm, const arb_host_ops_t *ops, int nranks, size_t max_bytes,
                            int max_ctas, lsa_dev_t **out, char *why, size_t why_len);
void lsa_dev_destroy(ncclComm_t comm, lsa_dev_t *d);

/* Enqueues one all-reduce of `count` elements on stream. For pull, send lies at byte
 * offset send_off in window send_win (the same offset on every rank); push reads
 * send locally. Never synchronizes. */
arb_status_t lsa_dev_allreduce(lsa_dev_t *d, lsa_variant_t variant, lsa_barrier_t barrier, int max_ctas,
                               uint64_t timeout_ns, const void *send, ncclWindow_t send_win, size_t send_off,
                               void *recv, size_t count, arb_dtype_t dtype, void *stream, char *why,
                               size_t why_len);

/* After the stream was synchronized: a barrier spin that timed out since the last
 * call (ARB_ERR_TIMEOUT, which CTA and which peer), then cleared. */
arb_status_t lsa_dev_query_error(lsa_dev_t *d, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
