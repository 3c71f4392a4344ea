/* SPDX-License-Identifier: MIT */
/* The CPU reference on the tiny config, one process, no call-site instances:
 * activations stay finite and informative, a verify block (T = 3, causal) gives the
 * logits of three decode steps, INT4 experts change the function but stay sane, and the
 * union of all K shards is the unsharded model. (TP across processes: engine_mpi.sh.) */
#include <math.h>
#include <stdlib.h>

#include "tap.h"
#include "model/config.h"
#include "cpu/cpu_ref.h"
#include "model/wgen.h"

static char why[1024];
static arb_model_config_t cfg;

static arb_cpu_model_t *make(unsigned K, unsigned first, unsigned count, arb_weight_format_t wf, unsigned T)
{
    arb_cpu_model_opts_t o = {.cfg = &cfg, .format = wf, .seed = 7, .tp_shape = K, .shard_first = first,
                              .shard_count = count, .max_tokens = T, .context = 64};
    arb_cpu_model_t *m = NULL;
    if (arb_cpu_model_create(&o, &m, why, sizeof why) != ARB_OK)
        tap_diag("create: %s", why);
    return m;
}

static uint32_t prompt(unsigned p)
{
    return arb_wgen_below(7, ARB_W_PROMPT, 0, p, cfg.vocab_size);
}

static void t_sane(void)
{
    arb_cpu_model_t *m = make(1, 0, 1, ARB_WEIGHTS_BF16, 1);
    TAP_REQUIRE(m);
    double lo = INFINITY, hi = -INFINITY;
    for (unsigned p = 0; p < 8; p++) {
        uint32_t tok = prompt(p);
        TAP_REQUIRE(arb_cpu_model_step(m, &tok, 1, p, why, sizeof why) == ARB_OK);
    }
    const float *lg = arb_cpu_model_logits(m);
    double sum = 0, sq = 0;
    for (unsigned v = 0; v < cfg.vocab_size; v++) {
        TAP_REQUIRE(isfinite(lg[v]));
        lo = lg[v] < lo ? lg[v] : lo, hi = lg[v] > hi ? lg[v] : hi;
        sum += lg[v], sq += (double)lg[v] * lg[v];
    }
    double sd = sqrt(sq / cfg.vocab_size - (sum / cfg.vocab_size) * (sum / cfg.vocab_size));
    tap_diag("logits after 8 tokens: min %.3f max %.3f stdev %.3f", lo, hi, sd);
    /* lm_head rows have unit variance over H and h has RMS ~1: logit stdev of order 1 */
    TAP_CHECK(sd > 0.2 && sd < 5.0);
    const int32_t *ex = arb_cpu_model_experts(m);
    TAP_EQ_INT(ex[0], -1); /* layer 0 is dense */
    TAP_CHECK(ex[cfg.num_experts_per_tok] >= 0 && ex[cfg.num_experts_per_tok] < (int)cfg.n_routed_experts);
    arb_cpu_model_destroy(m);
}

