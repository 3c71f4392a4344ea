/* SPDX-License-Identifier: MIT */
/*
 * The instance API (src/runtime/instance.h) on host memory under mpirun: gating and its
 * reasons, init failures agreed across ranks, the allocation policy, an exact
 * all-reduce, and the composed fused op (mpi-host has no fused kernel) checked
 * against the float64 reference on every rank.
 * usage: mpirun -np N test_instance MPI_HOST_MODULE [test...]
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/instance.h"
#include "rmsnorm/rmsnorm.h"
#include "sweep/runner.h"
#include "tap.h"

static arb_mpi_t g_mpi;
static arb_loaded_plugin_t g_lp;

static int agree_max(int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static arb_use_t host_use(arb_op_t op)
{
    return (arb_use_t){.op = op, .dtype = ARB_DTYPE_BF16, .mode = ARB_MODE_EAGER, .max_bytes = 1 << 20,
                       .max_tokens = op == ARB_OP_ALLREDUCE_RMSNORM ? 4 : 0, .hidden = 7168, .cuda_device = -1};
}

static void t_gate(void)
{
    char why[512];
    arb_inst_t *in = (arb_inst_t *)1;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    u.cuda_device = 0;
    TAP_EQ_INT(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why), ARB_DECLINE);
    TAP_CHECK(in == NULL);
    TAP_HAS_STR(why, "works on host memory");
    u = host_use(ARB_OP_ALLREDUCE);
    u.mode = ARB_MODE_GRAPH;
    TAP_EQ_INT(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why), ARB_DECLINE);
    TAP_HAS_STR(why, "graph mode needs a GPU backend");

    u = host_use(ARB_OP_ALLREDUCE_RMSNORM);
    TAP_REQUIRE(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why) == ARB_OK);
    TAP_EQ_INT(arb_inst_gate(in, ARB_MODE_EAGER, ARB_FUSION_COMPOSED, why, sizeof why), ARB_OK);
    TAP_EQ_INT(arb_inst_gate(in, ARB_MODE_CONTEXT, ARB_FUSION_COMPOSED, why, sizeof why), ARB_DECLINE);
    TAP_HAS_STR(why, "context mode needs a GPU backend");
    TAP_EQ_INT(arb_inst_gate(in, ARB_MODE_EAGER, ARB_FUSION_PLUGIN, why, sizeof why), ARB_DECLINE);
    TAP_HAS_STR(why, "mpi-host has no fused allreduce_rmsnorm");
    TAP_EQ_INT(arb_inst_has_fused(in), 0);
    TAP_EQ_STR(arb_inst_describe(in), "transport=mpi,memory=host");
    TAP_EQ_INT(arb_inst_info(in)->nranks, g_mpi.nranks);
    TAP_EQ_U64(arb_inst_info(in)->max_bytes, 4u * 7168u * 2u);
    arb_inst_close(in);
}

static void t_init_failure_agreed(void)
{
    char why[512] = "";
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    TAP_EQ_INT(arb_inst_open(&g_mpi, &g_lp, "bogus=1", &u, &in, why, sizeof why), ARB_ERR_INVALID);
    TAP_CHECK(in == NULL);
    TAP_HAS_STR(why, "item 'bogus=1': expected algo=allreduce|reduce-bcast");
}

/* A decline on one rank only: every rank declines, with that rank's reason. */
static void t_one_rank_declines(void)
{
    if (g_mpi.nranks < 2)
        TAP_SKIP("needs 2 ranks");
    char why[512] = "";
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    u.cuda_device = g_mpi.rank == 1 ? 0 : -1;
    TAP_EQ_INT(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why), ARB_DECLINE);
    TAP_CHECK(in == NULL);
    TAP_HAS_STR(why, "this use is on CUDA device 0");
}

