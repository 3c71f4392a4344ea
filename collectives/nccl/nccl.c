/* SPDX-License-Identifier: MIT */
/*
 * arb-nccl.so: ncclAllReduce (sum) on one communicator per variant.
 *
 * A variant forces NCCL's algorithm and protocol through NCCL_ALGO / NCCL_PROTO,
 * which NCCL 2.28 reads with getenv in ncclTopoTuneModel at every communicator
 * init (not cached), so they are set just around this communicator's init and
 * probe, then restored. The channel count is NOT set through NCCL_MIN/MAX_NCHANNELS:
 * those are NCCL_PARAMs, cached process-wide at their first read, so a second
 * variant in the same process would silently keep the first value. It goes through
 * ncclConfig_t minCTAs = maxCTAs instead, which NCCL applies per communicator
 * (nChannels is clamped to [minCTAs, maxCTAs] at init).
 *
 * NCCL reports a forced combination it cannot run at the first collective
 * ("no algorithm/protocol available ... NCCL_ALGO was set to ...", ncclInvalidUsage),
 * so init runs probe all-reduces and declines the variant when NCCL refuses it.
 * README.md has what was found about NCCL's behaviour with forced choices.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "nccl_params.h"

typedef struct nccl_state {
    ncclComm_t comm;
    arb_host_ops_t ops; /* a copy: the harness's ctx stays valid until finalize */
    char describe[160];
} nccl_state_t;

/* A saved environment variable, restored by env_restore. */
typedef struct env_saved {
    const char *name;
    char *old; /* strdup of the previous value, NULL if it was unset */
    int active;
} env_saved_t;

/* Sets name=value for this communicator's init, remembering the user's value. */
static arb_status_t env_override(env_saved_t *s, const char *name, const char *value, char *why, size_t why_len)
{
    const char *old = getenv(name);
    s->name = name;
    s->old = old ? strdup(old) : NULL;
    if (old && !s->old)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "cannot save %s (out of host memory)", name);
    if (setenv(name, value, 1) != 0) {
        free(s->old);
        s->old = NULL;
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "cannot set %s=%s in the environment", name, value);
    }
    s->active = 1;
    return ARB_OK;
}

static void env_restore(env_saved_t *s)
{
    if (!s->active)
        return;
    if (s->old)
        setenv(s->name, s->old, 1);
    else
        unsetenv(s->name);
    free(s->old);
    s->old = NULL;
    s->active = 0;
}

static const char *nccl_err_text(ncclComm_t comm, ncclResult_t r)
{
    /* ncclGetLastError holds NCCL's last WARN line (e.g. "no algorithm/protocol
     * available ..."), which says more than the result code. */
    const char *last = ncclGetLastError(comm);
    return (last && *last) ? last : ncclGetErrorString(r);
}

/* Results that mean "this forced configuration is not available here", as opposed
 * to a CUDA, system or network failure. */
static int is_refusal(ncclResult_t r)
{
    return r == ncclInvalidUsage || r == ncclInvalidArgument;
}

/*
 * In-place all-reduces on scratch at every 8th power of two from 16 B up to
 * max_bytes, in bf16 and fp32. They make NCCL select an algorithm/protocol (where
 * a forced one is refused) and set up the connections that each size's choice
 * needs (NCCL connects lazily at the first collective that uses them), so that
 * this happens here and not inside the harness's first timed call or graph capture.
 * Only enqueues; the caller synchronizes once every rank enqueued successfully.
 */
static ncclResult_t probe_enqueue(ncclComm_t comm, void *scratch, size_t max_bytes,
                                  cudaStream_t stream, const char **what)
{
    for (size_t bytes = 16;; bytes *= 8) {
        if (bytes > max_bytes)
            bytes = max_bytes;
        ncclResult_t r = ncclAllReduce(scratch, scratch, bytes / 2, ncclBfloat16, ncclSum, comm, stream);
        if (r != ncclSuccess) {
            *what = "probe ncclAllReduce (bf16)";
            return r;
        }
        r = ncclAllReduce(scratch, scratch, bytes / 4, ncclFloat32, ncclSum, comm, stream);
        if (r != ncclSuccess) {
            *what = "probe ncclAllReduce (fp32)";
            return r;
        }
        if (bytes == max_bytes)
            return ncclSuccess;
    }
}

