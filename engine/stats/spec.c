/* SPDX-License-Identifier: MIT */
/* EAGLE-style speculative decoding cycles: accept, rollback, statistics, break-even. */
#include "stats/spec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arbench/status.h"
#include "analysis/resample.h"
#include "base/stats.h"
#include "model/wgen.h"

unsigned arb_spec_accept_greedy(const uint32_t *draft, const uint32_t *target_argmax, unsigned k)
{
    unsigned n = 0;
    while (n < k && draft[n] == target_argmax[n])
        n++;
    return n;
}

double arb_spec_accept_draw(uint64_t seed, uint64_t cycle, unsigned j)
{
    /* arb_wgen_uniform is in (-1, 1) with 24 random bits: map to [0, 1). */
    return (arb_wgen_uniform(seed, ARB_W_ACCEPT, 0, cycle * 64u + j) + 1.0) * 0.5;
}

uint32_t arb_spec_plant_apply(const arb_spec_plant_t *pl, unsigned j, uint32_t proposal)
{
    if (!pl)
        return proposal;
    const uint32_t right = pl->right[j];
    if (arb_spec_accept_draw(pl->seed, pl->cycle, j) < pl->p)
        return right;
    return proposal != right ? proposal : (right + 1) % pl->vocab;
}

arb_status_t arb_spec_commit(arb_spec_state_t *st, unsigned k, unsigned accepted, const uint32_t *draft,
                             const uint32_t *target_argmax, uint32_t *emitted, arb_spec_commit_t *out,
                             char *why, size_t why_len)
{
    if (k == 0 || k > ARB_SPEC_MAX_K)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative cycle: k = %u; expected 1 to %d draft tokens", k, ARB_SPEC_MAX_K);
    if (accepted > k)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative cycle: %u accepted of %u drafted", accepted, k);
    for (unsigned i = 0; i < accepted; i++)
        emitted[i] = draft[i];
    emitted[accepted] = target_argmax[accepted];
    out->accepted = accepted;
    out->bonus = target_argmax[accepted];
    out->emitted = accepted + 1;
    out->written = (size_t)k + 1;
    out->rolled_back = (size_t)(k - accepted);
    st->cache_len += (size_t)accepted + 1; /* the cycle's first input and the accepted drafts stay */
    st->cycle++;
    out->cache_len = st->cache_len;
    return ARB_OK;
}

void arb_spec_trace_free(arb_spec_trace_t *t)
{
    free(t->draft_us);
    free(t->verify_us);
    free(t->cycle_us);
    free(t->accepted);
    free(t->tokens);
    memset(t, 0, sizeof *t);
}

static arb_status_t check_opts(const arb_spec_opts_t *o, char *why, size_t why_len)
{
    if (o->k == 0 || o->k > ARB_SPEC_MAX_K)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "--spec-k %u: expected 1 to %d draft tokens", o->k, ARB_SPEC_MAX_K);
    if (!o->measured && !(o->accept_rate >= 0 && o->accept_rate <= 1))
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "--accept-rate %g: expected a probability from 0 to 1", o->accept_rate);
    if (o->cycles == 0 || o->tokens == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative run: %zu cycles, %zu tokens; expected at least 1 of each", o->cycles, o->tokens);
    if (!o->chain || o->chain_len < o->tokens + o->k + 1 || o->vocab < 2)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative run: a chain of %zu tokens (vocabulary %u) for %zu tokens at k %u; expected at least tokens + k + 1 and a vocabulary of 2 or more", o->chain ? o->chain_len : 0, o->vocab, o->tokens, o->k);
    return ARB_OK;
}

arb_status_t arb_spec_run(const arb_spec_model_t *m, const arb_spec_opts_t *o, arb_spec_state_t *st,
                          arb_spec_trace_t *t, char *why, size_t why_len)
{
    memset(t, 0, sizeof *t);
    ARB_TRY(check_opts(o, why, why_len));
    *st = (arb_spec_state_t){.cache_len = o->start};
    size_t c = o->cycles;
    const unsigned k = o->k;
    t->k = k;
    t->draft_us = calloc(c, sizeof(double));
    t->verify_us = calloc(c, sizeof(double));
    t->cycle_us = calloc(c, sizeof(double));
    t->accepted = calloc(c, sizeof(unsigned));
    t->tokens = calloc(c * (k + 1), sizeof(uint32_t));
    arb_status_t s = ARB_OK;
    if (!t->draft_us || !t->verify_us || !t->cycle_us || !t->accepted || !t->tokens)
        ARB_RAISE_GOTO(s, ARB_ERR_SYSTEM, fail, why, why_len, "speculative run: out of memory for %zu cycles", c);
    for (size_t cyc = 0; cyc < c && t->ntokens < o->tokens; cyc++) {
        const size_t i = st->cache_len - o->start; /* tokens produced: the chain index of the input */
        const uint32_t *right = o->chain + i;      /* i + k < chain_len: i < tokens */
        uint32_t in[ARB_SPEC_MAX_K + 1], argmax[ARB_SPEC_MAX_K + 1];
        double dus = NAN, vus = NAN;
        const arb_spec_plant_t plant = {.seed = o->seed, .cycle = st->cycle, .p = o->accept_rate, .right = right,
                                        .vocab = o->vocab};
        in[0] = o->measured && t->ntokens ? t->tokens[t->ntokens - 1] : right[0];
        ARB_TRY_GOTO(s, m->propose(m->ctx, st, in[0], k, o->measured ? NULL : &plant, in + 1, &dus, why, why_len),
                     fail);
        ARB_TRY_GOTO(s, m->verify(m->ctx, st, in, k + 1, argmax, &vus, why, why_len), fail);
        unsigned n = arb_spec_accept_greedy(in + 1, argmax, k);
        uint32_t *emitted = t->tokens + t->ntokens;
        arb_spec_commit_t cm;
        ARB_TRY_GOTO(s, arb_spec_commit(st, k, n, in + 1, argmax, emitted, &cm, why, why_len), fail);
        ARB_TRY_GOTO(s, m->rollback(m->ctx, st->cache_len, in, n + 1, why, why_len), fail);
        for (unsigned j = 0; j < cm.emitted; j++)
            t->agree += emitted[j] == right[j + 1];
        t->ntokens += cm.emitted;
        t->draft_us[cyc] = dus;
        t->verify_us[cyc] = vus;
        t->cycle_us[cyc] = dus + vus;
        t->accepted[cyc] = n;
        t->cycles = cyc + 1;
    }
    return ARB_OK;
fail:
    arb_spec_trace_free(t);
    return s;
}

