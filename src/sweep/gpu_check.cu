// SPDX-License-Identifier: MIT
// Checks of the CUDA runner: exact all-reduce patterns filled and verified on the GPU,
// the fused op's inputs from check_fused.h verified on the host against float64.
#include <cuda_bf16.h>

#include <stdlib.h>

#include "arbench/status.h"
#include "rmsnorm/check_fused.h"
#include "rmsnorm/rmsnorm.h"
#include "sweep/runner_gpu.h"

/* ------------------------------------------------------------------ kernels */

__device__ __forceinline__ int pattern_dev(size_t i, int rank, unsigned salt)
{
    return (int)((i * 7u + (size_t)rank * 13u + (size_t)salt * 5u) % 9u) - 4; // = arb_pattern
}

__global__ void k_fill(void *buf, size_t count, int fp32, int rank, unsigned salt)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        float v = (float)pattern_dev(i, rank, salt);
        if (fp32)
            ((float *)buf)[i] = v;
        else
            ((__nv_bfloat16 *)buf)[i] = __float2bfloat16(v);
    }
}

__global__ void k_poison(void *buf, size_t count, int fp32)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        if (fp32)
            ((uint32_t *)buf)[i] = 0x7fc00000u; /* quiet NaN */
        else
            ((uint16_t *)buf)[i] = 0x7fc0u;
    }
}

__global__ void k_verify(const void *buf, size_t count, int fp32, int nranks, unsigned salt,
                         unsigned long long *wrong)
{
    unsigned long long bad = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < count; i += (size_t)gridDim.x * blockDim.x) {
        int expect = 0;
        for (int r = 0; r < nranks; r++)
            expect += pattern_dev(i, r, salt);
        float got = fp32 ? ((const float *)buf)[i] : __bfloat162float(((const __nv_bfloat16 *)buf)[i]);
        if (!(got == (float)expect)) /* NaN never passes */
            bad++;
    }
    if (bad)
        atomicAdd(wrong, bad);
}

static unsigned grid_for(size_t count) { return (unsigned)(count / 256 + 1 < 1024 ? count / 256 + 1 : 1024); }

/* ------------------------------------------------------------------ allreduce */

/* Slots [0, nslots) get salts salt+k; recv is poisoned. */
static arb_status_t prep_allreduce(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    int fp32 = pt->dtype == ARB_DTYPE_FP32;
    for (unsigned k = 0; k < nslots; k++) {
        k_fill<<<grid_for(pt->count), 256, 0, r->stream>>>(r->b.send + gpu_slot(r, k), pt->count, fp32, r->info->rank, pt->salt + k);
        k_poison<<<grid_for(pt->count), 256, 0, r->stream>>>(r->b.recv + gpu_slot(r, k), pt->count, fp32);
    }
    ARB_CUDA_TRY(cudaGetLastError(), why, why_len);
    ARB_CUDA_TRY(cudaStreamSynchronize(r->stream), why, why_len);
    return ARB_OK;
}

static arb_status_t verify_allreduce(arb_runner_t *r, const arb_point_t *pt, unsigned nslots,
                                     unsigned long long *wrong, char *why, size_t why_len)
{
    unsigned long long h = 0;
    ARB_CUDA_TRY(cudaMemsetAsync(r->d_wrong, 0, sizeof *r->d_wrong, r->stream), why, why_len);
    for (unsigned k = 0; k < nslots; k++)
        k_verify<<<grid_for(pt->count), 256, 0, r->stream>>>(r->b.recv + gpu_slot(r, k), pt->count,
                                                            pt->dtype == ARB_DTYPE_FP32, r->info->nranks,
                                                            pt->salt + k, r->d_wrong);
    ARB_CUDA_TRY(cudaGetLastError(), why, why_len);
    ARB_CUDA_TRY(cudaMemcpyAsync(&h, r->d_wrong, sizeof h, cudaMemcpyDeviceToHost, r->stream), why, why_len);
    ARB_CUDA_TRY(cudaStreamSynchronize(r->stream), why, why_len);
    *wrong += h;
    return ARB_OK;
}

