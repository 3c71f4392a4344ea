/* SPDX-License-Identifier: MIT */
/*
 * Per-machine expectations of the symm GPU checks, so that a bug which makes nccl-symm
 * or lsa always decline cannot stay green (every row a skip passes nothing):
 *   --expect-pass IMPL[:ITEMS]@BYTES  every row of IMPL at BYTES whose params hold each
 *                                     comma-separated item of ITEMS passed, and one exists
 *   --expect-on GPU                   the --expect-pass expectations hold only where device
 *                                     0's name contains GPU (e.g. H200); elsewhere they are
 *                                     reported as skipped
 *   --allow-skip IMPL                 IMPL may decline everywhere here (the meson test says why)
 * Without --allow-skip, an implementation whose rows are all skips fails the check.
 * Also the checkers' common command line and GPU check. Needs tap.h and symm_run.h
 * (prefix_param) first.
 */
#ifndef ARB_SYMM_EXPECT_H
#define ARB_SYMM_EXPECT_H

#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "runtime/loader.h"
#include "results/results.h"

#define SYMM_MAX_EXPECT 8

typedef struct symm_expect {
    struct {
        char impl[32], items[160];
        size_t bytes;
    } pass[SYMM_MAX_EXPECT];
    int npass;
    const char *allow_skip[SYMM_MAX_EXPECT];
    int nallow;
    const char *on_gpu; /* NULL: everywhere */
} symm_expect_t;

/* 1 when opt (with val) is one of ours and was stored, 0 when not ours, -1 when bad. */
static int symm_expect_arg(symm_expect_t *e, const char *opt, const char *val) __attribute__((unused));
static int symm_expect_arg(symm_expect_t *e, const char *opt, const char *val)
{
    if (!strcmp(opt, "--expect-on")) {
        e->on_gpu = val;
        return 1;
    }
    if (!strcmp(opt, "--allow-skip")) {
        if (e->nallow == SYMM_MAX_EXPECT)
            return -1;
        e->allow_skip[e->nallow++] = val;
        return 1;
    }
    if (strcmp(opt, "--expect-pass"))
        return 0;
    const char *at = strrchr(val, '@'), *colon = strchr(val, ':');
    if (!at || e->npass == SYMM_MAX_EXPECT)
        return -1;
    size_t impl_len = (size_t)((colon && colon < at ? colon : at) - val);
    char *end;
    unsigned long long bytes = strtoull(at + 1, &end, 10);
    if (impl_len == 0 || impl_len >= sizeof e->pass[0].impl || *end || !bytes)
        return -1;
    memcpy(e->pass[e->npass].impl, val, impl_len);
    e->pass[e->npass].impl[impl_len] = '\0';
    e->pass[e->npass].items[0] = '\0';
    if (colon && colon < at) {
        size_t n = (size_t)(at - colon - 1);
        if (n >= sizeof e->pass[0].items)
            return -1;
        memcpy(e->pass[e->npass].items, colon + 1, n);
        e->pass[e->npass].items[n] = '\0';
    }
    e->pass[e->npass].bytes = (size_t)bytes;
    e->npass++;
    return 1;
}

/* TAP lines for the expectations over the rows of impls[] in t. */
static void symm_expect_check(const symm_expect_t *e, const arb_table_t *t, const char *const *impls, int nimpls,
                              const char *gpu_name) __attribute__((unused));
