/* SPDX-License-Identifier: MIT */
/*
 * arb-lsa.so: our one-shot all-reduce kernels (lsa_kernels.cu) on NCCL's device API,
 * with send/recv in symmetric windows from this plugin's mem_alloc.
 *
 * Parameters (comma-separated key=value):
 *   variant=oneshot-pull|oneshot-push|oneshot-flagfree   (required)
 *   barrier=bounded|nccl     pull, push. bounded (default): our flags, spins time out;
 *                            nccl: ncclLsaBarrierSession (no timeout)
 *   blocks=N                 1..64; pull: most CTAs per call (default 16); push and
 *                            flag-free: CTAs of every call (default 16; flag-free 24).
 *                            The old spelling ctas=N is accepted with a log line.
 *   threads=N                flag-free only: threads per CTA, a multiple of 32 from
 *                            64 to 1024 (default 256); pull and push run 512
 *   timeout_ms=N             spin limit (default 5000)
 *   test_hang_rank=R         flag-free only: rank R sends no lines (tests timeouts)
 *   row_blocks=auto|1|2|4|8  flag-free fused op: CTAs per token row (a thread-block
 *                            cluster); auto (default) picks per call. The old spelling
 *                            row_ctas is accepted with a log line.
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

#include "arb_plugin_util.h"
#include "arbench/plugin.h"
#include "arbench/status.h"
#include "lsa_kernels.h"
#include "symm_boot.h"
#include "symm_windows.h"

typedef struct lsa_params {
    lsa_variant_t variant;
    int have_variant, have_barrier, have_blocks, have_threads, have_hang, have_fused;
    lsa_barrier_t barrier;
    int blocks, threads; /* CTAs per call, threads per CTA */
    unsigned timeout_ms;
    unsigned hang_rank;
    unsigned row_blocks; /* fused op: CTAs per token row; 0: auto */
    unsigned pdl;
} lsa_params_t;

typedef struct lsa_state {
    arb_comm_info_t info;
    const arb_host_ops_t *ops;
    lsa_params_t p;
    lsa_config_t cfg; /* resolved: ctas clamped to the SM count */
    ncclComm_t comm;
    lsa_dev_t *dev;
    symm_windows_t bufs;                                 /* mem_alloc's buffers */
    char *peer[SYMM_MAX_WINDOWS][LSA_MAX_RANKS];         /* byte 0 of bufs.w[i] on each LSA rank */
    char describe[200];
} lsa_state_t;

static const char *const lsa_variants[] = {
    "variant=oneshot-pull",
    "variant=oneshot-push",
    "variant=oneshot-flagfree,blocks=24,threads=256",
    "variant=oneshot-flagfree,blocks=12,threads=512",
    /* Programmatic dependent launch for the fused op: on 2 x H200 (2026-11-30) 4.19 us vs
     * 4.93 us at 3 tokens in graph replay, nothing gained after a compute kernel (context
     * mode 4.99 vs 4.85): its own variant, so a profile chooses per mode. */
    "variant=oneshot-flagfree,blocks=24,threads=256,pdl=1",
    NULL,
};

/* The knobs; blocks and row_blocks are p2p's names for the same things (CTAs per call,
 * CTAs per token row of the fused op). lsa's old spellings ctas and row_ctas are still
 * accepted, with a log line naming the new key. */
enum { KEY_VARIANT, KEY_BARRIER, KEY_BLOCKS, KEY_THREADS, KEY_TIMEOUT, KEY_HANG, KEY_ROW_BLOCKS, KEY_PDL, NKEYS };
static const arb_kv_key_t lsa_keys[NKEYS] = {
    {"variant", NULL},    {"barrier", NULL},        {"blocks", "ctas"},          {"threads", NULL},
    {"timeout_ms", NULL}, {"test_hang_rank", NULL}, {"row_blocks", "row_ctas"}, {"pdl", NULL},
};

