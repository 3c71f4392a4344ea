/* SPDX-License-Identifier: MIT */
/*
 * The persistent form of the step (engine/gpu/gpu_persist.cu) at Kimi-K2's TP=8 per-rank
 * shapes (3 layers: one dense, two MoE with all 384 INT4 experts): the same seed's model in
 * the launches form and in the two persistent forms (attention only; attention and MoE),
 * stepped with the same inputs (prefill to 1000 positions in steps of 8, then T = 1, 3, 8
 * and 2), gives bit-identical logits and experts after every step (the same operations in
 * the same order: a tile is one block index of the kernel form), and so do the launches
 * form with its projections' grids folded into one wave (--wave-fit qkv_a,o_proj) and with q_b
 * and the absorption and the MLA prep in one launch (--fuse qb_absorb,prep_qb: prefill at T = 8
 * included), and with the side
 * branch of L2 pulls (--l2-side, every name), and with the MoE down launch's selection and first
 * round of weights read before its wait (--moe-early on and l2). Then a captured persistent step replays
 * bit-identically, with PDL on and off, and so does a captured launches step with the side branch,
 * whose graph keeps the programmatic edges of the one without it (and with --l2-side-upto 1 has
 * the branch at T = 1 only), and so does one with --moe-early, with the same launches and edges. And the wait's deadline: a counter
 * that never reaches its target sets the error word with the wait's code and returns (no
 * hang), one that does leaves it 0. Exit 77 without a CUDA device.
 */
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "tap.h"
#include "gpu/gpu_dims.h"
#include "gpu/gpu_model.h"
#include "model/config.h"
#include "model/engine_opts.h"
#include "model/rope.h"
#include "model/wgen.h"

#define CONTEXT 1024u
#define MAX_T 8u
#define FORMS 8

static char why[1024];
static arb_model_config_t cfg;
static arb_rope_t rope;
static cudaStream_t stream;

/* persistent-form bits per form: launches, attention only, attention and MoE, the launches
 * with qkv_a's and o_proj's grids folded into one wave at every T (--wave-fit), and the
 * launches with q_b, the absorption and the MLA prep in one launch (--fuse qb_absorb,prep_qb, mla_qb.cu:
 * the engine's default where the shapes fit) */
static const int form_bits[FORMS] = {0, 1, 3, 0, 0, 0, 0, 0};
static const unsigned form_wave[FORMS] = {0, 0, 0, ARB_WAVE_FIT_QKV_A | ARB_WAVE_FIT_O_PROJ, 0, 0, 0, 0};
static const unsigned form_fuse[FORMS] = {0, 0, 0, 0, ARB_FUSE_QB_ABSORB | ARB_FUSE_PREP_QB, 0, 0, 0};
#define SIDE_ALL ARB_L2_SIDE_ALL
static const unsigned form_side[FORMS] = {0, 0, 0, 0, 0, SIDE_ALL, 0, 0};
static const int form_early[FORMS] = {0, 0, 0, 0, 0, 0, 1, 2};
static const char *const form_name[FORMS] = {"launches",
                                             "persistent-attn",
                                             "persistent",
                                             "launches, wave fit",
                                             "launches, q_b + absorb + prep fused",
                                             "launches, side branch of L2 pulls",
                                             "launches, MoE down's loads before its wait",
                                             "launches, MoE down's loads before its wait, later rounds toward L2"};

static arb_gpu_model_t *make_side_upto(int persistent, int pdl, unsigned wave, unsigned fuse, unsigned side,
                                       unsigned upto, int early)
{
    arb_gpu_model_opts_t o = {.format = ARB_GPU_INT4,
                              .seed = 5,
                              .max_tokens = MAX_T,
                              .context = CONTEXT,
                              .sites = NULL,
                              .fusion = ARB_FUSION_AUTO,
                              .pdl = pdl,
                              .wave_fit = wave,
                              .wave_from = 1,
                              .fuse = fuse,
                              .l2_side = side,
                              .side_upto = upto,
                              .moe_early = early,
                              .persistent = persistent};
    arb_gpu_model_t *m = NULL;
    if (arb_gpu_dims_from_config(&cfg, &rope, 8, 3, &o.dims, why, sizeof why) != ARB_OK ||
        arb_gpu_model_create(&o, &m, why, sizeof why) != ARB_OK ||
        arb_gpu_model_generate(m, why, sizeof why) != ARB_OK) {
        tap_diag("create (persistent %d, pdl %d, wave fit %u, fuse %u, l2 side %u, moe early %d): %s", persistent, pdl,
                 wave, fuse, side, early, why);
        arb_gpu_model_destroy(m);
        return NULL;
    }
    return m;
}

