/* SPDX-License-Identifier: MIT */
/*
 * Shared by arb-nccl-symm.so and arb-lsa.so (compiled into each, hidden): NCCL
 * communicator bootstrap through the harness's host ops, symmetric-window
 * allocation, and the reasons NCCL may refuse a symmetric window.
 */
#ifndef ARB_SYMM_BOOT_H
#define ARB_SYMM_BOOT_H

#include <stddef.h>

#include <nccl.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* NCCL's NCCL_VERSION_CODE as "2.28.3" (codes >= 2.9 are major*10000+minor*100+patch). */
void symm_version_str(int code, char *buf, size_t len);

/* arb_plugin_device_check (collectives/common), then the job on one node (ARB_DECLINE
 * across nodes: symmetric windows and LSA are single-node here), then the device made
 * current. */
arb_status_t symm_check_device(const arb_comm_info_t *info, const char *plugin, char *why, size_t why_len);

/* Collective: rank 0 makes the unique id, the host ops broadcast it, every rank joins. */
arb_status_t symm_comm_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, ncclComm_t *comm,
                            char *why, size_t why_len);

/* Collective: ncclMemAlloc(bytes rounded up to NCCL_WIN_REQUIRED_ALIGNMENT) and
 * ncclCommWindowRegister(..., NCCL_WIN_COLL_SYMMETRIC). *win is NULL when NCCL
 * registered no window (communicator without symmetric support): not an error here,
 * the caller decides. On error nothing stays allocated. */
arb_status_t symm_window_alloc(ncclComm_t comm, size_t bytes, void **ptr, ncclWindow_t *win,
                               char *why, size_t why_len);
/* Collective: deregisters (when win is not NULL) and frees. */
void symm_window_free(ncclComm_t comm, void *ptr, ncclWindow_t win);

/* Collective probe: allocates and registers a small buffer on every rank; *all_have
 * is 1 when every rank got a window. Everything probed is released again. */
arb_status_t symm_probe_window(ncclComm_t comm, const arb_host_ops_t *ops, int *all_have,
                               char *why, size_t why_len);

/* Collective: explains, as well as can be told from outside NCCL, why NCCL created
 * no symmetric window ("NCCL_P2P_DISABLE=1; no CUDA P2P between ..."). */
void symm_no_window_reason(const arb_comm_info_t *info, const arb_host_ops_t *ops, char *buf, size_t len);

/* Collective: the device check, the communicator, and the probe that NCCL really makes
 * symmetric windows; ARB_DECLINE with the reason when it makes none. On any failure
 * the communicator is destroyed again and why says what happened. */
arb_status_t symm_comm_open(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *plugin,
                            ncclComm_t *comm, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
