/* SPDX-License-Identifier: MIT */
/*
 * Plugin instances (instance.h): capability gating, init with cross-rank agreement,
 * one allocation policy, the calls with the composed fused fallback, per-call reasons.
 * CUDA runtime calls are made from C; a build without CUDA declines device memory.
 */
#include "runtime/instance.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arb_config.h"
#include "arbench/status.h"
#include "base/common.h"
#include "rmsnorm/rmsnorm.h"

#if ARB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#define INST_ALIGN 256 /* bytes; what cudaMalloc guarantees, and the plugins' vector loads need less */

typedef struct inst_buf {
    void *ptr;
    size_t bytes;
} inst_buf_t;

struct arb_inst {
    arb_mpi_t *m;
    const arb_plugin_t *p;
    arb_use_t use;
    int device_memory; /* buffers are CUDA device memory (use.cuda_device >= 0) */
    arb_comm_info_t info;
    arb_host_ops_t ops;
    arb_hostops_ctx_t ops_ctx;
    void *state;
    char described[512];
    inst_buf_t *bufs; /* from arb_inst_alloc and not yet freed */
    size_t nbufs, cap_bufs;
    /* The composed path's all-reduce output. It grows to the largest buffer allocated,
     * so that x at offset o of its buffer sums into offset o of the scratch (the
     * caller's slot rotation carries over); older scratches stay allocated until
     * close because graphs captured earlier still point at them. */
    inst_buf_t scratch[8];
    size_t nscratch;
};

/* ------------------------------------------------------------------ agreement */

/* The collective outcome of one step: the maximum status over ranks (severity order in
 * plugin.h), with the reason of the first rank that did not return ARB_OK. */
static arb_status_t agree(arb_mpi_t *m, arb_status_t st, char *why, size_t why_len)
{
    char reason[1024];
    snprintf(reason, sizeof reason, "%s", why && why_len ? why : "");
    int worst = arb_allmax_int(m, (int)st);
    arb_agree_failure(m, st != ARB_OK, reason, sizeof reason);
    if (worst != ARB_OK && why && why_len)
        snprintf(why, why_len, "%s", reason[0] ? reason : "a rank failed without a reason");
    return (arb_status_t)worst;
}

/* ------------------------------------------------------------------ gating */

static uint32_t dtype_cap(arb_dtype_t d) { return d == ARB_DTYPE_FP32 ? ARB_CAP_FP32 : ARB_CAP_BF16; }

/* Every capability check of a plugin against a use, in one place. Identical on every
 * rank for identical uses. NEEDS_P2P is left to the plugin's init: only it knows which
 * devices its peers are. */
static arb_status_t gate(const arb_plugin_t *p, const arb_use_t *use, int nnodes, arb_mode_t mode,
                         arb_fusion_t fusion, char *why, size_t why_len)
{
    arb_dtype_t dt = use->op == ARB_OP_ALLREDUCE_RMSNORM ? ARB_DTYPE_BF16 : use->dtype;
    if (!(p->caps & dtype_cap(dt)))
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s does not support %s", p->name, arb_dtype_name(dt));
    if ((p->caps & ARB_CAP_SINGLE_NODE) && nnodes > 1)
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s runs on a single node; the ranks span %d nodes", p->name, nnodes);
    if (use->cuda_device >= 0) {
        if (!(p->caps & ARB_CAP_DEVICE_MEMORY))
            ARB_RAISE(ARB_DECLINE, why, why_len, "%s works on host memory; this use is on CUDA device %d (host backends run with --host or without a GPU)", p->name, use->cuda_device);
        if (!ARB_HAVE_CUDA)
            ARB_RAISE(ARB_DECLINE, why, why_len, "%s works on CUDA device memory, and this arbench was built without CUDA", p->name);
    } else if (!(p->caps & ARB_CAP_HOST_MEMORY)) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s works on CUDA device memory; this use has no device (host memory only)", p->name);
    }
    if (mode != ARB_MODE_EAGER) {
        if (use->cuda_device < 0)
            ARB_RAISE(ARB_DECLINE, why, why_len, "%s mode needs a GPU backend (host backend: eager only)", arb_mode_names[mode]);
        if (!(p->caps & ARB_CAP_GRAPH_SAFE))
            ARB_RAISE(ARB_DECLINE, why, why_len, "%s is not CUDA-graph safe (caps)", p->name);
    }
    if (use->op == ARB_OP_ALLREDUCE_RMSNORM && fusion == ARB_FUSION_PLUGIN && !p->allreduce_rmsnorm)
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s has no fused allreduce_rmsnorm", p->name);
    return ARB_OK;
}

