/* SPDX-License-Identifier: MIT */
/*
 * Speculative cycles on the CPU reference engine (tiny config, one process): greedy
 * speculation emits exactly plain greedy decoding's tokens, with a self-draft (the
 * target's own configuration: every draft accepted, the catch-up path) and with the
 * one-layer draft (mostly rejected: the rollback path); with --accept-rate the accepted
 * lengths follow the draws and decide the cache length.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arbench/status.h"
#include "model/config.h"
#include "cpu/cpu_ref.h"
#include "run/spec_pair.h"
#include "tap.h"
#include "model/wgen.h"

enum { CTX = 160, PROMPT = 12 };
static arb_model_config_t cfg, dcfg;
static char why[1024];

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static arb_status_t cpu_step(void *model, const uint32_t *tokens, unsigned T, unsigned pos0, double *us, uint32_t *greedy,
                             char *w, size_t wl)
{
    double t0 = now_us();
    ARB_TRY(arb_cpu_model_step(model, tokens, T, pos0, w, wl));
    for (unsigned t = 0; t < T; t++) {
        float best;
        arb_cpu_model_argmax(model, t, &best, &greedy[t]);
    }
    *us = now_us() - t0;
    return ARB_OK;
}

static arb_cpu_model_t *make(const arb_model_config_t *c, unsigned T)
{
    arb_cpu_model_opts_t o = {.cfg = c, .format = ARB_WEIGHTS_BF16, .seed = 7, .tp_shape = 1, .shard_first = 0,
                              .shard_count = 1, .max_tokens = T, .context = CTX};
    arb_cpu_model_t *m = NULL;
    if (arb_cpu_model_create(&o, &m, why, sizeof why) != ARB_OK)
        tap_diag("create: %s", why);
    return m;
}

static uint32_t prompt_tok(unsigned p) { return arb_wgen_below(7, ARB_W_PROMPT, 0, p, cfg.vocab_size); }

/* Prefill prompt into m; returns the greedy token after it. */
static uint32_t prefill(arb_cpu_model_t *m)
{
    uint32_t toks[PROMPT], g[PROMPT];
    double us;
    for (unsigned p = 0; p < PROMPT; p++)
        toks[p] = prompt_tok(p);
    for (unsigned p = 0; p < PROMPT; p++)
        if (cpu_step(m, &toks[p], 1, p, &us, &g[p], why, sizeof why) != ARB_OK)
            return 0;
    return g[PROMPT - 1];
}

/* Runs `cycles` cycles of k with draft config dc; returns the trace (caller frees). */
static int run_spec(const arb_model_config_t *dc, unsigned k, double p, size_t cycles, arb_spec_trace_t *tr,
                    arb_spec_state_t *st)
{
    arb_cpu_model_t *target = make(&cfg, k + 1), *draft = make(dc, 4);
    if (!target || !draft)
        return -1;
    uint32_t prompt[PROMPT];
    for (unsigned q = 0; q < PROMPT; q++)
        prompt[q] = prompt_tok(q);
    uint32_t g0 = prefill(target);
    prefill(draft);
    arb_spec_pair_t pair;
    int rc = -1;
    if (arb_spec_pair_init(&pair, cpu_step, target, draft, CTX, 4, prompt, PROMPT, why, sizeof why) == ARB_OK) {
        arb_spec_model_t m = arb_spec_pair_model(&pair);
        *st = (arb_spec_state_t){.cache_len = PROMPT, .next = (int32_t)g0};
        arb_spec_opts_t o = {.k = k, .accept_rate = p, .seed = 5, .cycles = cycles};
        rc = arb_spec_run(&m, &o, st, tr, why, sizeof why) == ARB_OK ? 0 : -1;
        if (rc)
            tap_diag("spec run: %s", why);
        arb_spec_pair_free(&pair);
    }
    arb_cpu_model_destroy(target);
    arb_cpu_model_destroy(draft);
    return rc;
}

/* Plain greedy decoding of n tokens after the prompt. */
static void plain(uint32_t *out, size_t n)
{
    arb_cpu_model_t *m = make(&cfg, 1);
    if (!m)
        return;
    uint32_t tok = prefill(m);
    double us;
    for (size_t i = 0; i < n; i++) {
        uint32_t g;
        if (cpu_step(m, &tok, 1, (unsigned)(PROMPT + i), &us, &g, why, sizeof why) != ARB_OK)
            break;
        out[i] = g;
        tok = g;
    }
    arb_cpu_model_destroy(m);
}

static void greedy_case(const arb_model_config_t *dc, unsigned k, int all_accepted)
{
    arb_spec_trace_t tr;
    arb_spec_state_t st;
    TAP_REQUIRE(run_spec(dc, k, -1, 12, &tr, &st) == 0);
    uint32_t *ref = calloc(tr.ntokens, sizeof *ref);
    TAP_REQUIRE(ref);
    plain(ref, tr.ntokens);
    size_t same = 0, acc = 0;
    /* the first emitted token is the one after `next` (g0 is ref's own first input) */
    for (size_t i = 0; i < tr.ntokens; i++)
        same += (uint32_t)tr.tokens[i] == ref[i];
    for (size_t c = 0; c < tr.cycles; c++)
        acc += tr.accepted[c];
    tap_diag("k %u: %zu tokens in %zu cycles, %zu drafts accepted", k, tr.ntokens, tr.cycles, acc);
    TAP_EQ_U64(same, tr.ntokens);
    TAP_EQ_U64(st.cache_len, PROMPT + tr.ntokens);
    if (all_accepted)
        TAP_EQ_U64(acc, tr.cycles * k);
    free(ref);
    arb_spec_trace_free(&tr);
}

static void t_self_draft_accepts_all(void) { greedy_case(&cfg, 3, 1); }
static void t_one_layer_draft(void) { greedy_case(&dcfg, 2, 0); }

static void t_accept_rate(void)
{
    arb_spec_trace_t tr;
    arb_spec_state_t st;
    TAP_REQUIRE(run_spec(&dcfg, 2, 0.7, 30, &tr, &st) == 0);
    size_t acc = 0, draws = 1;
    for (size_t c = 0; c < tr.cycles; c++) {
        acc += tr.accepted[c];
        draws &= tr.accepted[c] == arb_spec_accept_rate(5, c, 2, 0.7);
    }
    TAP_CHECK(draws);
    TAP_EQ_U64(st.cache_len, PROMPT + tr.cycles + acc);
    arb_spec_summary_t s;
    TAP_EQ_INT(arb_spec_summarize(&tr, 1000.0, &s, why, sizeof why), ARB_OK);
    TAP_CHECK(s.draft_us > 0 && s.verify_us > 0 && s.cycle_us >= s.verify_us);
    arb_spec_trace_free(&tr);
}

int main(int argc, char **argv)
{
    if (arb_config_load("tiny", &cfg, why, sizeof why) != ARB_OK) {
        printf("Bail out! tiny config: %s\n", why);
        return 1;
    }
    arb_draft_config(&cfg, &dcfg);
    static const tap_test_t tests[] = {
        {"self_draft_accepts_all", t_self_draft_accepts_all},
        {"one_layer_draft", t_one_layer_draft},
        {"accept_rate", t_accept_rate},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
