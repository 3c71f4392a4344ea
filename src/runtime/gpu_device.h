/* SPDX-License-Identifier: MIT */
/* GPU discovery for the harness: how many devices, and what the selected one is. */
#ifndef ARB_GPU_DEVICE_H
#define ARB_GPU_DEVICE_H

#include <stddef.h>

#include "arbench/plugin.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The number of visible devices; 0 with a reason in why when none (no driver, no
 * device, CUDA not built). A count, not a failure: no GPU is a host-only run. */
int arb_gpu_count(char *why, size_t why_len);

typedef struct arb_gpu_info {
    char name[128];
    char sm[16];       /* "9.0" */
    char driver[64];   /* "580.159.04 (CUDA 13.0)" */
    char cuda[32];     /* runtime version "13.0" */
    char bus_id[32];
    int sm_count;
} arb_gpu_info_t;

/* Makes `device` current and describes it. ARB_DECLINE without CUDA. */
arb_status_t arb_gpu_select(int device, arb_gpu_info_t *info, char *why, size_t why_len);

#ifdef __cplusplus
}
#endif

#endif
