/* SPDX-License-Identifier: MIT */
/* engine/run/run_floors.c: the bytes per kernel family of one Kimi-K2 TP=8 rank with INT4
 * experts, by hand (design.md "The engine at the floor"), their sum against the step's
 * bytes of memplan.c, the floor / ratio arithmetic, and the side CSV. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"
#include "model/config.h"
#include "model/memplan.h"
#include "model/shard.h"
#include "run/run_floors.h"

static char why[1024];
static arb_model_config_t kimi;
static arb_shard_t sh;

/* experts [layers x T x topk], every slot of a MoE layer a distinct expert */
static double step_total(unsigned T, unsigned pos0, double *distinct)
{
    const unsigned L = kimi.num_hidden_layers, k = kimi.num_experts_per_tok;
    int32_t *ex = calloc((size_t)L * T * k, sizeof *ex);
    for (unsigned l = 0; l < L; l++)
        for (unsigned i = 0; i < T * k; i++)
            ex[(size_t)l * T * k + i] = l < kimi.first_k_dense_replace ? -1 : (int32_t)i;
    arb_step_bytes_t sb;
    arb_step_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, T, pos0, ex, &sb);
    free(ex);
    *distinct = sb.distinct_experts;
    return sb.total;
}

static void t_kimi_t1(void)
{
    arb_floor_bytes_t b;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 1, 4096, 8, &b);
    const double *p = b.per_layer;
    TAP_NEAR(p[ARB_FLOOR_QKV_A], 30277632.0, 0);   /* (1536 + 512 + 64) x 7168 x 2 */
    TAP_NEAR(p[ARB_FLOOR_MLA_PREP], 4096.0, 0);    /* (1536 + 512) x 2 */
    TAP_NEAR(p[ARB_FLOOR_Q_B], 4718592.0, 0);      /* 8 heads x 192 x 1536 x 2 */
    TAP_NEAR(p[ARB_FLOOR_ABSORB], 1048576.0, 0);   /* 8 x 128 x 512 x 2 */
    TAP_NEAR(p[ARB_FLOOR_ATTEND], 4719744.0, 0);   /* 4097 x 576 x 2 */
    TAP_NEAR(p[ARB_FLOOR_COMBINE], 1048576.0, 0);  /* 8 x 128 x 512 x 2 */
    TAP_NEAR(p[ARB_FLOOR_O_PROJ], 14680064.0, 0);  /* 7168 x 1024 x 2 */
    TAP_NEAR(p[ARB_FLOOR_SITE_A], 14336.0, 0);
    TAP_NEAR(p[ARB_FLOOR_ROUTER], 5506560.0, 0);   /* 384 x (7168 x 2 + 4) */
    /* 8 x 2 x 256 x 7168 x (0.5 + 2/32) + 2 x 256 x 7168 x 2 */
    TAP_NEAR(p[ARB_FLOOR_MOE_GATE_UP], 23855104.0, 0);
    TAP_NEAR(p[ARB_FLOOR_MOE_DOWN], 11927552.0, 0); /* 8 x 256 x 7168 x 0.5625 + 256 x 7168 x 2 */
    TAP_NEAR(p[ARB_FLOOR_DENSE], 99090432.0, 0);   /* 3 x 2304 x 7168 x 2 */
    TAP_NEAR(p[ARB_FLOOR_LM_HEAD], 293601280.0, 0); /* 20480 x 7168 x 2 */
    TAP_NEAR(p[ARB_FLOOR_EMBED], 28672.0, 0);      /* one row + input_layernorm[0] */
    TAP_CHECK(b.layers[ARB_FLOOR_QKV_A] == 61 && b.layers[ARB_FLOOR_MOE_DOWN] == 60);
    TAP_CHECK(b.layers[ARB_FLOOR_DENSE] == 1 && b.layers[ARB_FLOOR_LM_HEAD] == 1 && b.layers[ARB_FLOOR_EMBED] == 1);
    TAP_NEAR(b.step[ARB_FLOOR_ROUTER], 60 * 5506560.0, 0);
    double distinct = 0;
    TAP_NEAR(b.total, step_total(1, 4096, &distinct), 1e-3);
    TAP_NEAR(distinct, 8, 0);
}