static arb_gpu_model_t *make_side(int persistent, int pdl, unsigned wave, unsigned fuse, unsigned side, int early)
{
    return make_side_upto(persistent, pdl, wave, fuse, side, 0, early);
}

static int step(arb_gpu_model_t *m, const uint32_t *tok, unsigned T, unsigned pos0, float *logits, int32_t *experts)
{
    if (arb_gpu_model_set_input(m, tok, T, pos0, stream, why, sizeof why) != ARB_OK ||
        arb_gpu_model_step(m, T, stream, why, sizeof why) != ARB_OK || cudaStreamSynchronize(stream) != cudaSuccess) {
        tap_diag("step T %u at %u: %s (%s)", T, pos0, why, cudaGetErrorString(cudaGetLastError()));
        return 0;
    }
    float bl[MAX_T];
    uint32_t bi[MAX_T];
    if (arb_gpu_model_read_argmax(m, T, bl, bi, why, sizeof why) != ARB_OK || /* also the deadline check */
        arb_gpu_model_read_logits(m, T, logits, why, sizeof why) != ARB_OK ||
        arb_gpu_model_read_experts(m, T, experts, why, sizeof why) != ARB_OK) {
        tap_diag("read T %u at %u: %s", T, pos0, why);
        return 0;
    }
    return 1;
}

static uint32_t prompt(unsigned p) { return arb_wgen_below(5, ARB_W_PROMPT, 0, p, cfg.vocab_size); }

static void t_forms_bit_identical(void)
{
    arb_gpu_model_t *m[FORMS] = {NULL};
    for (int f = 0; f < FORMS; f++)
        TAP_REQUIRE((m[f] = make_side(form_bits[f], 1, form_wave[f], form_fuse[f], form_side[f], form_early[f])) !=
                    NULL);
    const unsigned Vr = arb_gpu_model_vocab_rank(m[0]), nex = cfg.num_hidden_layers * MAX_T * cfg.num_experts_per_tok;
    float *lg[FORMS];
    int32_t *ex[FORMS];
    for (int f = 0; f < FORMS; f++) {
        lg[f] = malloc(sizeof(float) * MAX_T * Vr), ex[f] = malloc(sizeof(int32_t) * nex);
        TAP_REQUIRE(lg[f] && ex[f]);
    }
    unsigned pos = 0, steps = 0, bad = 0, k = 0;
    const unsigned tail[4] = {1, 3, 8, 2}; /* after the prefill to 1000: decode, verify, a full step, 2 */
    while (pos < 1000 || k < 4) {
        const unsigned T = pos < 1000 ? MAX_T : tail[k++];
        uint32_t tok[MAX_T];
        for (unsigned i = 0; i < T; i++)
            tok[i] = prompt(pos + i);
        for (int f = 0; f < FORMS; f++)
            TAP_REQUIRE(step(m[f], tok, T, pos, lg[f], ex[f]));
        for (int f = 1; f < FORMS; f++) {
            size_t dl = 0, de = 0;
            for (size_t i = 0; i < (size_t)T * Vr; i++)
                dl += memcmp(&lg[0][i], &lg[f][i], sizeof(float)) != 0;
            for (size_t i = 0; i < (size_t)cfg.num_hidden_layers * T * cfg.num_experts_per_tok; i++)
                de += ex[0][i] != ex[f][i];
            if ((dl || de) && bad++ < 4)
                tap_diag("%s, T %u at %u: %zu logits and %zu experts differ from the launches form", form_name[f], T,
                         pos, dl, de);
        }
        pos += T, steps++;
    }
    tap_diag("%u steps to position %u compared across %d forms", steps, pos, FORMS);
    TAP_CHECK(pos > 1000);
    TAP_EQ_INT(bad, 0);
    for (int f = 0; f < FORMS; f++)
        free(lg[f]), free(ex[f]), arb_gpu_model_destroy(m[f]);
}