/* The probe's scratch buffer (zeroed) and stream. */
static arb_status_t probe_buffer(size_t bytes, cudaStream_t *stream, void **scratch, char *why, size_t why_len)
{
    ARB_CUDA_TRY(cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking), why, why_len);
    ARB_CUDA_TRY(cudaMalloc(scratch, bytes), why, why_len);
    ARB_CUDA_TRY(cudaMemsetAsync(*scratch, 0, bytes, *stream), why, why_len);
    return ARB_OK;
}

/* Creates s->comm with the variant's environment and config and probes it. Every
 * rank returns the same status: the maximum over ranks (arb_status_t's severity
 * order), agreed through an allgather before anyone waits on the GPU, so a rank
 * whose NCCL refused the variant cannot leave the others blocked in a collective. */
static arb_status_t comm_create(nccl_state_t *s, const arb_comm_info_t *info,
                                const arb_nccl_params_t *p, const ncclUniqueId *id,
                                char *why, size_t why_len)
{
    env_saved_t env_algo = {0}, env_proto = {0};
    arb_status_t local = ARB_OK;
    const char *what = "ncclCommInitRankConfig";
    ncclResult_t r = ncclSuccess;
    void *scratch = NULL;
    cudaStream_t stream = NULL;
    arb_status_t st = ARB_OK;

    if (p->algo)
        local = env_override(&env_algo, "NCCL_ALGO", p->algo, why, why_len);
    if (p->proto && local == ARB_OK)
        local = env_override(&env_proto, "NCCL_PROTO", p->proto, why, why_len);

    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    if (p->channels)
        config.minCTAs = config.maxCTAs = p->channels;
    if (local == ARB_OK) {
        r = ncclCommInitRankConfig(&s->comm, info->nranks, *id, info->rank, &config);
        if (r != ncclSuccess) {
            s->comm = NULL;
            local = (arb_nccl_params_forced(p) && is_refusal(r)) ? ARB_DECLINE : ARB_ERR_SYSTEM;
        }
    }

    /* The probe buffer: max_bytes rounded down to whole fp32 elements, at least 16 B. */
    size_t probe_bytes = info->max_bytes & ~(size_t)15;
    if (probe_bytes < 16)
        probe_bytes = 16;
    if (local == ARB_OK) {
        local = probe_buffer(probe_bytes, &stream, &scratch, why, why_len); /* why says what failed */
        r = ncclSuccess;
    }
    if (local == ARB_OK) {
        r = probe_enqueue(s->comm, scratch, probe_bytes, stream, &what);
        if (r != ncclSuccess)
            local = (arb_nccl_params_forced(p) && is_refusal(r)) ? ARB_DECLINE : ARB_ERR_SYSTEM;
    }
    if (r != ncclSuccess) {
        if (local == ARB_DECLINE)
            ARB_WHY(why, why_len, "NCCL refuses this variant on %d ranks: %s: %s", info->nranks, what, nccl_err_text(s->comm, r));
        else
            ARB_WHY(why, why_len, "%s: %s", what, nccl_err_text(s->comm, r));
    }

    arb_status_t *all = calloc((size_t)info->nranks, sizeof *all);
    arb_status_t worst = local;
    int worst_rank = info->rank;
    if (!all || s->ops.allgather(s->ops.ctx, &local, all, sizeof local) != 0) {
        if (local == ARB_OK)
            ARB_WHY(why, why_len, "allgather of the probe status failed");
        worst = ARB_ERR_SYSTEM;
    } else {
        for (int i = 0; i < info->nranks; i++)
            if (all[i] > worst) {
                worst = all[i];
                worst_rank = i;
            }
    }
    free(all);
    if (worst != ARB_OK && local == ARB_OK)
        ARB_WHY(why, why_len, "rank %d %s this variant (its log says why)", worst_rank, worst == ARB_DECLINE ? "declined" : "failed to set up");

    if (worst == ARB_OK) {
        cudaError_t ce = cudaStreamSynchronize(stream);
        ncclResult_t async = ncclSuccess;
        if (ce == cudaSuccess)
            r = ncclCommGetAsyncError(s->comm, &async);
        if (ce != cudaSuccess) {
            ARB_WHY(why, why_len, "probe all-reduce: %s", cudaGetErrorString(ce));
            worst = ARB_ERR_SYSTEM;
        } else if (r != ncclSuccess || async != ncclSuccess) {
            ARB_WHY(why, why_len, "probe all-reduce: %s", nccl_err_text(s->comm, r != ncclSuccess ? r : async));
            worst = ARB_ERR_SYSTEM;
        }
    }

    /* ARB_ERR_INVALID and ARB_ERR_TIMEOUT do not arise here: a setup failure. */
    st = worst == ARB_OK || worst == ARB_DECLINE ? worst : ARB_ERR_SYSTEM;
    if (st != ARB_OK && s->comm) {
        /* Abort, not finalize: a refused or failed probe may have left work queued. */
        ncclCommAbort(s->comm);
        s->comm = NULL;
    }
    if (scratch)
        cudaFree(scratch);
    if (stream)
        cudaStreamDestroy(stream);
    env_restore(&env_proto);
    env_restore(&env_algo);
    return st;
}