static void t_kimi_t3(void)
{
    double distinct = 0, total = step_total(3, 4096, &distinct);
    TAP_NEAR(distinct, 24, 0);
    arb_floor_bytes_t b;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 3, 4096, distinct, &b);
    TAP_NEAR(b.per_layer[ARB_FLOOR_MOE_GATE_UP], 56885248.0, 0); /* 24 x 2064384 + 7340032 */
    TAP_NEAR(b.per_layer[ARB_FLOOR_ATTEND], 4722048.0, 0);       /* 4099 x 1152 */
    TAP_NEAR(b.per_layer[ARB_FLOOR_EMBED], 57344.0, 0);
    TAP_NEAR(b.total, total, 1e-3);
    /* bf16 experts: 2 B per element, no scales */
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_BF16, 3, 4096, 24, &b);
    TAP_NEAR(b.per_layer[ARB_FLOOR_MOE_DOWN], 24 * 256 * 7168 * 2.0 + 3670016.0, 0);
}

static void t_table(void)
{
    arb_floor_bytes_t b;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 1, 4096, 8, &b);
    arb_kernel_times_t g = {.n = 5, .name = {"qkv_a", "attend", "persistent", "router", "mla_prep"},
                            .us = {61 * 2 * 7.569408, NAN, 5, 60 * 1.3766400, -0.61}, .step_us = 1000,
                            .method = "graph test"};
    arb_floor_table_t t;
    arb_floor_table_fill(&t, &b, 1, 4096, 8, 4e12, NULL, &g, NULL);
    const arb_floor_row_t *q = &t.row[ARB_FLOOR_QKV_A];
    TAP_NEAR(q->floor_us, 7.569408, 1e-9);  /* 30277632 B / 4e12 B/s */
    TAP_NEAR(q->graph_us, 15.138816, 1e-9); /* per layer */
    TAP_NEAR(q->graph_ratio, 2.0, 1e-12);
    TAP_NEAR(t.row[ARB_FLOOR_ROUTER].graph_ratio, 1.0, 1e-12); /* 5506560 B at 4e12 = 1.37664 us */
    TAP_CHECK(isnan(t.row[ARB_FLOOR_ATTEND].graph_us) && isnan(t.row[ARB_FLOOR_ATTEND].graph_ratio));
    TAP_CHECK(isnan(t.row[ARB_FLOOR_QKV_A].eager_us) && isnan(t.row[ARB_FLOOR_QKV_A].eager_ratio));
    TAP_CHECK(isnan(t.row[ARB_FLOOR_QKV_A].chain_us) && isnan(t.step.chain_us) && t.chain_layers == 0);
    TAP_CHECK(strcmp(t.chain_method, "not measured") == 0);
    TAP_NEAR(t.row[ARB_FLOOR_OTHER].graph_us, 5, 0); /* an unknown kind: time, no bytes, no ratio */
    TAP_CHECK(isnan(t.row[ARB_FLOOR_OTHER].graph_ratio));
    /* a replay without a tiny kind can be the slower one: noise, kept as measured */
    TAP_NEAR(t.row[ARB_FLOOR_MLA_PREP].graph_us, -0.01, 1e-12);
    TAP_NEAR(t.row[ARB_FLOOR_MLA_PREP].graph_ratio, -9.765625, 1e-9); /* floor 4096 B / 4e12 = 1.024 ns */
    TAP_NEAR(t.graph_sum_us, 61 * 2 * 7.569408 + 5 + 60 * 1.37664 - 0.61, 1e-9);
    TAP_NEAR(t.step.floor_us, b.total / 4e12 * 1e6, 1e-9);
    TAP_NEAR(t.step.graph_ratio, 1000 / (b.total / 4e12 * 1e6), 1e-12);
    TAP_CHECK(isnan(t.step.eager_us) && isnan(t.eager_sum_us));
    TAP_CHECK(arb_floor_family_of("attend") == ARB_FLOOR_ATTEND && arb_floor_family_of("nope") == ARB_FLOOR_OTHER);
    arb_floor_table_print(stdout, &t);
}

/* The table as arb_floor_table_print writes it (free it), NULL when the stream cannot open. */
static char *printed(const arb_floor_table_t *t)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f)
        return NULL;
    arb_floor_table_print(f, t);
    fclose(f);
    return buf;
}

/* A fused launch's two families in one row (--fuse qb_absorb): absorb's bytes in q_b's row, absorb in
 * no layer (neither printed nor written), the total unchanged; a fold of families that do not run
 * in the same layers moves nothing. */
