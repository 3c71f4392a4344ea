/* SPDX-License-Identifier: MIT */
/*
 * Speculative cycles on the sharded CPU reference under mpirun (tiny config, TP = N):
 * target and one-layer draft both call their all-reduce sites (2 per layer: 2 per draft
 * step) through one mpi-host instance opened by the site registry; greedy speculation
 * emits plain greedy decoding's tokens on every rank.
 * usage: mpirun -np N test_spec_mpi
 */
#include <math.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "model/config.h"
#include "cpu/cpu_ref.h"
#include "sites/site_registry_inst.h"
#include "run/spec_pair.h"
#include "tap.h"
#include "model/wgen.h"

enum { CTX = 96, PROMPT = 8 };
static arb_mpi_t g_mpi;
static arb_model_config_t cfg, dcfg;
static char why[2048];
static arb_inst_t *sites[64];
static arb_fusion_t fusion;

static int agree_max(int v)
{
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return v;
}

static arb_status_t step(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, double *us, uint32_t *greedy,
                         char *w, size_t wl)
{
    double t0 = MPI_Wtime();
    arb_status_t st = arb_cpu_model_step(model, tokens, T, pos0, w, wl);
    if (agree_max((int)st) != ARB_OK)
        return st != ARB_OK ? st : ARB_ERR_SYSTEM;
    struct { float v; int i; } in[16], out[16];
    for (unsigned t = 0; t < T; t++) {
        uint32_t idx;
        arb_cpu_model_argmax(model, t, &in[t].v, &idx);
        in[t].i = (int)idx;
    }
    MPI_Allreduce(in, out, (int)T, MPI_FLOAT_INT, MPI_MAXLOC, MPI_COMM_WORLD);
    for (unsigned t = 0; t < T; t++)
        greedy[t] = (uint32_t)out[t].i;
    double mine = (MPI_Wtime() - t0) * 1e6;
    MPI_Allreduce(&mine, us, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return ARB_OK;
}

static arb_cpu_model_t *make(const arb_model_config_t *c, unsigned T)
{
    arb_cpu_model_opts_t o = {.cfg = c, .format = ARB_WEIGHTS_BF16, .seed = 7, .tp_shape = (unsigned)g_mpi.nranks,
                              .shard_first = (unsigned)g_mpi.rank, .shard_count = 1, .max_tokens = T, .context = CTX,
                              .sites = sites, .fusion = fusion};
    arb_cpu_model_t *m = NULL;
    if (arb_cpu_model_create(&o, &m, why, sizeof why) != ARB_OK)
        tap_diag("create: %s", why);
    return m;
}

static uint32_t prefill(arb_cpu_model_t *m, uint32_t *prompt)
{
    uint32_t g = 0;
    double us;
    for (unsigned p = 0; p < PROMPT; p++) {
        prompt[p] = arb_wgen_below(7, ARB_W_PROMPT, 0, p, cfg.vocab_size);
        if (step(m, &prompt[p], 1, p, &us, &g, why, sizeof why) != ARB_OK)
            return 0;
    }
    return g;
}

static void t_spec_sharded(void)
{
    /* one registry: decode (1), verify (3) and draft-catch-up shapes, all on mpi-host */
    static arb_site_registry_t reg;
    arb_site_registry_init(&reg, "mpi-host");
    static const unsigned T[] = {1, 3};
    size_t slot[2];
    for (int i = 0; i < 2; i++) {
        arb_site_t s = {.name = i ? "verify" : "decode", .op = ARB_OP_ALLREDUCE_RMSNORM, .tokens = T[i],
                        .hidden = cfg.hidden_size, .mode = ARB_MODE_EAGER, .ranks = g_mpi.nranks, .fabric = "host"};
        arb_choice_t c;
        TAP_REQUIRE(arb_site_choose(NULL, NULL, &s, "mpi-host", &c, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_site_registry_add(&reg, &s, &c, &slot[i], why, sizeof why) == ARB_OK);
    }
    arb_reg_plugins_t pl;
    arb_inst_backend_t b;
    arb_reg_plugins_init(&pl, &g_mpi, &b);
    TAP_REQUIRE(arb_site_registry_open(&reg, &b, -1, why, sizeof why) == ARB_OK);
    arb_inst_t *in = arb_site_registry_instance(&reg, slot[1], &fusion);
    TAP_REQUIRE(in && in == arb_site_registry_instance(&reg, slot[0], NULL));
    for (unsigned s = 0; s < 2 * cfg.num_hidden_layers; s++)
        sites[s] = in;
    arb_cpu_model_t *target = make(&cfg, 3), *draft = make(&dcfg, 2), *ref = make(&cfg, 1);
    TAP_REQUIRE(target && draft && ref);
    uint32_t prompt[PROMPT];
    uint32_t g0 = prefill(target, prompt);
    prefill(draft, prompt);
    uint32_t r0 = prefill(ref, prompt);
    TAP_EQ_U64(g0, r0);
    arb_spec_pair_t pair;
    TAP_REQUIRE(arb_spec_pair_init(&pair, step, target, draft, CTX, 2, prompt, PROMPT, why, sizeof why) == ARB_OK);
    arb_spec_model_t m = arb_spec_pair_model(&pair);
    arb_spec_state_t st = {.cache_len = PROMPT, .next = (int32_t)g0};
    arb_spec_opts_t o = {.k = 2, .accept_rate = -1, .seed = 5, .cycles = 10};
    arb_spec_trace_t tr;
    TAP_REQUIRE(arb_spec_run(&m, &o, &st, &tr, why, sizeof why) == ARB_OK);
    size_t same = 0;
    uint32_t tok = r0, g;
    double us;
    for (size_t i = 0; i < tr.ntokens; i++) {
        TAP_REQUIRE(step(ref, &tok, 1, (unsigned)(PROMPT + i), &us, &g, why, sizeof why) == ARB_OK);
        same += g == (uint32_t)tr.tokens[i];
        tok = g;
    }
    tap_diag("TP=%d: %zu tokens in %zu cycles", g_mpi.nranks, tr.ntokens, tr.cycles);
    TAP_CHECK(tr.ntokens >= tr.cycles && tr.cycles == 10);
    TAP_EQ_U64(same, tr.ntokens);
    TAP_EQ_U64(st.cache_len, PROMPT + tr.ntokens);
    TAP_EQ_INT(arb_cpu_model_site_path(draft, 1), ARB_FUSION_COMPOSED); /* the draft's sites communicated */
    arb_spec_trace_free(&tr);
    arb_spec_pair_free(&pair);
    arb_cpu_model_destroy(target);
    arb_cpu_model_destroy(draft);
    arb_cpu_model_destroy(ref);
    arb_site_registry_close(&reg);
    arb_reg_plugins_unload(&pl);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    if (arb_mpi_bootstrap(&g_mpi) != 0 || arb_config_load("tiny", &cfg, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "setup: %s\n", why);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    arb_draft_config(&cfg, &dcfg);
    tap_set_agree(agree_max, g_mpi.rank != 0);
    static const tap_test_t tests[] = {{"spec_sharded", t_spec_sharded}};
    int rc = tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
    arb_mpi_free(&g_mpi);
    MPI_Finalize();
    return rc;
}
