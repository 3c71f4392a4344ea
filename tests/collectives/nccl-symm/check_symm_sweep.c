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

#include "runtime/loader.h"
#include "results/results.h"
#include "symm_run.h"
#include "tap.h"
#include "symm_expect.h"

static const size_t sizes_bf16[] = {2, 1000, 43008, 1048576};
static const size_t sizes_fp32[] = {4, 1000, 43008, 1048576};
static const char *const modes[] = {"eager", "graph", "context"};
enum { NSIZES = 4, NMODES = 3 };


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
    if (tap_.nfailed)
        print_log(log);
    arb_table_free(&t);
    return tap_done();
}

int main(int argc, char **argv)
{
    const char *dtype = "bf16";
    symm_args_t a;
    if (symm_parse_args(argc, argv, "check_symm_sweep", "--dtype", &dtype, &a) || !a.arbench || !a.mpirun || !a.out ||
        a.np < 1 || (a.hang && a.np < 2) || (strcmp(dtype, "bf16") && strcmp(dtype, "fp32"))) {
        fprintf(stderr, "usage: check_symm_sweep --arbench PATH --mpirun PATH --np N --dtype bf16|fp32 --out CSV [--hang 1 (N >= 2)] [--expect-pass IMPL[:ITEMS]@BYTES]... [--expect-on GPU] [--allow-skip IMPL]...\n");
        return 2;
    }
    const char *arbench = a.arbench, *mpirun = a.mpirun, *out = a.out;
    int np = a.np, hang = a.hang;
    char gpu_name[256];
    int need = symm_need_gpus(np, gpu_name, sizeof gpu_name);
    if (need)
        return need;
    arb_loaded_plugin_t lsa;
    const char *const *lsa_variants = symm_lsa_variants(&lsa);
    if (!lsa_variants)
        return tap_done();
    int NLSA = 0;
    while (lsa_variants[NLSA])
        NLSA++;

    const size_t *sizes = strcmp(dtype, "bf16") ? sizes_fp32 : sizes_bf16;
    char size_arg[128], np_arg[16], log[4200];
    snprintf(size_arg, sizeof size_arg, "%zu,%zu,%zu,%zu", sizes[0], sizes[1], sizes[2], sizes[3]);
    snprintf(np_arg, sizeof np_arg, "%d", np);
    snprintf(log, sizeof log, "%s.log", out);
    unlink(out); /* a fresh file: the sweep refuses an existing one */
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
    if (tap_.nfailed) {
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
    static const char *const impls[] = {"nccl-symm", "lsa"};
    symm_expect_check(&a.expect, &t, impls, 2, gpu_name);
    if (tap_.nfailed)
        print_log(log);
    arb_table_free(&t);
    arb_plugin_unload(&lsa);
    return tap_done();
}
