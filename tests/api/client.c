/* SPDX-License-Identifier: MIT */
/*
 * A server's view of libarbench: compiled by api_test.sh against `pkg-config arbench` of a
 * temporary install, run under mpirun on host memory. Exact sums (small integers sum
 * exactly in bf16 and fp32) through the profile's choice, its fallbacks (no entry for the
 * size, a profile of other ranks, an entry naming a reference floor), the fused op against
 * a float64 reference, and the errors (a size over the registered one, a malformed profile).
 * Since API 1.1: a communicator bootstrapped from the caller's allgather (here MPI_Allgather,
 * as a server would pass its own host collectives) served by ops-host, with mpi-host
 * refused there; registered buffers run in place; the NCCL bootstraps refused by this
 * host-only build.
 * usage: mpirun -np N client DIR   (DIR holds api_test.sh's profiles)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arbench/arbench.h>
#include <mpi.h>

#include "tap.h"

static const char *g_dir;
static arbench_comm_t *g_world; /* no profile: the agreement of verdicts across ranks */

static int agree_max(int v)
{
    float f = (float)(v != 0);
    if (arbench_allreduce(g_world, &f, 1, ARBENCH_FP32, NULL, NULL, 0) != ARBENCH_OK)
        return 1;
    return f != 0.0f;
}

static uint16_t bf16_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

static float f32_of(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int value(size_t i, int rank) { return (int)((i * 7 + (size_t)rank * 3) % 17) - 8; }

static arbench_comm_t *open_comm(const char *profile_file, size_t max_bytes)
{
    char path[4096], why[1024];
    arbench_config_t cfg;
    arbench_config_init(&cfg);
    if (profile_file)
        snprintf(path, sizeof path, "%s/%s", g_dir, profile_file);
    cfg.profile = profile_file ? path : NULL;
    cfg.fabric = "host";
    cfg.max_bytes = max_bytes;
    cfg.max_tokens = 4;
    cfg.hidden = 96;
    arbench_comm_t *c = NULL;
    if (arbench_comm_create(&cfg, &c, why, sizeof why) != ARBENCH_OK)
        tap_diag("arbench_comm_create(%s): %s", profile_file ? profile_file : "no profile", why);
    return c;
}

/* Wrong elements of one in-place all-reduce of count elements in buf (or a fresh buffer). */
static size_t allreduce_wrong_in(arbench_comm_t *c, void *into, size_t count, arbench_dtype_t dt)
{
    int rank = arbench_comm_rank(c), size = arbench_comm_size(c);
    size_t esz = dt == ARBENCH_FP32 ? 4 : 2, wrong = 0;
    unsigned char *buf = into ? into : malloc(count * esz);
    if (!buf)
        return count;
    for (size_t i = 0; i < count; i++) {
        float v = (float)value(i, rank);
        uint16_t h = bf16_of(v);
        memcpy(buf + i * esz, dt == ARBENCH_FP32 ? (void *)&v : (void *)&h, esz);
    }
    char why[1024];
    if (arbench_allreduce(c, buf, count, dt, NULL, why, sizeof why) != ARBENCH_OK) {
        tap_diag("allreduce of %zu: %s", count, why);
        if (!into)
            free(buf);
        return count;
    }
    for (size_t i = 0; i < count; i++) {
        int expect = 0;
        for (int r = 0; r < size; r++)
            expect += value(i, r);
        float got;
        uint16_t h;
        if (dt == ARBENCH_FP32)
            memcpy(&got, buf + 4 * i, 4);
        else
            memcpy(&h, buf + 2 * i, 2), got = f32_of(h);
        wrong += got != (float)expect;
    }
    if (!into)
        free(buf);
    return wrong;
}

static size_t allreduce_wrong(arbench_comm_t *c, size_t count, arbench_dtype_t dt)
{
    return allreduce_wrong_in(c, NULL, count, dt);
}

static void t_version(void)
{
    TAP_EQ_INT(arbench_api_version(), ARBENCH_API_VERSION);
    TAP_EQ_INT(ARBENCH_API_VERSION_MAJOR, 1);
    TAP_CHECK(arbench_api_version() >= 10100); /* the 1.1 functions below */
}

static void t_no_profile(void)
{
    arbench_comm_t *c = open_comm(NULL, 1 << 20);
    TAP_REQUIRE(c);
    TAP_CHECK(arbench_comm_size(c) >= 1);
    TAP_EQ_U64(allreduce_wrong(c, 4099, ARBENCH_BF16), 0);
    TAP_EQ_U64(allreduce_wrong(c, 4099, ARBENCH_FP32), 0);
    char note[1024];
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 4096, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "no profile entries");
    arbench_comm_destroy(c);
}

