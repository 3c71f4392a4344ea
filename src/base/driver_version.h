/* SPDX-License-Identifier: MIT */
/* The NVIDIA driver version recorded in results (`driver` column), from NVML. */
#ifndef ARB_DRIVER_VERSION_H
#define ARB_DRIVER_VERSION_H

#include <stddef.h>

#include <arbench/plugin.h> /* arb_status_t */

/* "580.159.04": nvmlSystemGetDriverVersion (libnvidia-ml.so.1 loaded at run time), else
 * parsed from /proc/driver/nvidia/version. ARB_DECLINE with the reason in why (and buf
 * empty) when neither says. */
arb_status_t arb_driver_version(char *buf, size_t len, char *why, size_t why_len);
/* The version in the kernel module's line of /proc/driver/nvidia/version, both wordings:
 * "... x86_64 Kernel Module  580.159.04  ..." and "... Open Kernel Module for x86_64
 * 580.159.04  ...". 0 and buf set, or -1 when there is none (or it does not fit len). */
int arb_driver_version_parse_proc(const char *text, char *buf, size_t len);

#endif
