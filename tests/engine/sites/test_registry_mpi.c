/* SPDX-License-Identifier: MIT */
/*
 * The site registry on the real instance API (site_registry_inst.c -> src/runtime/instance.h)
 * under mpirun with the host backend: a profile picks mpi-host for decode and verify
 * and noop (device memory only: it declines here) for a prefill range; a site without
 * an entry falls back to mpi-host. The registry must open mpi-host once for all of
 * them, sized for the largest, move the declined sites with a note, and every site's
 * fused call must match the float64 reference on every rank.
 * usage: mpirun -np N test_registry_mpi [test...]  (plugins found as the sweep finds them)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rmsnorm/rmsnorm.h"
#include "sites/site_registry_inst.h"
#include "tap.h"
#include "run/top2.h"

static arb_mpi_t g_mpi;

static int agree_max(int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

enum { HIDDEN = 448 };

/* One fused call through the site's instance, checked against the reference. */
static void check_site(arb_site_registry_t *reg, size_t slot, unsigned tokens)
{
    char why[512];
    arb_fusion_t fz;
    arb_inst_t *in = arb_site_registry_instance(reg, slot, &fz);
    TAP_REQUIRE(in != NULL);
    size_t n = (size_t)tokens * HIDDEN;
    uint16_t *x = NULL, *res = NULL, *out = NULL, *w = NULL;
    TAP_REQUIRE(arb_inst_alloc(in, n * 2, (void **)&x, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, n * 2, (void **)&res, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, n * 2, (void **)&out, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, HIDDEN * 2, (void **)&w, why, sizeof why) == ARB_OK);
    int nr = g_mpi.nranks;
    uint16_t **xs = calloc((size_t)nr, sizeof *xs), *res_in = malloc(n * 2);
    double *ref_res = malloc(n * sizeof(double)), *ref_out = malloc(n * sizeof(double));
    TAP_REQUIRE(xs && res_in && ref_res && ref_out);
    for (int r = 0; r < nr; r++) {
        xs[r] = malloc(n * 2);
        TAP_REQUIRE(xs[r]);
        arb_fill_bf16_exact_partials(xs[r], n, 500u + (unsigned)r + tokens);
    }
    arb_fill_bf16_random(res_in, n, 91 + tokens, 1.0f);
    arb_fill_bf16_random(w, HIDDEN, 92, 1.0f);
    memcpy(res, res_in, n * 2);
    memcpy(x, xs[g_mpi.rank], n * 2);
    arb_rmsnorm_args_t a = {x, res, w, out, tokens, HIDDEN, 1e-6f};
    arb_fusion_t used = ARB_FUSION_AUTO;
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &a, fz, NULL, &used, why, sizeof why), ARB_OK);
    TAP_EQ_INT(used, ARB_FUSION_COMPOSED);
    arb_rmsnorm_reference((const uint16_t *const *)xs, nr, res_in, w, tokens, HIDDEN, 1e-6, ref_res, ref_out);
    TAP_EQ_U64(arb_rmsnorm_count_wrong(out, ref_out, n, ARB_RMSNORM_RTOL), 0);
    TAP_EQ_U64(arb_rmsnorm_count_wrong(res, ref_res, n, ARB_RMSNORM_RTOL), 0);
    for (int r = 0; r < nr; r++)
        free(xs[r]);
    free(xs);
    free(res_in);
    free(ref_res);
    free(ref_out);
    arb_inst_free(in, x);
    arb_inst_free(in, res);
    arb_inst_free(in, out);
    arb_inst_free(in, w);
}