/* ------------------------------------------------------------------ fused */

static arb_status_t host_scratch(arb_runner_t *r, size_t elems, char *why, size_t why_len)
{
    if (r->h_cap >= elems)
        return ARB_OK;
    free(r->h_buf);
    r->h_buf = (uint16_t *)malloc(elems * sizeof(uint16_t));
    r->h_cap = r->h_buf ? elems : 0;
    if (!r->h_buf)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the fused check");
    return ARB_OK;
}

static arb_status_t prep_fused(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    size_t n = (size_t)pt->tokens * pt->hidden;
    ARB_TRY(host_scratch(r, n + pt->hidden, why, why_len));
    uint16_t *h = r->h_buf;
    arb_fused_fill_weight(h, pt->hidden, pt->salt);
    ARB_CUDA_TRY(cudaMemcpy(r->b.weight, h, pt->hidden * 2, cudaMemcpyHostToDevice), why, why_len);
    for (unsigned k = 0; k < nslots; k++) {
        size_t off = gpu_slot(r, k);
        arb_fused_fill_x(h, n, pt->salt, k, r->info->rank);
        ARB_CUDA_TRY(cudaMemcpy(r->b.x + off, h, n * 2, cudaMemcpyHostToDevice), why, why_len);
        arb_fused_fill_residual(h, n, pt->salt, k);
        ARB_CUDA_TRY(cudaMemcpy(r->b.res + off, h, n * 2, cudaMemcpyHostToDevice), why, why_len);
        k_poison<<<grid_for(n), 256, 0, r->stream>>>(r->b.out + off, n, 0);
    }
    ARB_CUDA_TRY(cudaGetLastError(), why, why_len);
    ARB_CUDA_TRY(cudaStreamSynchronize(r->stream), why, why_len);
    return ARB_OK;
}

static arb_status_t verify_fused(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, arb_point_out_t *o,
                                 char *why, size_t why_len)
{
    arb_status_t st = ARB_OK;
    size_t n = (size_t)pt->tokens * pt->hidden;
    arb_fused_check_t c;
    ARB_TRY(arb_fused_check_init(&c, r->info->nranks, pt->tokens, pt->hidden, pt->eps, why, why_len));
    uint16_t *got_res = (uint16_t *)malloc(n * 2), *got_out = (uint16_t *)malloc(n * 2);
    if (!got_res || !got_out)
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, out, why, why_len, "out of host memory for the fused check");
    for (unsigned k = 0; k < nslots; k++) {
        size_t off = gpu_slot(r, k);
        ARB_CUDA_GOTO(st, cudaMemcpy(got_res, r->b.res + off, n * 2, cudaMemcpyDeviceToHost), out, why, why_len);
        ARB_CUDA_GOTO(st, cudaMemcpy(got_out, r->b.out + off, n * 2, cudaMemcpyDeviceToHost), out, why, why_len);
        o->wrong += arb_fused_check_slot(&c, pt->salt, k, got_res, got_out, &o->out_hash);
    }
    o->tolerance = ARB_RMSNORM_RTOL;
out:
    free(got_res);
    free(got_out);
    arb_fused_check_free(&c);
    return st;
}

/* ------------------------------------------------------------------ dispatch */

arb_status_t arb_gpu_check_prep(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, char *why, size_t why_len)
{
    return pt->op == ARB_OP_ALLREDUCE ? prep_allreduce(r, pt, nslots, why, why_len)
                                      : prep_fused(r, pt, nslots, why, why_len);
}

arb_status_t arb_gpu_check_verify(arb_runner_t *r, const arb_point_t *pt, unsigned nslots, arb_point_out_t *o,
                                  char *why, size_t why_len)
{
    o->checked = 1;
    return pt->op == ARB_OP_ALLREDUCE ? verify_allreduce(r, pt, nslots, &o->wrong, why, why_len)
                                      : verify_fused(r, pt, nslots, o, why, why_len);
}
