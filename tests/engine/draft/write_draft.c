/* SPDX-License-Identifier: MIT */
/*
 * write_draft DIR lookup SEED TOKENS right|wrong|mixed K S [SPOIL]
 * write_draft DIR random SEED [SPOIL]
 * write_draft DIR wide SEED H V L
 *
 * Writes an EAGLE-3 draft head for the tiny target (engine/configs/tiny.json, --seed SEED)
 * into the existing folder DIR (tests/engine/draft/draft_ckpt.h; SPOIL as there).
 *
 * lookup: a head whose proposal after an input token x is a table entry, built from the
 * target's greedy decode chain in TOKENS (--dump-tokens of a plain run: c_0 .. c_{S+k}).
 * How: fc, gate, up and down are zero, so the fused target state and the MLP add nothing;
 * the two query heads are 1024 x the input-normed embedding e(x) (the first H of the 2H
 * inputs), the one kv head's key is e itself, so every head's score is
 * 1024 |e|^2 / sqrt(hd) = 128 H at its own position (|e|^2 = H for an RMS-normed row) and
 * hundreds less at any other (another token's row of the same length at an angle; the same
 * token at another position: RoPE turns it away): the attention returns its own row's value.
 * The value is e(x) - hidden_norm(r), r the row's incoming state (0 from fc in a catch-up
 * row, the previous row's output e(x') in a draft step, RMS 1 so hidden_norm(r) = r), and
 * o_proj passes head 0's output, so the row's pre-norm state is r + e(x) - r = e(x)
 * and the final norm keeps its direction. lm_head row j is the embedding of the j-th
 * distinct chain token a_j: the logit is largest for a_j = x (Cauchy-Schwarz: normed rows
 * of equal length). d2t sends draft id j to the chain's successor of a_j (right), to that
 * plus 1 (wrong: never the target's greedy token), or to the successor for even j and
 * successor + 1 for odd j (mixed). The chain's successor must be a function of the token
 * (refused otherwise). Prints the accepted drafts per cycle that greedy speculation must
 * measure with k drafts over S tokens: "expected_accepted_per_cycle X cycles C".
 *
 * random: 4 query heads on 2 kv heads of 16, every weight a seeded uniform draw scaled by
 * 1/sqrt(inputs), norms near 1, d2t seeded target ids: a head that proposes something
 * arbitrary.
 *
 * wide: a random head at a real target's width, for timing (not for the tiny target): hidden
 * H, target vocabulary V, fused layers 1, L/2, L - 1 of a target of L layers; Llama-style
 * shapes chosen here (64 query heads on 8 kv heads of 128, intermediate 18432, a draft
 * vocabulary of 32000 when V allows, else V), not a published head's.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "draft_ckpt.h"
#include "model/config.h"
#include "model/wgen.h"
#include "rmsnorm/rmsnorm.h"

static void fill_random(uint16_t *w, size_t n, unsigned in, uint64_t seed, uint32_t which)
{
    for (size_t i = 0; i < n; i++)
        w[i] = arb_f32_to_bf16((float)(sqrt(3.0 / in) * arb_wgen_uniform(seed, ARB_W_PROMPT, 100 + which, i)));
}

static void fill_norm(uint16_t *w, size_t n, uint64_t seed, uint32_t which)
{
    for (size_t i = 0; i < n; i++)
        w[i] = arb_f32_to_bf16(1.0f + 0.1f * arb_wgen_uniform(seed, ARB_W_PROMPT, 200 + which, i));
}

static int random_head(const draft_dims_t *d, draft_tensors_t *w, uint64_t seed)
{
    const size_t H = d->H, qd = (size_t)d->nh * d->hd, kd = (size_t)d->nkv * d->hd;
    fill_random(w->fc, H * 3 * H, 3 * d->H, seed, 0);
    fill_random(w->q, qd * 2 * H, 2 * d->H, seed, 1);
    fill_random(w->k, kd * 2 * H, 2 * d->H, seed, 2);
    fill_random(w->v, kd * 2 * H, 2 * d->H, seed, 3);
    fill_random(w->o, H * qd, (unsigned)qd, seed, 4);
    fill_random(w->gate, d->I * H, d->H, seed, 5);
    fill_random(w->up, d->I * H, d->H, seed, 6);
    fill_random(w->down, H * d->I, d->I, seed, 7);
    fill_random(w->lm_head, d->Vd * H, d->H, seed, 8);
    fill_norm(w->in_norm, H, seed, 0), fill_norm(w->hidden_norm, H, seed, 1);
    fill_norm(w->post_norm, H, seed, 2), fill_norm(w->norm, H, seed, 3);
    for (unsigned j = 0; j < d->Vd; j++)
        w->d2t[j] = (int64_t)arb_wgen_below(seed, ARB_W_PROMPT, 300, j, d->V) - j;
    return 0;
}

static int lookup_head(const draft_dims_t *d, draft_tensors_t *w, uint64_t seed, const uint32_t *chain, unsigned n,
                       unsigned kind, unsigned k, unsigned S)
{
    const unsigned H = d->H;
    const uint16_t one = arb_f32_to_bf16(1.0f), minus = arb_f32_to_bf16(-1.0f), beta = arb_f32_to_bf16(1024.0f);
    uint32_t a[4096], succ[4096];
    unsigned na = 0;
    for (unsigned i = 0; i + 1 < n; i++) { /* distinct chain tokens and their successors */
        unsigned j = 0;
        while (j < na && a[j] != chain[i])
            j++;
        if (j < na && succ[j] != chain[i + 1]) {
            fprintf(stderr, "write_draft: token %u is followed by %u and by %u in the chain: no lookup can be right\n",
                    chain[i], succ[j], chain[i + 1]);
            return -1;
        }
        if (j == na)
            a[na] = chain[i], succ[na++] = chain[i + 1];
    }
    if (na != d->Vd) {
        fprintf(stderr, "write_draft: %u distinct chain tokens, %u draft ids\n", na, d->Vd);
        return -1;
    }
    for (unsigned i = 0; i < H; i++) {
        w->in_norm[i] = w->hidden_norm[i] = w->post_norm[i] = w->norm[i] = one;
        for (unsigned h = 0; h < d->nh; h++) /* q head h: 256 e (rows h hd .., the embedding half) */
            w->q[((size_t)h * d->hd + i) * 2 * H + i] = beta;
        w->k[(size_t)i * 2 * H + i] = w->v[(size_t)i * 2 * H + i] = one;
        w->v[(size_t)i * 2 * H + H + i] = minus;   /* - hidden_norm(r) */
        w->o[(size_t)i * d->nh * d->hd + i] = one; /* head 0's output */
    }
    const float ce = (float)sqrt(3.0); /* the target's embedding (engine/forward.md: embed_tokens) */
    for (unsigned j = 0; j < na; j++) {
        for (unsigned i = 0; i < H; i++)
            w->lm_head[(size_t)j * H + i] =
                arb_f32_to_bf16(ce * arb_wgen_uniform(seed, ARB_W_EMBED, 0, (uint64_t)a[j] * H + i));
        int right = kind == 0 || (kind == 2 && j % 2 == 0);
        w->d2t[j] = (int64_t)(right ? succ[j] : (succ[j] + 1) % d->V) - j;
    }
    /* greedy speculation on the chain: a cycle from c_i accepts d_j while the draft's id of
     * c_{i+j-1} is a right one */
    size_t i = 0, produced = 0, acc = 0, cycles = 0;
    while (produced < S) {
        unsigned m = 0;
        while (m < k) {
            unsigned j = 0;
            while (a[j] != chain[i + m])
                j++;
            if (!(kind == 0 || (kind == 2 && j % 2 == 0)))
                break;
            m++;
        }
        acc += m, produced += m + 1, i += m + 1, cycles++;
    }
    printf("expected_accepted_per_cycle %.3f cycles %zu\n", (double)acc / cycles, cycles);
    return 0;
}

