/* SPDX-License-Identifier: MIT */
/*
 * GPU test of lsa's fused all-reduce + residual add + RMSNorm through the harness:
 *   mpirun --allow-run-as-root --oversubscribe -np N arbench sweep --op allreduce_rmsnorm
 *          --impl lsa --hidden H --tokens 1,3,64 --modes eager,graph --iters 20
 *          --graph-replays 10 --out CSV
 * then the CSV (arb_table_read), for each of lsa's default variants, tokens, mode and
 * fusion (fused, unfused) a row must exist, and:
 *   - unfused rows pass with a median, or are skips with a reason (init declined);
 *   - fused rows of the flag-free variants pass with a median (the harness checked
 *     them against its float64 reference and compared every rank's output hash), or
 *     are skips with a reason only where that variant's unfused row is a skip too
 *     (lsa declined at init, e.g. ncclDevCommCreate on 1 rank with NCCL 2.28.3);
 *   - fused rows of pull and push are skips with a reason (no fused kernel there);
 *   - arbench's exit status agrees (0 unless a row failed).
 * Prints fused and unfused medians of flag-free 24x256 per tokens and mode, and the
 * ratio at 3 tokens in graph mode (the aim: <= 0.8).
 *   check_symm_fused --arbench PATH --mpirun PATH --np N --hidden H --out CSV
 * With --hang 1 (N >= 2): lsa:variant=oneshot-flagfree,test_hang_rank=1,timeout_ms=200
 * at 3 tokens, eager and graph: rank 1 sends no lines, so no row may pass, every fused
 * row's note names the fused timeout, arbench exits non-zero, and the job ends
 * (meson's timeout catches a hang).
 * lsa's variants are read from the plugin (its `variants`, through the loader).
 * Per-machine expectations (symm_expect.h: --expect-pass, --expect-on, --allow-skip):
 * without them a run where every lsa row is a skip fails.
 * Exit 77 (skipped) with fewer than N visible GPUs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "runtime/loader.h"
#include "results/results.h"
#include "symm_run.h"
#include "tap.h"
#include "symm_expect.h"

static const char *const tokens_list[] = {"1", "3", "64"};
static const char *const modes[] = {"eager", "graph"};
static const char *const fusions[] = {"unfused", "fused"};
/* lsa's default variants (the plugin's `variants`), set in main. */
static const char *const *variants;
static int NVAR, FIRST_FLAGFREE = -1;
enum { NTOK = 3, NMODES = 2 };

typedef struct cols {
    int impl, params, fusion, tokens, hidden, mode, check, note, median;
} cols_t;

static int find_cols(const arb_table_t *t, cols_t *c)
{
    c->impl = arb_table_col(t, "impl");
    c->params = arb_table_col(t, "params");
    c->fusion = arb_table_col(t, "fusion");
    c->tokens = arb_table_col(t, "tokens");
    c->hidden = arb_table_col(t, "hidden");
    c->mode = arb_table_col(t, "mode");
    c->check = arb_table_col(t, "check");
    c->note = arb_table_col(t, "note");
    c->median = arb_table_col(t, "median_us");
    return c->impl >= 0 && c->params >= 0 && c->fusion >= 0 && c->tokens >= 0 && c->hidden >= 0 && c->mode >= 0 &&
           c->check >= 0 && c->note >= 0 && c->median >= 0;
}

/* The lsa row of (variant v, tokens, mode, fusion) at hidden, or NULL. */
static char **find_row(const arb_table_t *t, const cols_t *c, int v, const char *tokens, const char *hidden,
                       const char *mode, const char *fusion)
{
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = t->rows[r];
        if (!strcmp(row[c->impl], "lsa") && prefix_param(row[c->params], variants[v]) &&
            !strcmp(row[c->tokens], tokens) && !strcmp(row[c->hidden], hidden) && !strcmp(row[c->mode], mode) &&
            !strcmp(row[c->fusion], fusion))
            return row;
    }
    return NULL;
}