arb_status_t arb_inst_gate(const arb_inst_t *in, arb_mode_t mode, arb_fusion_t fusion, char *why, size_t why_len)
{
    return gate(in->p, &in->use, in->m->nnodes, mode, fusion, why, why_len);
}

/* ------------------------------------------------------------------ memory */

/* This rank's part of an allocation (the caller agrees across ranks). */
static arb_status_t raw_alloc(arb_inst_t *in, size_t bytes, void **ptr, char *why, size_t why_len)
{
    *ptr = NULL;
    if (in->p->mem_alloc) {
        *ptr = in->p->mem_alloc(in->state, bytes);
        if (!*ptr)
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "cannot allocate %zu bytes through %s's mem_alloc", bytes, in->p->name);
    } else if (in->device_memory) {
#if ARB_HAVE_CUDA
        ARB_CUDA_TRY(cudaMalloc(ptr, bytes), why, why_len);
#else
        ARB_RAISE(ARB_DECLINE, why, why_len, "device memory needs CUDA, and this arbench was built without it");
#endif
    } else {
        if (posix_memalign(ptr, INST_ALIGN, bytes) != 0) {
            *ptr = NULL;
            ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "cannot allocate %zu bytes of host memory", bytes);
        }
    }
    if (in->device_memory) {
#if ARB_HAVE_CUDA
        arb_status_t st = ARB_OK;
        ARB_CUDA_GOTO(st, cudaMemset(*ptr, 0, bytes), err_free, why, why_len);
        ARB_CUDA_GOTO(st, cudaDeviceSynchronize(), err_free, why, why_len);
        return ARB_OK;
    err_free:
        if (in->p->mem_alloc)
            in->p->mem_free(in->state, *ptr);
        else
            cudaFree(*ptr);
        *ptr = NULL;
        return st;
#endif
    }
    memset(*ptr, 0, bytes);
    return ARB_OK;
}

static void raw_free(arb_inst_t *in, void *ptr)
{
    if (!ptr)
        return;
    if (in->p->mem_alloc) {
        in->p->mem_free(in->state, ptr);
        return;
    }
#if ARB_HAVE_CUDA
    if (in->device_memory) {
        cudaFree(ptr);
        return;
    }
#endif
    free(ptr);
}

/* Collective: one allocation on every rank, or none anywhere. */
static arb_status_t alloc_agreed(arb_inst_t *in, size_t bytes, void **ptr, char *why, size_t why_len)
{
    arb_status_t st = bytes ? raw_alloc(in, bytes, ptr, why, why_len)
                            : (ARB_WHY(why, why_len, "arb_inst_alloc: 0 bytes; expected a size >= 1"), ARB_ERR_INVALID);
    st = agree(in->m, st, why, why_len);
    if (st != ARB_OK && *ptr) {
        raw_free(in, *ptr);
        *ptr = NULL;
    }
    return st;
}

static arb_status_t grow_scratch(arb_inst_t *in, size_t bytes, char *why, size_t why_len)
{
    if (in->nscratch && in->scratch[in->nscratch - 1].bytes >= bytes)
        return ARB_OK;
    if (in->nscratch == sizeof in->scratch / sizeof in->scratch[0])
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "the composed path's scratch grew %zu times; allocate the largest buffer first", in->nscratch);
    void *ptr = NULL;
    ARB_TRY(alloc_agreed(in, bytes, &ptr, why, why_len));
    in->scratch[in->nscratch++] = (inst_buf_t){ptr, bytes};
    return ARB_OK;
}

arb_status_t arb_inst_alloc(arb_inst_t *in, size_t bytes, void **ptr, char *why, size_t why_len)
{
    *ptr = NULL;
    if (in->nbufs == in->cap_bufs) {
        size_t cap = in->cap_bufs ? 2 * in->cap_bufs : 8;
        inst_buf_t *b = realloc(in->bufs, cap * sizeof *b);
        arb_status_t st = b ? ARB_OK : ARB_ERR_SYSTEM;
        if (!b)
            ARB_WHY(why, why_len, "out of host memory for the buffer list");
        else {
            in->bufs = b;
            in->cap_bufs = cap;
        }
        ARB_TRY(agree(in->m, st, why, why_len));
    }
    void *p = NULL;
    ARB_TRY(alloc_agreed(in, bytes, &p, why, why_len));
    in->bufs[in->nbufs++] = (inst_buf_t){p, bytes};
    if (in->use.op == ARB_OP_ALLREDUCE_RMSNORM) {
        arb_status_t st = grow_scratch(in, bytes, why, why_len);
        if (st != ARB_OK) {
            arb_inst_free(in, p);
            return st;
        }
    }
    *ptr = p;
    return ARB_OK;
}