int main(int argc, char **argv)
{
    char why[1024];
    arb_model_config_t c;
    if (argc < 4 || arb_config_load("tiny", &c, why, sizeof why) != ARB_OK) {
        fprintf(
            stderr,
            "usage: write_draft DIR lookup SEED TOKENS right|wrong|mixed K S [SPOIL] | DIR random SEED [SPOIL] | DIR wide SEED H V L\n");
        return 2;
    }
    const char *dir = argv[1];
    uint64_t seed = strtoull(argv[3], NULL, 0);
    draft_dims_t d = {
        .H = c.hidden_size, .I = 64, .nh = 2, .nkv = 1, .hd = 64, .V = c.vocab_size, .Vd = 48, .aux = {0, 1, 2}};
    draft_tensors_t w;
    const char *spoil = "none";
    int rc = 0;
    if (strcmp(argv[2], "wide") == 0 && argc >= 7) {
        d = (draft_dims_t){
            .H = (unsigned)atoi(argv[4]), .I = 18432, .nh = 64, .nkv = 8, .hd = 128, .V = (unsigned)atoi(argv[5])};
        unsigned L = (unsigned)atoi(argv[6]);
        d.Vd = d.V > 32000 ? 32000 : d.V;
        d.aux[0] = 1, d.aux[1] = L / 2, d.aux[2] = L - 1;
        if (d.H == 0 || d.H % 8 || L < 4) {
            fprintf(stderr, "write_draft wide: H a multiple of 8 and L >= 4 expected (got %u, %u)\n", d.H, L);
            return 2;
        }
        rc = draft_alloc(&d, &w) || random_head(&d, &w, seed);
    } else if (strcmp(argv[2], "random") == 0) { /* 4 heads on 2 kv heads: GQA split over TP=2 */
        d.nh = 4, d.nkv = 2, d.hd = 16;
        if (argc > 4)
            spoil = argv[4];
        rc = draft_alloc(&d, &w) || random_head(&d, &w, seed);
    } else if (strcmp(argv[2], "lookup") == 0 && argc >= 8) {
        static const char *kinds[] = {"right", "wrong", "mixed"};
        unsigned kind = 0;
        while (kind < 3 && strcmp(kinds[kind], argv[5]) != 0)
            kind++;
        uint32_t chain[4096];
        unsigned n = 0, x;
        FILE *f = fopen(argv[4], "r");
        while (f && n < 4096 && fscanf(f, "%u", &x) == 1)
            chain[n++] = x;
        if (f)
            fclose(f);
        if (kind == 3 || n < 2) {
            fprintf(stderr, "write_draft: need right|wrong|mixed and a token file of 2 or more tokens (%s: %u)\n",
                    argv[4], n);
            return 2;
        }
        unsigned distinct = 0;
        for (unsigned i = 0; i + 1 < n; i++) {
            unsigned j = 0;
            while (j < i && chain[j] != chain[i])
                j++;
            distinct += j == i;
        }
        d.Vd = distinct;
        if (argc > 8)
            spoil = argv[8];
        rc = draft_alloc(&d, &w) ||
             lookup_head(&d, &w, seed, chain, n, kind, (unsigned)atoi(argv[6]), (unsigned)atoi(argv[7]));
    } else {
        fprintf(stderr, "write_draft: unknown kind '%s' or missing arguments\n", argv[2]);
        return 2;
    }
    if (rc || draft_write(dir, &d, &w, spoil)) {
        fprintf(stderr, "write_draft: could not write the draft head into %s\n", dir);
        return 1;
    }
    draft_free(&w);
    return 0;
}
