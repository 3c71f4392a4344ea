/* SPDX-License-Identifier: MIT */
/*
 * GPU test of hoststaged through the harness: runs
 *   mpirun --allow-run-as-root --oversubscribe -np N ARBENCH sweep --impl hoststaged
 *          --sizes S --modes eager,graph,context --dtype D --iters 20 --out OUT
 * and checks, with the results reader, that there is exactly one row per (size, mode)
 * and every row passed. With --hang it runs `--impl hoststaged:test_hang_rank=1` on
 * one size in eager mode and checks that the sweep ends (no hang), exits non-zero,
 * records the point as failed, and names the timeout.
 * Exit 77 (skipped) where no CUDA device is visible or fewer than N.
 *
 *   hs_sweep ARBENCH N bf16|fp32 OUT.csv [--hang]
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "results/results.h"

#define WATCHDOG_S 240 /* the sweep is killed (and the test fails) after this, in seconds */
#define TIMEOUT_MSG "hoststaged: spin-wait timed out waiting for rank 1"

static const char *const modes[] = {"eager", "graph", "context"};

/* Runs argv with stdout and stderr into log, in its own process group. Returns its
 * exit status, or -1 when it had to be killed (hung) or could not start. */
static int run_logged(char *const argv[], const char *log)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        setpgid(0, 0);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execvp(argv[0], argv);
        _exit(127);
    }
    setpgid(pid, pid);
    for (int tenths = 0; tenths < WATCHDOG_S * 10; tenths++) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        struct timespec ts = {0, 100000000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "hs_sweep: the sweep ran past %d s: killing its process group %d\n", WATCHDOG_S, (int)pid);
    kill(-pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static int file_contains(const char *path, const char *needle)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[8192];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void show_log(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    char line[8192];
    while (fgets(line, sizeof line, f))
        fprintf(stderr, "  | %s", line);
    fclose(f);
}

/* The sweep's rows, as checks. Returns the number of failed checks. */
static int check_rows(const char *csv, const char *dtype, const size_t *sizes, size_t nsizes, int hang)
{
    arb_table_t t;
    char err[1024];
    if (arb_table_read(csv, &t, err, sizeof err)) {
        fprintf(stderr, "hs_sweep: %s\n", err);
        return 1;
    }
    static const char *const need[] = {"impl", "dtype", "bytes", "mode", "check", "note", "params", NULL};
    if (arb_table_require(&t, need, csv, err, sizeof err)) {
        fprintf(stderr, "hs_sweep: %s\n", err);
        arb_table_free(&t);
        return 1;
    }
    int ci = arb_table_col(&t, "impl"), cd = arb_table_col(&t, "dtype"), cb = arb_table_col(&t, "bytes");
    int cm = arb_table_col(&t, "mode"), cc = arb_table_col(&t, "check"), cn = arb_table_col(&t, "note");
    int cp = arb_table_col(&t, "params");
    int bad = 0;
    size_t seen[16][3] = {{0}};
    for (size_t r = 0; r < t.nrows; r++) {
        char **f = t.rows[r];
        if (strcmp(f[ci], "hoststaged") || strcmp(f[cd], dtype)) {
            fprintf(stderr, "hs_sweep: row %zu: impl '%s' dtype '%s', expected hoststaged %s\n", r + 1, f[ci], f[cd], dtype);
            bad++;
            continue;
        }
        if (!strstr(f[cp], "blocks=") || !strstr(f[cp], "threads=")) {
            fprintf(stderr, "hs_sweep: row %zu: params '%s' lack blocks= and threads= (describe())\n", r + 1, f[cp]);
            bad++;
        }
        if (hang) {
            if (strcmp(f[cc], "fail")) {
                fprintf(stderr, "hs_sweep: row %zu: check '%s', expected fail under test_hang_rank=1\n", r + 1, f[cc]);
                bad++;
            }
            continue;
        }
        if (strcmp(f[cc], "pass")) {
            fprintf(stderr, "hs_sweep: row %zu (%s B, %s): check '%s', note '%s'\n", r + 1, f[cb], f[cm], f[cc], f[cn]);
            bad++;
        }
        size_t si = nsizes, mi = 3;
        for (size_t i = 0; i < nsizes; i++)
            if (strtoull(f[cb], NULL, 10) == sizes[i])
                si = i;
        for (size_t i = 0; i < 3; i++)
            if (!strcmp(f[cm], modes[i]))
                mi = i;
        if (si == nsizes || mi == 3) {
            fprintf(stderr, "hs_sweep: row %zu: unexpected point %s B, mode %s\n", r + 1, f[cb], f[cm]);
            bad++;
            continue;
        }
        seen[si][mi]++;
    }
    if (hang && t.nrows == 0) {
        fprintf(stderr, "hs_sweep: no row recorded for the hanging point\n");
        bad++;
    }
    for (size_t i = 0; !hang && i < nsizes; i++)
        for (size_t m = 0; m < 3; m++)
            if (seen[i][m] != 1) {
                fprintf(stderr, "hs_sweep: %zu rows for %zu B %s, expected 1\n", seen[i][m], sizes[i], modes[m]);
                bad++;
            }
    if (!bad)
        printf("hs_sweep: %zu rows in %s, all as expected\n", t.nrows, csv);
    arb_table_free(&t);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (argc == 6 && strcmp(argv[5], "--hang")) || argc > 6 ||
        (strcmp(argv[3], "bf16") && strcmp(argv[3], "fp32")) || atoi(argv[2]) < 1) {
        fprintf(stderr, "usage: hs_sweep ARBENCH NRANKS bf16|fp32 OUT.csv [--hang]\n");
        return 2;
    }
    const char *arbench = argv[1], *np = argv[2], *dtype = argv[3], *csv = argv[4];
    int hang = argc == 6;
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0) {
        printf("hs_sweep: skipped: no CUDA device visible: %s\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return 77;
    }
    if (ndev < atoi(np) || (hang && atoi(np) < 2)) {
        printf("hs_sweep: skipped: needs %s CUDA devices (and 2 for --hang), %d visible\n", np, ndev);
        return 77;
    }

    /* Units: bytes per rank. fp32 sizes are whole elements (4-byte multiples). */
    static const size_t bf16_sizes[] = {2, 6, 1000, 43008, 1u << 20};
    static const size_t fp32_sizes[] = {4, 12, 1000, 43008, 1u << 20};
    const size_t *sizes = strcmp(dtype, "bf16") ? fp32_sizes : bf16_sizes;
    char *size_list = strcmp(dtype, "bf16") ? "4,12,1000,43008,1M" : "2,6,1000,43008,1M";
    char log[4200];
    snprintf(log, sizeof log, "%s.log", csv);
    unlink(csv);
    char *run_argv[] = {"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", (char *)np, (char *)arbench,
                        "sweep", "--impl", hang ? "hoststaged:test_hang_rank=1" : "hoststaged",
                        "--sizes", hang ? "43008" : size_list, "--modes", hang ? "eager" : "eager,graph,context",
                        "--dtype", (char *)dtype, "--iters", "20", "--out", (char *)csv, NULL};
    printf("hs_sweep:");
    for (char **a = run_argv; *a; a++)
        printf(" %s", *a);
    printf("\n");
    fflush(stdout);
    int rc = run_logged(run_argv, log);

    int bad = 0;
    if (rc < 0) {
        fprintf(stderr, "hs_sweep: the sweep did not finish (see above)\n");
        bad++;
    } else if (hang ? rc == 0 : rc != 0) {
        fprintf(stderr, "hs_sweep: the sweep exited with status %d, expected %s\n", rc, hang ? "non-zero" : "0");
        bad++;
    }
    if (rc >= 0)
        bad += check_rows(csv, dtype, sizes, 5, hang);
    if (hang && !file_contains(log, TIMEOUT_MSG) && !file_contains(csv, TIMEOUT_MSG)) {
        fprintf(stderr, "hs_sweep: neither the output nor %s names the timeout ('%s')\n", csv, TIMEOUT_MSG);
        bad++;
    }
    if (bad) {
        fprintf(stderr, "hs_sweep: %d problem(s); the sweep's output (%s):\n", bad, log);
        show_log(log);
        return 1;
    }
    return 0;
}
