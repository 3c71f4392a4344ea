/* SPDX-License-Identifier: MIT */
/*
 * arb-lsa.so: our one-shot all-reduce kernels (lsa_kernels.cu) on NCCL's device API,
 * with send/recv in symmetric windows from this plugin's mem_alloc.
 *
 * Parameters (comma-separated key=value):
 *   variant=oneshot-pull|oneshot-push|oneshot-flagfree   (required)
 *   barrier=bounded|nccl     pull, push. bounded (default): our flags, spins time out;
 *                            nccl: ncclLsaBarrierSession (no timeout)
 *   ctas=N                   1..64; pull: most CTAs per call (default 16); push and
 *                            flag-free: CTAs of every call (default 16; flag-free 24)
 *   threads=N                flag-free only: threads per CTA, a multiple of 32 from
 *                            64 to 1024 (default 256); pull and push run 512
 *   timeout_ms=N             spin limit (default 5000)
 *   test_hang_rank=R         flag-free only: rank R sends no lines (tests timeouts)
 *   row_ctas=auto|1|2|4|8    flag-free fused op: CTAs per token row (a thread-block
 *                            cluster); auto (default) picks per call
 *   pdl=0|1                  flag-free fused op: 1 launches with programmatic
 *                            dependent launch (the kernel waits for the previous one
 *                            in griddepcontrol.wait, its launch overlaps it); default 0
 *
 * The device API's struct layouts (ncclDevComm, ncclWindow_vidmem) differ between
 * NCCL patch releases (2.28.3 vs 2.28.9), and the kernels read them directly: init
 * declines unless the NCCL library loaded at run time is exactly the version whose
 * headers this module was compiled against.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "arbench/plugin.h"
#include "lsa_kernels.h"
#include "symm_boot.h"

#define LSA_MAX_BUFFERS 64

typedef struct lsa_buffer {
    char *base;
    size_t bytes;
    ncclWindow_t win;
    char *peer[LSA_MAX_RANKS]; /* byte 0 of the buffer on each LSA rank (ncclGetLsaPointer) */
} lsa_buffer_t;

typedef struct lsa_params {
    lsa_variant_t variant;
    int have_variant, have_barrier, have_ctas, have_threads, have_hang, have_fused;
    lsa_barrier_t barrier;
    int ctas, threads;
    unsigned timeout_ms;
    unsigned hang_rank;
    unsigned row_ctas; /* 0: auto */
    unsigned pdl;
} lsa_params_t;

typedef struct lsa_state {
    arb_comm_info_t info;
    const arb_host_ops_t *ops;
    lsa_params_t p;
    lsa_config_t cfg; /* resolved: ctas clamped to the SM count */
    ncclComm_t comm;
    lsa_dev_t *dev;
    lsa_buffer_t bufs[LSA_MAX_BUFFERS];
    char describe[200];
} lsa_state_t;

static const char *const lsa_variants[] = {
    "variant=oneshot-pull",
    "variant=oneshot-push",
    "variant=oneshot-flagfree,ctas=24,threads=256",
    "variant=oneshot-flagfree,ctas=12,threads=512",
    /* Programmatic dependent launch for the fused op: on 2 x H200 (2026-11-30) 4.19 us vs
     * 4.93 us at 3 tokens in graph replay, nothing gained after a compute kernel (context
     * mode 4.99 vs 4.85): its own variant, so a profile chooses per mode. */
    "variant=oneshot-flagfree,ctas=24,threads=256,pdl=1",
    NULL,
};

static int parse_uint(const char *value, unsigned lo, unsigned hi, unsigned *out)
{
    char *end = NULL;
    unsigned long v = strtoul(value, &end, 10);
    if (!*value || *end || value[0] == '-' || v < lo || v > hi)
        return -1;
    *out = (unsigned)v;
    return 0;
}