static arb_status_t nccl_init(const arb_comm_info_t *info, const arb_host_ops_t *ops,
                              const char *params, void **state, char *why, size_t why_len)
{
    arb_nccl_params_t p;
    arb_status_t st = arb_nccl_params_parse(params, &p, why, why_len);
    if (st != ARB_OK)
        return st;
    if (info->nranks == 1 && arb_nccl_params_forced(&p)) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "one rank: NCCL copies send to recv without running Ring or Tree, so a forced algo/proto/channels would not be what ran");
    }

    ARB_TRY(arb_plugin_device_check(info, "nccl", why, why_len));
    int lib_version = 0;
    ncclResult_t r;
    ARB_NCCL_TRY(ncclGetVersion(&lib_version), why, why_len);
    if (lib_version != NCCL_VERSION_CODE && info->rank == 0) {
        char hdr[32], lib[32];
        arb_nccl_version_str(NCCL_VERSION_CODE, hdr, sizeof hdr);
        arb_nccl_version_str(lib_version, lib, sizeof lib);
        arb_plog(ops, "nccl", "warning: built against NCCL %s headers but running with NCCL %s: rebuild against the library in use (its host API is compatible within 2.x; the results record both)", hdr, lib);
    }

    if (p.channels && info->rank == 0) {
        /* These environment variables bound nChannels too, and NCCL_MIN/MAX_CTAS
         * override ncclConfig_t: channels=N is then not what runs. */
        static const char *const clamps[] = {"NCCL_MIN_CTAS", "NCCL_MAX_CTAS", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS"};
        for (size_t i = 0; i < sizeof clamps / sizeof clamps[0]; i++)
            if (getenv(clamps[i]))
                arb_plog(ops, "nccl", "warning: %s=%s is set and overrides or bounds channels=%d", clamps[i], getenv(clamps[i]), p.channels);
    }

    nccl_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "out of host memory");
    }
    s->ops = *ops;

    /* Rank 0 makes the id; the first int says whether it succeeded, so that a failure
     * there does not leave the other ranks initialising with garbage. */
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    if (info->rank == 0) {
        r = ncclGetUniqueId(&boot.id);
        boot.ok = r == ncclSuccess;
        if (!boot.ok)
            ARB_WHY(why, why_len, "ncclGetUniqueId: %s", ncclGetErrorString(r));
    }
    if (ops->bcast(ops->ctx, &boot, sizeof boot, 0) != 0) {
        ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_state, why, why_len, "broadcast of the NCCL unique id failed");
    }
    if (!boot.ok) {
        if (info->rank != 0)
            ARB_RAISE_GOTO(st, ARB_ERR_SYSTEM, err_free_state, why, why_len, "rank 0 could not create an NCCL unique id (its log says why)");
    }

    st = comm_create(s, info, &p, &boot.id, why, why_len);
    if (st != ARB_OK)
        goto err_free_state;
    arb_nccl_params_describe(&p, getenv("NCCL_ALGO"), getenv("NCCL_PROTO"), lib_version, s->describe, sizeof s->describe);
    *state = s;
    return ARB_OK;