double arb_spec_expected_accepted(double p, unsigned k)
{
    double sum = 0, pi = 1;
    for (unsigned i = 1; i <= k; i++) {
        pi *= p;
        sum += pi;
    }
    return sum;
}

double arb_spec_tok_s(double p, unsigned k, double draft_step_us, double verify_us)
{
    return (1.0 + arb_spec_expected_accepted(p, k)) / (k * draft_step_us + verify_us) * 1e6;
}

/* The p in [0, 1] with sum_{i=0..k} p^i = R (0 below the range, INFINITY above). */
static double solve_geometric(unsigned k, double R)
{
    if (R <= 1)
        return 0;
    if (R > k + 1.0)
        return INFINITY;
    double lo = 0, hi = 1;
    for (int it = 0; it < 200 && hi - lo > 1e-15; it++) {
        double mid = 0.5 * (lo + hi);
        if (1.0 + arb_spec_expected_accepted(mid, k) < R)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

arb_status_t arb_spec_break_even(unsigned k, double draft_step_us, double verify_us, double plain_step_us, double *p,
                                 char *why, size_t why_len)
{
    if (k == 0 || !isfinite(draft_step_us) || draft_step_us < 0 || !isfinite(verify_us) || verify_us <= 0 ||
        !isfinite(plain_step_us) || plain_step_us <= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "break-even: k %u, draft step %g us, verify %g us, plain step %g us; expected k >= 1, draft >= 0, verify and plain > 0", k, draft_step_us, verify_us, plain_step_us);
    *p = solve_geometric(k, (k * draft_step_us + verify_us) / plain_step_us);
    return ARB_OK;
}

arb_status_t arb_spec_implied_acceptance(unsigned k, double spec_tok_s, double cycle_us, double *p, char *why,
                                         size_t why_len)
{
    if (k == 0 || !isfinite(spec_tok_s) || spec_tok_s <= 0 || !isfinite(cycle_us) || cycle_us <= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "implied acceptance: k %u, %g tok/s, cycle %g us; expected k >= 1 and positive finite rates and times", k, spec_tok_s, cycle_us);
    *p = solve_geometric(k, spec_tok_s * cycle_us * 1e-6);
    return ARB_OK;
}

static double median_of(const double *v, size_t n, double *scratch)
{
    memcpy(scratch, v, n * sizeof *v);
    return arb_median_inplace(scratch, n);
}

arb_status_t arb_spec_summarize(const arb_spec_trace_t *t, double plain_step_us, arb_spec_summary_t *out, char *why,
                                size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (t->cycles == 0 || t->k == 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative summary: no cycles");
    if (!isfinite(plain_step_us) || plain_step_us <= 0)
        ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative summary: plain decode step %g us; expected a finite time > 0", plain_step_us);
    double *scratch = malloc(t->cycles * sizeof *scratch);
    if (!scratch)
        ARB_RAISE(ARB_ERR_SYSTEM, why, why_len, "speculative summary: out of memory");
    double total_us = 0, acc = 0;
    for (size_t i = 0; i < t->cycles; i++) {
        if (!isfinite(t->cycle_us[i]) || t->cycle_us[i] <= 0 || !isfinite(t->draft_us[i]) || t->draft_us[i] < 0) {
            free(scratch);
            ARB_RAISE(ARB_ERR_INVALID, why, why_len, "speculative summary: cycle %zu took %g us (draft %g us); expected finite positive times", i, t->cycle_us[i], t->draft_us[i]);
        }
        total_us += t->cycle_us[i];
        acc += t->accepted[i];
    }
    out->k = t->k;
    out->cycles = t->cycles;
    out->draft_us = median_of(t->draft_us, t->cycles, scratch);
    out->verify_us = median_of(t->verify_us, t->cycles, scratch);
    out->cycle_us = median_of(t->cycle_us, t->cycles, scratch);
    free(scratch);
    out->mean_accepted = acc / (double)t->cycles;
    out->spec_tok_s = (double)t->ntokens / total_us * 1e6;
    out->plain_step_us = plain_step_us;
    out->plain_tok_s = 1e6 / plain_step_us;
    out->ratio = out->spec_tok_s / out->plain_tok_s;
    return arb_spec_break_even(t->k, out->draft_us / t->k, out->verify_us, plain_step_us, &out->break_even, why, why_len);
}