static int on_pair(void *ctx, const char *key, const char *value, char *why, size_t why_len)
{
    lsa_params_t *p = ctx;
    unsigned u = 0;
    if (strcmp(key, "variant") == 0) {
        if (strcmp(value, "oneshot-pull") == 0)
            p->variant = LSA_ONESHOT_PULL;
        else if (strcmp(value, "oneshot-push") == 0)
            p->variant = LSA_ONESHOT_PUSH;
        else if (strcmp(value, "oneshot-flagfree") == 0)
            p->variant = LSA_ONESHOT_FLAGFREE;
        else {
            snprintf(why, why_len, "lsa: variant='%s', expected oneshot-pull, oneshot-push or oneshot-flagfree", value);
            return -1;
        }
        p->have_variant = 1;
    } else if (strcmp(key, "barrier") == 0) {
        if (strcmp(value, "bounded") == 0)
            p->barrier = LSA_BARRIER_BOUNDED;
        else if (strcmp(value, "nccl") == 0)
            p->barrier = LSA_BARRIER_NCCL;
        else {
            snprintf(why, why_len, "lsa: barrier='%s', expected bounded or nccl", value);
            return -1;
        }
        p->have_barrier = 1;
    } else if (strcmp(key, "ctas") == 0) {
        if (parse_uint(value, 1, LSA_MAX_CTAS, &u)) {
            snprintf(why, why_len, "lsa: ctas='%s', expected an integer from 1 to %d", value, LSA_MAX_CTAS);
            return -1;
        }
        p->ctas = (int)u;
        p->have_ctas = 1;
    } else if (strcmp(key, "threads") == 0) {
        if (parse_uint(value, 64, 1024, &u) || u % 32) {
            snprintf(why, why_len, "lsa: threads='%s', expected a multiple of 32 from 64 to 1024", value);
            return -1;
        }
        p->threads = (int)u;
        p->have_threads = 1;
    } else if (strcmp(key, "test_hang_rank") == 0) {
        if (parse_uint(value, 0, LSA_MAX_RANKS - 1, &u)) {
            snprintf(why, why_len, "lsa: test_hang_rank='%s', expected a rank from 0 to %d", value, LSA_MAX_RANKS - 1);
            return -1;
        }
        p->hang_rank = u;
        p->have_hang = 1;
    } else if (strcmp(key, "row_ctas") == 0) {
        if (strcmp(value, "auto") == 0)
            p->row_ctas = 0;
        else if (parse_uint(value, 1, 8, &u) || (u & (u - 1))) {
            snprintf(why, why_len, "lsa: row_ctas='%s', expected auto, 1, 2, 4 or 8", value);
            return -1;
        } else
            p->row_ctas = u;
        p->have_fused = 1;
    } else if (strcmp(key, "pdl") == 0) {
        if (parse_uint(value, 0, 1, &u)) {
            snprintf(why, why_len, "lsa: pdl='%s', expected 0 or 1", value);
            return -1;
        }
        p->pdl = u;
        p->have_fused = 1;
    } else if (strcmp(key, "timeout_ms") == 0) {
        if (parse_uint(value, 1, 3600000, &u)) {
            snprintf(why, why_len, "lsa: timeout_ms='%s', expected an integer from 1 to 3600000 (milliseconds)", value);
            return -1;
        }
        p->timeout_ms = u;
    } else {
        snprintf(why, why_len, "lsa: unknown parameter '%s' (known: variant, barrier, ctas, threads, timeout_ms, test_hang_rank, row_ctas, pdl)", key);
        return -1;
    }
    return 0;
}

