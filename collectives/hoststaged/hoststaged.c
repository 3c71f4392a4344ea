/* SPDX-License-Identifier: MIT */
/*
 * arb-hoststaged.so: all-reduce through pinned host memory shared by the ranks of one
 * node, so that each GPU's traffic crosses its own PCIe link and no GPU-to-GPU (P2P)
 * path is used. The host half: parameters, the shared memory, the plugin callbacks.
 * The kernel and its memory-ordering argument are in hoststaged_kernel.cu; the design
 * and cost model in README.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "hoststaged.h"

#define HS_DEFAULT_BLOCKS 16u
#define HS_DEFAULT_THREADS 512u
#define HS_NAME_LEN 64

typedef struct hs_params {
    unsigned blocks, threads;
    int hang_rank; /* test_hang_rank, -1 when not given */
} hs_params_t;

typedef struct hs_state {
    hs_params_t prm;
    int rank, nranks;
    char shm_name[HS_NAME_LEN];
    int shm_unlinked;
    void *host_base;  /* mmap'ed shared memory */
    size_t host_bytes;
    int registered;   /* cudaHostRegister succeeded */
    void *dev_mem;    /* epochs[blocks] + hs_error_t, device memory */
    hs_launch_t launch;
    int timeout_reported;
    char desc[128];
} hs_state_t;

/* ---- parameters: validated before any CUDA call ---- */

enum { KEY_BLOCKS, KEY_THREADS, KEY_HANG, NKEYS };
static const arb_kv_key_t hs_keys[NKEYS] = {{"blocks", NULL}, {"threads", NULL}, {"test_hang_rank", NULL}};

typedef struct hs_parse_ctx {
    hs_params_t *p;
    int nranks;
} hs_parse_ctx_t;

static arb_status_t hs_on_pair(void *ctx, int key, const char *val, char *why, size_t why_len)
{
    hs_parse_ctx_t *c = ctx;
    int v = 0;
    switch (key) {
    case KEY_BLOCKS:
        if (arb_kv_int(val, 1, HS_MAX_BLOCKS, &v))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: blocks='%s': expected an integer from 1 to %u (CTAs per call)", val, HS_MAX_BLOCKS);
        c->p->blocks = (unsigned)v;
        return ARB_OK;
    case KEY_THREADS:
        if (arb_kv_int(val, 32, 1024, &v) || v % 32)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: threads='%s': expected a multiple of 32 from 32 to 1024 (threads per CTA)", val);
        c->p->threads = (unsigned)v;
        return ARB_OK;
    default:
        if (arb_kv_int(val, 0, c->nranks - 1, &v))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: test_hang_rank='%s': expected a rank from 0 to %d (that rank never publishes its flag, to test the timeout)", val, c->nranks - 1);
        c->p->hang_rank = v;
        return ARB_OK;
    }
}

static arb_status_t parse_params(const char *params, int nranks, hs_params_t *p, char *why, size_t why_len)
{
    p->blocks = HS_DEFAULT_BLOCKS;
    p->threads = HS_DEFAULT_THREADS;
    p->hang_rank = -1;
    hs_parse_ctx_t c = {p, nranks};
    return arb_kv_parse("hoststaged", params, hs_keys, NKEYS, hs_on_pair, &c, NULL, why, why_len);
}

/* ---- shared host memory ---- */

static size_t round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

/* What local rank 0 tells the others: the object's name, or why it could not make it. */
typedef struct hs_shm_offer {
    int ok;
    char name[HS_NAME_LEN];
    char why[192];
} hs_shm_offer_t;

/* Rank 0: creates the object (name from a random token, unique to this job) and
 * reserves its pages now, so a full /dev/shm fails here and not as SIGBUS later. */
static void shm_create(size_t bytes, hs_shm_offer_t *offer)
{
    uint64_t token = 0;
    if (getrandom(&token, sizeof token, 0) != (ssize_t)sizeof token)
        token = ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&token;
    snprintf(offer->name, sizeof offer->name, "/arbench-hoststaged-%d-%016llx", (int)getpid(), (unsigned long long)token);
    int fd = shm_open(offer->name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) {
        snprintf(offer->why, sizeof offer->why, "shm_open(%s): %s", offer->name, strerror(errno));
        return;
    }
    int e = ftruncate(fd, (off_t)bytes) ? errno : posix_fallocate(fd, 0, (off_t)bytes);
    close(fd);
    if (e) {
        snprintf(offer->why, sizeof offer->why, "reserving %zu bytes of %s in /dev/shm: %s", bytes, offer->name, strerror(e));
        shm_unlink(offer->name);
        return;
    }
    offer->ok = 1;
}

static arb_status_t shm_map(const char *name, size_t bytes, void **base, char *why, size_t why_len)
{
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "shm_open(%s): %s", name, strerror(errno));
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (p == MAP_FAILED)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "mmap of %zu bytes of %s: %s", bytes, name, strerror(e));
    *base = p;
    return ARB_OK;
}

