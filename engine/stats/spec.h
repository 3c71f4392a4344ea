/* SPDX-License-Identifier: MIT */
/*
 * Speculative decoding cycles, EAGLE style, greedy, on a known chain (docs/engine-e2e.md).
 *
 * The chain c_0, c_1, ... is the target's greedy decode from position `start` (the run's
 * decode phase): c_{i+1} is the target's output after c_i. State between cycles:
 * `cache_len` positions are in the target's KV cache; i = cache_len - start tokens were
 * produced. One cycle:
 *   1-2. propose: the draft proposes d_1 .. d_k autoregressively after the cycle's first
 *      input a (its steps' time): measured (opts.measured), a is the last cycle's bonus
 *      token (c_0 first) and the d_j are the draft's own; planted (--accept-rate p), a is
 *      the chain's c_i and the draw decides which proposals are kept: d_j is the chain's
 *      c_{i+j} when draw j of the cycle is below p, else the draft's proposal, or
 *      (c_{i+j} + 1) mod vocab when the proposal happens to be right (arb_spec_plant_apply;
 *      each kept token is what the draft's next step reads). Draw j of cycle c is uniform in
 *      [0, 1) from arb_wgen(seed, ARB_W_ACCEPT, 0, c * 64 + j): reproducible,
 *      rank-independent (random weights accept nothing, so acceptance is a parameter until
 *      a real draft head measures it);
 *   3. verify: the target runs the inputs at positions cache_len .. cache_len + k in one
 *      pass (T = k + 1) and yields its argmax g_0 .. g_k (g_j follows input j);
 *   4. accept (greedy): n = the number of leading d_j with d_j == g_{j-1};
 *   5. emit d_1 .. d_n and the bonus token g_n (n + 1 tokens);
 *   6. rollback: the verify wrote k + 1 positions, the first n + 1 stay (c_i and the
 *      accepted drafts): cache_len += n + 1, k - n positions are discarded.
 * Planted, the next cycle starts from the chain's token at its position, so a verify
 * output that differs from the chain counts once (agree) and does not cascade; measured,
 * it starts from the bonus token, as speculative decoding does. Greedy speculation on
 * a target that reproduces its chain emits the chain; the accepted length is then the
 * number of leading draws below p.
 *
 * Throughput: a cycle costs k draft steps and one verify, t_cycle = k t_draft + t_verify,
 * and emits 1 + E[n] tokens; with each draft token accepted independently with
 * probability p (a rejection ends the run of accepts), E[n] = sum_{i=1..k} p^i, so
 *   tok/s_spec(p) = (1 + sum_{i=1..k} p^i) / t_cycle,   tok/s_plain = 1 / t_plain.
 * The break-even acceptance p* solves tok/s_spec(p*) = tok/s_plain, that is
 *   sum_{i=0..k} p*^i = t_cycle / t_plain  (= R);
 * the left side rises from 1 (p = 0) to k + 1 (p = 1), so p* = 0 when R <= 1
 * (speculation wins whatever is accepted), p* = INFINITY when R > k + 1 (it loses even
 * when every draft is accepted), else the unique root, found by bisection.
 */
#ifndef ARB_ENGINE_SPEC_H
#define ARB_ENGINE_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include "arbench/plugin.h"

#define ARB_SPEC_MAX_K 16 /* draft tokens per cycle; the accept draws index cycle * 64 + j */

typedef struct arb_spec_state {
    size_t cache_len; /* positions in the target's KV cache */
    uint64_t cycle;   /* cycles done (the accept draws' index) */
} arb_spec_state_t;

/* Draw j (1 .. k) of a cycle, uniform in [0, 1). */
double arb_spec_accept_draw(uint64_t seed, uint64_t cycle, unsigned j);
/* What the draw does to one proposal (planted cycles): right[j] (1 .. k) the chain's token. */
typedef struct arb_spec_plant {
    uint64_t seed, cycle;
    double p;
    const uint32_t *right; /* right[j], j = 1 .. k */
    uint32_t vocab;
} arb_spec_plant_t;
/* Draft j of a planted cycle from the draft's proposal (pl NULL: the proposal itself). */
uint32_t arb_spec_plant_apply(const arb_spec_plant_t *pl, unsigned j, uint32_t proposal);
/* Greedy acceptance: leading draft[i] equal to target[i] (the argmax after the prefix
 * that ends in input i: c_i for i = 0, draft[i-1] otherwise). 0..k. */
unsigned arb_spec_accept_greedy(const uint32_t *draft, const uint32_t *target_argmax, unsigned k);

typedef struct arb_spec_commit {
    unsigned accepted;   /* n */
    uint32_t bonus;      /* g_n */
    unsigned emitted;    /* n + 1 tokens: d_1 .. d_n, g_n */
    size_t written;      /* k + 1 positions the verify wrote */
    size_t rolled_back;  /* k - n positions discarded */
    size_t cache_len;    /* after the cycle */
} arb_spec_commit_t;