static arb_status_t lsa_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                             void **state, char *why, size_t why_len)
{
    lsa_params_t p = {.variant = LSA_ONESHOT_PULL, .barrier = LSA_BARRIER_BOUNDED, .timeout_ms = 5000};
    if (symm_parse_params(params, &p, on_pair, "lsa", why, why_len))
        return ARB_ERR_INVALID;
    if (!p.have_variant) {
        snprintf(why, why_len, "lsa: parameters '%s' lack variant=oneshot-pull, variant=oneshot-push or variant=oneshot-flagfree",
                 params ? params : "");
        return ARB_ERR_INVALID;
    }
    const int flagfree = p.variant == LSA_ONESHOT_FLAGFREE;
    if (!flagfree && (p.have_threads || p.have_hang)) {
        snprintf(why, why_len, "lsa: %s applies to variant=oneshot-flagfree only (pull and push run 512 threads per CTA)",
                 p.have_threads ? "threads" : "test_hang_rank");
        return ARB_ERR_INVALID;
    }
    if (!flagfree && p.have_fused) {
        snprintf(why, why_len, "lsa: row_ctas and pdl apply to variant=oneshot-flagfree only (its fused allreduce_rmsnorm)");
        return ARB_ERR_INVALID;
    }
    if (flagfree && p.have_barrier) {
        snprintf(why, why_len, "lsa: barrier applies to oneshot-pull and oneshot-push only (oneshot-flagfree has no barrier)");
        return ARB_ERR_INVALID;
    }
    if (p.have_hang && (int)p.hang_rank >= info->nranks) {
        snprintf(why, why_len, "lsa: test_hang_rank=%u, expected a rank from 0 to %d", p.hang_rank, info->nranks - 1);
        return ARB_ERR_INVALID;
    }
    if (!p.have_ctas)
        p.ctas = flagfree ? 24 : 16;
    if (!p.have_threads)
        p.threads = flagfree ? 256 : 512;

    /* Before any CUDA call: the kernels read NCCL's device structs with the layout of
     * the headers they were compiled against. */
    int lib = 0;
    ncclResult_t nr = ncclGetVersion(&lib);
    char hv[32], lv[32];
    symm_version_str(lsa_header_version(), hv, sizeof hv);
    symm_version_str(lib, lv, sizeof lv);
    if (nr != ncclSuccess || lib != lsa_header_version()) {
        snprintf(why, why_len, "NCCL header/library mismatch: lsa was compiled against NCCL %s headers but NCCL %s is loaded; the device API's struct layouts differ between releases, rebuild arbench against the NCCL in use (meson -Dnccl_home=...)",
                 hv, nr == ncclSuccess ? lv : "(ncclGetVersion failed)");
        return ARB_DECLINE;
    }

    lsa_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, why_len, "lsa: out of host memory");
        return ARB_ERR_SYSTEM;
    }
    s->info = *info;
    s->ops = ops;
    s->p = p;
    arb_status_t st = symm_comm_open(info, ops, "lsa", &s->comm, why, why_len);
    if (st != ARB_OK)
        goto err_free_state;
    size_t max_bytes = info->max_bytes ? info->max_bytes : 16;
    s->cfg = (lsa_config_t){.variant = p.variant, .barrier = p.barrier, .ctas = p.ctas, .threads = p.threads,
                            .timeout_ns = (uint64_t)p.timeout_ms * 1000000u,
                            .hang_rank = p.have_hang ? (int)p.hang_rank : -1,
                            .max_tokens = info->max_tokens, .hidden = info->hidden,
                            .fused_row_ctas = (int)p.row_ctas, .fused_pdl = (int)p.pdl};
    st = lsa_dev_create(s->comm, ops, info->nranks, max_bytes, &s->cfg, &s->dev, why, why_len);
    if (st != ARB_OK)
        goto err_destroy_comm;

    static const char *const names[] = {"oneshot-pull", "oneshot-push", "oneshot-flagfree"};
    /* Optional keys only when given, so the default variants describe as before. */
    char extra[80] = "";
    size_t used = 0;
    if (p.have_hang)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ",test_hang_rank=%u", p.hang_rank);
    if (p.row_ctas)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ",row_ctas=%u", p.row_ctas);
    if (p.pdl)
        snprintf(extra + used, sizeof extra - used, ",pdl=1");
    if (flagfree)
        snprintf(s->describe, sizeof s->describe, "variant=%s,ctas=%d,threads=%d,timeout_ms=%u%s,nccl=%s",
                 names[p.variant], s->cfg.ctas, s->cfg.threads, p.timeout_ms, extra, lv);
    else
        snprintf(s->describe, sizeof s->describe, "variant=%s,barrier=%s,ctas=%d,timeout_ms=%u,nccl=%s",
                 names[p.variant], p.barrier == LSA_BARRIER_NCCL ? "nccl" : "bounded", s->cfg.ctas, p.timeout_ms, lv);
    *state = s;
    return ARB_OK;

err_destroy_comm:
    ncclCommDestroy(s->comm);