void arb_inst_free(arb_inst_t *in, void *ptr)
{
    if (!ptr)
        return;
    for (size_t i = 0; i < in->nbufs; i++)
        if (in->bufs[i].ptr == ptr) {
            raw_free(in, ptr);
            in->bufs[i] = in->bufs[--in->nbufs];
            return;
        }
    arb_err("arb_inst_free: %p was not allocated by arb_inst_alloc on this %s instance (ignored)", ptr, in->p->name);
}

/* The allocation holding [ptr, ptr + bytes), or NULL. */
static const inst_buf_t *buf_of(const arb_inst_t *in, const void *ptr, size_t bytes)
{
    uintptr_t a = (uintptr_t)ptr;
    for (size_t i = 0; i < in->nbufs; i++) {
        uintptr_t base = (uintptr_t)in->bufs[i].ptr;
        if (a >= base && a + bytes <= base + in->bufs[i].bytes)
            return &in->bufs[i];
    }
    return NULL;
}

/* ------------------------------------------------------------------ open / close */

arb_status_t arb_inst_open(arb_mpi_t *m, const arb_loaded_plugin_t *lp, const char *params, const arb_use_t *use,
                           arb_inst_t **out, char *why, size_t why_len)
{
    const arb_plugin_t *p = lp->plugin;
    *out = NULL;
    if (why && why_len)
        why[0] = '\0';
    arb_status_t st = gate(p, use, m->nnodes, use->mode, ARB_FUSION_AUTO, why, why_len);
    arb_inst_t *in = st == ARB_OK ? calloc(1, sizeof *in) : NULL;
    if (st == ARB_OK && !in)
        ARB_WHY(why, why_len, "out of host memory for the %s instance", p->name), st = ARB_ERR_SYSTEM;
    st = agree(m, st, why, why_len);
    if (st != ARB_OK) {
        free(in);
        return st;
    }
    in->m = m;
    in->p = p;
    in->use = *use;
    in->device_memory = use->cuda_device >= 0;
    size_t fused_bytes = (size_t)use->max_tokens * use->hidden * 2; /* bf16 */
    in->info = (arb_comm_info_t){.rank = m->rank, .nranks = m->nranks, .local_rank = m->local_rank,
                                 .local_nranks = m->local_nranks, .node = m->node, .nnodes = m->nnodes,
                                 .cuda_device = use->cuda_device,
                                 .max_bytes = use->op == ARB_OP_ALLREDUCE_RMSNORM ? fused_bytes : use->max_bytes,
                                 .max_tokens = use->max_tokens, .hidden = use->hidden,
                                 .mpi_comm = m->allgather ? NULL : &m->world};
    arb_hostops_init(&in->ops, &in->ops_ctx, m, p->name);

    st = p->init(&in->info, &in->ops, params ? params : "", &in->state, why, why_len);
    if (st != ARB_OK) {
        in->state = NULL;
        if (why && why_len && !why[0])
            ARB_WHY(why, why_len, "%s's init returned %s without a reason", p->name, arb_status_str(st));
    }
    st = agree(m, st, why, why_len);
    if (st != ARB_OK) {
        arb_inst_close(in);
        return st;
    }
    const char *d = p->describe ? p->describe(in->state) : NULL;
    snprintf(in->described, sizeof in->described, "%s", d ? d : params ? params : "");
    if (use->op == ARB_OP_ALLREDUCE_RMSNORM && fused_bytes) {
        st = grow_scratch(in, fused_bytes, why, why_len);
        if (st != ARB_OK) {
            arb_inst_close(in);
            return st;
        }
    }
    *out = in;
    return ARB_OK;
}

void arb_inst_close(arb_inst_t *in)
{
    if (!in)
        return;
    /* Reverse order of allocation: a plugin allocator may be a stack (mem_free is collective). */
    while (in->nbufs)
        raw_free(in, in->bufs[--in->nbufs].ptr);
    while (in->nscratch)
        raw_free(in, in->scratch[--in->nscratch].ptr);
    free(in->bufs);
    if (in->state)
        in->p->finalize(in->state);
    free(in);
}

const arb_plugin_t *arb_inst_plugin(const arb_inst_t *in) { return in->p; }
const char *arb_inst_describe(const arb_inst_t *in) { return in->described; }
uint32_t arb_inst_caps(const arb_inst_t *in) { return in->p->caps; }
int arb_inst_has_fused(const arb_inst_t *in) { return in->p->allreduce_rmsnorm != NULL; }
const arb_comm_info_t *arb_inst_info(const arb_inst_t *in) { return &in->info; }

/* ------------------------------------------------------------------ calls */