static void t_fold(void)
{
    arb_floor_bytes_t b, a;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 1, 4096, 8, &b);
    a = b;
    TAP_EQ_INT(arb_floor_fold(&b, ARB_FLOOR_Q_B, ARB_FLOOR_ABSORB), 0);
    TAP_NEAR(b.per_layer[ARB_FLOOR_Q_B], 4718592.0 + 1048576.0, 0);
    TAP_NEAR(b.step[ARB_FLOOR_Q_B], 61 * (4718592.0 + 1048576.0), 0);
    TAP_CHECK(b.layers[ARB_FLOOR_ABSORB] == 0 && b.per_layer[ARB_FLOOR_ABSORB] == 0 && b.step[ARB_FLOOR_ABSORB] == 0);
    TAP_NEAR(b.total, a.total, 0);
    double sum = 0;
    for (int f = 0; f < ARB_FLOOR_FAMILIES; f++)
        sum += b.step[f];
    TAP_NEAR(sum, b.total, 1e-3);
    arb_floor_bytes_t c = a; /* the router runs in 60 layers, q_b in 61: refused, nothing moved */
    TAP_EQ_INT(arb_floor_fold(&c, ARB_FLOOR_Q_B, ARB_FLOOR_ROUTER), -1);
    TAP_CHECK(memcmp(&c, &a, sizeof a) == 0);
    TAP_EQ_INT(arb_floor_fold(&c, ARB_FLOOR_Q_B, ARB_FLOOR_Q_B), -1);
    arb_kernel_times_t g = {.n = 2, .name = {"q_b", "absorb"}, .us = {61 * 3.0, NAN}, .step_us = 1000,
                            .method = "graph test"};
    arb_floor_table_t t;
    arb_floor_table_fill(&t, &b, 1, 4096, 8, 4e12, NULL, &g, NULL);
    TAP_NEAR(t.row[ARB_FLOOR_Q_B].floor_us, (4718592.0 + 1048576.0) / 4e12 * 1e6, 1e-9);
    TAP_NEAR(t.row[ARB_FLOOR_Q_B].graph_us, 3.0, 1e-12);
    snprintf(t.note, sizeof t.note, "q_b: fused test note");
    char *buf = printed(&t);
    TAP_REQUIRE(buf != NULL);
    TAP_HAS_STR(buf, "#   q_b: fused test note\n");
    TAP_CHECK(strstr(buf, "#   absorb ") == NULL);
    TAP_CHECK(strstr(buf, "#   q_b ") != NULL);
    free(buf);
}

/* The chain column: per layer like the others, the step row the whole step of the same
 * measurement, the measured layers carried and printed with their floors. */
static void t_chain(void)
{
    arb_floor_bytes_t b;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 1, 4096, 8, &b);
    arb_kernel_times_t c = {.n = 3, .name = {"qkv_a", "moe_gate_up", "embed"},
                            .us = {61 * 11.0, 60 * 9.5, NAN}, .step_us = 4400, .method = "chain test",
                            .nlayers = 3, .layer = {0, 20, 40}, .layer_dense = {1, 0, 0}, .layer_us = {80, 72, 71.5}};
    arb_floor_table_t t;
    arb_floor_table_fill(&t, &b, 1, 4096, 8, 4e12, &c, NULL, NULL);
    TAP_NEAR(t.row[ARB_FLOOR_QKV_A].chain_us, 11.0, 1e-12);
    TAP_NEAR(t.row[ARB_FLOOR_QKV_A].chain_ratio, 11.0 / 7.569408, 1e-9);
    TAP_NEAR(t.row[ARB_FLOOR_MOE_GATE_UP].chain_us, 9.5, 1e-12);
    TAP_CHECK(isnan(t.row[ARB_FLOOR_EMBED].chain_us) && isnan(t.row[ARB_FLOOR_ATTEND].chain_us));
    TAP_NEAR(t.chain_sum_us, 61 * 11.0 + 60 * 9.5, 1e-9);
    TAP_NEAR(t.step.chain_us, 4400, 0);
    TAP_NEAR(t.step.chain_ratio, 4400 / (b.total / 4e12 * 1e6), 1e-12);
    TAP_EQ_U64(t.chain_layers, 3);
    TAP_CHECK(t.chain_layer[1] == 20 && !t.chain_dense[1] && t.chain_dense[0]);
    TAP_NEAR(t.chain_layer_us[2], 71.5, 0);
    TAP_CHECK(isnan(t.row[ARB_FLOOR_QKV_A].graph_us) && strcmp(t.graph_method, "not measured") == 0);
    char *buf = printed(&t);
    TAP_REQUIRE(buf != NULL);
    /* a MoE layer's floor: every per-layer family but dense_mlp (30.28 + .. + 11.93 MB at 4 TB/s = 24.45 us; the dense one 38.89) */
    TAP_CHECK(strstr(buf, "#   chain: layer 20 (MoE) added 72.0 us, its floor 24.5 us\n") != NULL);
    TAP_CHECK(strstr(buf, "#   chain: layer 0 (dense) added 80.0 us, its floor 38.9 us\n") != NULL);
    for (char *line = strstr(buf, "#   chain: layer"); line; line = strstr(line + 1, "#   chain: layer"))
        tap_diag("%.*s", (int)strcspn(line, "\n"), line);
    free(buf);
    /* no bandwidth measured: no floor to print, not 0.0 */
    arb_floor_table_fill(&t, &b, 1, 4096, 8, -1, &c, NULL, NULL);
    buf = printed(&t);
    TAP_REQUIRE(buf != NULL);
    TAP_CHECK(strstr(buf, "#   chain: layer 20 (MoE) added 72.0 us, its floor - us\n") != NULL);
    free(buf);
}