/* A captured graph's kernel nodes and its programmatic edges (PDL between two launches). */
static int graph_counts(cudaGraph_t g, size_t *kernels, size_t *prog)
{
    size_t n = 0, e = 0;
    *kernels = *prog = 0;
    if (cudaGraphGetNodes(g, NULL, &n) != cudaSuccess || cudaGraphGetEdges(g, NULL, NULL, NULL, &e) != cudaSuccess)
        return 0;
    cudaGraphNode_t *nodes = malloc(sizeof *nodes * (n + 1)), *from = malloc(sizeof *from * (e + 1)),
                    *to = malloc(sizeof *to * (e + 1));
    cudaGraphEdgeData *ed = malloc(sizeof *ed * (e + 1));
    int ok = nodes && from && to && ed && cudaGraphGetNodes(g, nodes, &n) == cudaSuccess &&
             cudaGraphGetEdges(g, from, to, ed, &e) == cudaSuccess;
    for (size_t i = 0; ok && i < n; i++) {
        enum cudaGraphNodeType t;
        ok = cudaGraphNodeGetType(nodes[i], &t) == cudaSuccess;
        *kernels += ok && t == cudaGraphNodeTypeKernel;
    }
    for (size_t i = 0; ok && i < e; i++)
        *prog += ed[i].type == cudaGraphDependencyTypeProgrammatic;
    free(nodes), free(from), free(to), free(ed);
    return ok;
}

/* A step captured and replayed: bit-identical to the eager one. persistent: the form's bits;
 * side: --l2-side's; early: --moe-early. Returns the capture's kernel nodes and programmatic
 * edges at T (counts). */
static void replay_case_counts(int persistent, int pdl, unsigned side, unsigned upto, int early, size_t counts[2][2])
{
    arb_gpu_model_t *m = make_side_upto(persistent, pdl, 0, 0, side, upto, early);
    TAP_REQUIRE(m != NULL);
    const unsigned Vr = arb_gpu_model_vocab_rank(m), nex = cfg.num_hidden_layers * MAX_T * cfg.num_experts_per_tok;
    float *a = malloc(sizeof(float) * MAX_T * Vr), *b = malloc(sizeof(float) * MAX_T * Vr);
    int32_t *ea = malloc(sizeof(int32_t) * nex), *eb = malloc(sizeof(int32_t) * nex);
    TAP_REQUIRE(a && b && ea && eb);
    uint32_t tok[MAX_T];
    for (unsigned p = 0; p < 64; p += MAX_T) {
        for (unsigned i = 0; i < MAX_T; i++)
            tok[i] = prompt(p + i);
        TAP_REQUIRE(step(m, tok, MAX_T, p, a, ea));
    }
    for (unsigned T = 1; T <= 3; T += 2) {
        for (unsigned i = 0; i < T; i++)
            tok[i] = prompt(64 + i);
        TAP_REQUIRE(step(m, tok, T, 64, a, ea));
        cudaGraph_t g = NULL;
        cudaGraphExec_t ge = NULL;
        TAP_REQUIRE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal) == cudaSuccess);
        arb_status_t st = arb_gpu_model_step(m, T, stream, why, sizeof why);
        TAP_REQUIRE(cudaStreamEndCapture(stream, &g) == cudaSuccess && st == ARB_OK);
        if (counts)
            TAP_REQUIRE(graph_counts(g, &counts[T / 2][0], &counts[T / 2][1]));
        TAP_REQUIRE(cudaGraphInstantiate(&ge, g, 0) == cudaSuccess);
        for (int rep = 0; rep < 3; rep++) {
            TAP_REQUIRE(arb_gpu_model_set_input(m, tok, T, 64, stream, why, sizeof why) == ARB_OK);
            TAP_REQUIRE(cudaGraphLaunch(ge, stream) == cudaSuccess && cudaStreamSynchronize(stream) == cudaSuccess);
            float bl[MAX_T];
            uint32_t bi[MAX_T];
            TAP_REQUIRE(arb_gpu_model_read_argmax(m, T, bl, bi, why, sizeof why) == ARB_OK);
            TAP_REQUIRE(arb_gpu_model_read_logits(m, T, b, why, sizeof why) == ARB_OK);
            TAP_REQUIRE(arb_gpu_model_read_experts(m, T, eb, why, sizeof why) == ARB_OK);
            size_t d = 0;
            for (size_t i = 0; i < (size_t)T * Vr; i++)
                d += memcmp(&a[i], &b[i], sizeof(float)) != 0;
            for (size_t i = 0; i < (size_t)cfg.num_hidden_layers * T * cfg.num_experts_per_tok; i++)
                d += ea[i] != eb[i];
            if (d)
                tap_diag("persistent %d, pdl %d, l2 side %u, moe early %d, T %u, replay %d: %zu values differ from the "
                         "eager step",
                         persistent, pdl, side, early, T, rep, d);
            TAP_EQ_U64(d, 0);
        }
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    }
    free(a), free(b), free(ea), free(eb);
    arb_gpu_model_destroy(m);
}

