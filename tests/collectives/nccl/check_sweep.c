/* SPDX-License-Identifier: MIT */
/*
 * GPU test: runs
 *   mpirun -np N arbench sweep --impl nccl,noop --sizes 1K,43008,1M
 *          --modes eager,graph,context --dtype D --iters 50 --out CSV
 * and checks the CSV: every nccl variant has rows; rows that ran pass their check
 * with median_us > 0 at every size and mode; declined variants have check=skip and
 * a reason in note; noop's graph medians are below its eager medians. With N >= 2
 * it runs NCCL with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ENV and checks in the log that
 * each forced variant's NCCL_ALGO/NCCL_PROTO reached NCCL's communicator init.
 *   check_sweep --arbench PATH --mpirun PATH --np N --dtype bf16|fp32 --workdir DIR
 * Exit 77 (skipped) without N visible GPUs.
 *   check_sweep --check-only CSV --np N --dtype bf16|fp32 [--log LOG]
 * checks an existing CSV (and log) without running anything or needing a GPU.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime.h>

#include "runtime/loader.h"
#include "results/results.h"
#include "tap.h"

/* The nccl plugin's default variants (its `variants`, read through the loader in main). */
static const char *const *variants;
static const size_t sizes[] = {1024, 43008, 1048576};
static const char *const modes[] = {"eager", "graph", "context"};
enum { NSIZES = 3, NMODES = 3 };

typedef struct cols {
    int impl, params, mode, bytes, dtype, check, note, median, ranks;
} cols_t;

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* A row's params belong to variant v: the harness writes describe() ("algo=Ring,
 * proto=LL,nccl=2.28.3") for variants that ran and, presumably, the variant string
 * for declined ones. The auto variant describes as algo=auto|env,proto=auto|env. */
static int params_match(const char *v, const char *params)
{
    if (!*v)
        return !*params || starts_with(params, "algo=auto,proto=auto,") || starts_with(params, "algo=auto,proto=env,") ||
               starts_with(params, "algo=env,proto=auto,") || starts_with(params, "algo=env,proto=env,");
    size_t n = strlen(v);
    return strncmp(params, v, n) == 0 && (params[n] == '\0' || params[n] == ',');
}

/* Runs argv with stdout and stderr into log; returns the exit status, -1 if it
 * did not exit normally. */
