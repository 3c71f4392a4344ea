/* SPDX-License-Identifier: MIT */
/*
 * The chain profile's plan (engine/gpu/chain_plan.h), no GPU needed: on Kimi-K2's mark
 * sequence (the embedding, one dense layer, 60 MoE layers, lm_head and argmax) and the tiny
 * model's, the measured layers, each window a contiguous run of marks whose base ends one
 * mark earlier, and, with window times made from known per-mark costs, every kind's
 * estimate and every layer's sum recovered exactly; broken sequences refused.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "gpu/chain_plan.h"

static char why[1024];

enum { EMB, QKV, QB, ABS, ATT, COMB, OPROJ, SA, ROUTER, GU, DOWN, DENSE, SB, LMH, KINDS };
static const int attn[] = {QKV, QB, ABS, ATT, COMB, COMB, OPROJ, SA};
static const int moe[] = {ROUTER, GU, DOWN, SB};
static const int dns[] = {DENSE, DENSE, SB};

/* The marks of a model of `layers` layers, the first `nd` dense, as gpu_step.cu makes them. */
static unsigned model_marks(int *k, int *dense, unsigned layers, unsigned nd)
{
    unsigned n = 0;
    k[n++] = EMB;
    for (unsigned l = 0; l < layers; l++) {
        dense[l] = l < nd;
        for (unsigned i = 0; i < sizeof attn / sizeof attn[0]; i++)
            k[n++] = attn[i];
        const int *mlp = l < nd ? dns : moe;
        const unsigned nm = l < nd ? 3 : 4;
        for (unsigned i = 0; i < nm; i++)
            k[n++] = mlp[i];
    }
    k[n++] = LMH, k[n++] = LMH;
    return n;
}

/* A mark's cost: by kind, plus a little by position so no two layers are alike. */
static double cost(const int *k, unsigned j) { return 1.0 + k[j] * 0.5 + (j % 7) * 0.01; }

/* A window's time: its marks' costs plus a fixed launch cost (it cancels in the segments). */
static double window_us(const int *k, arb_chain_var_t v)
{
    double t = 3.25;
    for (unsigned j = v.first; j <= v.last; j++)
        t += cost(k, j);
    return t;
}

/* The layer of mark j (layer-end marks close a layer; -1 head, -2 tail). */
static int layer_of(const int *k, unsigned n, unsigned j, unsigned layers)
{
    if (k[j] == EMB)
        return -1;
    int l = 0;
    for (unsigned i = 0; i < j && i < n; i++)
        l += k[i] == SB;
    return l < (int)layers ? l : -2;
}

static void check_model(unsigned layers, unsigned nd, const unsigned *want, unsigned nwant)
{
    int k[2048], dense[128];
    const unsigned n = model_marks(k, dense, layers, nd), nm = layers - nd;
    arb_chain_plan_t p;
    TAP_REQUIRE(arb_chain_plan_build(k, n, dense, layers, EMB, SB, 2, &p, why, sizeof why) == ARB_OK);
    TAP_EQ_U64(p.nmeasured, nwant);
    for (unsigned i = 0; i < nwant && i < p.nmeasured; i++)
        TAP_EQ_U64(p.measured[i], want[i]);
    TAP_CHECK(p.tail == 1);
    /* windows: contiguous, inside the sequence; a segment's base the same window one mark shorter */
    for (unsigned v = 0; v < p.nvar; v++)
        TAP_CHECK(p.var[v].first <= p.var[v].last && p.var[v].last < n);
    unsigned per_layer[3] = {0};
    for (unsigned s = 0; s < p.nseg; s++) {
        const arb_chain_seg_t *g = &p.seg[s];
        TAP_CHECK(g->var < p.nvar);
        TAP_CHECK(g->base == ARB_CHAIN_NO_VAR ||
                  (p.var[g->base].first == p.var[g->var].first && p.var[g->base].last + 1 == p.var[g->var].last));
        TAP_CHECK(g->kind == k[p.var[g->var].last]);
        TAP_CHECK(g->layer == layer_of(k, n, p.var[g->var].last, layers) ||
                  (g->layer == -1 && layer_of(k, n, p.var[g->var].last, layers) == -2));
        for (unsigned i = 0; i < p.nmeasured; i++)
            per_layer[i] += g->layer == (int)p.measured[i];
    }
    for (unsigned i = 0; i < p.nmeasured; i++)
        TAP_EQ_U64(per_layer[i], dense[p.measured[i]] ? 11 : 12); /* every mark of the layer, once */
    /* times from known costs: the estimates recover them */
    double *t = malloc(sizeof(double) * p.nvar), us[KINDS], lay[3];
    TAP_REQUIRE(t != NULL);
    for (unsigned v = 0; v < p.nvar; v++)
        t[v] = window_us(k, p.var[v]);
    arb_chain_plan_eval(&p, t, us, KINDS, lay);
    double want_k[KINDS] = {0}, want_l[3] = {0};
    unsigned moe_measured = 0;
    for (unsigned i = 0; i < p.nmeasured; i++)
        moe_measured += !dense[p.measured[i]];
    for (unsigned j = 0; j < n; j++) {
        const int l = layer_of(k, n, j, layers);
        if (l == -2) {
            want_k[k[j]] += cost(k, j);
            continue;
        }
        for (unsigned i = 0; i < p.nmeasured; i++)
            if (l == (int)p.measured[i]) {
                want_l[i] += cost(k, j);
                want_k[k[j]] += cost(k, j) * (dense[l] ? nd : (double)nm / moe_measured);
            }
    }
    for (int q = 0; q < KINDS; q++) {
        if (q == EMB)
            TAP_CHECK(isnan(us[q])); /* the head is not measured */
        else if (nd == 0 && q == DENSE)
            TAP_CHECK(isnan(us[q]));
        else
            TAP_NEAR(us[q], want_k[q], 1e-9);
    }
    for (unsigned i = 0; i < p.nmeasured; i++)
        TAP_NEAR(lay[i], want_l[i], 1e-9);
    /* a wrong window time shows: the layer's last window, and an inner one moves two kinds */
    unsigned last0 = 0;
    while (last0 + 1 < p.nseg && p.seg[last0 + 1].layer == p.seg[0].layer)
        last0++;
    t[p.seg[last0].var] += 1.0;
    t[p.seg[1].var] += 0.5;
    arb_chain_plan_eval(&p, t, us, KINDS, lay);
    TAP_NEAR(lay[0], want_l[0] + 1.0, 1e-9);
    TAP_CHECK(fabs(us[p.seg[1].kind] - want_k[p.seg[1].kind]) > 0.4);
    free(t);
    arb_chain_plan_free(&p);
    TAP_CHECK(p.var == NULL && p.seg == NULL && p.nvar == 0);
}

