/* SPDX-License-Identifier: MIT */
/* The noop plugin's kernel: an empty launch, the floor under every GPU all-reduce. */
#include <cuda_runtime.h>

#include "noop_kernel.h"

__global__ void noop_kernel(void) {}

extern "C" int arb_noop_launch(void *stream)
{
    /* 1 block of one warp: the smallest launch a real collective kernel would make. */
    noop_kernel<<<1, 32, 0, (cudaStream_t)stream>>>();
    return (int)cudaGetLastError();
}

extern "C" const char *arb_noop_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}