/* A persistent step captured and replayed: bit-identical to the eager one, PDL on and off. */
static void replay_case(int pdl) { replay_case_counts(3, pdl, 0, 0, 0, NULL); }

/* --l2-side: the launches form's captured step replays bit-identically, holds one pull kernel a
 * fork more than the form without it (3 layers: after each qkv_a, and after layer 1's router for
 * layer 2's qkv_a: 4), and exactly its programmatic edges (the fork's event between two launches
 * does not turn their PDL edge into a full one). */
static void t_replay_side(void)
{
    size_t plain[2][2], side[2][2], upto1[2][2], early[2][2];
    replay_case_counts(0, 1, 0, 0, 0, plain);
    replay_case_counts(0, 1, SIDE_ALL, 0, 0, side);
    replay_case_counts(0, 1, SIDE_ALL, 1, 0, upto1); /* --l2-side-upto 1: T = 1's step only */
    replay_case_counts(0, 1, 0, 0, 1, early);        /* --moe-early: the same launches and edges */
    for (int i = 0; i < 2; i++) {
        tap_diag("T %d: %zu kernel nodes, %zu programmatic edges; with the side branch %zu and %zu; up to T = 1 %zu "
                 "and %zu",
                 2 * i + 1, plain[i][0], plain[i][1], side[i][0], side[i][1], upto1[i][0], upto1[i][1]);
        TAP_CHECK(plain[i][1] > 0);
        TAP_EQ_U64(side[i][0], plain[i][0] + 4);
        TAP_EQ_U64(side[i][1], plain[i][1]);
        TAP_EQ_U64(upto1[i][0], plain[i][0] + (i == 0 ? 4 : 0));
        TAP_EQ_U64(upto1[i][1], plain[i][1]);
        TAP_EQ_U64(early[i][0], plain[i][0]);
        TAP_EQ_U64(early[i][1], plain[i][1]);
    }
}

static void t_replay_pdl(void) { replay_case(1); }
static void t_replay_no_pdl(void) { replay_case(0); }

static void t_deadline(void)
{
    int err = -1;
    double s = 0;
    TAP_REQUIRE(arb_gpu_persist_probe(0, 1, 20000000ull, 41, &err, &s, why, sizeof why) ==
                ARB_OK); /* never reached: 20 ms */
    TAP_EQ_INT(err, 41);
    tap_diag("an unreachable wait returned after %.3f s (deadline 0.020 s)", s);
    TAP_CHECK(s >= 0.015 && s < 5.0);
    TAP_REQUIRE(arb_gpu_persist_probe(7, 7, 20000000ull, 42, &err, &s, why, sizeof why) == ARB_OK); /* already there */
    TAP_EQ_INT(err, 0);
}

int main(int argc, char **argv)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("1..0 # SKIP no CUDA device visible\n");
        return 77;
    }
    if (arb_config_load("kimi-k2", &cfg, why, sizeof why) != ARB_OK) {
        fprintf(stderr, "setup: %s\n", why);
        return 1;
    }
    cfg.num_hidden_layers = 3; /* layer 0 dense (first_k_dense_replace 1), 1 and 2 MoE */
    if (arb_rope_make(&cfg, &rope, why, sizeof why) != ARB_OK ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "setup: %s\n", why);
        return 1;
    }
    static const tap_test_t tests[] = {
        {"forms_bit_identical", t_forms_bit_identical},
        {"replay_pdl", t_replay_pdl},
        {"replay_no_pdl", t_replay_no_pdl},
        {"replay_side", t_replay_side},
        {"deadline", t_deadline},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
