/* SPDX-License-Identifier: MIT */
/*
 * The graph-replay profile (arb_gpu_model_profile_graph) on the tiny config, one GPU, no
 * call-site instance: every kind of launch the step has is measured, a kept kind is not,
 * the whole replay takes time, and afterwards (every node re-enabled) an eager step gives
 * logits bit-identical to the one before the profile. The chain profile
 * (arb_gpu_model_profile_chain): every layer of tiny measured, every kind but the
 * embedding's and mla_prep's, the layers' sums positive and the kinds' within a factor of
 * the whole step, the last window (the tail, from the snapshot's restored state) leaving the
 * step's own logits, the logits unchanged after it; captured without and with PDL. Exit 77
 * without a CUDA device.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "tap.h"
#include "gpu/gpu_dims.h"
#include "gpu/gpu_model.h"
#include "model/config.h"
#include "model/rope.h"
#include "model/wgen.h"

#define CONTEXT 64u

static char why[1024];
static arb_model_config_t cfg;
static arb_rope_t rope;
static cudaStream_t stream;

static arb_gpu_model_t *make(int pdl)
{
    arb_gpu_model_opts_t go = {
        .format = ARB_GPU_INT4, .seed = 5, .max_tokens = 8, .context = CONTEXT, .fusion = ARB_FUSION_AUTO, .pdl = pdl};
    arb_gpu_model_t *m = NULL;
    if (arb_gpu_dims_from_config(&cfg, &rope, 1, 0, &go.dims, why, sizeof why) != ARB_OK ||
        arb_gpu_model_create(&go, &m, why, sizeof why) != ARB_OK ||
        arb_gpu_model_generate(m, why, sizeof why) != ARB_OK) {
        tap_diag("gpu create: %s", why);
        arb_gpu_model_destroy(m);
        return NULL;
    }
    return m;
}

/* Prefill 8 positions, then an eager decode step at position 8; its logits into out. */
static int decode(arb_gpu_model_t *m, float *out)
{
    uint32_t tok[8];
    for (unsigned i = 0; i < 8; i++)
        tok[i] = arb_wgen_below(5, ARB_W_PROMPT, 0, i, cfg.vocab_size);
    const uint32_t next = tok[3];
    return arb_gpu_model_set_input(m, tok, 8, 0, stream, why, sizeof why) == ARB_OK &&
           arb_gpu_model_step(m, 8, stream, why, sizeof why) == ARB_OK &&
           arb_gpu_model_set_input(m, &next, 1, 8, stream, why, sizeof why) == ARB_OK &&
           arb_gpu_model_step(m, 1, stream, why, sizeof why) == ARB_OK &&
           cudaStreamSynchronize(stream) == cudaSuccess &&
           arb_gpu_model_read_logits(m, 1, out, why, sizeof why) == ARB_OK;
}

static void t_kinds_measured(void)
{
    arb_gpu_model_t *m = make(0);
    TAP_REQUIRE(m != NULL);
    const unsigned Vr = arb_gpu_model_vocab_rank(m);
    float *a = malloc(sizeof(float) * Vr), *b = malloc(sizeof(float) * Vr);
    TAP_REQUIRE(a && b && decode(m, a));
    double us[ARB_GPU_PROF_KINDS], step = 0;
    const unsigned keep = 1u << ARB_GPU_PROF_SITE_B;
    arb_status_t st = arb_gpu_model_profile_graph(m, 1, 5, keep, stream, us, &step, why, sizeof why);
    if (st != ARB_OK)
        tap_diag("profile: %s", why);
    TAP_REQUIRE(st == ARB_OK);
    TAP_CHECK(isfinite(step) && step > 0);
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++) {
        tap_diag("%-12s %9.2f us", arb_gpu_prof_name(k), us[k]);
        if (k == ARB_GPU_PROF_SITE_B)
            TAP_CHECK(isnan(us[k])); /* kept: never disabled */
        else if (k == ARB_GPU_PROF_MLA_PREP)
            TAP_CHECK(isnan(us[k])); /* no launch of its own: qkv_a's launch runs it */
        else
            TAP_CHECK(isfinite(us[k])); /* tiny has a dense layer and MoE layers: every other kind runs */
    }
    /* the graph profile replays positions 8 only and leaves every node enabled */
    TAP_REQUIRE(decode(m, b));
    size_t diff = 0;
    for (unsigned i = 0; i < Vr; i++)
        diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    TAP_EQ_U64(diff, 0);
    st = arb_gpu_model_profile_graph(m, 1, 0, 0, stream, us, &step, why, sizeof why);
    TAP_CHECK(st == ARB_ERR_INVALID && isnan(step));
    free(a), free(b);
    arb_gpu_model_destroy(m);
}