/* Every rank passes its own status; all return the most severe one (arb_status_t's
 * order) with the reason of the first rank that has it. */
typedef struct hs_vote {
    int status; /* arb_status_t */
    char why[184];
} hs_vote_t;

static arb_status_t agree(const arb_host_ops_t *ops, int nranks, arb_status_t st, const char *my_why,
                          const char *step, char *why, size_t why_len)
{
    hs_vote_t mine = {.status = (int)st};
    snprintf(mine.why, sizeof mine.why, "%s", st == ARB_OK ? "" : my_why);
    hs_vote_t *all = calloc((size_t)nranks, sizeof *all);
    if (!all)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "hoststaged: out of host memory during %s", step);
    if (ops->allgather(ops->ctx, &mine, all, sizeof mine)) {
        free(all);
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "hoststaged: allgather failed during %s", step);
    }
    int worst = 0;
    for (int r = 1; r < nranks; r++)
        if (all[r].status > all[worst].status)
            worst = r;
    const arb_status_t agreed = (arb_status_t)all[worst].status;
    if (agreed != ARB_OK) /* the rank's reason names where it was raised */
        snprintf(why, why_len, "hoststaged: %s failed on rank %d: %s", step, worst, all[worst].why);
    free(all);
    return agreed;
}

static void release(hs_state_t *st)
{
    if (st->dev_mem)
        cudaFree(st->dev_mem);
    if (st->registered)
        cudaHostUnregister(st->host_base);
    if (st->host_base)
        munmap(st->host_base, st->host_bytes);
    if (!st->shm_unlinked && st->rank == 0 && st->shm_name[0])
        shm_unlink(st->shm_name);
    free(st);
}

/* ---- plugin callbacks ---- */

/* Pins the shared host memory for this GPU (mapped: the kernel reaches the flags and
 * slots through device pointers) and allocates the epochs and the error record. */
static arb_status_t pin_and_alloc(hs_state_t *st, size_t flag_bytes, size_t epoch_bytes, char *why, size_t why_len)
{
    ARB_CUDA_TRY(cudaHostRegister(st->host_base, st->host_bytes, cudaHostRegisterMapped | cudaHostRegisterPortable),
                 why, why_len);
    st->registered = 1;
    void *dev_base = NULL;
    ARB_CUDA_TRY(cudaHostGetDevicePointer(&dev_base, st->host_base, 0), why, why_len);
    st->launch.flags = (volatile uint32_t *)dev_base;
    st->launch.slots = (char *)dev_base + flag_bytes;
    ARB_CUDA_TRY(cudaMalloc(&st->dev_mem, epoch_bytes + sizeof(hs_error_t)), why, why_len);
    ARB_CUDA_TRY(cudaMemset(st->dev_mem, 0, epoch_bytes + sizeof(hs_error_t)), why, why_len);
    ARB_CUDA_TRY(cudaDeviceSynchronize(), why, why_len);
    return ARB_OK;
}

