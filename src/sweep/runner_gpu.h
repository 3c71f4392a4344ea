/* SPDX-License-Identifier: MIT */
/*
 * The CUDA runner's parts (CUDA C++ only): buffers and the call on one slot
 * (runner_gpu.cu), the check kernels (gpu_check.cu), the timing modes (gpu_timing.cu).
 */
#ifndef ARB_RUNNER_GPU_H
#define ARB_RUNNER_GPU_H

/* instance.h brings mpi.h: its C API only, not the deprecated C++ bindings. */
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1

#include <cuda_runtime.h>

#include <stddef.h>
#include <stdint.h>

#include "sweep/runner.h"

struct arb_runner {
    arb_inst_t *inst;
    const arb_comm_info_t *info;
    int sm_count;
    cudaStream_t stream;
    arb_runner_bufs_t b;                         /* slotted buffers (runner.h) */
    unsigned long long *d_wrong;
    cudaEvent_t *ev;
    size_t nev;
    double *samples;
    size_t cap_samples;
    uint16_t *h_buf;                             /* host scratch for the fused check */
    size_t h_cap;
    char call_why[512];                          /* the reason the last call gave for not returning ARB_OK */
};

static inline size_t gpu_slot(const arb_runner_t *r, unsigned k) { return arb_slot_off(r->b.stride, k); }

/* runner_gpu.cu */
/* One collective call on slot k, enqueued on the runner's stream; the reason in r->call_why. */
arb_status_t arb_gpu_call(arb_runner_t *r, const arb_point_t *pt, unsigned k);
/* Waits for the stream (bounded: ARBENCH_SYNC_TIMEOUT_S, default 60 s), then asks the
 * plugin for device-side failures. */
arb_status_t arb_gpu_sync(arb_runner_t *r, char *why, size_t why_len);
/* The reason for a failed call on why, unless one is there already. */
void arb_gpu_call_failed(arb_runner_t *r, arb_status_t st, char *why, size_t why_len);

/* gpu_check.cu: fill slots [0, nslots) with the point's check inputs, then verify. */
arb_status_t arb_gpu_check_prep(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len);
arb_status_t arb_gpu_check_verify(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, arb_point_out_t *o,
                                  char *why, size_t why_len);

/* gpu_timing.cu: check (when pt->check) and time one point. */
arb_status_t arb_gpu_run_eager(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len);
/* Graph and context modes. */
arb_status_t arb_gpu_run_graph(arb_runner_t *r, const arb_point_t *pt, arb_point_out_t *o, char *why, size_t why_len);

#endif