static void t_csv(void)
{
    char p[96];
    arb_floor_csv_path("results/run.csv", "20261201T000000Z-h-1", p, sizeof p);
    TAP_CHECK(strcmp(p, "results/run-kernels-20261201T000000Z-h-1.csv") == 0);
    arb_floor_csv_path("run", "r1", p, sizeof p);
    TAP_CHECK(strcmp(p, "run-kernels-r1.csv") == 0);
    char dir[] = "/tmp/floorsXXXXXX", path[128], line[4096];
    TAP_REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/k.csv", dir);
    arb_floor_bytes_t b;
    arb_floor_bytes(&kimi, &sh, ARB_WEIGHTS_INT4, 1, 4096, 8, &b);
    arb_kernel_times_t g = {.n = 1, .name = {"qkv_a"}, .us = {61 * 2 * 7.569408}, .step_us = 1000, .method = "m, g"};
    arb_floor_table_t t[2];
    arb_floor_table_fill(&t[0], &b, 1, 4096, 8, 4e12, NULL, &g, NULL);
    arb_floor_table_fill(&t[1], &b, 1, 4096, 8, 4e12, &g, NULL, &g);
    arb_floor_csv_info_t in = {.run_id = "r1", .git_rev = "abc", .host = "h", .gpu = "H200", .argv = "arbench engine, x",
                               .config = "kimi-k2", .weights = "int4", .impl = "noop", .tp_shape = 8, .context = 4096,
                               .layers = 61, .experts = 384};
    TAP_REQUIRE(arb_floor_write_csv(path, &in, t, 2, why, sizeof why) == 0);
    FILE *f = fopen(path, "r");
    TAP_REQUIRE(f != NULL);
    int lines = 0, qkv = 0, steps = 0;
    while (fgets(line, sizeof line, f)) {
        if (lines++ == 0)
            TAP_CHECK(strncmp(line, "schema,run_id,git_rev,host,gpu,argv,", 36) == 0);
        TAP_CHECK(lines == 1 || strstr(line, "\"arbench engine, x\"") != NULL);
        qkv += strstr(line, ",qkv_a,61,30277632,7.5694,15.1388,2.0000,,,\"m, g\",not measured,,,not measured\n") != NULL;
        qkv += strstr(line, ",qkv_a,61,30277632,7.5694,,,15.1388,2.0000,not measured,\"m, g\",15.1388,2.0000,\"m, g\"\n") !=
               NULL;
        steps += strstr(line, ",step,1,") != NULL;
    }
    fclose(f);
    /* a header, 15 families with layers (other unmeasured: left out) and one step row per table */
    TAP_CHECK(lines == 1 + 2 * (15 + 1));
    TAP_CHECK(qkv == 2 && steps == 2);
    snprintf(line, sizeof line, "%s/.k.csv.tmp.%ld", dir, (long)getpid()); /* base/outfile.h's temporary name */
    TAP_CHECK(access(line, F_OK) != 0);
    unlink(path);
    snprintf(path, sizeof path, "%s/missing/k.csv", dir);
    TAP_CHECK(arb_floor_write_csv(path, &in, t, 2, why, sizeof why) == -1 && strstr(why, "cannot create"));
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (arb_config_load("kimi-k2", &kimi, why, sizeof why) != ARB_OK ||
        arb_shard_make(&kimi, 8, 0, ARB_WEIGHTS_INT4, &sh, why, sizeof why) != ARB_OK) {
        printf("Bail out! %s\n", why);
        return 1;
    }
    static const tap_test_t tests[] = {
        {"kimi_t1", t_kimi_t1}, {"kimi_t3", t_kimi_t3}, {"table", t_table}, {"fold", t_fold},
        {"chain", t_chain}, {"csv", t_csv}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
