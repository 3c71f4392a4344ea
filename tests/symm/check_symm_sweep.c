/* SPDX-License-Identifier: MIT */
/*
 * GPU test: runs
 *   mpirun --allow-run-as-root --oversubscribe -np N arbench sweep --impl nccl-symm,lsa
 *          --sizes S --modes eager,graph,context --dtype D --iters 50 --out CSV
 * and checks the CSV (arb_table_read): nccl-symm has a row for every size and mode,
 * lsa for both variants; every row passed its check with median_us > 0, or is a
 * skip with a reason in `note` (a declined variant: no symmetric window, header/
 * library mismatch). Passing nccl-symm rows say window=symmetric in params. Prints
 * the 43,008-byte medians for the report.
 *   check_symm_sweep --arbench PATH --mpirun PATH --np N --dtype bf16|fp32 --out CSV
 * With --hang 1 (np >= 2) it checks the timeout path instead: lsa oneshot-flagfree
 * with test_hang_rank=1,timeout_ms=200 (rank 1 sends no lines) must fail every point
 * with a "timed out waiting for LSA peer" note and a non-zero exit, not hang.
 * Exit 77 (skipped) with fewer than N visible GPUs.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "results.h"
#include "symm_run.h"
#include "symm_tap.h"

static const size_t sizes_bf16[] = {2, 1000, 43008, 1048576};
static const size_t sizes_fp32[] = {4, 1000, 43008, 1048576};
static const char *const modes[] = {"eager", "graph", "context"};
/* lsa's default variants as describe() writes them (prefix up to a ',' or the end). */
static const char *const lsa_variants[] = {"variant=oneshot-pull", "variant=oneshot-push",
                                           "variant=oneshot-flagfree,blocks=24,threads=256",
                                           "variant=oneshot-flagfree,blocks=12,threads=512",
                                           "variant=oneshot-flagfree,blocks=24,threads=256,pdl=1"};
enum { NSIZES = 4, NMODES = 3, NLSA = sizeof lsa_variants / sizeof *lsa_variants };


/* The timeout path: every lsa row fails, at least one names the timeout, and arbench
 * exits non-zero (meson's timeout catches a hang). */
static int check_hang(const char *mpirun, const char *arbench, const char *np_arg, const char *dtype, const char *out,
                      const char *log)
{
    char *cmd[] = {(char *)mpirun, "--allow-run-as-root", "--oversubscribe", "-np", (char *)np_arg, (char *)arbench,
                   "sweep", "--impl", "lsa:variant=oneshot-flagfree,test_hang_rank=1,timeout_ms=200", "--sizes",
                   "43008", "--modes", "eager,graph", "--dtype", (char *)dtype, "--iters", "5", "--out", (char *)out,
                   NULL};
    int rc = run_logged(cmd, log);
    arb_table_t t;
    char err[1024];
    if (arb_table_read(out, &t, err, sizeof err)) {
        tap_ok(0, "results readable: %s (arbench exit %d)", err, rc);
        print_log(log);
        return tap_done();
    }
    int c_impl = arb_table_col(&t, "impl"), c_check = arb_table_col(&t, "check"), c_note = arb_table_col(&t, "note");
    int rows = 0, passed = 0, named = 0;
    for (size_t r = 0; c_impl >= 0 && c_check >= 0 && c_note >= 0 && r < t.nrows; r++) {
        if (strcmp(t.rows[r][c_impl], "lsa"))
            continue;
        rows++;
        passed += !strcmp(t.rows[r][c_check], "pass");
        named += strstr(t.rows[r][c_note], "timed out waiting for LSA peer") != NULL;
        printf("# %s: %s\n", t.rows[r][c_check], t.rows[r][c_note]);
    }
    tap_ok(rows == 2, "a row for each of 2 modes (%d)", rows);
    tap_ok(passed == 0, "no row passed while rank 1 sent nothing (%d did)", passed);
    tap_ok(named > 0, "a note names the timeout (\"timed out waiting for LSA peer\"): %d of %d", named, rows);
    tap_ok(rc != 0 && rc != 77, "arbench exit status %d is a failure", rc);
    if (tap_failed)
        print_log(log);
    arb_table_free(&t);
    return tap_done();
}