/* The chain profile with launches captured plain or with PDL (the engine's default: the windows'
 * restore copies then sit before kernels whose programmatic predecessor was removed). */
static void chain_case(int pdl)
{
    arb_gpu_model_t *m = make(pdl);
    TAP_REQUIRE(m != NULL);
    const unsigned Vr = arb_gpu_model_vocab_rank(m);
    float *a = malloc(sizeof(float) * Vr), *b = malloc(sizeof(float) * Vr);
    TAP_REQUIRE(a && b && decode(m, a));
    double us[ARB_GPU_PROF_KINDS], step = 0, sum = 0;
    arb_gpu_chain_layers_t lay;
    arb_status_t st = arb_gpu_model_profile_chain(m, 1, 5, stream, us, &step, &lay, why, sizeof why);
    if (st != ARB_OK)
        tap_diag("chain: %s", why);
    TAP_REQUIRE(st == ARB_OK);
    TAP_CHECK(isfinite(step) && step > 0);
    { /* the last replay was the plan's last window: the tail (layers 1, 2, lm_head) from the state
       * the snapshot restored at layer 1's start; with the restore right its logits are the step's */
        TAP_REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess &&
                    arb_gpu_model_read_logits(m, 1, b, why, sizeof why) == ARB_OK);
        size_t rdiff = 0;
        for (unsigned i = 0; i < Vr; i++)
            rdiff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
        if (rdiff)
            tap_diag("the tail window's logits differ from the step's in %zu of %u (the restore?)", rdiff, Vr);
        TAP_EQ_U64(rdiff, 0);
    }
    for (int k = 0; k < ARB_GPU_PROF_KINDS; k++) {
        tap_diag("%-12s %9.2f us", arb_gpu_prof_name(k), us[k]);
        if (k == ARB_GPU_PROF_EMBED || k == ARB_GPU_PROF_MLA_PREP)
            TAP_CHECK(isnan(us[k])); /* the head is not measured; mla_prep has no launch */
        else
            TAP_CHECK(isfinite(us[k]));
        if (isfinite(us[k]))
            sum += us[k];
    }
    /* tiny: layer 0 dense, layers 1 and 2 MoE, all three measured */
    TAP_EQ_U64(lay.n, 3);
    for (unsigned i = 0; i < lay.n && i < 3; i++) {
        tap_diag("layer %u (%s): %.2f us", lay.layer[i], lay.dense[i] ? "dense" : "MoE", lay.us[i]);
        TAP_EQ_U64(lay.layer[i], i);
        TAP_CHECK(lay.dense[i] == (i == 0));
        TAP_CHECK(lay.us[i] > 0);
    }
    /* the segments stand for the step but the embedding's: the sum near the whole replay */
    tap_diag("kinds summed %.2f us, the whole step %.2f us", sum, step);
    TAP_CHECK(sum > 0.5 * step && sum < 1.5 * step);
    TAP_REQUIRE(decode(m, b));
    size_t diff = 0;
    for (unsigned i = 0; i < Vr; i++)
        diff += memcmp(&a[i], &b[i], sizeof(float)) != 0;
    TAP_EQ_U64(diff, 0);
    st = arb_gpu_model_profile_chain(m, 1, 0, stream, us, &step, &lay, why, sizeof why);
    TAP_CHECK(st == ARB_ERR_INVALID && isnan(step) && lay.n == 0);
    free(a), free(b);
    arb_gpu_model_destroy(m);
}
static void t_chain(void) { chain_case(0); }
static void t_chain_pdl(void) { chain_case(1); }

int main(int argc, char **argv)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("1..0 # SKIP no CUDA device visible\n");
        return 77;
    }
    if (arb_config_load("tiny", &cfg, why, sizeof why) != ARB_OK ||
        arb_rope_make(&cfg, &rope, why, sizeof why) != ARB_OK ||
        cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        fprintf(stderr, "setup: %s\n", why);
        return 1;
    }
    static const tap_test_t tests[] = {
        {"kinds_measured", t_kinds_measured}, {"chain", t_chain}, {"chain_pdl", t_chain_pdl}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