/* Three decode steps and one verify block over the same tokens and positions. */
static void t_verify_is_causal(void)
{
    for (int wf = 0; wf < 2; wf++) {
        arb_cpu_model_t *d = make(1, 0, 1, (arb_weight_format_t)wf, 1), *v = make(1, 0, 1, (arb_weight_format_t)wf, 3);
        TAP_REQUIRE(d && v);
        uint32_t toks[8];
        for (unsigned p = 0; p < 8; p++)
            toks[p] = prompt(p);
        for (unsigned p = 0; p < 5; p++) { /* both: 5 tokens of prefill, v in chunks of 3 + 2 */
            TAP_REQUIRE(arb_cpu_model_step(d, &toks[p], 1, p, why, sizeof why) == ARB_OK);
        }
        TAP_REQUIRE(arb_cpu_model_step(v, toks, 3, 0, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_cpu_model_step(v, toks + 3, 2, 3, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_cpu_model_step(v, toks + 5, 3, 5, why, sizeof why) == ARB_OK); /* verify T = 3 */
        const unsigned V = cfg.vocab_size;
        float *blk = malloc(sizeof(float) * 3 * V);
        for (unsigned i = 0; i < 3 * V; i++)
            blk[i] = arb_cpu_model_logits(v)[i];
        double maxd = 0;
        for (unsigned t = 0; t < 3; t++) {
            TAP_REQUIRE(arb_cpu_model_step(d, &toks[5 + t], 1, 5 + t, why, sizeof why) == ARB_OK);
            for (unsigned i = 0; i < V; i++) {
                double dd = fabs((double)blk[t * V + i] - arb_cpu_model_logits(d)[i]);
                maxd = dd > maxd ? dd : maxd;
            }
        }
        /* the reference computes every token alone: bitwise the same */
        TAP_NEAR(maxd, 0, 0);
        free(blk);
        arb_cpu_model_destroy(d);
        arb_cpu_model_destroy(v);
    }
}

static void t_int4_differs(void)
{
    arb_cpu_model_t *a = make(1, 0, 1, ARB_WEIGHTS_BF16, 1), *b = make(1, 0, 1, ARB_WEIGHTS_INT4, 1);
    TAP_REQUIRE(a && b);
    uint32_t tok = prompt(0);
    TAP_REQUIRE(arb_cpu_model_step(a, &tok, 1, 0, why, sizeof why) == ARB_OK);
    TAP_REQUIRE(arb_cpu_model_step(b, &tok, 1, 0, why, sizeof why) == ARB_OK);
    double diff = 0, sq = 0;
    for (unsigned v = 0; v < cfg.vocab_size; v++) {
        TAP_REQUIRE(isfinite(arb_cpu_model_logits(b)[v]));
        diff += fabs(arb_cpu_model_logits(a)[v] - arb_cpu_model_logits(b)[v]);
        sq += fabs(arb_cpu_model_logits(b)[v]);
    }
    tap_diag("mean |bf16 - int4| logit %.4f, mean |int4| %.4f", diff / cfg.vocab_size, sq / cfg.vocab_size);
    TAP_CHECK(diff > 0);               /* the experts are other weights */
    TAP_CHECK(sq / cfg.vocab_size > 0.1); /* and informative */
    arb_cpu_model_destroy(a);
    arb_cpu_model_destroy(b);
}

static void t_union_of_shards(void)
{
    arb_cpu_model_t *a = make(1, 0, 1, ARB_WEIGHTS_INT4, 1), *b = make(4, 0, 4, ARB_WEIGHTS_INT4, 1);
    arb_cpu_model_t *c = make(4, 1, 1, ARB_WEIGHTS_INT4, 1);
    TAP_REQUIRE(a && b && c);
    TAP_EQ_INT(arb_cpu_model_vocab_rank(c), cfg.vocab_size / 4);
    TAP_EQ_INT(arb_cpu_model_vocab_base(c), cfg.vocab_size / 4);
    double maxd = 0, maxc = 0;
    for (unsigned p = 0; p < 4; p++) {
        uint32_t tok = prompt(p);
        TAP_REQUIRE(arb_cpu_model_step(a, &tok, 1, p, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_cpu_model_step(b, &tok, 1, p, why, sizeof why) == ARB_OK);
        TAP_REQUIRE(arb_cpu_model_step(c, &tok, 1, p, why, sizeof why) == ARB_OK);
        for (unsigned v = 0; v < cfg.vocab_size; v++)
            maxd = fmax(maxd, fabs(arb_cpu_model_logits(a)[v] - arb_cpu_model_logits(b)[v]));
        for (unsigned v = 0; v < cfg.vocab_size / 4; v++) /* one shard alone is another function */
            maxc = fmax(maxc, fabs(arb_cpu_model_logits(a)[cfg.vocab_size / 4 + v] - arb_cpu_model_logits(c)[v]));
    }
    TAP_NEAR(maxd, 0, 0);
    TAP_CHECK(maxc > 0.01);
    arb_cpu_model_destroy(a);
    arb_cpu_model_destroy(b);
    arb_cpu_model_destroy(c);
}

static void t_bad_input(void)
{
    arb_cpu_model_t *m = make(1, 0, 1, ARB_WEIGHTS_BF16, 2);
    TAP_REQUIRE(m);
    uint32_t t[3] = {1, 2, 3};
    TAP_EQ_INT(arb_cpu_model_step(m, t, 3, 0, why, sizeof why), ARB_ERR_INVALID); /* T > max_tokens */
    TAP_EQ_INT(arb_cpu_model_step(m, t, 1, 64, why, sizeof why), ARB_ERR_INVALID); /* beyond the context */
    t[0] = cfg.vocab_size;
    TAP_EQ_INT(arb_cpu_model_step(m, t, 1, 0, why, sizeof why), ARB_ERR_INVALID);
    arb_cpu_model_destroy(m);
    TAP_CHECK(make(3, 0, 1, ARB_WEIGHTS_BF16, 1) == NULL); /* 4 heads do not split in 3 */
    TAP_HAS_STR(why, "num_attention_heads 4");
}

int main(int argc, char **argv)
{
    if (arb_config_load("tiny", &cfg, why, sizeof why) != ARB_OK) {
        printf("Bail out! %s\n", why);
        return 1;
    }
    static const tap_test_t tests[] = {
        {"sane", t_sane}, {"verify_is_causal", t_verify_is_causal}, {"int4_differs", t_int4_differs},
        {"union_of_shards", t_union_of_shards}, {"bad_input", t_bad_input},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
