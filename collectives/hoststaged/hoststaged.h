/* SPDX-License-Identifier: MIT */
/*
 * Internal interface between the host half (hoststaged.c: parameters, shared host
 * memory, plugin callbacks) and the device half (hoststaged_kernel.cu: the one-shot
 * all-reduce kernel) of arb-hoststaged.so. Nothing here is exported.
 *
 * Shared host memory layout (one POSIX shm object per communicator, mapped by every
 * local rank and registered with CUDA as mapped, portable pinned memory):
 *
 *   [flags]  nranks x max_blocks words, each HS_FLAG_PITCH bytes apart:
 *            flag(r, b) = the last epoch whose data CTA b of rank r has published.
 *   [slots]  2 parities x nranks slots of slot_bytes each:
 *            slot(p, r) = rank r's input for the epochs e with e % 2 == p.
 */
#ifndef ARB_HOSTSTAGED_H
#define ARB_HOSTSTAGED_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HS_FLAG_PITCH 64u      /* bytes between two flag words: one cache line each */
#define HS_MAX_BLOCKS 256u     /* upper bound of the `blocks` parameter */
#define HS_SLOT_ALIGN 256u     /* slot_bytes is a multiple of this */
#define HS_TIMEOUT_NS 2000000000ull /* a spin-wait gives up after 2 s (%globaltimer, ns) */

/* Written by the kernel in device memory when a spin-wait times out; read by
 * query_error after the stream was synchronized. Once timed_out is set it stays set:
 * the ranks' epochs no longer agree, so every later call returns at once. */
typedef struct hs_error {
    uint32_t timed_out; /* 0, or 1 once any CTA gave up */
    int32_t peer;       /* the rank whose flag never came */
    uint32_t epoch;     /* the epoch it was waiting for */
    uint32_t pad;
} hs_error_t;

typedef struct hs_launch {
    /* Device-side addresses of the shared host memory (cudaHostGetDevicePointer). */
    volatile uint32_t *flags; /* flag(r, b) at byte offset (r * max_blocks + b) * HS_FLAG_PITCH */
    char *slots;              /* slot(p, r) at byte offset (p * nranks + r) * slot_bytes */
    size_t slot_bytes;
    unsigned max_blocks;      /* the flag array's row length (== blocks) */
    /* Device memory owned by this communicator. */
    uint32_t *epochs;         /* [blocks]: the last epoch CTA b completed */
    hs_error_t *err;
    int rank, nranks;
    int hang_rank;            /* test only: this rank never publishes its flags; -1: none */
} hs_launch_t;

/* Enqueues one all-reduce of `count` elements (dtype: 0 bf16, 1 fp32) on `stream`
 * with `blocks` CTAs of `threads` threads; the launch's error. */
cudaError_t hs_launch_allreduce(const hs_launch_t *l, const void *send, void *recv, size_t count,
                        int dtype, unsigned blocks, unsigned threads, void *stream);

/* The largest number of CTAs of `threads` threads that can be resident at once on the
 * current device (SMs x blocks per SM, the fewer of the bf16 and fp32 kernels). */
cudaError_t hs_max_coresident_blocks(unsigned threads, int *blocks);

#ifdef __cplusplus
}
#endif

#endif