/* Steps 5-6 for a cycle with `accepted` = n: writes the emitted tokens into
 * emitted[0..n] (n + 1 entries), advances st. ARB_ERR_INVALID when n > k or k is out of range. */
arb_status_t arb_spec_commit(arb_spec_state_t *st, unsigned k, unsigned accepted, const uint32_t *draft,
                             const uint32_t *target_argmax, uint32_t *emitted, arb_spec_commit_t *out,
                             char *why, size_t why_len);

/* What the engine provides: the draft's steps, one verify pass, the cache cut. Times in us. */
typedef struct arb_spec_model {
    /* the draft's k proposals after `first` (the input at position st->cache_len):
     * drafts[j - 1] = arb_spec_plant_apply(plant, j, its proposal j), each fed to its next
     * step; *us the steps' time */
    arb_status_t (*propose)(void *ctx, const arb_spec_state_t *st, uint32_t first, unsigned k,
                            const arb_spec_plant_t *plant, uint32_t *drafts, double *us, char *why, size_t why_len);
    /* tokens[0..n) at positions st->cache_len .. + n - 1; argmax[0..n) */
    arb_status_t (*verify)(void *ctx, const arb_spec_state_t *st, const uint32_t *tokens, unsigned n,
                           uint32_t *argmax, double *us, char *why, size_t why_len);
    /* keep the first len positions of the target's (and the draft's) KV cache; the last
     * n of them hold kept[0..n) (c_i and the accepted drafts) */
    arb_status_t (*rollback)(void *ctx, size_t len, const uint32_t *kept, unsigned n, char *why, size_t why_len);
    void *ctx;
} arb_spec_model_t;

typedef struct arb_spec_opts {
    unsigned k;             /* 1 .. ARB_SPEC_MAX_K */
    int measured;           /* 1: the draft's own proposals (accept_rate unused) */
    double accept_rate;     /* p in [0, 1] (planted) */
    uint64_t seed;
    uint32_t vocab;         /* a wrong draft is (right + 1) mod vocab */
    const uint32_t *chain;  /* [chain_len] the target's greedy decode, chain[0] at position start */
    size_t chain_len;       /* at least tokens + k + 1 */
    size_t start;
    size_t tokens;          /* cycles run until this many tokens are produced ... */
    size_t cycles;          /* ... or this many cycles ran */
} arb_spec_opts_t;

/* Per cycle, in order; tokens: every emitted token. */
typedef struct arb_spec_trace {
    size_t cycles;
    unsigned k;
    double *draft_us, *verify_us, *cycle_us; /* [cycles] */
    unsigned *accepted;                      /* [cycles] */
    uint32_t *tokens;                        /* [ntokens], at most cycles * (k + 1) */
    size_t ntokens;
    size_t agree;                            /* emitted tokens equal to the chain's at their position */
} arb_spec_trace_t;

/* Runs the cycles from st->cache_len = opts->start; the trace is allocated here
 * (arb_spec_trace_free). */
arb_status_t arb_spec_run(const arb_spec_model_t *m, const arb_spec_opts_t *opts, arb_spec_state_t *st,
                          arb_spec_trace_t *out, char *why, size_t why_len);
void arb_spec_trace_free(arb_spec_trace_t *t);

/* E[n] = sum_{i=1..k} p^i. */
double arb_spec_expected_accepted(double p, unsigned k);
/* tok/s of speculation at acceptance p: (1 + E[n]) / (k draft_step_us + verify_us), per second. */
double arb_spec_tok_s(double p, unsigned k, double draft_step_us, double verify_us);
/* p* (formula above) for t_cycle = k draft_step_us + verify_us against plain_step_us.
 * ARB_ERR_INVALID for times that are not finite and > 0 (draft may be 0) or k = 0. */
arb_status_t arb_spec_break_even(unsigned k, double draft_step_us, double verify_us, double plain_step_us, double *p,
                                 char *why, size_t why_len);
/* The acceptance that a measured speculative rate implies: sum_{i=0..k} p^i = tok_s * t_cycle.
 * p = 0 / INFINITY outside [1, k + 1] as above. */
arb_status_t arb_spec_implied_acceptance(unsigned k, double spec_tok_s, double cycle_us, double *p, char *why,
                                         size_t why_len);

typedef struct arb_spec_summary {
    unsigned k;
    size_t cycles;
    double draft_us, verify_us, cycle_us; /* medians per cycle; draft is all k steps */
    double mean_accepted;                 /* mean n */
    double spec_tok_s;                    /* emitted tokens / total cycle time */
    double plain_step_us, plain_tok_s;    /* the plain decode step of the same run */
    double ratio;                         /* spec_tok_s / plain_tok_s */
    double break_even;                    /* p* from the medians; INFINITY: never wins */
} arb_spec_summary_t;

arb_status_t arb_spec_summarize(const arb_spec_trace_t *t, double plain_step_us, arb_spec_summary_t *out, char *why,
                                size_t why_len);

#endif