static arb_status_t hs_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                            void **state, char *why, size_t why_len)
{
    hs_params_t prm;
    hs_shm_offer_t offer = {0};
    char mine[192] = "";
    arb_status_t s = parse_params(params, info->nranks, &prm, why, why_len);
    if (s != ARB_OK)
        return s;
    if (info->nnodes > 1) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "hoststaged: ranks span %d nodes; host-staged all-reduce shares host memory within one node only", info->nnodes);
    }
    ARB_TRY(arb_plugin_device_check(info, "hoststaged", why, why_len));
    int max_blocks = 0;
    ARB_CUDA_TRY(hs_max_coresident_blocks(prm.threads, &max_blocks), why, why_len);
    if ((int)prm.blocks > max_blocks) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: blocks=%u: at most %d CTAs of %u threads can be resident at once on this GPU, and every CTA of a cross-rank wait must be", prm.blocks, max_blocks, prm.threads);
    }

    hs_state_t *st = calloc(1, sizeof *st);
    if (!st) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "hoststaged: out of host memory");
    }
    st->prm = prm;
    st->rank = info->rank;
    st->nranks = info->nranks;
    size_t slot_bytes = round_up(info->max_bytes ? info->max_bytes : 16, HS_SLOT_ALIGN);
    size_t flag_bytes = round_up((size_t)info->nranks * prm.blocks * HS_FLAG_PITCH, HS_SLOT_ALIGN);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    st->host_bytes = round_up(flag_bytes + 2 * (size_t)info->nranks * slot_bytes, page);

    /* 1. Rank 0 (the only node's local rank 0) creates the object; all map it; once all
     *    have mapped it the name is unlinked, so nothing outlives the job, crash or not. */
    if (info->rank == 0)
        shm_create(st->host_bytes, &offer);
    if (ops->bcast(ops->ctx, &offer, sizeof offer, 0)) {
        ARB_RAISE_GOTO(s, ARB_ERR_SYSTEM, err_release, why, why_len, "hoststaged: bcast of the shared memory name failed");
    }
    if (!offer.ok) {
        ARB_RAISE_GOTO(s, ARB_ERR_SYSTEM, err_release, why, why_len, "hoststaged: rank 0 could not create shared host memory: %s", offer.why);
    }
    snprintf(st->shm_name, sizeof st->shm_name, "%s", offer.name);
    s = shm_map(st->shm_name, st->host_bytes, &st->host_base, mine, sizeof mine);
    s = agree(ops, info->nranks, s, mine, "mapping shared host memory", why, why_len);
    if (info->rank == 0)
        shm_unlink(st->shm_name);
    st->shm_unlinked = 1;
    if (s != ARB_OK)
        goto err_release;

    /* 2. Pin and map it for this GPU; device memory for the epochs and the error record. */
    size_t epoch_bytes = round_up(prm.blocks * sizeof(uint32_t), 16);
    const arb_status_t pinned = pin_and_alloc(st, flag_bytes, epoch_bytes, mine, sizeof mine);
    ARB_TRY_GOTO(s, agree(ops, info->nranks, pinned, mine, "pinning shared host memory", why, why_len), err_release);
    st->launch.slot_bytes = slot_bytes;
    st->launch.max_blocks = prm.blocks;
    st->launch.epochs = st->dev_mem;
    st->launch.err = (hs_error_t *)((char *)st->dev_mem + epoch_bytes);
    st->launch.rank = info->rank;
    st->launch.nranks = info->nranks;
    st->launch.hang_rank = prm.hang_rank;

    if (prm.hang_rank >= 0)
        snprintf(st->desc, sizeof st->desc, "algo=oneshot,blocks=%u,threads=%u,test_hang_rank=%d", prm.blocks, prm.threads, prm.hang_rank);
    else
        snprintf(st->desc, sizeof st->desc, "algo=oneshot,blocks=%u,threads=%u", prm.blocks, prm.threads);
    *state = st;
    return ARB_OK;

err_release:
    release(st);
    return s;
}

static arb_status_t hs_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                 void *stream, char *why, size_t why_len)
{
    hs_state_t *st = state;
    if (dtype != ARB_DTYPE_BF16 && dtype != ARB_DTYPE_FP32) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: dtype %d, expected bf16 or fp32", (int)dtype);
    }
    size_t esize = dtype == ARB_DTYPE_BF16 ? 2 : 4;
    if (count > st->launch.slot_bytes / esize || ((uintptr_t)send | (uintptr_t)recv) % 16) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "hoststaged: %zu elements at send %p recv %p: expected at most %zu elements (max_bytes at init) and 16-byte aligned buffers",
                 count, send, recv, st->launch.slot_bytes / esize);
    }
    if (count == 0)
        return ARB_OK;
    const cudaError_t ce = hs_launch_allreduce(&st->launch, send, recv, count, dtype == ARB_DTYPE_BF16 ? 0 : 1,
                                               st->prm.blocks, st->prm.threads, stream);
    if (ce != cudaSuccess)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "hoststaged: kernel launch for %zu elements: %s", count, cudaGetErrorString(ce));
    return ARB_OK;
}

static arb_status_t hs_query_error(void *state, char *why, size_t why_len)
{
    hs_state_t *st = state;
    hs_error_t err;
    cudaError_t ce = cudaMemcpy(&err, st->launch.err, sizeof err, cudaMemcpyDeviceToHost);
    if (ce != cudaSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "hoststaged: reading the device error record: %s", cudaGetErrorString(ce));
    }
    if (!err.timed_out)
        return ARB_OK;
    /* The record stays set: the epochs of the ranks disagree from here on, so every
     * later call returns without computing; say so instead of reporting success. */
    if (!st->timeout_reported)
        ARB_WHY(why, why_len, "hoststaged: spin-wait timed out waiting for rank %d (epoch %u)", err.peer, err.epoch);
    else
        ARB_WHY(why, why_len, "hoststaged: calls did nothing since the spin-wait timed out waiting for rank %d (epoch %u); finalize and init again to reset", err.peer, err.epoch);
    st->timeout_reported = 1;
    return ARB_ERR_TIMEOUT;
}

static const char *hs_describe(void *state)
{
    return ((hs_state_t *)state)->desc;
}

static void hs_finalize(void *state)
{
    if (state)
        release(state);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "hoststaged",
    .description = "one-shot all-reduce through pinned host memory shared by the node's ranks (PCIe, no P2P)",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 | ARB_CAP_FP32,
    .variants = NULL,
    .init = hs_init,
    .allreduce = hs_allreduce,
    .query_error = hs_query_error,
    .describe = hs_describe,
    .finalize = hs_finalize,
};