static int check_hang(const char *mpirun, const char *arbench, const char *np_arg, const char *hidden,
                      const char *out, const char *log)
{
    char *cmd[] = {(char *)mpirun, "--allow-run-as-root", "--oversubscribe", "-np", (char *)np_arg, (char *)arbench,
                   "sweep", "--op", "allreduce_rmsnorm", "--impl",
                   "lsa:variant=oneshot-flagfree,test_hang_rank=1,timeout_ms=200", "--hidden", (char *)hidden,
                   "--tokens", "3", "--modes", "eager,graph", "--iters", "5", "--graph-replays", "2", "--out",
                   (char *)out, NULL};
    int rc = run_logged(cmd, log);
    arb_table_t t;
    cols_t c;
    char err[1024];
    if (arb_table_read(out, &t, err, sizeof err)) {
        tap_ok(0, "results readable: %s (arbench exit %d)", err, rc);
        print_log(log);
        return tap_done();
    }
    int rows = 0, fused = 0, passed = 0, named = 0;
    for (size_t r = 0; find_cols(&t, &c) && r < t.nrows; r++) {
        char **row = t.rows[r];
        if (strcmp(row[c.impl], "lsa"))
            continue;
        rows++;
        passed += !strcmp(row[c.check], "pass");
        if (!strcmp(row[c.fusion], "fused")) {
            fused++;
            named += strstr(row[c.note], "fused allreduce_rmsnorm") && strstr(row[c.note], "timed out waiting for LSA peer");
        }
        printf("# %s %s %s: %s\n", row[c.fusion], row[c.mode], row[c.check], row[c.note]);
    }
    tap_ok(rows == 4 && fused == 2, "a row per mode x fusion (%d rows, %d fused; want 4, 2)", rows, fused);
    tap_ok(passed == 0, "no row passed while rank 1 sent nothing (%d did)", passed);
    tap_ok(named == fused && fused > 0, "every fused row's note names the fused timeout: %d of %d", named, fused);
    tap_ok(rc != 0 && rc != 77, "arbench exit status %d is a failure", rc);
    if (tap_.nfailed)
        print_log(log);
    arb_table_free(&t);
    return tap_done();
}

