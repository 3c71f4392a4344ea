/* SPDX-License-Identifier: MIT */
/* The noop plugin's kernel: an empty launch, the floor under every GPU all-reduce. */
#include <cuda_runtime.h>

#include "noop_kernel.h"

__global__ void noop_kernel(void) {}

/* The PDL-capable form: launched with programmatic stream serialization, it lets its own
 * successor start launching at once, then waits for its predecessor (so a successor that
 * waits on it also waits on that one). */
__global__ void noop_pdl_kernel(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

extern "C" int arb_noop_launch(void *stream, int pdl)
{
    /* 1 block of one warp: the smallest launch a real collective kernel would make. */
    if (!pdl) {
        noop_kernel<<<1, 32, 0, (cudaStream_t)stream>>>();
        return (int)cudaGetLastError();
    }
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(32);
    cfg.stream = (cudaStream_t)stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return (int)cudaLaunchKernelEx(&cfg, noop_pdl_kernel);
}

extern "C" const char *arb_noop_error_string(int err)
{
    return cudaGetErrorString((cudaError_t)err);
}