static arb_status_t on_pair(void *ctx, int key, const char *value, char *why, size_t why_len)
{
    lsa_params_t *p = ctx;
    int v = 0;
    switch (key) {
    case KEY_VARIANT:
        if (strcmp(value, "oneshot-pull") == 0)
            p->variant = LSA_ONESHOT_PULL;
        else if (strcmp(value, "oneshot-push") == 0)
            p->variant = LSA_ONESHOT_PUSH;
        else if (strcmp(value, "oneshot-flagfree") == 0)
            p->variant = LSA_ONESHOT_FLAGFREE;
        else
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: variant='%s', expected oneshot-pull, oneshot-push or oneshot-flagfree", value);
        p->have_variant = 1;
        return ARB_OK;
    case KEY_BARRIER:
        if (strcmp(value, "bounded") == 0)
            p->barrier = LSA_BARRIER_BOUNDED;
        else if (strcmp(value, "nccl") == 0)
            p->barrier = LSA_BARRIER_NCCL;
        else
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: barrier='%s', expected bounded or nccl", value);
        p->have_barrier = 1;
        return ARB_OK;
    case KEY_BLOCKS:
        if (arb_kv_int(value, 1, LSA_MAX_CTAS, &p->blocks))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: blocks='%s', expected an integer from 1 to %d (CTAs per call)", value, LSA_MAX_CTAS);
        p->have_blocks = 1;
        return ARB_OK;
    case KEY_THREADS:
        if (arb_kv_int(value, 64, 1024, &p->threads) || p->threads % 32)
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: threads='%s', expected a multiple of 32 from 64 to 1024", value);
        p->have_threads = 1;
        return ARB_OK;
    case KEY_HANG:
        if (arb_kv_int(value, 0, LSA_MAX_RANKS - 1, &v))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: test_hang_rank='%s', expected a rank from 0 to %d", value, LSA_MAX_RANKS - 1);
        p->hang_rank = (unsigned)v;
        p->have_hang = 1;
        return ARB_OK;
    case KEY_ROW_BLOCKS:
        if (strcmp(value, "auto") == 0)
            p->row_blocks = 0;
        else if (arb_kv_int(value, 1, 8, &v) || (v & (v - 1)))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: row_blocks='%s', expected auto, 1, 2, 4 or 8", value);
        else
            p->row_blocks = (unsigned)v;
        p->have_fused = 1;
        return ARB_OK;
    case KEY_PDL:
        if (arb_kv_int(value, 0, 1, &v))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: pdl='%s', expected 0 or 1", value);
        p->pdl = (unsigned)v;
        p->have_fused = 1;
        return ARB_OK;
    default:
        if (arb_kv_int(value, 1, 3600000, &v))
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: timeout_ms='%s', expected an integer from 1 to 3600000 (milliseconds)", value);
        p->timeout_ms = (unsigned)v;
        return ARB_OK;
    }
}

static arb_status_t lsa_init(const arb_comm_info_t *info, const arb_host_ops_t *ops, const char *params,
                             void **state, char *why, size_t why_len)
{
    lsa_params_t p = {.variant = LSA_ONESHOT_PULL, .barrier = LSA_BARRIER_BOUNDED, .timeout_ms = 5000};
    ARB_TRY(arb_kv_parse("lsa", params, lsa_keys, NKEYS, on_pair, &p, ops, why, why_len));
    if (!p.have_variant) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: parameters '%s' lack variant=oneshot-pull, variant=oneshot-push or variant=oneshot-flagfree",
                 params ? params : "");
    }
    const int flagfree = p.variant == LSA_ONESHOT_FLAGFREE;
    if (!flagfree && (p.have_threads || p.have_hang)) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: %s applies to variant=oneshot-flagfree only (pull and push run 512 threads per CTA)",
                 p.have_threads ? "threads" : "test_hang_rank");
    }
    if (!flagfree && p.have_fused) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: row_blocks and pdl apply to variant=oneshot-flagfree only (its fused allreduce_rmsnorm)");
    }
    if (flagfree && p.have_barrier) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: barrier applies to oneshot-pull and oneshot-push only (oneshot-flagfree has no barrier)");
    }
    if (p.have_hang && (int)p.hang_rank >= info->nranks) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: test_hang_rank=%u, expected a rank from 0 to %d", p.hang_rank, info->nranks - 1);
    }
    if (!p.have_blocks)
        p.blocks = flagfree ? 24 : 16;
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
        ARB_RAISE(ARB_DECLINE, why, why_len, "NCCL header/library mismatch: lsa was compiled against NCCL %s headers but NCCL %s is loaded; the device API's struct layouts differ between releases, rebuild arbench against the NCCL in use (meson -Dnccl_home=...)",
                 hv, nr == ncclSuccess ? lv : "(ncclGetVersion failed)");
    }

    lsa_state_t *s = calloc(1, sizeof *s);
    if (!s) {
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "lsa: out of host memory");
    }
    s->info = *info;
    s->ops = ops;
    s->p = p;
    arb_status_t st = symm_comm_open(info, ops, "lsa", &s->comm, why, why_len);
    if (st != ARB_OK)
        goto err_free_state;
    size_t max_bytes = info->max_bytes ? info->max_bytes : 16;
    s->cfg = (lsa_config_t){.variant = p.variant, .barrier = p.barrier, .ctas = p.blocks, .threads = p.threads,
                            .timeout_ns = (uint64_t)p.timeout_ms * 1000000u,
                            .hang_rank = p.have_hang ? (int)p.hang_rank : -1,
                            .max_tokens = info->max_tokens, .hidden = info->hidden,
                            .fused_row_blocks = (int)p.row_blocks, .fused_pdl = (int)p.pdl};
    st = lsa_dev_create(s->comm, ops, info->nranks, max_bytes, &s->cfg, &s->dev, why, why_len);
    if (st != ARB_OK)
        goto err_destroy_comm;

    static const char *const names[] = {"oneshot-pull", "oneshot-push", "oneshot-flagfree"};
    /* Optional keys only when given, so the default variants describe as before. */
    char extra[80] = "";
    size_t used = 0;
    if (p.have_hang)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ",test_hang_rank=%u", p.hang_rank);
    if (p.row_blocks)
        used += (size_t)snprintf(extra + used, sizeof extra - used, ",row_blocks=%u", p.row_blocks);
    if (p.pdl)
        snprintf(extra + used, sizeof extra - used, ",pdl=1");
    if (flagfree)
        snprintf(s->describe, sizeof s->describe, "variant=%s,blocks=%d,threads=%d,timeout_ms=%u%s,nccl=%s",
                 names[p.variant], s->cfg.ctas, s->cfg.threads, p.timeout_ms, extra, lv);
    else
        snprintf(s->describe, sizeof s->describe, "variant=%s,barrier=%s,blocks=%d,timeout_ms=%u,nccl=%s",
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
    const int slot = symm_windows_alloc(&s->bufs, s->comm, s->ops, bytes);
    if (slot < 0)
        return NULL;
    /* Pull reads peers' send through these; a failure here is a broken CUDA context,
     * which every rank's next CUDA call reports too. */
    char why[512];
    if (lsa_dev_resolve(s->dev, s->bufs.w[slot].win, s->peer[slot], why, sizeof why) != ARB_OK) {
        arb_plog(s->ops, "lsa", "mem_alloc(%zu bytes): %s", bytes, why);
        symm_windows_release(&s->bufs, s->comm, slot);
        return NULL;
    }
    return s->bufs.w[slot].base;
}