int main(int argc, char **argv)
{
    const char *hidden = "7168";
    symm_args_t a;
    if (symm_parse_args(argc, argv, "check_symm_fused", "--hidden", &hidden, &a) || !a.arbench || !a.mpirun || !a.out ||
        a.np < 1 || (a.hang && a.np < 2) || atoi(hidden) < 1) {
        fprintf(stderr, "usage: check_symm_fused --arbench PATH --mpirun PATH --np N --hidden H --out CSV [--hang 1 (N >= 2)] [--expect-pass IMPL[:ITEMS]@BYTES]... [--expect-on GPU] [--allow-skip IMPL]...\n");
        return 2;
    }
    const char *arbench = a.arbench, *mpirun = a.mpirun, *out = a.out;
    int np = a.np, hang = a.hang;
    char gpu_name[256];
    int need = symm_need_gpus(np, gpu_name, sizeof gpu_name);
    if (need)
        return need;
    arb_loaded_plugin_t lsa;
    if (!(variants = symm_lsa_variants(&lsa)))
        return tap_done();
    for (NVAR = 0; variants[NVAR]; NVAR++)
        if (FIRST_FLAGFREE < 0 && strstr(variants[NVAR], "variant=oneshot-flagfree"))
            FIRST_FLAGFREE = NVAR;
    if (FIRST_FLAGFREE < 0) {
        tap_ok(0, "lsa's default variants include a flag-free one");
        return tap_done();
    }
    char np_arg[16], log[4200];
    snprintf(np_arg, sizeof np_arg, "%d", np);
    snprintf(log, sizeof log, "%s.log", out);
    unlink(out); /* a fresh file: the sweep refuses an existing one */
    if (hang)
        return check_hang(mpirun, arbench, np_arg, hidden, out, log);

    char *cmd[] = {(char *)mpirun, "--allow-run-as-root", "--oversubscribe", "-np", np_arg, (char *)arbench, "sweep",
                   "--op", "allreduce_rmsnorm", "--impl", "lsa", "--hidden", (char *)hidden, "--tokens", "1,3,64",
                   "--modes", "eager,graph", "--iters", "20", "--graph-replays", "10", "--out", (char *)out, NULL};
    int rc = run_logged(cmd, log);
    arb_table_t t;
    cols_t c;
    char err[1024];
    if (arb_table_read(out, &t, err, sizeof err)) {
        tap_ok(0, "results readable: %s (arbench exit %d)", err, rc);
        print_log(log);
        return tap_done();
    }
    if (!find_cols(&t, &c)) {
        tap_ok(0, "results have the columns impl params fusion tokens hidden mode check note median_us");
        arb_table_free(&t);
        return tap_done();
    }

    int missing = 0, bad = 0, failed_rows = 0, fused_pass = 0;
    for (int v = 0; v < NVAR; v++) {
        const int flagfree = strstr(variants[v], "variant=oneshot-flagfree") != NULL;
        for (int k = 0; k < NTOK; k++) {
            for (int m = 0; m < NMODES; m++) {
                char **un = find_row(&t, &c, v, tokens_list[k], hidden, modes[m], "unfused");
                char **fu = find_row(&t, &c, v, tokens_list[k], hidden, modes[m], "fused");
                for (int f = 0; f < 2; f++) {
                    char **row = f ? fu : un;
                    if (!row) {
                        printf("# missing: lsa %s %s tokens %s hidden %s\n", variants[v], modes[m], tokens_list[k],
                               hidden);
                        missing++;
                        continue;
                    }
                    const char *check = row[c.check], *note = row[c.note];
                    const int pass = !strcmp(check, "pass") && atof(row[c.median]) > 0;
                    const int skip = !strcmp(check, "skip") && note[0];
                    /* A declined init skips both fusions; otherwise flag-free fused must run. */
                    const int init_declined = un && !strcmp(un[c.check], "skip");
                    int ok;
                    if (!f)
                        ok = pass || skip;
                    else if (flagfree)
                        ok = pass || (skip && init_declined);
                    else
                        ok = skip;
                    failed_rows += !strcmp(check, "fail");
                    fused_pass += f && pass;
                    if (!ok) {
                        bad++;
                        printf("# BAD %s: lsa %s %s %s tokens %s: %s (median %s)\n", check, row[c.params], fusions[f],
                               modes[m], tokens_list[k], note, row[c.median]);
                    } else if (skip) {
                        printf("# skip: lsa %s %s %s tokens %s: %s\n", row[c.params], fusions[f], modes[m],
                               tokens_list[k], note);
                    } else if (flagfree) {
                        printf("# %d rank(s) lsa %s %s %s tokens %s hidden %s: median %s us\n", np, row[c.params],
                               fusions[f], modes[m], tokens_list[k], hidden, row[c.median]);
                    }
                }
            }
        }
    }
    tap_ok(missing == 0, "a row for each of %d variants x %d tokens x %d modes x 2 fusions (%d missing)", NVAR, NTOK,
           NMODES, missing);
    tap_ok(bad == 0, "flag-free fused rows pass (or skip with unfused where init declined), pull/push fused rows skip with a reason, unfused rows pass or skip (%d not)",
           bad);
    tap_ok(failed_rows ? rc != 0 : rc == 0, "arbench sweep exit status %d agrees with the rows (%d failed)", rc,
           failed_rows);
    if (fused_pass == 0)
        tap_skip("lsa declined at init here, see the skip reasons", "fused timings to compare");
    char **fu = find_row(&t, &c, FIRST_FLAGFREE, "3", hidden, "graph", "fused");
    char **un = find_row(&t, &c, FIRST_FLAGFREE, "3", hidden, "graph", "unfused");
    if (fu && un && !strcmp(fu[c.check], "pass") && !strcmp(un[c.check], "pass") && atof(un[c.median]) > 0)
        printf("# 3 tokens graph, flag-free 24x256: fused %s us, unfused %s us, ratio %.3f (aim <= 0.8)\n",
               fu[c.median], un[c.median], atof(fu[c.median]) / atof(un[c.median]));
    static const char *const impls[] = {"lsa"};
    symm_expect_check(&a.expect, &t, impls, 1, gpu_name);
    if (tap_.nfailed)
        print_log(log);
    arb_table_free(&t);
    arb_plugin_unload(&lsa);
    return tap_done();
}