static void t_kimi(void)
{
    /* 60 MoE layers from layer 1: the 20th and 40th of them are layers 21 and 41 */
    const unsigned want[3] = {0, 21, 41};
    check_model(61, 1, want, 3);
    int k[2048], dense[128];
    const unsigned n = model_marks(k, dense, 61, 1);
    arb_chain_plan_t p;
    TAP_REQUIRE(arb_chain_plan_build(k, n, dense, 61, EMB, SB, 2, &p, why, sizeof why) == ARB_OK);
    /* dense layer 0: the embedding's window, 11 marks and its base; 12 + 1 for each MoE layer; the tail 2 + 1 */
    TAP_EQ_U64(p.nvar, 12 + 13 + 13 + 3);
    TAP_EQ_U64(p.nseg, 11 + 12 + 12 + 2);
    TAP_EQ_U64(p.var[p.seg[0].var].first, 0);
    TAP_CHECK(p.seg[0].base != ARB_CHAIN_NO_VAR && p.var[p.seg[0].base].last == 0); /* the embedding alone */
    TAP_NEAR(p.seg[0].weight, 1.0, 0);
    TAP_NEAR(p.seg[11].weight, 30.0, 0); /* 60 MoE layers over two measured */
    arb_chain_plan_free(&p);
}

static void t_tiny(void)
{
    /* 3 layers, the first dense: every layer measured, each MoE one for itself */
    const unsigned want[3] = {0, 1, 2};
    check_model(3, 1, want, 3);
    const unsigned want_moe[2] = {1, 2}; /* no dense layer: a third and two thirds of 3 */
    check_model(3, 0, want_moe, 2);
    const unsigned one[1] = {0};
    check_model(1, 0, one, 1);
}

static void t_refused(void)
{
    int k[2048], dense[128];
    const unsigned n = model_marks(k, dense, 4, 1);
    arb_chain_plan_t p;
    TAP_EQ_INT(arb_chain_plan_build(k, n, dense, 5, EMB, SB, 2, &p, why, sizeof why), ARB_ERR_INVALID);
    TAP_CHECK(strstr(why, "4 layer-end marks") != NULL && strstr(why, "5 layers") != NULL);
    TAP_EQ_INT(arb_chain_plan_build(k, n, dense, 4, EMB, SB, 0, &p, why, sizeof why), ARB_ERR_INVALID);
    TAP_CHECK(strstr(why, "lead 0") != NULL);
    TAP_EQ_INT(arb_chain_plan_build(k, 0, dense, 4, EMB, SB, 2, &p, why, sizeof why), ARB_ERR_INVALID);
    const int twice[] = {EMB, QKV, SB, SB};
    TAP_EQ_INT(arb_chain_plan_build(twice, 4, dense, 2, EMB, SB, 1, &p, why, sizeof why), ARB_ERR_INVALID);
    TAP_CHECK(strstr(why, "layer 1 has no mark before its end (mark 3)") != NULL);
    TAP_CHECK(p.var == NULL && p.seg == NULL);
    /* no tail: measured, no tail segments */
    TAP_REQUIRE(arb_chain_plan_build(k, n - 2, dense, 4, EMB, SB, 2, &p, why, sizeof why) == ARB_OK);
    TAP_CHECK(p.tail == 0);
    for (unsigned s = 0; s < p.nseg; s++)
        TAP_CHECK(p.seg[s].layer >= 0);
    arb_chain_plan_free(&p);
}

int main(int argc, char **argv)
{
    static const tap_test_t tests[] = {{"kimi", t_kimi}, {"tiny", t_tiny}, {"refused", t_refused}};
    return tap_main(tests, sizeof tests / sizeof tests[0], argc, argv);
}