err_free_state:
    free(s);
    return st;
}

static void *lsa_mem_alloc(void *state, size_t bytes)
{
    lsa_state_t *s = state;
    int slot = -1;
    for (int i = 0; i < LSA_MAX_BUFFERS && slot < 0; i++)
        if (!s->bufs[i].base)
            slot = i;
    char why[512], msg[600];
    void *ptr = NULL;
    ncclWindow_t win = NULL;
    /* Collective (same sizes, same order on every rank): register even without a free
     * slot so that no rank is left waiting. */
    if (symm_window_alloc(s->comm, bytes, &ptr, &win, why, sizeof why) != ARB_OK) {
        snprintf(msg, sizeof msg, "mem_alloc(%zu bytes): %s", bytes, why);
        s->ops->log(s->ops->ctx, msg);
        return NULL;
    }
    if (!win || slot < 0) {
        snprintf(msg, sizeof msg, "mem_alloc(%zu bytes): %s", bytes,
                 win ? "more than 64 live buffers" : "NCCL created no symmetric window although the init probe got one");
        s->ops->log(s->ops->ctx, msg);
        symm_window_free(s->comm, ptr, win);
        return NULL;
    }
    lsa_buffer_t *b = &s->bufs[slot];
    *b = (lsa_buffer_t){.base = ptr, .bytes = bytes, .win = win};
    /* Pull reads peers' send through these; a failure here is a broken CUDA context,
     * which every rank's next CUDA call reports too. */
    if (lsa_dev_resolve(s->dev, win, b->peer, why, sizeof why) != ARB_OK) {
        snprintf(msg, sizeof msg, "mem_alloc(%zu bytes): %s", bytes, why);
        s->ops->log(s->ops->ctx, msg);
        symm_window_free(s->comm, ptr, win);
        *b = (lsa_buffer_t){0};
        return NULL;
    }
    return ptr;
}

static void lsa_mem_free(void *state, void *ptr)
{
    lsa_state_t *s = state;
    for (int i = 0; i < LSA_MAX_BUFFERS; i++) {
        if (ptr && s->bufs[i].base == ptr) {
            symm_window_free(s->comm, ptr, s->bufs[i].win);
            s->bufs[i] = (lsa_buffer_t){0};
            return;
        }
    }
}

/* The buffer holding [ptr, ptr + bytes) and ptr's byte offset in it, or NULL. */
static const lsa_buffer_t *lsa_lookup(const lsa_state_t *s, const void *ptr, size_t bytes, size_t *off)
{
    const char *p = ptr;
    for (int i = 0; i < LSA_MAX_BUFFERS; i++) {
        const lsa_buffer_t *b = &s->bufs[i];
        if (b->base && p >= b->base && p + bytes <= b->base + b->bytes) {
            *off = (size_t)(p - b->base);
            return b;
        }
    }
    return NULL;
}

static arb_status_t lsa_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                  void *stream, char *why, size_t why_len)
{
    lsa_state_t *s = state;
    if (dtype != ARB_DTYPE_BF16 && dtype != ARB_DTYPE_FP32) {
        snprintf(why, why_len, "lsa: allreduce: dtype %d, expected bf16 or fp32", (int)dtype);
        return ARB_ERR_INVALID;
    }
    size_t bytes = count * (dtype == ARB_DTYPE_BF16 ? 2 : 4);
    const char *send_peer[LSA_MAX_RANKS];
    const char *const *peers = NULL;
    /* Pull reads the peers' send through the window at the same offset: the harness
     * passes the same buffer offsets on every rank. Push and flag-free only touch send
     * locally. */
    if (s->cfg.variant == LSA_ONESHOT_PULL) {
        size_t off = 0;
        const lsa_buffer_t *b = lsa_lookup(s, send, bytes, &off);
        if (!b) {
            snprintf(why, why_len, "lsa: allreduce: send %p (+%zu bytes) is not inside a buffer from lsa's mem_alloc (oneshot-pull reads it through its symmetric window)",
                     send, bytes);
            return ARB_ERR_INVALID;
        }
        for (int r = 0; r < lsa_dev_lsa_size(s->dev); r++)
            send_peer[r] = b->peer[r] + off;
        peers = send_peer;
    }
    return lsa_dev_allreduce(s->dev, send, peers, recv, count, dtype, stream, why, why_len);
}