static void t_alloc(void)
{
    char why[512];
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    TAP_REQUIRE(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why) == ARB_OK);
    void *a = NULL, *b = NULL;
    TAP_EQ_INT(arb_inst_alloc(in, 1000, &a, why, sizeof why), ARB_OK);
    TAP_EQ_INT(arb_inst_alloc(in, 3, &b, why, sizeof why), ARB_OK);
    TAP_REQUIRE(a && b);
    TAP_EQ_U64((uintptr_t)a % 256, 0);
    TAP_EQ_U64((uintptr_t)b % 256, 0);
    size_t nonzero = 0;
    for (size_t i = 0; i < 1000; i++)
        nonzero += ((unsigned char *)a)[i] != 0;
    TAP_EQ_U64(nonzero, 0);
    void *z = (void *)1;
    TAP_EQ_INT(arb_inst_alloc(in, 0, &z, why, sizeof why), ARB_ERR_INVALID);
    TAP_CHECK(z == NULL);
    TAP_HAS_STR(why, "0 bytes");
    arb_inst_free(in, a);
    arb_inst_close(in); /* frees b */
}

/* Exact: small integers sum exactly in bf16 and fp32 (runner.h's check pattern). */
static void allreduce_exact(arb_dtype_t dt)
{
    char why[512];
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    u.dtype = dt;
    TAP_REQUIRE(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why) == ARB_OK);
    size_t count = 4099, esz = arb_dtype_size(dt);
    unsigned char *send = NULL, *recv = NULL;
    TAP_REQUIRE(arb_inst_alloc(in, count * esz, (void **)&send, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, count * esz, (void **)&recv, why, sizeof why) == ARB_OK);
    for (size_t i = 0; i < count; i++) {
        float v = (float)arb_pattern(i, g_mpi.rank, 5);
        if (dt == ARB_DTYPE_FP32)
            memcpy(send + 4 * i, &v, 4);
        else {
            uint16_t h = arb_f32_to_bf16(v);
            memcpy(send + 2 * i, &h, 2);
        }
    }
    TAP_EQ_INT(arb_inst_allreduce(in, send, recv, count, dt, NULL, why, sizeof why), ARB_OK);
    size_t wrong = 0;
    for (size_t i = 0; i < count; i++) {
        int expect = 0;
        for (int r = 0; r < g_mpi.nranks; r++)
            expect += arb_pattern(i, r, 5);
        float got;
        if (dt == ARB_DTYPE_FP32)
            memcpy(&got, recv + 4 * i, 4);
        else {
            uint16_t h;
            memcpy(&h, recv + 2 * i, 2);
            got = arb_bf16_to_f32(h);
        }
        wrong += got != (float)expect;
    }
    TAP_EQ_U64(wrong, 0);
    TAP_EQ_INT(arb_inst_query_error(in, why, sizeof why), ARB_OK);
    arb_inst_close(in);
}

static void t_allreduce_bf16(void) { allreduce_exact(ARB_DTYPE_BF16); }
static void t_allreduce_fp32(void) { allreduce_exact(ARB_DTYPE_FP32); }

/* The composed fused op on host memory: x in the second slot of a two-slot buffer (so
 * the scratch offset follows x's), checked against the float64 reference. */