static void lsa_mem_free(void *state, void *ptr)
{
    lsa_state_t *s = state;
    symm_windows_free(&s->bufs, s->comm, ptr);
}

static arb_status_t lsa_allreduce(void *state, const void *send, void *recv, size_t count, arb_dtype_t dtype,
                                  void *stream, char *why, size_t why_len)
{
    lsa_state_t *s = state;
    if (dtype != ARB_DTYPE_BF16 && dtype != ARB_DTYPE_FP32) {
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce: dtype %d, expected bf16 or fp32", (int)dtype);
    }
    size_t bytes = count * (dtype == ARB_DTYPE_BF16 ? 2 : 4);
    const char *send_peer[LSA_MAX_RANKS];
    const char *const *peers = NULL;
    /* Pull reads the peers' send through the window at the same offset: the harness
     * passes the same buffer offsets on every rank. Push and flag-free only touch send
     * locally. */
    if (s->cfg.variant == LSA_ONESHOT_PULL) {
        size_t off = 0;
        const int b = symm_windows_find(&s->bufs, send, bytes, &off);
        if (b < 0) {
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce: send %p (+%zu bytes) is not inside a buffer from lsa's mem_alloc (oneshot-pull reads it through its symmetric window)",
                     send, bytes);
        }
        for (int r = 0; r < lsa_dev_lsa_size(s->dev); r++)
            send_peer[r] = s->peer[b][r] + off;
        peers = send_peer;
    }
    return lsa_dev_allreduce(s->dev, send, peers, recv, count, dtype, stream, why, why_len);
}

/* The arguments first (they need no instance), then the instance: one message naming
 * the bad input and what was expected. */
static arb_status_t lsa_check_rmsnorm_args(const lsa_state_t *s, const arb_rmsnorm_args_t *a, char *why,
                                           size_t why_len)
{
    if (!a)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: args is NULL, expected an arb_rmsnorm_args_t");
    if (!a->x || !a->residual || !a->weight || !a->out)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: %s is NULL, expected a device pointer (bf16)",
                 !a->x ? "x" : !a->residual ? "residual" : !a->weight ? "weight" : "out");
    if (((uintptr_t)a->x | (uintptr_t)a->residual | (uintptr_t)a->weight | (uintptr_t)a->out) & 1u)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: x %p, residual %p, weight %p, out %p: expected 2-byte aligned bf16 pointers",
                 a->x, a->residual, a->weight, a->out);
    if (a->hidden == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: hidden=0, expected at least 1 element per row");
    if (!(a->eps >= 0.0f) || a->eps > 3.0e38f)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: eps=%g, expected a finite value >= 0", (double)a->eps);
    if ((size_t)a->tokens * a->hidden > ((size_t)1 << 40))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: tokens=%u x hidden=%u, expected at most 2^40 elements", a->tokens,
                 a->hidden);
    if (!s)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "lsa: allreduce_rmsnorm: state is NULL, expected the instance from init");
    return ARB_OK;
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
    symm_windows_free_all(&s->bufs, s->comm);
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
