/* SPDX-License-Identifier: MIT */
/*
 * How a communicator's ranks find each other: MPI_COMM_WORLD (MPI initialized here when
 * the caller has not), the caller's allgather, or NCCL. Without MPI every collective host
 * step of the library and the plugins (runtime/hostops.c) is built from one allgather;
 * over NCCL that allgather is a small device buffer, ncclAllGather on a stream of ours
 * and a stream sync (creation and destroy only: never inside a call or a capture).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "api/api_priv.h"
#include "arbench/status.h"
#if ARB_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>
#endif

static void finalize_mpi(void)
{
    int fin = 0;
    MPI_Finalized(&fin);
    if (!fin)
        MPI_Finalize();
}

/* MPI up, initialized here when the caller has not; at most once per process. */
static arb_status_t ensure_mpi(char *why, size_t why_len)
{
    int init = 0, fin = 0;
    MPI_Initialized(&init);
    MPI_Finalized(&fin);
    if (fin)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "MPI was finalized before arbench_comm_create");
    if (init)
        return ARB_OK;
    if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "MPI_Init failed (launch with mpirun, or initialize MPI first)");
    atexit(finalize_mpi);
    return ARB_OK;
}

#if ARB_HAVE_NCCL
typedef struct nccl_boot {
    ncclComm_t comm;
    int owned; /* ours (from a unique id): destroyed with the communicator */
    int device, nranks;
    cudaStream_t stream;
    unsigned char *dev; /* (nranks + 1) x dev_block bytes: this rank's block, then everyone's */
    size_t dev_block;
} nccl_boot_t;

/* The allgather of runtime/hostops.h over NCCL, on the communicator's device. */
static int nccl_allgather(void *ctx, const void *send, void *recv, size_t bytes)
{
    nccl_boot_t *b = ctx;
    int prev = -1;
    if (cudaGetDevice(&prev) != cudaSuccess || cudaSetDevice(b->device) != cudaSuccess)
        return -1;
    int rc = -1;
    if (bytes > b->dev_block) {
        cudaFree(b->dev);
        b->dev = NULL, b->dev_block = 0;
        if (cudaMalloc((void **)&b->dev, bytes * ((size_t)b->nranks + 1)) != cudaSuccess)
            goto out_restore;
        b->dev_block = bytes;
    }
    if (bytes == 0) {
        rc = 0;
        goto out_restore;
    }
    if (cudaMemcpyAsync(b->dev, send, bytes, cudaMemcpyHostToDevice, b->stream) == cudaSuccess &&
        ncclAllGather(b->dev, b->dev + bytes, bytes, ncclUint8, b->comm, b->stream) == ncclSuccess &&
        cudaMemcpyAsync(recv, b->dev + bytes, bytes * (size_t)b->nranks, cudaMemcpyDeviceToHost, b->stream) == cudaSuccess &&
        cudaStreamSynchronize(b->stream) == cudaSuccess)
        rc = 0;
out_restore:
    cudaSetDevice(prev);
    return rc;
}

static void nccl_boot_free(nccl_boot_t *b)
{
    if (!b)
        return;
    int prev = -1;
    cudaGetDevice(&prev);
    cudaSetDevice(b->device);
    cudaFree(b->dev);
    if (b->stream)
        cudaStreamDestroy(b->stream);
    if (b->owned && b->comm)
        ncclCommDestroy(b->comm);
    if (prev >= 0)
        cudaSetDevice(prev);
    free(b);
}