static void t_registry_host(void)
{
    char csv[2048], why[1024];
    int N = g_mpi.nranks;
    snprintf(csv, sizeof csv,
             "schema,fabric,ranks,nodes,dtype,op,mode,min_bytes,max_bytes,impl,params,fusion\n"
             "1,host,%d,0,bf16,allreduce_rmsnorm,eager,0,4000,mpi-host,,unfused\n"
             "1,host,%d,0,bf16,allreduce_rmsnorm,eager,4001,60000,noop,,fused\n", N, N);
    arb_profile_t prof;
    TAP_REQUIRE(arb_profile_read_mem(csv, strlen(csv), "host.csv", &prof, why, sizeof why) == 0);
    static const struct {
        const char *name;
        unsigned tokens;
    } sites[] = {{"decode.attn", 1}, {"verify.attn", 3}, {"prefill.attn", 16}, {"big.attn", 128}};
    static arb_site_registry_t reg;
    arb_site_registry_init(&reg, "mpi-host");
    size_t slot[4];
    for (int i = 0; i < 4; i++) {
        arb_site_t s = {.name = sites[i].name, .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = sites[i].tokens, .hidden = HIDDEN,
                        .mode = ARB_MODE_EAGER, .ranks = N, .nodes = g_mpi.nnodes, .fabric = "host"};
        arb_choice_t c;
        TAP_REQUIRE(arb_site_choose(&prof, "host.csv", &s, "mpi-host", &c, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_site_registry_add(&reg, &s, &c, &slot[i], why, sizeof why) == ARB_OK);
    }
    TAP_EQ_STR(arb_site_registry_choice(&reg, slot[2])->impl, "noop"); /* 16 x 448 x 2 = 14336 B */
    TAP_CHECK(!arb_site_registry_choice(&reg, slot[3])->from_profile);  /* 114688 B: no entry */
    arb_reg_plugins_t pl;
    arb_inst_backend_t b;
    arb_reg_plugins_init(&pl, &g_mpi, &b);
    TAP_REQUIRE(arb_site_registry_open(&reg, &b, -1, why, sizeof why) == ARB_OK);
    /* noop declined (device memory), so every site is on the one mpi-host instance */
    const arb_choice_t *c2 = arb_site_registry_choice(&reg, slot[2]);
    TAP_EQ_STR(c2->impl, "mpi-host");
    TAP_HAS_STR(c2->note, "declined");
    const char *reason = strstr(c2->note, "declined (");
    TAP_CHECK(strstr(c2->note, "noop") && reason && reason[10] != ')' && reason[10] != ' '); /* with its reason */
    arb_inst_t *one = arb_site_registry_instance(&reg, slot[0], NULL);
    TAP_REQUIRE(one != NULL);
    for (int i = 1; i < 4; i++)
        TAP_CHECK(arb_site_registry_instance(&reg, slot[i], NULL) == one);
    TAP_EQ_U64(arb_inst_info(one)->max_bytes, 128u * HIDDEN * 2u); /* sized for the largest site */
    for (int i = 0; i < 4; i++)
        check_site(&reg, slot[i], sites[i].tokens);
    if (g_mpi.rank == 0)
        arb_site_registry_print(&reg, stderr);
    arb_site_registry_close(&reg);
    arb_reg_plugins_unload(&pl);
    arb_profile_free(&prof);
}

static void t_unknown_plugin_declines_everywhere(void)
{
    char why[1024];
    static arb_site_registry_t reg;
    arb_site_registry_init(&reg, "mpi-host");
    arb_site_t s = {.name = "decode.ffn", .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = 1, .hidden = HIDDEN,
                    .mode = ARB_MODE_EAGER, .ranks = g_mpi.nranks, .fabric = "host"};
    arb_choice_t c;
    TAP_REQUIRE(arb_choice_parse("no-such-plugin:x=1", &c, why, sizeof why) == ARB_OK);
    size_t slot;
    TAP_REQUIRE(arb_site_registry_add(&reg, &s, &c, &slot, why, sizeof why) == ARB_OK);
    arb_reg_plugins_t pl;
    arb_inst_backend_t b;
    arb_reg_plugins_init(&pl, &g_mpi, &b);
    TAP_REQUIRE(arb_site_registry_open(&reg, &b, -1, why, sizeof why) == ARB_OK);
    TAP_EQ_STR(arb_site_registry_choice(&reg, slot)->impl, "mpi-host");
    TAP_HAS_STR(arb_site_registry_choice(&reg, slot)->note, "no-such-plugin");
    TAP_CHECK(arb_site_registry_instance(&reg, slot, NULL) != NULL);
    arb_site_registry_close(&reg);
    arb_reg_plugins_unload(&pl);
}

/* The distributed top two (the A/B margin): each rank holds a vocabulary shard. */
static void t_top2_over_ranks(void)
{
    enum { V = 901, T = 2 };
    static float v[T][V];
    for (int t = 0; t < T; t++)
        for (int j = 0; j < V; j++)
            v[t][j] = (float)((j * 37 + t * 11) % 97); /* value 96 at several indices: ties */
    int N = g_mpi.nranks, per = V / N, base = g_mpi.rank * per, n = g_mpi.rank == N - 1 ? V - base : per;
    arb_top2_t mine[T], got[T];
    for (int t = 0; t < T; t++)
        mine[t] = arb_top2_local(v[t] + base, (size_t)n, base);
    TAP_REQUIRE(arb_top2_allreduce(&g_mpi, mine, got, T) == 0);
    for (int t = 0; t < T; t++) {
        arb_top2_t whole = arb_top2_local(v[t], V, 0);
        TAP_EQ_INT(got[t].i1, whole.i1);
        TAP_EQ_INT(got[t].i2, whole.i2);
        TAP_CHECK(got[t].v1 == 96.0f && got[t].v2 == 96.0f);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (arb_mpi_bootstrap(&g_mpi) != 0) {
        fprintf(stderr, "cannot set up MPI\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    tap_set_agree(agree_max, g_mpi.rank != 0);
    static const tap_test_t tests[] = {
        {"registry_host", t_registry_host},
        {"unknown_plugin_declines_everywhere", t_unknown_plugin_declines_everywhere},
        {"top2_over_ranks", t_top2_over_ranks},
    };
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
    arb_mpi_free(&g_mpi);
    MPI_Finalize();
    return rc;
}