err_free_state:
    free(s);
    return st;
}

static arb_status_t nccl_allreduce(void *state, const void *send, void *recv, size_t count,
                                   arb_dtype_t dtype, void *stream, char *why, size_t why_len)
{
    nccl_state_t *s = state;
    ncclDataType_t type;
    switch (dtype) {
    case ARB_DTYPE_BF16: type = ncclBfloat16; break;
    case ARB_DTYPE_FP32: type = ncclFloat32; break;
    default:
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "nccl: allreduce: dtype %d is neither bf16 nor fp32", (int)dtype);
    }
    ncclResult_t r = ncclAllReduce(send, recv, count, type, ncclSum, s->comm, (cudaStream_t)stream);
    if (r != ncclSuccess) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "ncclAllReduce of %zu elements: %s", count, nccl_err_text(s->comm, r));
    }
    return ARB_OK;
}

static arb_status_t nccl_query_error(void *state, char *why, size_t why_len)
{
    nccl_state_t *s = state;
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ncclCommGetAsyncError(s->comm, &async);
    if (r == ncclSuccess && (async == ncclSuccess || async == ncclInProgress))
        return ARB_OK;
    ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "NCCL communicator error: %s", nccl_err_text(s->comm, r != ncclSuccess ? r : async));
}

static const char *nccl_describe(void *state)
{
    return ((nccl_state_t *)state)->describe;
}

static void nccl_finalize(void *state)
{
    nccl_state_t *s = state;
    if (!s)
        return;
    /* Finalize flushes outstanding work; if it fails, abort frees what is left. */
    ncclResult_t r = ncclCommFinalize(s->comm);
    if (r == ncclSuccess)
        r = ncclCommDestroy(s->comm);
    if (r != ncclSuccess) {
        arb_plog(&s->ops, "nccl", "ncclCommFinalize/Destroy: %s (aborting the communicator)", nccl_err_text(s->comm, r));
        ncclCommAbort(s->comm);
    }
    free(s);
}

/* "" is NCCL's own choice; then every Ring/Tree x LL/LL128/Simple combination. */
static const char *const nccl_variants[] = {
    "",
    "algo=Ring,proto=LL",
    "algo=Ring,proto=LL128",
    "algo=Ring,proto=Simple",
    "algo=Tree,proto=LL",
    "algo=Tree,proto=LL128",
    "algo=Tree,proto=Simple",
    NULL,
};

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "nccl",
    .description = "NCCL ncclAllReduce (sum); variants force NCCL_ALGO/NCCL_PROTO per communicator, channels=N sets minCTAs=maxCTAs",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_BF16 | ARB_CAP_FP32 | ARB_CAP_BASELINE | ARB_CAP_IN_PLACE,
    .variants = nccl_variants,
    .init = nccl_init,
    .allreduce = nccl_allreduce,
    .query_error = nccl_query_error,
    .describe = nccl_describe,
    .finalize = nccl_finalize,
};
