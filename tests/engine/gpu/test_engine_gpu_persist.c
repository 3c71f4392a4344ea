/* SPDX-License-Identifier: MIT */
/*
 * The persistent form of the step (engine/gpu/gpu_persist.cu) at Kimi-K2's TP=8 per-rank
 * shapes (3 layers: one dense, two MoE with all 384 INT4 experts): the same seed's model in
 * the launches form and in the two persistent forms (attention only; attention and MoE),
 * stepped with the same inputs (prefill to 1000 positions in steps of 8, then T = 1, 3, 8
 * and 2), gives bit-identical logits and experts after every step (the same operations in
 * the same order: a tile is one block index of the kernel form), and so do the launches
 * form with its projections' grids folded into one wave (--wave-fit qkv_a,o_proj) and with q_b
 * and the absorption in one launch (--fuse qb_absorb: prefill at T = 8 included). Then a captured persistent
 * step replays bit-identically, with PDL on and off. And the wait's deadline: a counter
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
#define FORMS 5

static char why[1024];
static arb_model_config_t cfg;
static arb_rope_t rope;
static cudaStream_t stream;

/* persistent-form bits per form: launches, attention only, attention and MoE, the launches
 * with qkv_a's and o_proj's grids folded into one wave at every T (--wave-fit), and the
 * launches with q_b and the absorption in one launch (--fuse qb_absorb, mla_qb.cu) */
static const int form_bits[FORMS] = {0, 1, 3, 0, 0};
static const unsigned form_wave[FORMS] = {0, 0, 0, ARB_WAVE_FIT_QKV_A | ARB_WAVE_FIT_O_PROJ, 0};
static const unsigned form_fuse[FORMS] = {0, 0, 0, 0, ARB_FUSE_QB_ABSORB};
static const char *const form_name[FORMS] = {"launches", "persistent-attn", "persistent", "launches, wave fit",
                                             "launches, q_b + absorb fused"};

static arb_gpu_model_t *make_fused(int persistent, int pdl, unsigned wave, unsigned fuse)
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
                              .persistent = persistent};
    arb_gpu_model_t *m = NULL;
    if (arb_gpu_dims_from_config(&cfg, &rope, 8, 3, &o.dims, why, sizeof why) != ARB_OK ||
        arb_gpu_model_create(&o, &m, why, sizeof why) != ARB_OK ||
        arb_gpu_model_generate(m, why, sizeof why) != ARB_OK) {
        tap_diag("create (persistent %d, pdl %d, wave fit %u, fuse %u): %s", persistent, pdl, wave, fuse, why);
        arb_gpu_model_destroy(m);
        return NULL;
    }
    return m;
}

static arb_gpu_model_t *make(int persistent, int pdl) { return make_fused(persistent, pdl, 0, 0); }

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
        TAP_REQUIRE((m[f] = make_fused(form_bits[f], 1, form_wave[f], form_fuse[f])) != NULL);
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

/* A persistent step captured and replayed: bit-identical to the eager one, PDL on and off. */
static void replay_case(int pdl)
{
    arb_gpu_model_t *m = make(3, pdl);
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
                tap_diag("pdl %d, T %u, replay %d: %zu values differ from the eager step", pdl, T, rep, d);
            TAP_EQ_U64(d, 0);
        }
        cudaGraphExecDestroy(ge);
        cudaGraphDestroy(g);
    }
    free(a), free(b), free(ea), free(eb);
    arb_gpu_model_destroy(m);
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
        {"deadline", t_deadline},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