static void composed_case(unsigned tokens, unsigned hidden)
{
    char why[512];
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE_RMSNORM);
    u.max_tokens = tokens;
    u.hidden = hidden;
    TAP_REQUIRE(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why) == ARB_OK);
    size_t n = (size_t)tokens * hidden, slot = (n * 2 + 64 + 255) & ~(size_t)255;
    unsigned char *x = NULL;
    uint16_t *res = NULL, *out = NULL, *w = NULL;
    TAP_REQUIRE(arb_inst_alloc(in, 2 * slot, (void **)&x, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, n * 2, (void **)&res, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, n * 2, (void **)&out, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_inst_alloc(in, hidden * 2, (void **)&w, why, sizeof why) == ARB_OK);
    int nr = g_mpi.nranks;
    uint16_t **xs = calloc((size_t)nr, sizeof *xs), *res_in = malloc(n * 2);
    double *ref_res = malloc(n * sizeof(double)), *ref_out = malloc(n * sizeof(double));
    TAP_REQUIRE(xs && res_in && ref_res && ref_out);
    for (int r = 0; r < nr; r++) {
        xs[r] = malloc(n * 2);
        TAP_REQUIRE(xs[r]);
        arb_fill_bf16_exact_partials(xs[r], n, 1000u + (unsigned)r);
    }
    arb_fill_bf16_random(res_in, n, 77, 1.0f);
    arb_fill_bf16_random(w, hidden, 78, 1.0f);
    memcpy(res, res_in, n * 2);
    uint16_t *x1 = (uint16_t *)(x + slot + 16);
    memcpy(x1, xs[g_mpi.rank], n * 2);
    arb_rmsnorm_args_t a = {x1, res, w, out, tokens, hidden, 1e-6f};

    arb_fusion_t used = ARB_FUSION_AUTO;
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_PLUGIN, NULL, &used, why, sizeof why), ARB_DECLINE);
    TAP_HAS_STR(why, "has no fused allreduce_rmsnorm");
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_AUTO, NULL, &used, why, sizeof why), ARB_OK);
    TAP_EQ_INT(used, ARB_FUSION_COMPOSED);
    arb_rmsnorm_reference((const uint16_t *const *)xs, nr, res_in, w, tokens, hidden, 1e-6, ref_res, ref_out);
    TAP_EQ_U64(arb_rmsnorm_count_wrong(res, ref_res, n, ARB_RMSNORM_RTOL), 0);
    TAP_EQ_U64(arb_rmsnorm_count_wrong(out, ref_out, n, ARB_RMSNORM_RTOL), 0);
    /* A broken composed path (sum never added, or the norm skipped) must be caught. */
    TAP_CHECK(arb_rmsnorm_count_wrong(res_in, ref_res, n, ARB_RMSNORM_RTOL) > 0);
    TAP_CHECK(arb_rmsnorm_count_wrong(res, ref_out, n, ARB_RMSNORM_RTOL) > 0);

    /* Again by the explicit composed path: the residual accumulates a second sum. */
    memcpy(res_in, res, n * 2);
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_COMPOSED, NULL, &used, why, sizeof why), ARB_OK);
    arb_rmsnorm_reference((const uint16_t *const *)xs, nr, res_in, w, tokens, hidden, 1e-6, ref_res, ref_out);
    TAP_EQ_U64(arb_rmsnorm_count_wrong(out, ref_out, n, ARB_RMSNORM_RTOL), 0);

    arb_rmsnorm_args_t big = a;
    big.tokens = 1000 * tokens;
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &big, ARB_FUSION_AUTO, NULL, &used, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "exceeds the instance's scratch");
    for (int r = 0; r < nr; r++)
        free(xs[r]);
    free(xs);
    free(res_in);
    free(ref_res);
    free(ref_out);
    arb_inst_close(in);
}

static void t_composed_3x7168(void) { composed_case(3, 7168); }
static void t_composed_2x7(void) { composed_case(2, 7); }

static void t_allreduce_on_fused_instance(void)
{
    char why[512];
    arb_inst_t *in = NULL;
    arb_use_t u = host_use(ARB_OP_ALLREDUCE);
    TAP_REQUIRE(arb_inst_open(&g_mpi, &g_lp, "", &u, &in, why, sizeof why) == ARB_OK);
    arb_rmsnorm_args_t a = {0};
    TAP_EQ_INT(arb_inst_allreduce_rmsnorm(in, &a, ARB_FUSION_AUTO, NULL, NULL, why, sizeof why), ARB_ERR_INVALID);
    TAP_HAS_STR(why, "opened for allreduce");
    arb_inst_close(in);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (argc < 2) {
        fprintf(stderr, "usage: test_instance MPI_HOST_MODULE [test...]\n");
        MPI_Finalize();
        return 2;
    }
    char err[8192];
    if (arb_mpi_bootstrap(&g_mpi) != 0 || arb_plugin_load(argv[1], &g_lp, err, sizeof err) != 0) {
        fprintf(stderr, "cannot set up: %s\n", err);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    tap_set_agree(agree_max, g_mpi.rank != 0);
    static const tap_test_t tests[] = {
        {"gate", t_gate},
        {"init_failure_agreed", t_init_failure_agreed},
        {"one_rank_declines", t_one_rank_declines},
        {"alloc", t_alloc},
        {"allreduce_bf16", t_allreduce_bf16},
        {"allreduce_fp32", t_allreduce_fp32},
        {"composed_3x7168", t_composed_3x7168},
        {"composed_2x7", t_composed_2x7},
        {"allreduce_on_fused_instance", t_allreduce_on_fused_instance},
    };
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc - 1, argv + 1);
    arb_plugin_unload(&g_lp);
    arb_mpi_free(&g_mpi);
    MPI_Finalize();
    return rc;
}
