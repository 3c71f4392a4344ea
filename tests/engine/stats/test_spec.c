/* SPDX-License-Identifier: MIT */
/* Speculative cycles (the functions `arbench engine` runs): accept/rollback arithmetic,
 * cycles on a toy target's own chain reproduce plain decoding and count a planted
 * disagreement once, seeded acceptance statistics against E[n], break-even and the seed
 * deployment's figures. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stats/spec.h"
#include "tap.h"
#include "model/wgen.h"

static void test_rollback_hand_cases(void)
{
    static const uint32_t draft[3] = {5, 6, 7};
    struct {
        uint32_t target[4];
        unsigned n;
        uint32_t bonus;
        size_t rolled, len;
    } c[] = {
        {{5, 6, 9, 11}, 2, 9, 1, 103},  /* d3 rejected: g2 = 9 is the bonus */
        {{4, 6, 7, 11}, 0, 4, 3, 101},  /* first rejected: only the target's own token */
        {{5, 6, 7, 11}, 3, 11, 0, 104}, /* all accepted: the bonus after d3 */
    };
    char why[128];
    for (size_t i = 0; i < 3; i++) {
        arb_spec_state_t st = {.cache_len = 100, .cycle = 7};
        unsigned n = arb_spec_accept_greedy(draft, c[i].target, 3);
        TAP_CHECK(n == c[i].n);
        uint32_t emitted[4] = {UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX};
        arb_spec_commit_t cm;
        TAP_CHECK(arb_spec_commit(&st, 3, n, draft, c[i].target, emitted, &cm, why, sizeof why) == ARB_OK);
        TAP_CHECK(cm.accepted == n && cm.emitted == n + 1 && cm.bonus == c[i].bonus);
        TAP_CHECK(cm.written == 4 && cm.rolled_back == c[i].rolled && cm.cache_len == c[i].len);
        TAP_CHECK(st.cache_len == c[i].len && st.cycle == 8);
        TAP_CHECK(memcmp(emitted, draft, n * sizeof *draft) == 0 && emitted[n] == c[i].bonus);
        for (unsigned j = n + 1; j < 4; j++)
            TAP_CHECK(emitted[j] == UINT32_MAX); /* nothing written past the bonus */
    }
    arb_spec_state_t st = {0};
    uint32_t e[4];
    arb_spec_commit_t cm;
    TAP_CHECK(arb_spec_commit(&st, 3, 4, draft, draft, e, &cm, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(arb_spec_commit(&st, 0, 0, draft, draft, e, &cm, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(st.cache_len == 0 && st.cycle == 0);
}

/* A toy target: its greedy token after `tok` at position `pos` is a hash, except at
 * position `flip`, where it answers another token (a verify that disagrees with its own
 * decode there). Positions and the cache are tracked to check what the cycle feeds and
 * keeps. */
#define V 1000
typedef struct toy {
    uint64_t seed;
    long flip;        /* >= 0: the position whose output differs from the chain */
    int mostly_right; /* the draft proposes the chain's token except at chain indices divisible by 3 */
    size_t cache_len; /* as the rollback left it */
    size_t verify_pos_errors, rollback_errors, kept_errors, verifies, drafts;
    double draft_step_us, verify_us;
    const uint32_t *chain;
    size_t start;
} toy_t;

static uint32_t toy_next(const toy_t *t, uint32_t tok, size_t pos)
{
    return arb_wgen_below(t->seed, ARB_W_PROMPT, 1, (uint64_t)tok * 1000003u + pos, V);
}

/* The chain: plain greedy decoding of the toy from token c0 at position start. */
static uint32_t *toy_chain(const toy_t *t, uint32_t c0, size_t n)
{
    uint32_t *c = calloc(n, sizeof *c);
    c[0] = c0;
    for (size_t i = 1; i < n; i++)
        c[i] = toy_next(t, c[i - 1], t->start + i - 1);
    return c;
}

/* The toy's draft proposes the chain's token + 3 (always wrong); the draw decides what is kept. */
static arb_status_t toy_propose(void *ctx, const arb_spec_state_t *st, uint32_t first, unsigned k,
                                const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    toy_t *t = ctx;
    t->drafts++;
    const size_t i = st->cache_len - t->start;
    t->verify_pos_errors += first != t->chain[i]; /* a cycle starts on the chain */
    for (unsigned j = 1; j <= k; j++)
        drafts[j - 1] = arb_spec_plant_apply(
            plant, j, t->mostly_right && (i + j) % 3 ? t->chain[i + j] : (t->chain[i + j] + 3) % V);
    *us = k * t->draft_step_us;
    return ARB_OK;
}

static arb_status_t toy_verify(void *ctx, const arb_spec_state_t *st, const uint32_t *tokens, unsigned n,
                               uint32_t *argmax, double *us, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    toy_t *t = ctx;
    t->verifies++;
    t->verify_pos_errors += st->cache_len != t->cache_len; /* verify starts where the cache ends */
    for (unsigned i = 0; i < n; i++) {
        argmax[i] = toy_next(t, tokens[i], st->cache_len + i);
        if ((long)(st->cache_len + i) == t->flip)
            argmax[i] = (argmax[i] + 2) % V; /* neither the chain's token nor a planted wrong draft */
    }
    *us = t->verify_us;
    return ARB_OK;
}

static arb_status_t toy_rollback(void *ctx, size_t len, const uint32_t *kept, unsigned n, char *why, size_t why_len)
{
    (void)why, (void)why_len;
    toy_t *t = ctx;
    /* the cache grows by 1 .. k + 1 per cycle; the kept inputs are the chain's */
    t->rollback_errors += len <= t->cache_len || n != len - t->cache_len;
    for (unsigned j = 0; j < n; j++)
        t->kept_errors += kept[j] != t->chain[t->cache_len - t->start + j];
    t->cache_len = len;
    return ARB_OK;
}

/* Runs the cycles on the toy's own chain from position 50. */
static arb_status_t toy_run(toy_t *t, unsigned k, double p, uint64_t seed, size_t tokens, size_t cycles,
                            arb_spec_state_t *st, arb_spec_trace_t *tr, char *why, size_t why_len)
{
    t->start = t->cache_len = 50;
    uint32_t *chain = toy_chain(t, 17, tokens + k + 1);
    t->chain = chain;
    arb_spec_model_t m = {toy_propose, toy_verify, toy_rollback, t};
    arb_spec_opts_t o = {.k = k,
                         .accept_rate = p,
                         .seed = seed,
                         .vocab = V,
                         .chain = chain,
                         .chain_len = tokens + k + 1,
                         .start = 50,
                         .tokens = tokens,
                         .cycles = cycles};
    arb_status_t s = arb_spec_run(&m, &o, st, tr, why, why_len);
    free(chain);
    t->chain = NULL;
    return s;
}

/* Leading draws below p, spelled out from the generator (the rule's definition). */
static unsigned leading_draws(uint64_t seed, uint64_t cycle, unsigned k, double p)
{
    unsigned n = 0;
    while (n < k && (arb_wgen_uniform(seed, ARB_W_ACCEPT, 0, cycle * 64 + n + 1) + 1.0) / 2 < p)
        n++;
    return n;
}

static void test_chain_reproduced(void)
{
    for (unsigned k = 1; k <= 4; k++) {
        toy_t t = {.seed = 11, .flip = -1, .draft_step_us = 1, .verify_us = 10};
        arb_spec_state_t st;
        arb_spec_trace_t tr;
        char why[256];
        TAP_CHECK(toy_run(&t, k, 0.6, 1, 300, 300, &st, &tr, why, sizeof why) == ARB_OK);
        /* plain greedy decoding of the same model from the same token, recomputed here */
        uint32_t tok = 17;
        size_t mismatches = 0, acc = 0, draws = 0;
        for (size_t i = 0; i < tr.ntokens; i++) {
            tok = toy_next(&t, tok, 50 + i);
            mismatches += tok != tr.tokens[i];
        }
        for (size_t c = 0; c < tr.cycles; c++) {
            acc += tr.accepted[c];
            draws += tr.accepted[c] == leading_draws(1, c, k, 0.6);
        }
        TAP_CHECK(mismatches == 0 && tr.agree == tr.ntokens);
        TAP_CHECK(draws == tr.cycles); /* on its own chain the accepted length is the leading draws */
        TAP_CHECK(tr.ntokens == tr.cycles + acc && st.cache_len == 50 + tr.ntokens && t.cache_len == st.cache_len);
        TAP_CHECK(tr.ntokens >= 300 && tr.ntokens - (tr.accepted[tr.cycles - 1] + 1) < 300); /* stops at 300 */
        TAP_CHECK(t.verify_pos_errors == 0 && t.rollback_errors == 0 && t.kept_errors == 0);
        TAP_CHECK(t.verifies == tr.cycles && t.drafts == tr.cycles);
        TAP_CHECK(acc > 0 && acc < tr.cycles * k); /* both paths ran: some accepted, some rejected */
        arb_spec_trace_free(&tr);
    }
}

static void test_planted_difference(void)
{
    /* The target answers another token at position 50 + 40: that one emitted token differs
     * from the chain, and the next cycle starts on the chain again (no cascade). */
    toy_t t = {.seed = 11, .flip = 90, .draft_step_us = 1, .verify_us = 10};
    arb_spec_state_t st;
    arb_spec_trace_t tr;
    char why[256];
    TAP_CHECK(toy_run(&t, 3, 0.7, 2, 100, 100, &st, &tr, why, sizeof why) == ARB_OK);
    uint32_t tok = 17;
    size_t differ = 0, at = 0;
    for (size_t i = 0; i < tr.ntokens; i++) {
        tok = toy_next(&t, tok, 50 + i);
        if (tok != tr.tokens[i])
            differ++, at = i;
    }
    TAP_CHECK(differ == 1 && at == 40 && tr.agree == tr.ntokens - 1);
    TAP_CHECK(t.verify_pos_errors == 0 && t.rollback_errors == 0 && t.kept_errors == 0);
    arb_spec_trace_free(&tr);
}

/* n = leading accepts of k: P(n = j) = p^j (1 - p) for j < k, P(n = k) = p^k. */
static double var_accepted(double p, unsigned k)
{
    double m = 0, m2 = 0;
    for (unsigned j = 0; j <= k; j++) {
        double pj = j < k ? pow(p, j) * (1 - p) : pow(p, k);
        m += j * pj, m2 += (double)j * j * pj;
    }
    return m2 - m * m;
}

static void test_accept_rate_statistics(void)
{
    /* N cycles on the toy's own chain: the accepted lengths against E[n] = p + .. + p^k
     * and the first draft's acceptance against binomial(N, p) */
    const size_t N = 20000;
    const double ps[] = {0.5, 0.7, 0.9};
    for (size_t a = 0; a < 3; a++) {
        const unsigned k = 3;
        double p = ps[a], sum = 0;
        size_t first = 0;
        toy_t t = {.seed = 4, .flip = -1, .draft_step_us = 1, .verify_us = 10};
        arb_spec_state_t st;
        arb_spec_trace_t tr;
        char why[256];
        TAP_REQUIRE(toy_run(&t, k, p, 42, N * (k + 1), N, &st, &tr, why, sizeof why) == ARB_OK);
        TAP_CHECK(tr.cycles == N && tr.agree == tr.ntokens);
        for (size_t c = 0; c < N; c++) {
            sum += tr.accepted[c];
            first += tr.accepted[c] >= 1;
        }
        double mean = sum / N, e = 0, pi = 1;
        for (unsigned i = 1; i <= k; i++)
            pi *= p, e += pi;
        double tol = 4.5 * sqrt(var_accepted(p, k) / N);
        double ftol = 4.5 * sqrt(N * p * (1 - p));
        printf("# p %.1f k %u: mean accepted %.4f, expected %.4f (+- %.4f); first accepted %zu of %zu\n", p, k, mean, e,
               tol, first, N);
        TAP_CHECK(fabs(mean - e) < tol);
        TAP_CHECK(fabs(arb_spec_expected_accepted(p, k) - e) < 1e-12);
        TAP_CHECK(fabs((double)first - N * p) < ftol); /* binomial(N, p) */
        arb_spec_trace_free(&tr);
    }
    for (int end = 0; end < 2; end++) { /* p = 0 accepts no draft, p = 1 every draft */
        toy_t t = {.seed = 4, .flip = -1, .draft_step_us = 1, .verify_us = 10};
        arb_spec_state_t st;
        arb_spec_trace_t tr;
        char why[256];
        TAP_REQUIRE(toy_run(&t, 4, end, 1, 500, 100, &st, &tr, why, sizeof why) == ARB_OK);
        size_t all = 1;
        for (size_t c = 0; c < tr.cycles; c++)
            all &= tr.accepted[c] == (end ? 4u : 0u);
        TAP_CHECK(all && tr.cycles == 100 && tr.agree == tr.ntokens);
        arb_spec_trace_free(&tr);
    }
    /* seeded: the same seed and cycle give the same draws, another seed others; a draw below
     * p keeps the chain's token, else the draft's own proposal, or the next token when that
     * proposal would be right */
    const uint32_t right[3] = {0, 0, 999};
    size_t same = 0, diff = 0;
    for (uint64_t c = 0; c < 200; c++) {
        same += arb_spec_accept_draw(5, c, 1) == arb_spec_accept_draw(5, c, 1);
        diff += arb_spec_accept_draw(5, c, 1) != arb_spec_accept_draw(6, c, 1);
        double u = arb_spec_accept_draw(5, c, 2);
        TAP_CHECK(u >= 0 && u < 1);
        const arb_spec_plant_t keep = {.seed = 5, .cycle = c, .p = u + 1e-9, .right = right, .vocab = 1000};
        const arb_spec_plant_t drop = {.seed = 5, .cycle = c, .p = u, .right = right, .vocab = 1000};
        TAP_CHECK(arb_spec_plant_apply(&keep, 2, 7) == 999 && arb_spec_plant_apply(&drop, 2, 7) == 7 &&
                  arb_spec_plant_apply(&drop, 2, 999) == 0 && arb_spec_plant_apply(NULL, 2, 7) == 7);
    }
    TAP_CHECK(same == 200 && diff >= 190);
}

static void test_accept_rate_drives_the_cycle(void)
{
    /* the summary of hand-set times: draft 2 x 2 us, verify 20 us, plain step 10 us */
    toy_t t = {.seed = 3, .flip = -1, .draft_step_us = 2, .verify_us = 20};
    arb_spec_state_t st;
    arb_spec_trace_t tr;
    char why[256];
    TAP_REQUIRE(toy_run(&t, 2, 0.8, 9, 15000, 5000, &st, &tr, why, sizeof why) == ARB_OK);
    size_t acc = 0;
    for (size_t c = 0; c < tr.cycles; c++)
        acc += tr.accepted[c];
    TAP_CHECK(st.cache_len == 50 + tr.cycles + acc && t.verify_pos_errors == 0 && t.rollback_errors == 0);
    double mean = (double)acc / tr.cycles, e = 0.8 + 0.8 * 0.8;
    TAP_CHECK(fabs(mean - e) < 4.5 * sqrt(var_accepted(0.8, 2) / tr.cycles));
    arb_spec_summary_t s;
    TAP_CHECK(arb_spec_summarize(&tr, 10.0, &s, why, sizeof why) == ARB_OK);
    TAP_CHECK(s.draft_us == 4 && s.verify_us == 20 && s.cycle_us == 24);
    TAP_CHECK(fabs(s.mean_accepted - mean) < 1e-12);
    TAP_CHECK(fabs(s.spec_tok_s - (1 + mean) / 24e-6) < 1e-6 * s.spec_tok_s);
    TAP_CHECK(fabs(s.plain_tok_s - 1e5) < 1e-6 && fabs(s.ratio - (1 + mean) / 24e-6 / 1e5) < 1e-9);
    /* cycle 24 us vs plain 10: R = 2.4, 1 + p + p^2 = 2.4 */
    TAP_CHECK(fabs(s.break_even - (-1 + sqrt(1 + 4 * 1.4)) / 2) < 1e-9);
    arb_spec_trace_free(&tr);
    TAP_CHECK(toy_run(&t, 2, 1.5, 9, 100, 100, &st, &tr, why, sizeof why) == ARB_ERR_INVALID &&
              strstr(why, "--accept-rate"));
    TAP_CHECK(toy_run(&t, 0, 0.5, 9, 100, 100, &st, &tr, why, sizeof why) == ARB_ERR_INVALID &&
              strstr(why, "--spec-k"));
    /* a chain too short for the tokens asked for */
    uint32_t chain[4] = {1, 2, 3, 4};
    arb_spec_model_t m = {toy_propose, toy_verify, toy_rollback, &t};
    arb_spec_opts_t o = {
        .k = 2, .accept_rate = 0.5, .vocab = V, .chain = chain, .chain_len = 4, .tokens = 2, .cycles = 2};
    TAP_CHECK(arb_spec_run(&m, &o, &st, &tr, why, sizeof why) == ARB_ERR_INVALID && strstr(why, "chain"));
}

/* Measured cycles: the draft's own proposals decide, the first input is the last bonus;
 * the tokens stay the chain's and each cycle accepts the leading right proposals. */
static void test_measured(void)
{
    toy_t t = {.seed = 11, .flip = -1, .mostly_right = 1, .draft_step_us = 1, .verify_us = 10};
    t.start = t.cache_len = 50;
    const unsigned k = 3;
    uint32_t *chain = toy_chain(&t, 17, 200 + k + 1);
    t.chain = chain;
    arb_spec_model_t m = {toy_propose, toy_verify, toy_rollback, &t};
    arb_spec_opts_t o = {.k = k,
                         .measured = 1,
                         .accept_rate = -1,
                         .vocab = V,
                         .chain = chain,
                         .chain_len = 200 + k + 1,
                         .start = 50,
                         .tokens = 200,
                         .cycles = 200};
    arb_spec_state_t st;
    arb_spec_trace_t tr;
    char why[256];
    TAP_REQUIRE(arb_spec_run(&m, &o, &st, &tr, why, sizeof why) == ARB_OK);
    size_t i = 0, wrong = 0;
    for (size_t c = 0; c < tr.cycles; c++) { /* leading j with (i + j) % 3 != 0 */
        unsigned n = 0;
        while (n < k && (i + n + 1) % 3)
            n++;
        wrong += tr.accepted[c] != n;
        i += n + 1;
    }
    TAP_CHECK(wrong == 0 && tr.agree == tr.ntokens && t.verify_pos_errors == 0 && t.kept_errors == 0);
    TAP_CHECK(memcmp(tr.tokens, chain + 1, tr.ntokens * sizeof *chain) == 0);
    arb_spec_trace_free(&tr);
    free(chain);
}

static void test_break_even(void)
{
    char why[256];
    double p;
    /* k = 2, draft step 2.5 us, verify 15 us, plain 10 us: R = 2, p* = golden ratio - 1 */
    TAP_CHECK(arb_spec_break_even(2, 2.5, 15, 10, &p, why, sizeof why) == ARB_OK);
    TAP_CHECK(fabs(p - (sqrt(5.0) - 1) / 2) < 1e-12);
    TAP_CHECK(fabs(arb_spec_tok_s(p, 2, 2.5, 15) - 1e5) < 1e-6); /* there spec = plain */
    TAP_CHECK(arb_spec_tok_s(p + 0.01, 2, 2.5, 15) > 1e5 && arb_spec_tok_s(p - 0.01, 2, 2.5, 15) < 1e5);
    /* k = 1: 1 + p = R */
    TAP_CHECK(arb_spec_break_even(1, 1, 14, 10, &p, why, sizeof why) == ARB_OK && fabs(p - 0.5) < 1e-12);
    /* a cycle no slower than a plain step: wins at any acceptance */
    TAP_CHECK(arb_spec_break_even(3, 1, 7, 10, &p, why, sizeof why) == ARB_OK && p == 0);
    /* slower than k + 1 plain steps: never wins */
    TAP_CHECK(arb_spec_break_even(2, 1, 29, 10, &p, why, sizeof why) == ARB_OK && isinf(p));
    TAP_CHECK(arb_spec_break_even(2, 1, 0, 10, &p, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(arb_spec_break_even(0, 1, 5, 10, &p, why, sizeof why) == ARB_ERR_INVALID);
    TAP_CHECK(fabs(arb_spec_expected_accepted(0.5, 3) - 0.875) < 1e-15);
}

static void test_seed_deployment(void)
{
    /* design.md: plain decode 89.5 tok/s; EAGLE-3 54.1 tok/s; a 3-token verify (k = 2) of
     * about 30 ms. Even with a free draft (0 us, the most favourable case) the break-even
     * acceptance is ~0.89, while 54.1 tok/s at that cycle implies an acceptance of ~0.43:
     * speculation loses. */
    char why[256];
    double plain_us = 1e6 / 89.5, be, implied;
    TAP_CHECK(arb_spec_break_even(2, 0, 30000, plain_us, &be, why, sizeof why) == ARB_OK);
    TAP_CHECK(arb_spec_implied_acceptance(2, 54.1, 30000, &implied, why, sizeof why) == ARB_OK);
    printf("# seed: break-even %.4f, implied acceptance %.4f, ratio %.3f\n", be, implied, 54.1 / 89.5);
    TAP_CHECK(fabs(be - (-1 + sqrt(1 + 4 * (30000 / plain_us - 1))) / 2) < 1e-9);
    TAP_CHECK(be > 0.85 && be < 0.95);
    TAP_CHECK(implied < be); /* a loss */
    TAP_CHECK(arb_spec_tok_s(implied, 2, 0, 30000) < 89.5);
    TAP_CHECK(fabs(arb_spec_tok_s(implied, 2, 0, 30000) - 54.1) < 1e-6);
    /* a draft that costs time only raises the bar */
    double be2;
    TAP_CHECK(arb_spec_break_even(2, 500, 30000, plain_us, &be2, why, sizeof why) == ARB_OK && be2 > be);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {
        {"rollback_hand_cases", test_rollback_hand_cases},
        {"chain_reproduced", test_chain_reproduced},
        {"planted_difference", test_planted_difference},
        {"accept_rate_statistics", test_accept_rate_statistics},
        {"accept_rate_drives_the_cycle", test_accept_rate_drives_the_cycle},
        {"measured", test_measured},
        {"break_even", test_break_even},
        {"seed_deployment", test_seed_deployment},
    };
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
