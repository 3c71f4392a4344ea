/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for test_symm_load: an ncclGetVersion that reports the version
 * in $ARB_SYMM_EXPECT_MISMATCH, so lsa's header/library check can be tested
 * without a second NCCL installation. Declared without nccl.h: ncclResult_t is an
 * enum whose ncclSuccess is 0.
 */
#include <stdlib.h>

int ncclGetVersion(int *version);

int ncclGetVersion(int *version)
{
    const char *v = getenv("ARB_SYMM_EXPECT_MISMATCH");
    *version = v ? atoi(v) : 0;
    return 0;
}
