/* SPDX-License-Identifier: MIT */
/*
 * mpi-host: all-reduce over MPI on host buffers, so the whole pipeline runs and is
 * measured for real without a GPU. fp32 uses MPI_SUM on MPI_FLOAT; bf16 uses a
 * user-defined, commutative MPI_Op on 16-bit words that adds each pair in fp32 and
 * rounds once to bf16 (round to nearest even).
 *
 * Parameters (a describe() string is accepted back, so a profile's winner reopens):
 *   algo=allreduce      MPI_Allreduce (default)
 *   algo=reduce-bcast   MPI_Reduce to rank 0, then MPI_Bcast: a second host variant, so
 *                       the CPU reference can run different choices at different call
 *                       sites (the per-shape profile tests); the same sums, bit for bit,
 *                       on two ranks (one addition, commutative)
 *   transport=mpi, memory=host   what describe() reports; accepted with those values only
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_host_bf16.h"
#include "arbench/plugin.h"
#include "arbench/status.h"

typedef struct mpi_host {
    MPI_Comm comm;
    MPI_Op bf16_sum;
    int reduce_bcast; /* algo=reduce-bcast */
} mpi_host_t;

/* "k=v,k=v": algo=allreduce|reduce-bcast, transport=mpi, memory=host. */
static arb_status_t parse(const char *params, int *reduce_bcast, char *why, size_t why_len)
{
    *reduce_bcast = 0;
    for (const char *p = params ? params : ""; *p;) {
        size_t n = strcspn(p, ",");
        const char *eq = memchr(p, '=', n);
        size_t kl = eq ? (size_t)(eq - p) : n, vl = eq ? n - kl - 1 : 0;
        const char *v = eq ? eq + 1 : "";
#define IS(s, len, lit) ((len) == sizeof(lit) - 1 && strncmp((s), (lit), (len)) == 0)
        if (eq && IS(p, kl, "algo") && (IS(v, vl, "allreduce") || IS(v, vl, "reduce-bcast")))
            *reduce_bcast = IS(v, vl, "reduce-bcast");
        else if (!(eq && ((IS(p, kl, "transport") && IS(v, vl, "mpi")) || (IS(p, kl, "memory") && IS(v, vl, "host"))))) {
            ARB_WHY(why, why_len,
                    "mpi-host params: item '%.*s': expected algo=allreduce|reduce-bcast (or its describe() items "
                    "transport=mpi, memory=host)",
                    (int)n, p);
            return ARB_ERR_INVALID;
        }
#undef IS
        p += n + (p[n] == ',');
    }
    return ARB_OK;
}

static void bf16_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const uint16_t *a = in;
    uint16_t *b = inout;
    for (int i = 0; i < *len; i++)
        b[i] = arb_host_f32_to_bf16(arb_host_bf16_to_f32(a[i]) + arb_host_bf16_to_f32(b[i]));
}

static arb_status_t mh_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                            void **state, char *why, size_t why_len)
{
    (void)ops;
    int rb;
    ARB_TRY(parse(params, &rb, why, why_len));
    if (!info->mpi_comm) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "mpi-host calls MPI itself and this job was bootstrapped without MPI (a callback or NCCL bootstrap: no MPI communicator); ops-host serves host memory there");
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
    s->reduce_bcast = rb;
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
    MPI_Datatype t = dtype == ARB_DTYPE_FP32 ? MPI_FLOAT : MPI_UINT16_T;
    MPI_Op op = dtype == ARB_DTYPE_FP32 ? MPI_SUM : s->bf16_sum;
    int rc, rank = 0;
    if (!s->reduce_bcast) {
        rc = MPI_Allreduce(send == recv ? MPI_IN_PLACE : send, recv, (int)count, t, op, s->comm);
    } else {
        MPI_Comm_rank(s->comm, &rank);
        /* rank 0 reduces into recv (MPI_IN_PLACE when the caller reduces in place) */
        rc = MPI_Reduce(rank == 0 && send == recv ? MPI_IN_PLACE : send, recv, (int)count, t, op, 0, s->comm);
        if (rc == MPI_SUCCESS)
            rc = MPI_Bcast(recv, (int)count, t, 0, s->comm);
    }
    if (rc != MPI_SUCCESS) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "mpi-host: %s of %zu elements failed (MPI error %d)",
                  s->reduce_bcast ? "MPI_Reduce + MPI_Bcast" : "MPI_Allreduce", count, rc);
    }
    return ARB_OK;
}

static const char *mh_describe(void *state)
{
    const mpi_host_t *s = state;
    return s->reduce_bcast ? "algo=reduce-bcast,transport=mpi,memory=host" : "transport=mpi,memory=host";
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
    .caps = ARB_CAP_HOST_MEMORY | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_IN_PLACE,
    .init = mh_init,
    .allreduce = mh_allreduce,
    .describe = mh_describe,
    .finalize = mh_finalize,
};
