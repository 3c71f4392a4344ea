/* SPDX-License-Identifier: MIT */
/*
 * --tune on the host backend under mpirun: the sweep measures exactly the call-site
 * shapes (1 and 3 tokens x 64), the profile built from it covers them, and a site of
 * each shape is served from it (not by the fallback) by the host backend that won there;
 * a rerun replaces the sweep file.
 * usage: mpirun -np N test_tune_mpi DIR
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "results/results.h"
#include "sites/site_choice.h"
#include "sites/site_registry_inst.h"
#include "tap.h"
#include "sites/tune.h"

static arb_mpi_t g_mpi;
static const char *g_dir;

static int agree_max(int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static void t_paths(void)
{
    char a[256], b[256];
    arb_tune_paths("results/engine-x.csv", a, sizeof a, b, sizeof b);
    TAP_EQ_STR(a, "results/engine-x.tune.csv");
    TAP_EQ_STR(b, "results/engine-x.profile.csv");
    arb_tune_paths("out", a, sizeof a, b, sizeof b);
    TAP_EQ_STR(a, "out.tune.csv");
}

/* The sweep prints its progress and table on stdout: send it to stderr, so that stdout
 * stays TAP. */
static arb_status_t tune_quietly(const arb_tune_request_t *rq, char **argv, arb_profile_t *p, char *profile,
                                 size_t plen, char *why, size_t wlen)
{
    fflush(stdout);
    int saved = dup(1);
    dup2(2, 1);
    arb_status_t st = arb_engine_tune(&g_mpi, rq, 1, argv, p, profile, plen, why, wlen);
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
    return st;
}

static size_t sweep_rows(const char *path)
{
    arb_table_t t;
    char err[512];
    if (arb_table_read(path, &t, err, sizeof err))
        return 0;
    size_t n = t.nrows;
    arb_table_free(&t);
    return n;
}

static void t_tune_host(void)
{
    char results[1024], profile[1024], why[2048], sweep_csv[1024], unused[1024];
    snprintf(results, sizeof results, "%s/engine.csv", g_dir);
    static const unsigned tokens[] = {1, 3};
    /* host backends: the all-reduce alone (their fused op is composed anyway) */
    arb_tune_request_t rq = {.tokens = tokens, .ntokens = 2, .hidden = 64, .modes = 1u << ARB_MODE_EAGER,
                             .op = ARB_OP_ALLREDUCE, .host_only = 1, .results = results};
    char *argv[] = {"test_tune_mpi", NULL};
    arb_profile_t p;
    arb_status_t st = tune_quietly(&rq, argv, &p, profile, sizeof profile, why, sizeof why);
    if (st != ARB_OK)
        tap_diag("%s", why);
    TAP_REQUIRE(st == ARB_OK);
    arb_tune_paths(results, sweep_csv, sizeof sweep_csv, unused, sizeof unused);
    TAP_CHECK(access(profile, R_OK) == 0 && access(sweep_csv, R_OK) == 0);
    size_t rows = sweep_rows(sweep_csv);
    TAP_CHECK(rows > 0);
    TAP_REQUIRE(p.n > 0);
    for (unsigned i = 0; i < 2; i++) {
        arb_site_t s = {.name = i ? "verify.attn" : "decode.attn", .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = tokens[i],
                        .hidden = 64, .mode = ARB_MODE_EAGER, .ranks = g_mpi.nranks, .nodes = g_mpi.nnodes,
                        .fabric = p.e[0].fabric};
        arb_choice_t c;
        TAP_REQUIRE(arb_site_choose(&p, profile, &s, "mpi-host", &c, why, sizeof why) == ARB_OK);
        TAP_CHECK(c.from_profile);
        /* the faster host backend of the sweep wins: mpi-host or ops-host (their medians at 64
         * x bf16 are within noise of each other), and the choice is the profile's entry */
        const int host = strcmp(c.impl, "mpi-host") == 0 || strcmp(c.impl, "ops-host") == 0;
        if (!host)
            tap_diag("%s: chose '%s', expected a host backend (mpi-host or ops-host)", s.name, c.impl);
        TAP_CHECK(host);
        TAP_EQ_STR(c.impl, c.entry->impl);
        TAP_EQ_INT(c.fusion, ARB_FUSION_COMPOSED); /* an allreduce entry serving a fused site */
        TAP_EQ_U64(c.entry->min_bytes <= tokens[i] * 128u && tokens[i] * 128u <= c.entry->max_bytes, 1);
        TAP_EQ_STR(c.entry->mode, "eager");
        TAP_EQ_INT(c.entry->ranks, g_mpi.nranks);
        if (!c.from_profile)
            tap_diag("%s", c.note);
    }
    /* the tuned choice opens through the registry: mpi-host takes its own describe
     * string back as params, so the site runs on the tuned choice itself */
    static arb_site_registry_t reg;
    arb_site_registry_init(&reg, "mpi-host");
    arb_site_t s = {.name = "decode.attn", .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = 1, .hidden = 64,
                    .mode = ARB_MODE_EAGER, .ranks = g_mpi.nranks, .nodes = g_mpi.nnodes, .fabric = p.e[0].fabric};
    arb_choice_t c;
    size_t slot;
    TAP_REQUIRE(arb_site_choose(&p, profile, &s, "mpi-host", &c, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_site_registry_add(&reg, &s, &c, &slot, why, sizeof why) == ARB_OK);
    arb_reg_plugins_t pl;
    arb_inst_backend_t b;
    arb_reg_plugins_init(&pl, &g_mpi, &b);
    TAP_CHECK(arb_site_registry_open(&reg, &b, -1, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_site_registry_instance(&reg, slot, NULL) != NULL);
    TAP_CHECK(strstr(arb_site_registry_choice(&reg, slot)->note, "refused") == NULL);
    if (g_mpi.rank == 0)
        tap_diag("%s", arb_site_registry_choice(&reg, slot)->note);
    arb_site_registry_close(&reg);
    arb_reg_plugins_unload(&pl);
    arb_profile_free(&p);
    /* again: the sweep file is replaced, so it has as many rows as before, not twice */
    TAP_REQUIRE(tune_quietly(&rq, argv, &p, profile, sizeof profile, why, sizeof why) == ARB_OK);
    TAP_EQ_U64(sweep_rows(sweep_csv), rows);
    arb_profile_free(&p);
    rq.ntokens = 0;
    TAP_EQ_INT(tune_quietly(&rq, argv, &p, profile, sizeof profile, why, sizeof why), ARB_ERR_INVALID);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2 || arb_mpi_bootstrap(&g_mpi) != 0) {
        fprintf(stderr, "usage: mpirun -np N test_tune_mpi DIR\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    g_dir = argv[1];
    tap_set_agree(agree_max, g_mpi.rank != 0);
    static const tap_test_t tests[] = {{"paths", t_paths}, {"tune_host", t_tune_host}};
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc - 1, argv + 1);
    arb_mpi_free(&g_mpi);
    MPI_Finalize();
    return rc;
}