/* prof.csv: [0, 8192] mpi-host:algo=reduce-bcast, [8194, 65536] floor (moves nothing). */
static void t_profiled(void)
{
    arbench_comm_t *c = open_comm("prof.csv", 1 << 20);
    TAP_REQUIRE(c);
    char note[1024];
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 4096, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "mpi-host:algo=reduce-bcast from");
    for (int rep = 0; rep < 3; rep++)
        TAP_EQ_U64(allreduce_wrong(c, 2048, ARBENCH_BF16), 0); /* 4096 B, logged once */
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 16384, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "it did not open here");
    TAP_EQ_U64(allreduce_wrong(c, 8192, ARBENCH_BF16), 0); /* the floor's range: never a wrong sum */
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 1 << 19, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "no entry in");
    TAP_HAS_STR(note, "size range");
    TAP_EQ_U64(allreduce_wrong(c, 1 << 18, ARBENCH_BF16), 0);
    TAP_EQ_U64(allreduce_wrong(c, 1000, ARBENCH_FP32), 0);
    arbench_comm_destroy(c);
}

static void t_other_ranks(void)
{
    arbench_comm_t *c = open_comm("other-ranks.csv", 1 << 20);
    TAP_REQUIRE(c);
    char note[1024];
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 4096, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "for its ranks");
    TAP_EQ_U64(allreduce_wrong(c, 2048, ARBENCH_BF16), 0);
    arbench_comm_destroy(c);
}

/* prof.json: the JSON export, one open-ended range. */
static void t_json(void)
{
    arbench_comm_t *c = open_comm("prof.json", 1 << 20);
    TAP_REQUIRE(c);
    char note[1024];
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 1 << 19, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "mpi-host:algo=reduce-bcast from");
    TAP_HAS_STR(note, "[0, max]");
    TAP_EQ_U64(allreduce_wrong(c, 1 << 18, ARBENCH_BF16), 0);
    arbench_comm_destroy(c);
}