/* The arguments first (they need no instance), then the instance: one message naming
 * the bad input and what was expected. */
static arb_status_t lsa_check_rmsnorm_args(const lsa_state_t *s, const arb_rmsnorm_args_t *a, char *why,
                                           size_t why_len)
{
    why[0] = '\0';
    if (!a)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: args is NULL, expected an arb_rmsnorm_args_t");
    else if (!a->x || !a->residual || !a->weight || !a->out)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: %s is NULL, expected a device pointer (bf16)",
                 !a->x ? "x" : !a->residual ? "residual" : !a->weight ? "weight" : "out");
    else if (((uintptr_t)a->x | (uintptr_t)a->residual | (uintptr_t)a->weight | (uintptr_t)a->out) & 1u)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: x %p, residual %p, weight %p, out %p: expected 2-byte aligned bf16 pointers",
                 a->x, a->residual, a->weight, a->out);
    else if (a->hidden == 0)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: hidden=0, expected at least 1 element per row");
    else if (!(a->eps >= 0.0f) || a->eps > 3.0e38f)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: eps=%g, expected a finite value >= 0", (double)a->eps);
    else if ((size_t)a->tokens * a->hidden > ((size_t)1 << 40))
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: tokens=%u x hidden=%u, expected at most 2^40 elements", a->tokens,
                 a->hidden);
    else if (!s)
        snprintf(why, why_len, "lsa: allreduce_rmsnorm: state is NULL, expected the instance from init");
    if (!why[0])
        return ARB_OK;
    return ARB_ERR_INVALID;
}

/* Fused all-reduce + residual add + RMSNorm (lsa_fused.cu): oneshot-flagfree only;
 * the other variants decline (the harness reports skip and runs its unfused rows). */
static arb_status_t lsa_allreduce_rmsnorm(void *state, const arb_rmsnorm_args_t *args, void *stream, char *why,
                                          size_t why_len)
{
    lsa_state_t *s = state;
    arb_status_t st = lsa_check_rmsnorm_args(s, args, why, why_len);
    if (st != ARB_OK)
        return st;
    return lsa_dev_allreduce_rmsnorm(s->dev, args, stream, why, why_len);
}

static arb_status_t lsa_query_error(void *state, char *why, size_t why_len)
{
    lsa_state_t *s = state;
    return lsa_dev_query_error(s->dev, why, why_len);
}

static const char *lsa_describe(void *state)
{
    return ((lsa_state_t *)state)->describe;
}

static void lsa_finalize(void *state)
{
    lsa_state_t *s = state;
    for (int i = 0; i < LSA_MAX_BUFFERS; i++)
        if (s->bufs[i].base)
            symm_window_free(s->comm, s->bufs[i].base, s->bufs[i].win);
    lsa_dev_destroy(s->comm, s->dev);
    ncclCommDestroy(s->comm);
    free(s);
}

ARB_PLUGIN_EXPORT const arb_plugin_t arb_plugin_v2 = {
    .abi_version = ARB_PLUGIN_ABI_VERSION,
    .name = "lsa",
    .description = "one-shot all-reduce kernels (pull, push, flag-free; flag-free also fused with residual add + RMSNorm) on NCCL's device API: LSA pointers into symmetric windows",
    .caps = ARB_CAP_DEVICE_MEMORY | ARB_CAP_GRAPH_SAFE | ARB_CAP_NEEDS_ALLOC | ARB_CAP_NEEDS_P2P |
            ARB_CAP_SINGLE_NODE | ARB_CAP_BF16 | ARB_CAP_FP32,
    .variants = lsa_variants,
    .init = lsa_init,
    .mem_alloc = lsa_mem_alloc,
    .mem_free = lsa_mem_free,
    .allreduce = lsa_allreduce,
    .allreduce_rmsnorm = lsa_allreduce_rmsnorm,
    .query_error = lsa_query_error,
    .describe = lsa_describe,
    .finalize = lsa_finalize,
};