static void symm_expect_check(const symm_expect_t *e, const arb_table_t *t, const char *const *impls, int nimpls,
                              const char *gpu_name)
{
    int c_impl = arb_table_col(t, "impl"), c_params = arb_table_col(t, "params"), c_bytes = arb_table_col(t, "bytes"),
        c_check = arb_table_col(t, "check");
    if (c_impl < 0 || c_params < 0 || c_bytes < 0 || c_check < 0) {
        tap_ok(0, "results have the columns impl params bytes check");
        return;
    }
    for (int i = 0; i < nimpls; i++) {
        int rows = 0, skips = 0, allowed = 0;
        for (size_t r = 0; r < t->nrows; r++)
            if (!strcmp(t->rows[r][c_impl], impls[i])) {
                rows++;
                skips += !strcmp(t->rows[r][c_check], "skip");
            }
        for (int a = 0; a < e->nallow; a++)
            allowed |= !strcmp(e->allow_skip[a], impls[i]);
        if (allowed)
            tap_ok(rows > 0, "%s: %d rows, %d skipped (skipping allowed here)", impls[i], rows, skips);
        else
            tap_ok(rows > 0 && skips < rows, "%s: not every row is a skip (%d of %d are; --allow-skip %s where that is expected)",
                   impls[i], skips, rows, impls[i]);
    }
    int applies = !e->on_gpu || (gpu_name && strstr(gpu_name, e->on_gpu));
    for (int x = 0; x < e->npass; x++) {
        const char *items = e->pass[x].items;
        if (!applies) {
            tap_skip("the expectation is for another machine", "%s%s%s passes at %zu B on %s (this GPU: %s)",
                     e->pass[x].impl, items[0] ? ":" : "", items, e->pass[x].bytes, e->on_gpu, gpu_name ? gpu_name : "?");
            continue;
        }
        int rows = 0, passed = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            if (strcmp(row[c_impl], e->pass[x].impl) || strtoull(row[c_bytes], NULL, 10) != e->pass[x].bytes ||
                !prefix_param(row[c_params], items))
                continue;
            rows++;
            passed += !strcmp(row[c_check], "pass");
        }
        tap_ok(rows > 0 && passed == rows, "expected here: every %s%s%s row at %zu B passes (%d of %d do)",
               e->pass[x].impl, items[0] ? ":" : "", items, e->pass[x].bytes, passed, rows);
    }
}

/* The checkers' common command line: --arbench --mpirun --np --out --hang, one option of
 * the checker's own (extra_opt, e.g. "--dtype", stored in *extra), and the expectations.
 * 0, or 2 after a message naming the option that is bad or unknown. */
typedef struct symm_args {
    const char *arbench, *mpirun, *out;
    int np, hang;
    symm_expect_t expect;
} symm_args_t;

static int symm_parse_args(int argc, char **argv, const char *tool, const char *extra_opt, const char **extra,
                           symm_args_t *a) __attribute__((unused));
static int symm_parse_args(int argc, char **argv, const char *tool, const char *extra_opt, const char **extra,
                           symm_args_t *a)
{
    memset(a, 0, sizeof *a);
    a->np = 1;
    for (int i = 1; i < argc; i += 2) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int e = val ? symm_expect_arg(&a->expect, opt, val) : -1;
        if (e > 0)
            continue;
        if (e == 0 && !strcmp(opt, "--arbench")) a->arbench = val;
        else if (e == 0 && !strcmp(opt, "--mpirun")) a->mpirun = val;
        else if (e == 0 && !strcmp(opt, "--np")) a->np = atoi(val);
        else if (e == 0 && !strcmp(opt, "--out")) a->out = val;
        else if (e == 0 && !strcmp(opt, "--hang")) a->hang = atoi(val);
        else if (e == 0 && !strcmp(opt, extra_opt)) *extra = val;
        else {
            fprintf(stderr, "%s: bad or unknown option '%s'\n", tool, opt);
            return 2;
        }
    }
    return 0;
}

/* lsa's default variants (its `variants`, through the real loader), NULL after a
 * failed TAP line. */
static const char *const *symm_lsa_variants(arb_loaded_plugin_t *lsa) __attribute__((unused));
static const char *const *symm_lsa_variants(arb_loaded_plugin_t *lsa)
{
    char err[8192];
    if (arb_plugin_load("lsa", lsa, err, sizeof err) != ARB_OK || !lsa->plugin->variants) {
        tap_ok(0, "lsa loads and lists its default variants: %s", err);
        return NULL;
    }
    return lsa->plugin->variants;
}

/* 0 when np GPUs are visible (name: device 0's), else the "1..0 # SKIP" line and 77. */
static int symm_need_gpus(int np, char *name, size_t name_len) __attribute__((unused));
static int symm_need_gpus(int np, char *name, size_t name_len)
{
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev < np) {
        printf("1..0 # SKIP needs %d visible GPU(s), have %d (%s)\n", np, ce == cudaSuccess ? ndev : 0,
               ce == cudaSuccess ? "cudaGetDeviceCount ok" : cudaGetErrorString(ce));
        return 77;
    }
    struct cudaDeviceProp prop;
    snprintf(name, name_len, "%s", cudaGetDeviceProperties(&prop, 0) == cudaSuccess ? prop.name : "?");
    return 0;
}

#endif