static void t_errors(void)
{
    arbench_comm_t *c = open_comm("prof.csv", 4096);
    TAP_REQUIRE(c);
    char why[1024];
    uint16_t *big = calloc(4096, 2);
    TAP_REQUIRE(big);
    TAP_EQ_INT(arbench_allreduce(c, big, 2049, ARBENCH_BF16, NULL, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "over this communicator's registered max_bytes 4096");
    TAP_EQ_INT(arbench_allreduce_rmsnorm(c, big, big, big, big, 5, 96, 1e-6f, NULL, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "expected hidden 96 and 1 to 4 tokens");
    TAP_EQ_INT(arbench_allreduce(c, big, 0, ARBENCH_BF16, NULL, why, sizeof why), ARBENCH_ERR_INVALID);
    free(big);
    arbench_comm_destroy(c);

    arbench_comm_t *bad = (arbench_comm_t *)1;
    arbench_config_t cfg;
    arbench_config_init(&cfg);
    char path[4096];
    snprintf(path, sizeof path, "%s/broken.csv", g_dir);
    cfg.profile = path;
    cfg.fabric = "host";
    TAP_EQ_INT(arbench_comm_create(&cfg, &bad, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_CHECK(bad == NULL);
    TAP_HAS_STR(why, "broken.csv");
    cfg.struct_size = 8;
    TAP_EQ_INT(arbench_comm_create(&cfg, &bad, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "call arbench_config_init first");
    /* Graph capture on host memory: nothing can serve it, and the fallback says why. */
    arbench_config_init(&cfg);
    cfg.fabric = "host";
    cfg.graph = 1;
    TAP_EQ_INT(arbench_comm_create(&cfg, &bad, why, sizeof why), ARBENCH_ERR_DECLINE);
    TAP_CHECK(bad == NULL);
    TAP_HAS_STR(why, "the fallback mpi-host cannot serve allreduce here");
}

/* The fused op: residual exact (small integers), out against float64. */
static void t_rmsnorm(void)
{
    arbench_comm_t *c = open_comm("prof.csv", 1 << 20);
    TAP_REQUIRE(c);
    enum { T = 3, H = 96 };
    int rank = arbench_comm_rank(c), size = arbench_comm_size(c);
    uint16_t x[T * H], res[T * H], w[H], out[T * H];
    double ref_res[T * H];
    for (int i = 0; i < T * H; i++) {
        x[i] = bf16_of((float)value((size_t)i, rank));
        res[i] = bf16_of((float)(i % 5 - 2));
        ref_res[i] = i % 5 - 2;
        for (int r = 0; r < size; r++)
            ref_res[i] += value((size_t)i, r);
    }
    for (int i = 0; i < H; i++)
        w[i] = bf16_of((float)(i % 3 + 1) * 0.5f);
    char why[1024];
    TAP_EQ_INT(arbench_allreduce_rmsnorm(c, x, res, w, out, T, H, 1e-6f, NULL, why, sizeof why), ARBENCH_OK);
    size_t wrong_res = 0, wrong_out = 0;
    for (int t = 0; t < T; t++) {
        double ss = 0;
        for (int i = 0; i < H; i++)
            ss += ref_res[t * H + i] * ref_res[t * H + i];
        double inv = 1.0 / sqrt(ss / H + 1e-6);
        for (int i = 0; i < H; i++) {
            double ref = ref_res[t * H + i] * inv * f32_of(w[i]);
            wrong_res += f32_of(res[t * H + i]) != (float)ref_res[t * H + i];
            wrong_out += fabs(f32_of(out[t * H + i]) - ref) > 1e-2 * fabs(ref) + 1e-3;
        }
    }
    TAP_EQ_U64(wrong_res, 0);
    TAP_EQ_U64(wrong_out, 0);
    char note[1024];
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE_RMSNORM, (size_t)T * H * 2, 0, note, sizeof note), "mpi-host");
    TAP_HAS_STR(note, "mpi-host:algo=allreduce unfused from");
    arbench_comm_destroy(c);
}

/* ---- API 1.1 ---- */

/* The caller's host collectives: MPI_Allgather over the world, counted. */
typedef struct gather_ctx {
    MPI_Comm comm;
    long calls;
} gather_ctx_t;

static int mpi_gather(void *ctx, const void *send, void *recv, size_t bytes)
{
    gather_ctx_t *g = ctx;
    g->calls++;
    return MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, g->comm) == MPI_SUCCESS ? 0 : -1;
}

static arbench_comm_t *open_gather(gather_ctx_t *g, const char *fallback, const char *fabric, const char *profile,
                                   char *why, size_t why_len, arbench_status_t *st)
{
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g->comm = MPI_COMM_WORLD;
    arbench_config_t cfg;
    arbench_config_init(&cfg);
    char path[4096];
    if (profile)
        snprintf(path, sizeof path, "%s/%s", g_dir, profile);
    cfg.profile = profile ? path : NULL;
    cfg.fabric = fabric;
    cfg.fallback = fallback;
    cfg.max_bytes = 1 << 20;
    cfg.max_tokens = 4;
    cfg.hidden = 96;
    arbench_comm_t *c = (arbench_comm_t *)1;
    *st = arbench_comm_create_allgather(&cfg, rank, size, mpi_gather, g, &c, why, why_len);
    return c;
}

static void t_allgather_boot(void)
{
    gather_ctx_t g = {0};
    char why[1024], note[1024];
    arbench_status_t st;
    arbench_comm_t *c = open_gather(&g, NULL, NULL, NULL, why, sizeof why, &st);
    if (st != ARBENCH_OK)
        tap_diag("arbench_comm_create_allgather: %s", why);
    TAP_REQUIRE(st == ARBENCH_OK && c);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    TAP_EQ_INT(arbench_comm_rank(c), rank);
    TAP_EQ_INT(arbench_comm_size(c), size);
    TAP_CHECK(g.calls > 0); /* creation ran over the caller's allgather */
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 4096, 0, note, sizeof note), "ops-host");
    long before = g.calls;
    TAP_EQ_U64(allreduce_wrong(c, 4099, ARBENCH_BF16), 0);
    TAP_EQ_U64(allreduce_wrong(c, 1 << 18, ARBENCH_BF16), 0);
    TAP_EQ_U64(allreduce_wrong(c, 3000, ARBENCH_FP32), 0);
    TAP_CHECK(g.calls > before); /* and so do host calls (ops-host) */
    /* The fused op, composed over ops-host: the residual exact. */
    enum { T = 2, H = 96 };
    uint16_t x[T * H], res[T * H], w[H], out[T * H];
    size_t wrong = 0;
    for (int i = 0; i < T * H; i++)
        x[i] = bf16_of((float)value((size_t)i, rank)), res[i] = bf16_of(1.0f);
    for (int i = 0; i < H; i++)
        w[i] = bf16_of(1.0f);
    TAP_EQ_INT(arbench_allreduce_rmsnorm(c, x, res, w, out, T, H, 1e-6f, NULL, why, sizeof why), ARBENCH_OK);
    for (int i = 0; i < T * H; i++) {
        int expect = 1;
        for (int r = 0; r < size; r++)
            expect += value((size_t)i, r);
        wrong += f32_of(res[i]) != (float)expect;
    }
    TAP_EQ_U64(wrong, 0);
    arbench_comm_destroy(c);

    /* mpi-host calls MPI itself: refused by name under this bootstrap. */
    c = open_gather(&g, "mpi-host", NULL, NULL, why, sizeof why, &st);
    TAP_EQ_INT(st, ARBENCH_ERR_DECLINE);
    TAP_CHECK(c == NULL);
    TAP_HAS_STR(why, "the fallback mpi-host cannot serve allreduce here");
    TAP_HAS_STR(why, "bootstrapped without MPI");
    /* A profile needs its fabric label: detection runs over MPI. */
    c = open_gather(&g, NULL, NULL, "prof.csv", why, sizeof why, &st);
    TAP_EQ_INT(st, ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "fabric detection needs MPI");
    /* With the label, the profile's host entries (mpi-host) cannot open: ops-host serves. */
    c = open_gather(&g, NULL, "host", "prof.csv", why, sizeof why, &st);
    TAP_REQUIRE(st == ARBENCH_OK && c);
    TAP_EQ_STR(arbench_explain(c, ARBENCH_OP_ALLREDUCE, 4096, 0, note, sizeof note), "ops-host");
    TAP_HAS_STR(note, "it did not open here");
    TAP_EQ_U64(allreduce_wrong(c, 2048, ARBENCH_BF16), 0);
    arbench_comm_destroy(c);
    arbench_config_t cfg;
    arbench_config_init(&cfg);
    TAP_EQ_INT(arbench_comm_create_allgather(&cfg, size, size, mpi_gather, &g, &c, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "expected 0 <= rank < size");
}

/* Registered buffers: in place where the implementation allows, never past their end. */
static void registered_on(arbench_comm_t *c)
{
    char why[1024];
    size_t n = 4096; /* bf16 elements */
    uint16_t *buf = calloc(n + 64, 2);
    TAP_REQUIRE(buf);
    TAP_EQ_INT(arbench_register(c, buf, n * 2, why, sizeof why), ARBENCH_OK);
    TAP_EQ_U64(allreduce_wrong_in(c, buf, n, ARBENCH_BF16), 0);
    TAP_EQ_U64(allreduce_wrong_in(c, buf + 1024, n - 1024, ARBENCH_BF16), 0); /* inside it, to its end */
    TAP_EQ_U64(allreduce_wrong_in(c, buf, 1000, ARBENCH_FP32), 0);
    TAP_EQ_INT(arbench_allreduce(c, buf + 8, n, ARBENCH_BF16, NULL, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "runs past the end of its registered buffer");
    TAP_EQ_INT(arbench_register(c, buf + 100, 64, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "overlaps the registered");
    TAP_EQ_INT(arbench_register(c, buf + n, (size_t)2 << 20, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "config max_bytes");
    TAP_EQ_INT(arbench_deregister(c, buf + 1, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "not a registered buffer");
    TAP_EQ_INT(arbench_deregister(c, buf, why, sizeof why), ARBENCH_OK);
    TAP_EQ_U64(allreduce_wrong_in(c, buf + 8, n, ARBENCH_BF16), 0); /* unregistered: staged, any extent */
    free(buf);
}

static void t_registered(void)
{
    arbench_comm_t *c = open_comm(NULL, 1 << 20);
    TAP_REQUIRE(c);
    registered_on(c); /* mpi-host */
    arbench_comm_destroy(c);
    gather_ctx_t g = {0};
    char why[1024];
    arbench_status_t st;
    c = open_gather(&g, NULL, NULL, NULL, why, sizeof why, &st);
    TAP_REQUIRE(st == ARBENCH_OK && c);
    registered_on(c); /* ops-host */
    arbench_comm_destroy(c);
}

/* This build has no NCCL: the NCCL bootstraps say so; bad arguments are named. */
static void t_nccl_boot_refused(void)
{
    unsigned char id[ARBENCH_NCCL_UNIQUE_ID_BYTES];
    char why[1024];
    arbench_config_t cfg;
    arbench_config_init(&cfg);
    arbench_comm_t *c = (arbench_comm_t *)1;
    TAP_EQ_INT(arbench_nccl_unique_id(id, 16, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "expected at least 128");
    TAP_EQ_INT(arbench_comm_create_nccl(&cfg, NULL, &c, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_CHECK(c == NULL);
    TAP_HAS_STR(why, "expected an initialized ncclComm_t");
    TAP_EQ_INT(arbench_comm_create_nccl_id(&cfg, 0, 1, id, 16, &c, why, sizeof why), ARBENCH_ERR_INVALID);
    TAP_HAS_STR(why, "128 id bytes");
    arbench_status_t st = arbench_nccl_unique_id(id, sizeof id, why, sizeof why);
    if (st == ARBENCH_OK) { /* a build with NCCL: a device communicator needs a device */
        TAP_EQ_INT(arbench_comm_create_nccl_id(&cfg, 0, 1, id, sizeof id, &c, why, sizeof why), ARBENCH_ERR_INVALID);
        TAP_HAS_STR(why, "needs config cuda_device >= 0");
    } else {
        TAP_EQ_INT(st, ARBENCH_ERR_DECLINE);
        TAP_HAS_STR(why, "built without it");
        TAP_EQ_INT(arbench_comm_create_nccl_id(&cfg, 0, 1, id, sizeof id, &c, why, sizeof why), ARBENCH_ERR_DECLINE);
        TAP_HAS_STR(why, "an NCCL bootstrap needs NCCL");
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: client DIR [test...]\n");
        return 2;
    }
    g_dir = argv[1];
    g_world = open_comm(NULL, 64);
    if (!g_world)
        return 1;
    tap_set_agree(agree_max, arbench_comm_rank(g_world) != 0);
    static const tap_test_t tests[] = {
        {"version", t_version},     {"no_profile", t_no_profile}, {"profiled", t_profiled},
        {"other_ranks", t_other_ranks}, {"json", t_json},       {"errors", t_errors},     {"rmsnorm", t_rmsnorm},
        {"allgather_boot", t_allgather_boot}, {"registered", t_registered}, {"nccl_boot_refused", t_nccl_boot_refused},
    };
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc - 1, argv + 1);
    arbench_comm_destroy(g_world);
    return rc;
}