static arb_status_t nccl_boot(arbench_comm_t *c, const api_boot_t *bt, char *why, size_t why_len)
{
    int dev = c->cfg.cuda_device;
    if (dev < 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "an NCCL bootstrap needs config cuda_device >= 0 (got %d): NCCL runs on a GPU", dev);
    nccl_boot_t *b = calloc(1, sizeof *b);
    if (!b)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory for the NCCL bootstrap");
    b->device = dev;
    arb_status_t st = ARB_OK;
    int prev = -1;
    cudaGetDevice(&prev);
    if (cudaSetDevice(dev) != cudaSuccess) {
        ARB_WHY(why, why_len, "cudaSetDevice(%d) failed for the NCCL bootstrap", dev);
        st = ARB_ERR_SYSTEM;
        goto out;
    }
    ncclResult_t r;
    if (bt->kind == API_BOOT_NCCL_ID) {
        ncclUniqueId id;
        memcpy(&id, bt->nccl_id, sizeof id);
        r = ncclCommInitRank(&b->comm, bt->size, id, bt->rank);
        if (r != ncclSuccess) {
            ARB_WHY(why, why_len, "ncclCommInitRank(rank %d of %d) from the unique id: %s", bt->rank, bt->size, ncclGetErrorString(r));
            b->comm = NULL, st = ARB_ERR_SYSTEM;
            goto out;
        }
        b->owned = 1;
    } else {
        b->comm = (ncclComm_t)bt->nccl_comm;
    }
    int rank = -1, nranks = -1, cdev = -1;
    if (ncclCommUserRank(b->comm, &rank) != ncclSuccess || ncclCommCount(b->comm, &nranks) != ncclSuccess ||
        ncclCommCuDevice(b->comm, &cdev) != ncclSuccess) {
        ARB_WHY(why, why_len, "ncclCommUserRank/ncclCommCount/ncclCommCuDevice failed on the NCCL communicator");
        st = ARB_ERR_SYSTEM;
        goto out;
    }
    if (cdev != dev) {
        ARB_WHY(why, why_len, "the NCCL communicator is on device %d, config cuda_device %d: expected the same device", cdev, dev);
        st = ARB_ERR_INVALID;
        goto out;
    }
    b->nranks = nranks;
    if (cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) != cudaSuccess) {
        ARB_WHY(why, why_len, "cudaStreamCreateWithFlags failed for the NCCL bootstrap");
        st = ARB_ERR_SYSTEM;
        goto out;
    }
    st = arb_mpi_bootstrap_allgather(&c->mpi, rank, nranks, nccl_allgather, b, why, why_len);
out:
    if (prev >= 0)
        cudaSetDevice(prev);
    if (st != ARB_OK)
        nccl_boot_free(b);
    else
        c->nccl_boot = b;
    return st;
}
#endif

arb_status_t api_boot(arbench_comm_t *c, const api_boot_t *b, char *why, size_t why_len)
{
    c->boot = b->kind;
    switch (b->kind) {
    case API_BOOT_MPI:
        ARB_TRY(ensure_mpi(why, why_len));
        if (arb_mpi_bootstrap(&c->mpi) != ARB_OK)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "MPI bootstrap (communicator duplicate and node split) failed");
        return ARB_OK;
    case API_BOOT_ALLGATHER:
        return arb_mpi_bootstrap_allgather(&c->mpi, b->rank, b->size, b->allgather, b->ctx, why, why_len);
    case API_BOOT_NCCL_ID:
    case API_BOOT_NCCL_COMM:
#if ARB_HAVE_NCCL
        return nccl_boot(c, b, why, why_len);
#else
        ARB_RAISE(ARB_DECLINE, why, why_len, "an NCCL bootstrap needs NCCL, and this libarbench was built without it");
#endif
    }
    ARB_RAISE(ARB_ERR_INVALID, why, why_len, "bootstrap kind %d: unknown", (int)b->kind);
}

void api_boot_free(arbench_comm_t *c)
{
    arb_mpi_free(&c->mpi);
#if ARB_HAVE_NCCL
    nccl_boot_free(c->nccl_boot);
#endif
    c->nccl_boot = NULL;
}

static arb_status_t unique_id(void *id, size_t id_len, char *why, size_t why_len)
{
    if (!id || id_len < ARBENCH_NCCL_UNIQUE_ID_BYTES)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "arbench_nccl_unique_id: a buffer of %zu bytes, expected at least %d", id ? id_len : 0, ARBENCH_NCCL_UNIQUE_ID_BYTES);
#if ARB_HAVE_NCCL
    _Static_assert(sizeof(ncclUniqueId) == ARBENCH_NCCL_UNIQUE_ID_BYTES, "ncclUniqueId is 128 bytes");
    ncclUniqueId uid;
    ncclResult_t r = ncclGetUniqueId(&uid);
    if (r != ncclSuccess)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    memcpy(id, &uid, sizeof uid);
    return ARB_OK;
#else
    ARB_RAISE(ARB_DECLINE, why, why_len, "arbench_nccl_unique_id needs NCCL, and this libarbench was built without it");
#endif
}

arbench_status_t arbench_nccl_unique_id(void *id, size_t id_len, char *why, size_t why_len)
{
    char local_why[1024];
    if (!why || !why_len)
        why = local_why, why_len = sizeof local_why;
    why[0] = '\0';
    return (arbench_status_t)unique_id(id, id_len, why, why_len);
}