int main(int argc, char **argv)
{
    const char *arbench = NULL, *mpirun = NULL, *dtype = "bf16", *out = NULL;
    int np = 1, hang = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--arbench")) arbench = argv[i + 1];
        else if (!strcmp(argv[i], "--mpirun")) mpirun = argv[i + 1];
        else if (!strcmp(argv[i], "--np")) np = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--dtype")) dtype = argv[i + 1];
        else if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--hang")) hang = atoi(argv[i + 1]);
    }
    if (!arbench || !mpirun || !out || np < 1 || (hang && np < 2) || (strcmp(dtype, "bf16") && strcmp(dtype, "fp32"))) {
        fprintf(stderr, "usage: check_symm_sweep --arbench PATH --mpirun PATH --np N --dtype bf16|fp32 --out CSV [--hang 1 (N >= 2)]\n");
        return 2;
    }
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev < np) {
        printf("1..0 # SKIP needs %d visible GPU(s), have %d (%s)\n", np, ce == cudaSuccess ? ndev : 0,
               ce == cudaSuccess ? "cudaGetDeviceCount ok" : cudaGetErrorString(ce));
        return 77;
    }

    const size_t *sizes = strcmp(dtype, "bf16") ? sizes_fp32 : sizes_bf16;
    char size_arg[128], np_arg[16], log[4200];
    snprintf(size_arg, sizeof size_arg, "%zu,%zu,%zu,%zu", sizes[0], sizes[1], sizes[2], sizes[3]);
    snprintf(np_arg, sizeof np_arg, "%d", np);
    snprintf(log, sizeof log, "%s.log", out);
    unlink(out); /* the results writer appends to an existing file */
    if (hang)
        return check_hang(mpirun, arbench, np_arg, dtype, out, log);
    char *cmd[] = {(char *)mpirun, "--allow-run-as-root", "--oversubscribe", "-np", np_arg, (char *)arbench, "sweep",
                   "--impl", "nccl-symm,lsa", "--sizes", size_arg, "--modes", "eager,graph,context",
                   "--dtype", (char *)dtype, "--iters", "50", "--out", (char *)out, NULL};
    int rc = run_logged(cmd, log);

    arb_table_t t;
    char err[1024];
    if (arb_table_read(out, &t, err, sizeof err)) {
        tap_ok(0, "results readable: %s (arbench exit %d)", err, rc);
        print_log(log);
        return tap_done();
    }
    int c_impl = arb_table_col(&t, "impl"), c_params = arb_table_col(&t, "params"), c_mode = arb_table_col(&t, "mode"),
        c_bytes = arb_table_col(&t, "bytes"), c_check = arb_table_col(&t, "check"), c_note = arb_table_col(&t, "note"),
        c_median = arb_table_col(&t, "median_us"), c_dtype = arb_table_col(&t, "dtype");
    tap_ok(c_impl >= 0 && c_params >= 0 && c_mode >= 0 && c_bytes >= 0 && c_check >= 0 && c_note >= 0 &&
               c_median >= 0 && c_dtype >= 0,
           "results have the columns impl params mode bytes check note median_us dtype");
    if (tap_failed) {
        arb_table_free(&t);
        return tap_done();
    }

    int fails = 0, bad_skips = 0, bad_params = 0;
    for (size_t r = 0; r < t.nrows; r++) {
        char **row = t.rows[r];
        const char *impl = row[c_impl], *check = row[c_check];
        if (strcmp(impl, "nccl-symm") && strcmp(impl, "lsa"))
            continue;
        if (!strcmp(check, "pass")) {
            if (atof(row[c_median]) <= 0) {
                printf("# pass row without a timing: %s %s %s %s\n", impl, row[c_params], row[c_mode], row[c_bytes]);
                fails++;
            }
            if (!strcmp(impl, "nccl-symm") && !strstr(row[c_params], "window=symmetric"))
                bad_params++;
        } else if (!strcmp(check, "skip")) {
            if (!row[c_note][0])
                bad_skips++;
            else
                printf("# skip: %s %s %s %s B: %s\n", impl, row[c_params], row[c_mode], row[c_bytes], row[c_note]);
        } else {
            printf("# %s: %s %s %s %s B: %s\n", check, impl, row[c_params], row[c_mode], row[c_bytes], row[c_note]);
            fails++;
        }
    }
    tap_ok(fails == 0, "every nccl-symm/lsa row passed its check with a timing, or was skipped (%d not)", fails);
    tap_ok(bad_skips == 0, "every skipped row says why in note (%d do not)", bad_skips);
    tap_ok(bad_params == 0, "every passing nccl-symm row records window=symmetric in params (%d do not)", bad_params);

    /* Coverage: one row per (size, mode) for nccl-symm and for each lsa variant. */
    for (int v = -1; v < NLSA; v++) {
        const char *impl = v < 0 ? "nccl-symm" : "lsa";
        int missing = 0;
        for (int si = 0; si < NSIZES; si++) {
            for (int mi = 0; mi < NMODES; mi++) {
                int found = 0;
                for (size_t r = 0; r < t.nrows && !found; r++) {
                    char **row = t.rows[r];
                    found = !strcmp(row[c_impl], impl) && !strcmp(row[c_mode], modes[mi]) &&
                            strtoull(row[c_bytes], NULL, 10) == sizes[si] && !strcmp(row[c_dtype], dtype) &&
                            (v < 0 || prefix_param(row[c_params], lsa_variants[v]));
                    if (found && si == 2 && !strcmp(row[c_check], "pass"))
                        printf("# %d rank(s) %s %s %s %s B: median %s us\n", np, impl, row[c_params], modes[mi],
                               row[c_bytes], row[c_median]);
                }
                missing += !found;
            }
        }
        tap_ok(missing == 0, "%s%s%s: a row for each of %d sizes x %d modes (%d missing)", impl, v < 0 ? "" : " ",
               v < 0 ? "" : lsa_variants[v], NSIZES, NMODES, missing);
    }
    tap_ok(fails ? rc != 0 : rc == 0, "arbench sweep exit status %d agrees with the rows (%d failed)", rc, fails);
    if (tap_failed)
        print_log(log);
    arb_table_free(&t);
    return tap_done();
}
