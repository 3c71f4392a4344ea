/* SPDX-License-Identifier: MIT */
/*
 * ARB_CUDA_TRY, ARB_CUDA_GOTO and ARB_CUDA_STATUS_ (arbench/status.h) on a real device: an
 * allocation that cannot succeed is reported with the call and the runtime's words, and it
 * leaves no error behind, so the next check of cudaGetLastError() (what every launcher reads after its
 * launch) sees success. Before, a failed cudaMalloc in `arbench engine`'s MoE bench on an
 * 80 GB GPU came back as "rmsnorm: kernel launch ... failed: out of memory" at the next
 * launch. Exit 77 without a CUDA device.
 */
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "arbench/status.h"

static char why[512];

#define HUGE_BYTES ((size_t)1 << 52) /* 4 PB: no device has it */

static arb_status_t try_alloc(void **p) /* the TRY form */
{
    ARB_CUDA_TRY(cudaMalloc(p, HUGE_BYTES), why, sizeof why);
    return ARB_OK;
}

static arb_status_t goto_alloc(void **p) /* the GOTO form */
{
    arb_status_t rs = ARB_OK;
    ARB_CUDA_GOTO(rs, cudaMalloc(p, HUGE_BYTES), out, why, sizeof why);
out:
    return rs;
}

static arb_status_t status_alloc(void **p) /* a hand-made error path through ARB_CUDA_STATUS_ */
{
    const cudaError_t e = cudaMalloc(p, HUGE_BYTES);
    if (e != cudaSuccess)
        ARB_RAISE(ARB_CUDA_STATUS_(e), why, sizeof why, "cudaMalloc: %s", cudaGetErrorString(e));
    return ARB_OK;
}

static int check(const char *what, arb_status_t (*f)(void **))
{
    void *p = NULL;
    why[0] = 0;
    const arb_status_t st = f(&p);
    const cudaError_t after = cudaGetLastError();
    const int ok = st == ARB_ERR_SYSTEM && p == NULL && strstr(why, "cudaMalloc") && strstr(why, "out of memory") &&
                   after == cudaSuccess;
    printf("%s %s: status %d, '%s', cudaGetLastError after it: %s\n", ok ? "ok  " : "FAIL", what, (int)st, why,
           cudaGetErrorString(after));
    return ok;
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device visible\n");
        return 77;
    }
    int ok = check("ARB_CUDA_TRY", try_alloc);
    ok &= check("ARB_CUDA_GOTO", goto_alloc);
    ok &= check("ARB_CUDA_STATUS_", status_alloc);
    /* the control: a bare failed cudaMalloc does leave its error (else the check above proves nothing) */
    void *p = NULL;
    const cudaError_t e = cudaMalloc(&p, HUGE_BYTES), left = cudaGetLastError();
    const int control = e != cudaSuccess && left == e;
    printf("%s a bare failed cudaMalloc leaves '%s' for cudaGetLastError\n", control ? "ok  " : "FAIL",
           cudaGetErrorString(left));
    return ok && control ? 0 : 1;
}