/* A plugin call that failed must say why; name the plugin when it did not. */
static arb_status_t with_reason(const arb_inst_t *in, arb_status_t st, const char *what, char *why, size_t why_len)
{
    if (st != ARB_OK && why && why_len && !why[0])
        ARB_WHY(why, why_len, "%s's %s returned %s without a reason", in->p->name, what, arb_status_str(st));
    return st;
}

arb_status_t arb_inst_allreduce(arb_inst_t *in, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                void *stream, char *why, size_t why_len)
{
    why[0] = '\0';
    if (!(in->p->caps & dtype_cap(dtype)))
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s does not support %s", in->p->name, arb_dtype_name(dtype));
    arb_status_t st = in->p->allreduce(in->state, send, recv, count, dtype, stream, why, why_len);
    return with_reason(in, st, "allreduce", why, why_len);
}

/* allreduce of x into the scratch, then our residual + RMSNorm on the sum (PDL on the device). */
static arb_status_t composed(arb_inst_t *in, const arb_rmsnorm_args_t *a, void *stream, char *why, size_t why_len)
{
    size_t count = (size_t)a->tokens * a->hidden, bytes = count * 2;
    const inst_buf_t *xb = buf_of(in, a->x, bytes);
    const inst_buf_t *sc = in->nscratch ? &in->scratch[in->nscratch - 1] : NULL;
    if (!xb && (in->p->caps & ARB_CAP_NEEDS_ALLOC))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "%s needs x in a buffer from arb_inst_alloc", in->p->name);
    size_t off = xb ? (size_t)((uintptr_t)a->x - (uintptr_t)xb->ptr) : 0;
    if (sc && off + bytes > sc->bytes)
        off = 0;
    if (!sc || bytes > sc->bytes)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "fused call of %u x %u exceeds the instance's scratch (%zu bytes; opened for %u tokens x %u hidden)", a->tokens, a->hidden, sc ? sc->bytes : 0, in->use.max_tokens, in->use.hidden);
    void *sum = (unsigned char *)sc->ptr + off;
    arb_status_t st = in->p->allreduce(in->state, a->x, sum, count, ARB_DTYPE_BF16, stream, why, why_len);
    if (st != ARB_OK)
        return with_reason(in, st, "allreduce", why, why_len);
    if (!in->device_memory)
        return arb_rmsnorm_residual_host(a->residual, sum, a->weight, a->out, a->tokens, a->hidden, a->eps, why,
                                         why_len);
#if ARB_HAVE_CUDA
    /* PDL-launched: the kernel waits on its predecessor (the plugin's last kernel) before
     * it reads, and lets the caller's next kernel launch early (its successor side). */
    return arb_rmsnorm_residual_launch_pdl(a->residual, sum, a->weight, a->out, a->tokens, a->hidden, a->eps, 1, stream,
                                           why, why_len);
#else
    ARB_RAISE(ARB_DECLINE, why, why_len, "device memory needs CUDA, and this arbench was built without it");
#endif
}

arb_status_t arb_inst_allreduce_rmsnorm(arb_inst_t *in, const arb_rmsnorm_args_t *args, arb_fusion_t fusion,
                                        void *stream, arb_fusion_t *used, char *why, size_t why_len)
{
    why[0] = '\0';
    if (used)
        *used = ARB_FUSION_AUTO;
    if (in->use.op != ARB_OP_ALLREDUCE_RMSNORM)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "the %s instance was opened for %s, not %s", in->p->name, arb_op_name(in->use.op), arb_op_name(ARB_OP_ALLREDUCE_RMSNORM));
    if (fusion != ARB_FUSION_COMPOSED && in->p->allreduce_rmsnorm) {
        arb_status_t st = in->p->allreduce_rmsnorm(in->state, args, stream, why, why_len);
        if (st == ARB_OK) {
            if (used)
                *used = ARB_FUSION_PLUGIN;
            return ARB_OK;
        }
        if (st != ARB_DECLINE || fusion == ARB_FUSION_PLUGIN)
            return with_reason(in, st, "allreduce_rmsnorm", why, why_len);
        why[0] = '\0'; /* declined this call: compose it */
    } else if (fusion == ARB_FUSION_PLUGIN) {
        ARB_RAISE(ARB_DECLINE, why, why_len, "%s has no fused allreduce_rmsnorm", in->p->name);
    }
    ARB_TRY(composed(in, args, stream, why, why_len));
    if (used)
        *used = ARB_FUSION_COMPOSED;
    return ARB_OK;
}

arb_status_t arb_inst_query_error(arb_inst_t *in, char *why, size_t why_len)
{
    if (!in->p->query_error)
        return ARB_OK;
    why[0] = '\0';
    return with_reason(in, in->p->query_error(in->state, why, why_len), "query_error", why, why_len);
}
