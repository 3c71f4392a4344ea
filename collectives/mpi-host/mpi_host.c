/* SPDX-License-Identifier: MIT */
/*
 * mpi-host: all-reduce over MPI on host buffers, so the whole pipeline runs and is
 * measured for real without a GPU. fp32 uses MPI_SUM on MPI_FLOAT; bf16 uses a
 * user-defined, commutative MPI_Op on 16-bit words that adds each pair in fp32 and
 * rounds once to bf16 (round to nearest even).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/plugin.h"
#include "arbench/status.h"

typedef struct mpi_host {
    MPI_Comm comm;
    MPI_Op bf16_sum;
} mpi_host_t;

static float bf16_to_f32(uint16_t h)
{
    uint32_t b = (uint32_t)h << 16;
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static uint16_t f32_to_bf16(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    if ((b & 0x7f800000u) == 0x7f800000u && (b & 0x007fffffu)) /* NaN stays a quiet NaN */
        return (uint16_t)((b >> 16) | 0x0040u);
    b += 0x7fffu + ((b >> 16) & 1u); /* round to nearest even */
    return (uint16_t)(b >> 16);
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = f32_to_bf16(bf16_to_f32(a[i]) + bf16_to_f32(b[i]));
}

static arb_status_t mh_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                            void **state, char *why, size_t why_len)
{
    (void)ops;
    if (params && *params) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "mpi-host takes no parameters (got '%s')", params);
    }
    if (!info->mpi_comm) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "mpi-host needs the harness's MPI communicator");
    }
    mpi_host_t *s = calloc(1, sizeof *s);
    if (!s)
        return ARB_ERR_SYSTEM;
    if (MPI_Comm_dup(*(MPI_Comm *)info->mpi_comm, &s->comm) != MPI_SUCCESS ||
        MPI_Op_create(bf16_sum_fn, 1, &s->bf16_sum) != MPI_SUCCESS) {
        ARB_WHY(why, why_len, "MPI_Comm_dup or MPI_Op_create failed");
        free(s);
        return ARB_ERR_SYSTEM;
    }
    *state = s;
    return ARB_OK;
}

static arb_status_t mh_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                 void *stream, char *why, size_t why_len)
{
    (void)stream;
    mpi_host_t *s = state;
    if (count > (size_t)INT32_MAX) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "mpi-host: count %zu elements, expected at most %d (MPI's int count)", count, INT32_MAX);
    }
    int rc = dtype == ARB_DTYPE_FP32
                 ? MPI_Allreduce(send, recv, (int)count, MPI_FLOAT, MPI_SUM, s->comm)
                 : MPI_Allreduce(send, recv, (int)count, MPI_UINT16_T, s->bf16_sum, s->comm);
    if (rc != MPI_SUCCESS) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "mpi-host: MPI_Allreduce of %zu elements failed (MPI error %d)", count, rc);
    }
    return ARB_OK;
}

static const char *mh_describe(void *state)
{
    (void)state;
    return "transport=mpi,memory=host";
}

static void mh_finalize(void *state)
{
    mpi_host_t *s = state;
    MPI_Op_free(&s->bf16_sum);
    MPI_Comm_free(&s->comm);
    free(s);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "mpi-host",
    .description = "MPI_Allreduce on host buffers (host backend; bf16 via a user-defined MPI_Op)",
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16 | ARB_CAP_FP32,
    .init = mh_init,
    .allreduce = mh_allreduce,
    .describe = mh_describe,
    .finalize = mh_finalize,
};
