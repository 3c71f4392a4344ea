/* SPDX-License-Identifier: MIT */
/* The driver version: the /proc parser on both module wordings, and arb_driver_version on
 * this machine (NVML where a driver is installed, else a reason). TAP output. */
#include <stdio.h>
#include <string.h>

#include "base/driver_version.h"

static int ntest, nfail;

static void ok(int cond, const char *what, const char *got)
{
    printf("%s %d - %s (got '%s')\n", cond ? "ok" : "not ok", ++ntest, what, got);
    nfail += !cond;
}

static int is_version(const char *s)
{
    return *s && strspn(s, "0123456789.") == strlen(s) && strchr(s, '.') && *s != '.';
}

int main(void)
{
    char v[64];
    static const char closed[] = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Sun Oct 12 00:00:00 UTC 2025\n";
    static const char open_km[] = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U16-I3-B10-3-1)  Tue Oct 14 2025\n";
    strcpy(v, "-");
    ok(arb_driver_version_parse_proc(closed, v, sizeof v) == 0 && strcmp(v, "580.159.04") == 0, "Kernel Module wording", v);
    strcpy(v, "-");
    ok(arb_driver_version_parse_proc(open_km, v, sizeof v) == 0 && strcmp(v, "580.159.04") == 0,
       "Open Kernel Module for x86_64 wording (the H200 machines'; the old parser took 'for')", v);
    strcpy(v, "-");
    ok(arb_driver_version_parse_proc("NVRM version: NVIDIA UNIX Kernel Module for aarch64\n", v, sizeof v) != 0,
       "a line without a version is refused", v);
    ok(arb_driver_version_parse_proc("GCC version: gcc 12.2.0\n", v, sizeof v) != 0, "not the module line: refused", v);
    char tiny[4];
    ok(arb_driver_version_parse_proc(closed, tiny, sizeof tiny) != 0, "a version longer than the buffer is refused", "");
    char why[512] = "";
    v[0] = 'x';
    arb_status_t st = arb_driver_version(v, sizeof v, why, sizeof why);
    if (st == ARB_OK)
        ok(is_version(v), "arb_driver_version on this machine: a version", v);
    else
        ok(st == ARB_DECLINE && v[0] == '\0' && strstr(why, "NVML") && strstr(why, "/proc/driver/nvidia/version"),
           "arb_driver_version without a driver: declines naming NVML and /proc", why);
    printf("1..%d\n", ntest);
    return nfail ? 1 : 0;
}