static int run_logged(char *const *argv, const char *log)
{
    for (char *const *a = argv; *a; a++)
        printf("%s%s", a == argv ? "# running: " : " ", *a);
    printf("\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static int log_contains(const char *log, const char *needle)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

static void print_log_tail(const char *log)
{
    FILE *f = fopen(log, "r");
    if (!f)
        return;
    static char ring[40][512];
    int n = 0;
    while (fgets(ring[n % 40], sizeof ring[0], f))
        n++;
    fclose(f);
    for (int i = n > 40 ? n - 40 : 0; i < n; i++)
        printf("#   | %s", ring[i % 40]);
}

static double median_of(const arb_table_t *t, const cols_t *c, size_t r)
{
    const char *m = t->rows[r][c->median];
    return *m ? strtod(m, NULL) : -1.0;
}

/* Checks one nccl variant's rows; returns 1 if it ran, 0 if it was declined. */
static int check_variant(const arb_table_t *t, const cols_t *c, const char *v, int np)
{
    const char *label = *v ? v : "auto";
    size_t nrows = 0, nskip = 0, bad = 0, bad_skip = 0;
    int covered[NSIZES][NMODES] = {{0}};
    const char *reason = "";
    for (size_t r = 0; r < t->nrows; r++) {
        char **row = t->rows[r];
        if (strcmp(row[c->impl], "nccl") != 0 || !params_match(v, row[c->params]))
            continue;
        nrows++;
        if (strcmp(row[c->check], "skip") == 0) {
            nskip++;
            reason = row[c->note];
            bad_skip += !*row[c->note];
            continue;
        }
        if (strcmp(row[c->check], "pass") != 0 || !(median_of(t, c, r) > 0)) {
            printf("# nccl %s: bytes %s mode %s: check '%s' median_us '%s' note '%s'\n", label, row[c->bytes], row[c->mode], row[c->check], row[c->median], row[c->note]);
            bad++;
            continue;
        }
        size_t bytes = strtoull(row[c->bytes], NULL, 10);
        for (int s = 0; s < NSIZES; s++)
            for (int m = 0; m < NMODES; m++)
                if (bytes == sizes[s] && strcmp(row[c->mode], modes[m]) == 0)
                    covered[s][m] = 1;
    }
    tap_ok(nrows > 0, "nccl %s has rows (%zu)", label, nrows);
    if (nrows == 0)
        return 0;
    int declined = nrows > 0 && nskip == nrows;
    if (declined) {
        tap_ok(bad_skip == 0, "nccl %s declined, with a reason in note: %s", label, reason);
        if (np == 1 || !*v)
            tap_ok(np == 1 && *v, "nccl %s is expected to %s on %d rank(s)", label, *v ? "decline" : "run", np);
        return 0;
    }
    int all = 1;
    for (int s = 0; s < NSIZES; s++)
        for (int m = 0; m < NMODES; m++)
            all &= covered[s][m];
    tap_ok(bad == 0 && nskip == 0 && all, "nccl %s ran: check=pass and median_us > 0 at 1K, 43008, 1M x eager, graph, context", label);
    if (np == 1)
        tap_ok(!*v, "nccl %s: on one rank only the auto variant runs (forced ones decline)", label);
    return 1;
}

static void check_noop(const arb_table_t *t, const cols_t *c)
{
    for (int s = 0; s < NSIZES; s++) {
        double med[NMODES] = {-1, -1, -1};
        int failed = 0;
        for (size_t r = 0; r < t->nrows; r++) {
            char **row = t->rows[r];
            if (strcmp(row[c->impl], "noop") != 0 || strtoull(row[c->bytes], NULL, 10) != sizes[s])
                continue;
            failed |= strcmp(row[c->check], "fail") == 0;
            for (int m = 0; m < NMODES; m++)
                if (strcmp(row[c->mode], modes[m]) == 0)
                    med[m] = median_of(t, c, r);
        }
        tap_ok(!failed && med[0] > 0 && med[1] > 0 && med[2] >= 0, "noop %zu B: rows in all modes, none failed (eager %.3f us, graph %.3f us, context %.3f us)", sizes[s], med[0], med[1], med[2]);
        tap_ok(med[1] > 0 && med[1] < med[0], "noop %zu B: graph median below eager median", sizes[s]);
    }
}

static int check_csv(const char *csv, const char *log, int np, const char *dtype);

int main(int argc, char **argv)
{
    const char *arbench = NULL, *mpirun = NULL, *dtype = NULL, *workdir = NULL;
    const char *check_only = NULL, *log_only = NULL;
    int np = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--arbench") == 0) arbench = argv[i + 1];
        else if (strcmp(argv[i], "--mpirun") == 0) mpirun = argv[i + 1];
        else if (strcmp(argv[i], "--np") == 0) np = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--dtype") == 0) dtype = argv[i + 1];
        else if (strcmp(argv[i], "--workdir") == 0) workdir = argv[i + 1];
        else if (strcmp(argv[i], "--check-only") == 0) check_only = argv[i + 1];
        else if (strcmp(argv[i], "--log") == 0) log_only = argv[i + 1];
    }
    arb_loaded_plugin_t nccl;
    char lerr[8192];
    if (arb_plugin_load("nccl", &nccl, lerr, sizeof lerr) != ARB_OK || !nccl.plugin->variants) {
        tap_ok(0, "the nccl plugin loads and lists its default variants: %s", lerr);
        return tap_done();
    }
    variants = nccl.plugin->variants;
    if (check_only && np >= 1 && dtype)
        return check_csv(check_only, log_only, np, dtype);
    if (!arbench || !mpirun || np < 1 || !dtype || !workdir) {
        fprintf(stderr, "usage: %s --arbench PATH --mpirun PATH --np N --dtype bf16|fp32 --workdir DIR\n       %s --check-only CSV --np N --dtype bf16|fp32 [--log LOG]\n", argv[0], argv[0]);
        return 2;
    }
    int ndev = 0;
    cudaError_t ce = cudaGetDeviceCount(&ndev);
    if (ce != cudaSuccess || ndev == 0) {
        printf("1..0 # SKIP no CUDA device visible: %s\n", ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
        return 77;
    }
    if (ndev < np) {
        printf("1..0 # SKIP %d ranks need %d GPUs, %d visible\n", np, np, ndev);
        return 77;
    }

    char csv[4096], log[4096], npstr[16];
    snprintf(csv, sizeof csv, "%s/nccl-sweep-np%d-%s.csv", workdir, np, dtype);
    snprintf(log, sizeof log, "%s/nccl-sweep-np%d-%s.log", workdir, np, dtype);
    snprintf(npstr, sizeof npstr, "%d", np);
    unlink(csv); /* the writer appends to an existing file with the same header */
    if (np >= 2) {
        setenv("NCCL_DEBUG", "INFO", 1);
        setenv("NCCL_DEBUG_SUBSYS", "ENV", 1);
    }
    char *cmd[] = {(char *)mpirun, "--allow-run-as-root", "--oversubscribe", "-np", npstr,
                   (char *)arbench, "sweep", "--impl", "nccl,noop", "--sizes", "1K,43008,1M",
                   "--modes", "eager,graph,context", "--dtype", (char *)dtype, "--iters", "50",
                   "--out", csv, NULL};
    int rc = run_logged(cmd, log);
    tap_ok(rc == 0, "arbench sweep exited %d (log: %s)", rc, log);
    if (rc != 0)
        print_log_tail(log);
    return check_csv(csv, np >= 2 ? log : NULL, np, dtype);
}

/* The checks on a finished sweep's CSV; log (NULL: skip) is its NCCL_DEBUG=INFO output. */
static int check_csv(const char *csv, const char *log, int np, const char *dtype)
{
    arb_table_t t;
    char err[1024];
    if (arb_table_read(csv, &t, err, sizeof err) != 0) {
        tap_ok(0, "read %s: %s", csv, err);
        return tap_done();
    }
    static const char *const required[] = {"impl", "params", "mode", "bytes", "dtype", "check", "note", "median_us", "ranks", NULL};
    if (arb_table_require(&t, required, csv, err, sizeof err) != 0) {
        tap_ok(0, "%s", err);
        arb_table_free(&t);
        return tap_done();
    }
    cols_t c = {
        .impl = arb_table_col(&t, "impl"), .params = arb_table_col(&t, "params"),
        .mode = arb_table_col(&t, "mode"), .bytes = arb_table_col(&t, "bytes"),
        .dtype = arb_table_col(&t, "dtype"), .check = arb_table_col(&t, "check"),
        .note = arb_table_col(&t, "note"), .median = arb_table_col(&t, "median_us"),
        .ranks = arb_table_col(&t, "ranks"),
    };
    size_t wrong_meta = 0;
    for (size_t r = 0; r < t.nrows; r++)
        wrong_meta += atoi(t.rows[r][c.ranks]) != np || strcmp(t.rows[r][c.dtype], dtype) != 0;
    tap_ok(t.nrows > 0 && wrong_meta == 0, "%zu rows, all with ranks=%d and dtype=%s", t.nrows, np, dtype);

    int ran[64] = {0};
    for (int v = 0; variants[v] && v < 64; v++)
        ran[v] = check_variant(&t, &c, variants[v], np);
    check_noop(&t, &c);

    /* NCCL logs "NCCL_ALGO set by environment to X" when its tuning model reads the
     * variable at communicator init: proof that the per-variant setenv reached NCCL
     * (and was not cached from an earlier communicator in the same process). */
    if (log) {
        for (int v = 1; variants[v] && v < 64; v++) {
            if (!ran[v])
                continue;
            /* The needles end the line, so "to LL" does not match "to LL128". */
            char algo[64], proto[64];
            const char *a = strstr(variants[v], "algo=") + 5, *p = strstr(variants[v], "proto=") + 6;
            snprintf(algo, sizeof algo, "NCCL_ALGO set by environment to %.*s\n", (int)strcspn(a, ","), a);
            snprintf(proto, sizeof proto, "NCCL_PROTO set by environment to %s\n", p);
            tap_ok(log_contains(log, algo) && log_contains(log, proto), "NCCL's init log shows NCCL_ALGO and NCCL_PROTO of %s", variants[v]);
        }
    }
    arb_table_free(&t);
    return tap_done();
}
